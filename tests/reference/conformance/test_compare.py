"""refdecode.reference.conformance.compare: tolerances relative to the row, near-ties, tie rules, missing fields."""

from __future__ import annotations

import pytest

import numpy as np
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.suite import load_suite
from refdecode.reference.conformance.compare import TOLERANCE, compare
from refdecode.reference.conformance.kinds import F32, to_json
from refdecode.reference.conformance.registry import REGISTRY
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


def _top_k_case(scores, k) -> dict:
    case_type = REGISTRY["top_k"]
    inp = {"scores": np.array(scores, dtype=np.float32), "top_k": k, "min_tokens_to_keep": 1}
    return {"id": "t/0", "type": "top_k", "note": "", "input": inp, "expected": case_type.run(inp),
            "margins": case_type.margins(inp, None)}


def test_tolerance_is_relative_to_the_row_scale():
    case = _top_k_case([[1000.0, 3.0, -2.0]], 3)
    close = [[1000.0 + 0.09, 3.0, -2.0]]   # 0.09 / 1000 < 1e-4
    far = [[1000.0, 3.0 + 0.2, -2.0]]      # 0.2 / 1000 > 1e-4
    assert compare(REGISTRY["top_k"], case, {"scores": close})[0] == "pass"
    verdict, message = compare(REGISTRY["top_k"], case, {"scores": far})
    assert verdict == "fail" and "output.scores[0, 1]" in message and "relative error" in message


def test_a_choice_within_the_tolerance_is_a_near_tie_and_a_clear_one_a_failure():
    """top-k=1 on [1, 1 + 5e-5]: keeping token 0 instead of 1 is float drift (margin 5e-5 <= 1e-4);
    on [1, 2] the same mistake is a different algorithm."""
    near = _top_k_case([[1.0, 1.00005, -3.0]], 1)
    assert 0 < near["margins"][0] <= TOLERANCE
    assert compare(REGISTRY["top_k"], near, {"scores": [[1.0, "-inf", "-inf"]]})[0] == "near-tie"
    clear = _top_k_case([[1.0, 2.0, -3.0]], 1)
    assert compare(REGISTRY["top_k"], clear, {"scores": [[1.0, "-inf", "-inf"]]})[0] == "fail"


def test_breaking_a_stated_tie_rule_fails_and_says_the_rule():
    case = _top_k_case([[2.0, 2.0, 1.0]], 1)  # both 2.0 tie with the 1st largest: both kept
    verdict, message = compare(REGISTRY["top_k"], case, {"scores": [[2.0, "-inf", "-inf"]]})
    assert verdict == "fail" and "tie" in message and "equals the k-th largest is kept" in message


def test_missing_fields_wrong_shapes_and_wrong_ids_fail():
    case = _top_k_case([[2.0, 1.0]], 1)
    assert "missing field 'scores'" in compare(REGISTRY["top_k"], case, {})[1]
    assert "shape [1, 3], expected [1, 2]" in compare(REGISTRY["top_k"], case, {"scores": [[2.0, 1.0, 0.0]]})[1]


def _greedy_with_a_wrong_first_token(decode_suite) -> tuple[dict, dict, np.ndarray]:
    """The first greedy case, its decoded expected output, and its sequences with the first new token changed."""
    _, cases = load_suite(decode_suite, only="greedy")
    case = cases[0]
    expected = REGISTRY["greedy"].outputs.decode(case["expected"])
    wrong = expected["sequences"].copy()
    prompt = np.asarray(case["input"]["input_ids"]).shape[1]
    wrong[0, prompt] = (wrong[0, prompt] + 1) % np.asarray(case["input"]["model"]["bigram"]).shape[0]
    return case, expected, wrong


@pytest.mark.slow
def test_decode_divergence_reports_step_and_verdict(decode_suite):
    case, expected, wrong = _greedy_with_a_wrong_first_token(decode_suite)
    verdict, message = compare(REGISTRY["greedy"], dict(case, expected=expected), {"sequences": to_json(wrong)})
    assert verdict == "fail" and "departs at step 0" in message and "not a near-tie" in message


def test_a_decode_departing_at_a_tiny_margin_is_a_near_tie(decode_suite):
    """The same wrong token as above, but refdecode's margin at that step is 5e-5 (<= 1e-4): float drift."""
    case, expected, wrong = _greedy_with_a_wrong_first_token(decode_suite)
    margins = [[5e-5] + row[1:] for row in case["margins"][:1]] + case["margins"][1:]
    verdict, message = compare(REGISTRY["greedy"], dict(case, expected=expected, margins=margins),
                               {"sequences": to_json(wrong)})
    assert verdict == "near-tie" and "5.00e-05" in message


def test_non_finite_values_must_match_exactly():
    """nan where refdecode has nan passes; -inf for +inf, or a finite value for nan, fails."""
    from refdecode.reference.conformance.compare import first_difference

    expected = np.array([[np.nan, np.inf, -np.inf, 1.0]], dtype=np.float32)
    assert first_difference(F32(2), expected, [["nan", "inf", "-inf", 1.0]]) is None
    assert "differ in being finite" in first_difference(F32(2), expected, [["nan", "-inf", "-inf", 1.0]]).message
    assert "differ in being finite" in first_difference(F32(2), expected, [[0.0, "inf", "-inf", 1.0]]).message
