"""refdecode.decoding.beam.constrained_beam_scorer: banks, the round robin over them, and the best of the highest bank."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from refdecode.decoding.beam.constrained_beam_scorer import bank_round_robin


def test_bank_round_robin_takes_each_banks_best_first():
    banks = np.array([0, 0, 1, 1, 2])
    scores = np.array([-1.0, -1.5, -5.0, -6.0, -9.0], dtype=np.float32)
    # sorted by 100*bank + score: bank 2 (-9), bank 1 (-5, -6), bank 0 (-1, -1.5); round 0: 4, 2, 0; round 1: 3, 1
    assert bank_round_robin(banks, scores, 5).tolist() == [4, 2, 0, 3, 1]
    assert bank_round_robin(banks, scores, 2).tolist() == [4, 2]


@given(banks=st.lists(st.integers(0, 6), min_size=1, max_size=16), n=st.integers(1, 8), data=st.data())
def test_round_robin_keeps_the_best_of_the_highest_bank(banks, n, data):
    """While scores stay within 100 nats of each other, the most advanced candidate always survives."""
    scores = np.array(data.draw(st.lists(st.floats(-40.0, 0.0, width=32), min_size=len(banks), max_size=len(banks))),
                      dtype=np.float32)
    banks = np.array(banks)
    keep = bank_round_robin(banks, scores, n)
    assert len(keep) == min(n, len(banks)) and len(set(keep.tolist())) == len(keep)
    zipped = (banks * 100).astype(np.float32) + scores      # the sort key, float32: near-ties collapse there
    assert banks[keep[0]] == banks.max() and zipped[keep[0]] == zipped[banks == banks.max()].max()
