"""refdecode.processors.transformers5: 5.x's repetition penalty is 4.38.2's rule on each row without its padding.

The golden comparison against transformers 5.23.0 is tests/test_semantics5.py (``generate(semantics="5")``);
here the rule itself, by hand-sized rows and against 4.38.2's rule on the unpadded tokens.
"""

from __future__ import annotations

import numpy as np
import pytest

from refdecode.processors import logits_process
from refdecode.processors.transformers5 import (RepetitionPenaltyLogitsProcessor, padding_lengths,
                                                repetition_penalty_process, repetition_penalty_processor)


def test_padding_is_not_seen():
    """Row 1 is left-padded with eos (3): 4.38.2 lowers eos there, 5.x does not (the parity page's example)."""
    ids = np.array([[1, 2, 1], [3, 3, 2]])
    scores = np.array([[0.5, 1.0, 1.0, 2.0]] * 2, dtype=np.float32)
    out = repetition_penalty_process(ids, scores, 1.5, np.array([0, 2]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out[1], np.float32([0.5, 1.0, 1.0 / 1.5, 2.0]))
    np.testing.assert_array_equal(logits_process.repetition_penalty_process(ids, scores, 1.5)[1],
                                  np.float32([0.5, 1.0, 1.0 / 1.5, 2.0 / 1.5]))


def test_each_row_is_the_4_38_rule_on_its_unpadded_tokens():
    rng = np.random.default_rng(5)
    for _ in range(30):
        batch, length, vocab = 3, int(rng.integers(1, 8)), int(rng.integers(3, 9))
        ids = rng.integers(0, vocab, (batch, length))
        scores = rng.standard_normal((batch, vocab)).astype(np.float32)
        ignore = rng.integers(0, length + 1, batch)
        out = repetition_penalty_process(ids, scores, 1.3, ignore)
        for b in range(batch):
            seen = set(ids[b, ignore[b]:].tolist())
            want = [s / np.float32(1.3) if v in seen and s >= 0 else s * np.float32(1.3) if v in seen else s
                    for v, s in enumerate(scores[b])]
            np.testing.assert_array_equal(out[b], np.float32(want))
        np.testing.assert_array_equal(repetition_penalty_process(ids, scores, 1.3, 0),
                                      logits_process.repetition_penalty_process(ids, scores, 1.3))


def test_the_processor_validates_and_does_not_mutate():
    ids, scores = np.array([[0, 1], [1, 1]]), np.ones((2, 3), dtype=np.float32)
    before = scores.copy()
    out = RepetitionPenaltyLogitsProcessor(2.0, np.array([1, 0]))(ids, scores)
    np.testing.assert_array_equal(scores, before)
    np.testing.assert_array_equal(out, [[1.0, 0.5, 1.0], [1.0, 0.5, 1.0]])
    np.testing.assert_array_equal(RepetitionPenaltyLogitsProcessor(2.0)(ids, scores),
                                  logits_process.RepetitionPenaltyLogitsProcessor(2.0)(ids, scores))
    for bad in (-1, np.array([[1]]), np.array([0.5]), "2"):
        with pytest.raises(ValueError, match="prompt_ignore_length"):
            RepetitionPenaltyLogitsProcessor(2.0, bad)
    with pytest.raises(ValueError, match="penalty"):
        RepetitionPenaltyLogitsProcessor(0.0, 1)


def test_padding_lengths_as_5_23_builds_them():
    """The first unmasked position of each row (0 for an all-zero row), repeated for the beams of each prompt."""
    mask = np.array([[0, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]])
    np.testing.assert_array_equal(padding_lengths(mask, 2), [2, 2, 0, 0, 0, 0])
    assert padding_lengths(None, 2) is None
    processor = repetition_penalty_processor(1.3, mask, 1)
    np.testing.assert_array_equal(processor.prompt_ignore_length, [2, 0, 0])
    assert repetition_penalty_processor(1.3, None, 4).prompt_ignore_length is None
