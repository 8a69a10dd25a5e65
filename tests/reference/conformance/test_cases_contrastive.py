"""refdecode.reference.conformance.cases_contrastive: the ranking cases and the GPT-2 contrastive decodes."""

from __future__ import annotations

import pytest

import re
import numpy as np
from conftest import GOLDEN
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.suite import load_suite
from conformance_suites import ask
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


@pytest.mark.slow
def test_gpt2_contrastive_cases_expect_what_transformers_returned(decode_suite):
    golden = np.load(GOLDEN / "decode_contrastive.npz")
    _, cases = load_suite(decode_suite, only="gpt2_contrastive_search")
    assert len(cases) == DECODE_LIMIT
    for case in cases:
        golden_id = re.search(r"decode_contrastive.npz:(c\d+)", case["note"]).group(1)
        assert case["input"]["config"]["penalty_alpha"] > 0
        assert np.array_equal(np.array(case["expected"]["sequences"]), golden[f"{golden_id}/sequences"]), case["id"]


def test_the_new_unit_cases_have_margins_away_from_ties(decode_suite):
    """Ranking cases are drawn at least 1e-3 from a flip, except the deliberate exact ties (margin None: tie rule)."""
    _, cases = load_suite(decode_suite, only="contrastive_ranking")
    for case in cases:
        margins = [m for m in case["margins"] if m is not None]
        assert "tie" in case["note"] or min(margins) > 1e-3, case["id"]


def test_contrastive_ranking_penalises_a_repeat():
    inp = {"context": [[[1.0, 0.0]]], "candidates": [[[2.0, 0.0], [0.0, 1.0]]], "probs": [[0.6, 0.4]],
           "penalty_alpha": 0.5}
    out = ask("contrastive_ranking", inp)
    assert out["selected"] == [1]
    assert np.allclose(out["scores"], [[0.5 * 0.6 - 0.5, 0.5 * 0.4]])
    assert ask("contrastive_ranking", dict(inp, penalty_alpha=0.0))["selected"] == [0]


def test_contrastive_ranking_tie_picks_the_first():
    inp = {"context": [[[1.0, 0.0]]], "candidates": [[[0.0, 1.0], [0.0, 1.0]]], "probs": [[0.5, 0.5]],
           "penalty_alpha": 0.6}
    assert ask("contrastive_ranking", inp)["selected"] == [0]
