"""refdecode.validation, the part the processors and warpers share: their arguments in transformers' wording.

(tests/test_validation.py tests the rest of the module: integers, floats, booleans, files, allocations.)
"""

import re

import numpy as np
import pytest

from refdecode.processors.arguments import (
    check_count,
    check_input_ids,
    check_positive_float,
    check_scores,
    check_vocab_ids,
    checks_scores,
)
from refdecode.generation_rules import eos_list
from refdecode.validation import is_float, is_integer, is_number


def test_integers_are_python_or_numpy_ints_never_bools():
    assert is_integer(3) and is_integer(np.int64(3)) and is_integer(np.uint8(3))
    assert not is_integer(True) and not is_integer(np.bool_(True)) and not is_integer(3.0)
    assert is_float(2.0) and is_float(np.float32(2)) and not is_float(2)
    assert is_number(2) and is_number(2.5) and not is_number(True)


@pytest.mark.parametrize("minimum, value, words", [
    (0, -1, "a non-negative integer"), (1, 0, "a strictly positive integer \\(>= 1\\)"),
    (2, 1, "an integer strictly larger than 1"), (1, 2.0, "a strictly positive integer \\(>= 1\\)"),
    (0, True, "a non-negative integer"),
])
def test_check_count_names_the_argument_the_range_and_the_value(minimum, value, words):
    with pytest.raises(ValueError, match=f"`n` has to be {words}, but is {value!r}"):
        check_count("n", value, minimum)


def test_check_count_returns_a_python_int():
    got = check_count("n", np.int64(5), minimum=1)
    assert got == 5 and type(got) is int


def test_check_positive_float():
    assert check_positive_float("t", np.float32(0.5)) == 0.5
    for bad in (0.0, -1.0, 2, float("nan")):
        with pytest.raises(ValueError, match="`t` has to be a strictly positive float"):
            check_positive_float("t", bad)


def test_array_checks():
    with pytest.raises(TypeError, match="`scores`.*float32.*float64"):
        check_scores(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="`scores`.*shape"):
        check_scores(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="`input_ids`.*batch = scores.shape\\[0\\] = 2"):
        check_input_ids(np.zeros((1, 3), np.int64), 2)
    with pytest.raises(ValueError, match="`ids`.*\\[0, 4\\].*5"):
        check_vocab_ids("ids", np.array([1, 5]), 5)
    assert eos_list(np.int64(3)) == [3] and eos_list((1, 2)) == [1, 2]
    with pytest.raises(ValueError, match="`eos_token_id`"):
        eos_list([1, -2])


def test_checks_scores_guards_a_rule_and_keeps_its_face():
    """The decorator checks ``scores`` before the rule's first line and keeps its name, doc and signature."""
    import inspect

    from refdecode.processors.logits_warp import top_p_warp

    calls = []

    @checks_scores
    def rule(scores, p, filter_value=-1.0):
        """A rule."""
        calls.append(p)
        return scores

    with pytest.raises(TypeError, match="`scores`.*float32"):
        rule(np.zeros((1, 2)), 0.5)
    assert calls == []
    assert rule(np.zeros((1, 2), np.float32), 0.5).shape == (1, 2) and calls == [0.5]
    assert rule.__name__ == "rule" and rule.__doc__ == "A rule."
    assert list(inspect.signature(rule).parameters) == ["scores", "p", "filter_value"]
    assert list(inspect.signature(top_p_warp).parameters)[:2] == ["scores", "top_p"]
    with pytest.raises(ValueError, match="`scores`.*shape"):
        top_p_warp(np.zeros(3, np.float32), 0.5)


@pytest.mark.parametrize("kwargs, message", [
    ({"min_tokens_to_keep": 0}, "`min_tokens_to_keep` has to be a strictly positive integer"),
    ({"min_tokens_to_keep": 2.5}, "`min_tokens_to_keep` has to be a strictly positive integer"),
    ({"filter_value": "x"}, "`filter_value` has to be a float"),
])
def test_the_checked_rules_refuse_a_bad_count_or_filter_value_at_the_door(kwargs, message):
    """``min_tokens_to_keep=0`` would otherwise slice ``[-0:]`` (the whole row) in top-p's rule: keep everything."""
    from refdecode.processors.logits_warp import top_p_warp
    from refdecode.processors.truncation_warpers import epsilon_warp, eta_warp, min_p_warp, typical_warp
    scores = np.log(np.array([[0.5, 0.3, 0.2]], dtype=np.float32))
    for rule, value in ((top_p_warp, 0.5), (typical_warp, 0.5), (epsilon_warp, 0.25), (eta_warp, 0.25),
                        (min_p_warp, 0.5)):
        with pytest.raises(ValueError, match=re.escape(message)):
            rule(scores, value, **kwargs)
