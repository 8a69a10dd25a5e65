"""refdecode.reference.conformance.cases_ties: beam searches whose output the tie rules decide."""

from __future__ import annotations

import numpy as np

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.registry import REGISTRY

TIES = REGISTRY["beam_search_ties"]


def test_the_twins_are_interchangeable_in_every_case():
    for case in TIES.build():
        a, b = (int(t) for t in case.note.split("twin tokens ")[1].split(" (")[0].split(" and "))
        bigram, mix = case.input["model"]["bigram"], case.input["model"]["mix"]
        assert np.array_equal(bigram[:, a], bigram[:, b]) and np.array_equal(bigram[a], bigram[b])
        assert mix.shape[0] == 1 and mix[0, a] == mix[0, b]


def test_no_case_holds_a_near_tie_only_exact_ones():
    """Margins are gaps between distinct scores (exact ties are left to the rules): none may be a near-tie, so a
    port differing here differs by its tie rule, and the tests of plants show each case depends on it."""
    for case in TIES.build():
        margins = [m for step in TIES.margins(case.input, TIES.run(case.input)) for m in step if m is not None]
        assert not margins or min(margins) > 1e-3, case.note
