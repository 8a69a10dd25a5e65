"""refdecode.decoding.beam.constraints: PhrasalConstraint, DisjunctiveConstraint and ConstraintListState, with transformers 4.38.2's quirks."""

from __future__ import annotations

import pytest
from refdecode.decoding.beam.constraints import (
    ConstraintListState,
    DisjunctiveConstraint,
    PhrasalConstraint,
)


def test_phrase_found_in_order_and_bank_counts_fulfilled_tokens():
    state = ConstraintListState([PhrasalConstraint([5, 6, 7])])
    banks = []
    for token in [1, 5, 6, 7]:
        state.add(token)
        banks.append(state.get_bank())
    assert banks == [0, 1, 2, 3] and state.completed


def test_breaking_token_is_lost_quirk_1():
    """[a, a, b] is not found in "a a a b": the third a resets the phrase and is not tried as a new start."""
    state = ConstraintListState([PhrasalConstraint([4, 4, 5])])
    state.reset([4, 4, 4, 5])
    assert not state.completed
    state.reset([4, 4, 5])
    assert state.completed


def test_stateful_disjunctive_copy_shares_its_progress_quirk_3():
    original = DisjunctiveConstraint([[1, 2], [1, 3]])
    original.update(1)
    copy = original.copy(stateful=True)
    copy.update(2)
    assert original.current_seq == [1, 2]          # the copy's token advanced the original too
    fresh = original.copy(stateful=False)
    assert fresh.current_seq == []


def test_disjunctive_refuses_a_phrase_that_prefixes_another():
    with pytest.raises(ValueError, match="complete subset"):
        DisjunctiveConstraint([[1, 2], [1, 2, 3]])


def test_a_forced_word_outside_the_vocabulary_is_named_before_decoding():
    """force_words_ids=[[id beyond the vocabulary]] ended in an IndexError inside the scorer."""
    import numpy as np

    from refdecode import generate
    from refdecode.model.stand_ins import TableModel

    model = TableModel(np.zeros((5, 5), dtype=np.float32), eos_token_id=0)
    for words in ([[7]], [[[1], [2, 9]]]):
        with pytest.raises(ValueError, match=r"`force_words_ids` / `constraints` have to hold token ids in \[0, 5\)"):
            generate(model, np.array([[1]]), max_new_tokens=3, num_beams=2, force_words_ids=words)
