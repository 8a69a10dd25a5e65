"""refdecode.decoding.beam.bookkeeping: candidates, the beam-index history, the rows and cache following the beams."""

from __future__ import annotations

import numpy as np
from refdecode.decoding.beam.bookkeeping import extend_beam_history, top_candidates


def test_top_candidates_tie_rule_lower_flat_index_first():
    total = np.zeros((1, 2, 3), dtype=np.float32)
    _, beams, tokens = top_candidates(total, 4)
    assert list(zip(beams[0], tokens[0], strict=True)) == [(0, 0), (0, 1), (0, 2), (1, 0)]


def test_history_helper():
    assert extend_beam_history(None, np.array([0])) is None
