"""refdecode.reference.conformance.cases_constrained: constraint states token by token, and decodes that hold every constraint."""

from __future__ import annotations

import pytest

import numpy as np
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.suite import load_suite
from conformance_suites import ask
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


def _holds(row: list[int], phrase: list[int]) -> bool:
    return any(row[i : i + len(phrase)] == phrase for i in range(len(row) - len(phrase) + 1))


@pytest.mark.slow
def test_constrained_decodes_return_sequences_holding_every_constraint(decode_suite):
    _, cases = load_suite(decode_suite, only="constrained_beam_search")
    assert len(cases) == DECODE_LIMIT
    for case in cases:
        for row in np.array(case["expected"]["sequences"]).tolist():  # prompt included, as transformers checks
            for entry in case["input"]["config"]["force_words_ids"]:
                phrases = entry if isinstance(entry[0], list) else [entry]
                assert any(_holds(row, p) for p in phrases), (case["id"], row, entry)
        assert (np.array(case["expected"]["beam_indices"])[:, 0] >= 0).all()


def test_constraint_states_lose_the_token_that_breaks_a_phrase():
    """[1, 2] against "1 1 2": the second 1 breaks the phrase and is not tried as its start (quirk 1)."""
    out = ask("constraint_states", {"force_words_ids": [[1, 2]], "tokens": [1, 1, 2]})
    assert out == {"added": [[False, True], [False, False], [False, False]], "bank": [1, 0, 0],
                   "advance": [[2], [1], [1]], "completed": [False, False, False]}


def test_constraint_states_bank_and_completed():
    """Phrase [5, 6] and one of [[9], [7, 8]]: M = 2; after completion tokens answer [true, false]."""
    out = ask("constraint_states", {"force_words_ids": [[5, 6], [[9], [7, 8]]], "tokens": [7, 8, 5, 6, 3]})
    assert out["bank"] == [1, 2, 3, 4, 4]
    assert out["advance"] == [[8], [5], [6], None, None]
    assert out["completed"] == [False, False, False, True, True]
    assert out["added"] == [[False, True], [True, True], [False, True], [True, True], [True, False]]
