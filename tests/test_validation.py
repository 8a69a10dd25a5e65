"""refdecode.validation: one meaning of integer / float / probability / boolean, and the memory door.

Each test names the bug it guards against (reproductions of real bugs: ``1.0 == True`` let
``early_stopping=1.0`` through as "never"; ``np.int64(5)`` was refused as "must be greater than 0, but is 5";
a FIFO blocked ``from_pretrained`` forever).
"""

from __future__ import annotations

import numpy as np
import pytest

from refdecode import validation
from refdecode.validation import (
    ArgumentTypeError,
    check_allocation,
    check_boolean,
    check_choice,
    check_float,
    check_integer,
    check_probability,
    check_token_ids,
)


@pytest.mark.parametrize("value", [5, np.int64(5), np.int32(5), np.uint8(5)])
def test_numpy_integers_are_integers(value):
    out = check_integer("max_new_tokens", value, minimum=1)
    assert out == 5 and type(out) is int


@pytest.mark.parametrize("value", [True, np.True_, 5.0, "5", [5], None, 1 + 0j])
def test_non_integers_are_type_errors_naming_the_argument_and_the_value(value):
    with pytest.raises(ArgumentTypeError, match=r"`max_new_tokens` must be an integer >= 1, got .*\(") as e:
        check_integer("max_new_tokens", value, minimum=1)
    assert isinstance(e.value, TypeError) and isinstance(e.value, ValueError)


def test_integer_range_and_none():
    assert check_integer("top_k", None, allow_none=True) is None
    with pytest.raises(ValueError, match=r"`num_beams` must be an integer >= 1, got 0 \(int\)"):
        check_integer("num_beams", 0, minimum=1)
    with pytest.raises(ValueError, match=r"<= 3"):
        check_integer("x", 4, minimum=0, maximum=3)


@pytest.mark.parametrize("value", [float("nan"), np.float32("nan"), float("inf"), -float("inf")])
def test_floats_refuse_nan_and_inf(value):
    with pytest.raises(ValueError, match="`length_penalty` must be a finite number"):
        check_float("length_penalty", value)


def test_float_accepts_numpy_and_ints_returns_python_float():
    assert type(check_float("x", np.float32(0.5))) is float and check_float("x", 2) == 2.0
    assert check_float("max_time", float("inf"), allow_inf=True) == float("inf")
    with pytest.raises(ValueError, match="> 0.0"):
        check_float("temperature", 0.0, minimum=0.0, min_open=True)
    with pytest.raises(ArgumentTypeError, match="must be a finite float"):
        check_float("temperature", 2, integers=False)  # transformers' warper checks isinstance(x, float)
    with pytest.raises(ArgumentTypeError):
        check_float("x", True)


@pytest.mark.parametrize("value, ok", [(0.0, True), (1.0, True), (np.float32(0.3), True), (1.5, False),
                                       (-0.1, False), (float("nan"), False), (True, False)])
def test_probability(value, ok):
    if ok:
        assert 0.0 <= check_probability("top_p", value) <= 1.0
    else:
        with pytest.raises(ValueError, match="`top_p`"):
            check_probability("top_p", value)


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_booleans_become_python_bools(value):
    assert check_boolean("do_sample", value) is bool(value)


@pytest.mark.parametrize("value", ["yes", "false", 1, 0, 1.0, None])
def test_non_booleans_refused(value):
    """``"false"`` is truthy in Python: a config.json holding it meant False and ran as True."""
    with pytest.raises(ArgumentTypeError, match="`do_sample` must be True or False"):
        check_boolean("do_sample", value)


@pytest.mark.parametrize("value, expected", [(True, True), (False, False), ("never", "never"),
                                             (np.True_, True), (np.False_, False)])
def test_choice_by_type_and_value(value, expected):
    assert check_choice("early_stopping", value, (True, False, "never")) is expected


@pytest.mark.parametrize("value", [1.0, 0.0, 1, 0, "Never", None])
def test_choice_refuses_equal_values_of_other_types(value):
    """``1.0 == True`` in Python: ``early_stopping=1.0`` passed ``in {True, False, "never"}`` and then failed
    ``is True`` in ``BeamHypotheses.is_done``, running as "never"."""
    with pytest.raises(ValueError, match="`early_stopping` must be one of True, False, 'never'"):
        check_choice("early_stopping", value, (True, False, "never"))


def test_token_ids():
    assert check_token_ids("eos_token_id", (np.int64(1), 2)) == [1, 2]
    assert check_token_ids("eos_token_id", np.int64(3)) == 3
    assert check_token_ids("eos_token_id", 3, vocab_size=4) == 3
    for bad in (7.9, True, [3], "3"):
        with pytest.raises(ArgumentTypeError, match="`pad_token_id`"):
            check_token_ids("pad_token_id", bad, allow_list=False)
    for bad in ([], [1, True], [1.0]):
        with pytest.raises(ArgumentTypeError, match="`eos_token_id`"):
            check_token_ids("eos_token_id", bad)
    with pytest.raises(ValueError, match=r"< 4"):
        check_token_ids("eos_token_id", [1, 4], vocab_size=4)
    with pytest.raises(ValueError, match=r"`eos_token_id`"):
        check_token_ids("eos_token_id", -1)


def test_messages_cut_long_values():
    with pytest.raises(ArgumentTypeError) as e:
        check_integer("num_beams", "x" * 1000)
    assert len(str(e.value)) < 150


# ---- check_allocation


def test_allocation_refused_with_the_size_needed(monkeypatch):
    monkeypatch.setattr(validation, "memory_limit", lambda: 2**30)
    check_allocation("the logits", 2**29, "2 x 3")
    with pytest.raises(ValueError, match=r"the logits would need 2.0 GiB \(2 x 3\), more than this machine's "
                                         r"memory \(1.0 GiB\)"):
        check_allocation("the logits", 2**31, "2 x 3")


def test_memory_limit_is_the_physical_memory():
    assert 2**28 < validation.memory_limit() < 2**50


def test_warnings_point_at_the_callers_line_whatever_the_depth():
    """Before: fixed stacklevels pointed at refdecode's own lines (generate -> _merged_config -> update -> _warn)."""
    import warnings as _warnings

    from refdecode import GenerationConfig, MaxNewTokensCriteria, generate
    from refdecode.model.stand_ins import TableModel

    model = TableModel(np.zeros((3, 3), dtype=np.float32))
    calls = [lambda: generate(model, np.array([[0]]), max_new_tokens=2, temperature=0.5),
             lambda: GenerationConfig(num_beams=1, early_stopping=True),
             lambda: generate(model, np.array([[0]]), max_new_tokens=2, min_new_tokens=5),
             lambda: MaxNewTokensCriteria(start_length=1, max_new_tokens=2)]
    for call in calls:
        with _warnings.catch_warnings(record=True) as caught:
            _warnings.simplefilter("always")
            call()
        assert caught, call
        assert {w.filename for w in caught} == {__file__}, [(w.filename, str(w.message)[:60]) for w in caught]
