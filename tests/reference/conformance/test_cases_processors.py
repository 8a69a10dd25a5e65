"""refdecode.reference.conformance.cases_processors: the processor and warper cases sit where ports go wrong, and
every tie they hold is decided by the rule their type states."""

from __future__ import annotations

import numpy as np

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.registry import REGISTRY


def _cases(name: str) -> list:
    return list(REGISTRY[name].build())


def test_top_k_ties_at_the_kth_largest_keep_every_tied_token():
    ties = [c for c in _cases("top_k") if "tie" in c.note]
    assert len(ties) >= 20
    for case in ties:
        out = REGISTRY["top_k"].run(case.input)["scores"]
        for row, kept in zip(np.asarray(case.input["scores"]), out):
            kth = np.sort(row)[::-1][case.input["top_k"] - 1]
            assert np.isfinite(kept[row == kth]).all() and np.isfinite(kept).sum() > case.input["top_k"]


def test_top_p_ties_straddling_the_cut_drop_the_lower_id_first():
    """Two equal scores on both sides of the cut: the type's tie rule (stable ascending sort) keeps the higher id."""
    ties = [c for c in _cases("top_p") if "straddle" in c.note]
    assert ties and "lower ids are dropped first" in REGISTRY["top_p"].tie_rule
    for case in ties:
        row = np.asarray(case.input["scores"])[0]
        out = np.asarray(REGISTRY["top_p"].run(case.input)["scores"])[0]
        for value in np.unique(row):
            same = np.flatnonzero(row == value)
            kept = np.isfinite(out[same])
            if 0 < kept.sum() < same.size:             # the tie is cut: the kept ones are the higher ids
                assert kept.tolist() == sorted(kept.tolist()), case.note


def test_random_rows_are_away_from_ties_so_only_the_named_cases_test_the_tie_rules():
    """A random row with an exact tie at the cut would test the tie rule by accident; the random cases have none."""
    for name in ("top_k", "top_p"):
        random_cases = [c for c in _cases(name) if c.note.startswith("random rows")]
        assert len(random_cases) >= 20
        for case in random_cases:
            margins = [m for m in REGISTRY[name].margins(case.input, REGISTRY[name].run(case.input)) if m is not None]
            assert not margins or min(margins) > 0, (name, case.note)
