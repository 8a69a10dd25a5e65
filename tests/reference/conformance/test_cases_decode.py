"""refdecode.reference.conformance.cases_decode: the GPT-2 decode cases expect what transformers 4.38.2 returned."""

from __future__ import annotations

import pytest

import re
import numpy as np
from conftest import GOLDEN
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.suite import load_suite
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


@pytest.mark.slow
def test_gpt2_cases_expect_what_transformers_returned(decode_suite):
    """The GPT-2 decode cases' expected sequences equal transformers 4.38.2's, recorded in the golden file
    (so the suite's expected values are not only refdecode's say-so)."""
    golden = np.load(GOLDEN / "decode_search.npz")
    _, cases = load_suite(decode_suite, only="gpt2_greedy,gpt2_beam_search,gpt2_group_beam_search")
    assert len(cases) == 3 * DECODE_LIMIT
    for case in cases:
        golden_id = re.search(r"decode_search.npz:(c\d+)", case["note"]).group(1)
        assert np.array_equal(np.array(case["expected"]["sequences"]), golden[f"{golden_id}/sequences"]), case["id"]
