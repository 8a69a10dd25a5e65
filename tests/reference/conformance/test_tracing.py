"""refdecode.reference.conformance.tracing: refdecode's trace of a decode case is the decode the case expects."""

from __future__ import annotations

import pytest
from conformance_suites import decode_suite  # noqa: F401  (fixture)

from refdecode.reference.conformance.suite import load_suite
from refdecode.reference.conformance.tracing import find_case, trace_case


def test_every_traceable_decode_type_traces_to_its_expected_sequences(decode_suite):
    _, cases = load_suite(decode_suite)
    traced = 0
    for case in cases:
        if "config" not in case["input"] or "assistant" in case["input"] or \
                "prompt_lookup_num_tokens" in case["input"]:
            continue
        trace = trace_case(case)
        assert trace["final"]["sequences"] == case["expected"]["sequences"], case["id"]
        assert all("uniforms" in s for s in trace["steps"]) == bool(case["input"]["config"].get("do_sample"))
        traced += 1
    assert traced >= 50


def test_what_is_not_a_traceable_decode_is_refused_with_its_reason(decode_suite):
    _, cases = load_suite(decode_suite)
    with pytest.raises(ValueError, match="not a decode"):
        trace_case(find_case(cases, "beam_scorer/0000"))
    with pytest.raises(ValueError, match="assisted decode"):
        trace_case(find_case(cases, "gpt2_prompt_lookup_greedy/0000"))
    with pytest.raises(ValueError, match="no case 'greedy/9999'"):
        find_case(cases, "greedy/9999")
