"""Tests for refdecode/processors/prompt_penalties.py: golden parity with transformers 4.38.2 (standalone; the
whole-generate cases, including classifier-free guidance, are in test_generate_processors.py),
hand-sized cases, argument validation."""

from __future__ import annotations

import numpy as np
import pytest
from processor_golden import check_standalone, standalone_cases

from refdecode.processors.prompt_penalties import (
    EncoderNoRepeatNGramLogitsProcessor,
    EncoderRepetitionPenaltyLogitsProcessor,
    encoder_no_repeat_ngram_process,
    encoder_repetition_penalty_process,
)
from refdecode.processors.guidance import UnbatchedClassifierFreeGuidanceLogitsProcessor

CLASSES = {"EncoderRepetitionPenaltyLogitsProcessor", "EncoderNoRepeatNGramLogitsProcessor"}


@pytest.mark.parametrize("case, arrays", standalone_cases("processors_more.npz", CLASSES))
def test_golden(case, arrays):
    check_standalone(case, arrays)


def test_golden_counts():
    names = [c.values[0]["name"] for c in standalone_cases("processors_more.npz", CLASSES)]
    assert names.count("encoder_repetition") == 12 and names.count("encoder_no_repeat_ngram") == 24


def test_encoder_repetition_touches_only_the_first_b_rows_as_transformers():
    """4.38.2 gathers/scatters the (B, T0) prompt into (N, V) scores: with N = 2B rows (beams), row 1 gets
    prompt 1's tokens and rows >= B nothing. Golden cases with rows_per_prompt 2 and 3 pin this."""
    s = np.ones((4, 4), dtype=np.float32)
    out = encoder_repetition_penalty_process(s, np.array([[0], [1]]), 2.0)
    assert out.tolist() == [[2, 1, 1, 1], [1, 2, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]


def test_encoder_no_repeat_ngram_matches_rows_to_prompts_consecutively():
    s = np.zeros((4, 3), dtype=np.float32)   # 2 prompts x 2 rows each
    out = encoder_no_repeat_ngram_process(np.array([[0], [0], [0], [0]]), s, np.array([[0, 1], [0, 2]]), 2)
    assert np.isneginf(out).tolist() == [[False, True, False], [False, True, False],
                                         [False, False, True], [False, False, True]]


@pytest.mark.parametrize("make, name", [
    (lambda: EncoderRepetitionPenaltyLogitsProcessor(2, np.array([[1]])), "encoder_repetition_penalty"),
    (lambda: EncoderRepetitionPenaltyLogitsProcessor(-1.0, np.array([[1]])), "encoder_repetition_penalty"),
    (lambda: EncoderRepetitionPenaltyLogitsProcessor(1.5, np.array([[1.5]])), "encoder_input_ids"),
    (lambda: EncoderNoRepeatNGramLogitsProcessor(0, np.array([[1]])), "encoder_no_repeat_ngram_size"),
    (lambda: EncoderNoRepeatNGramLogitsProcessor(2, np.zeros((1, 0), dtype=np.int64)), "encoder_input_ids"),
    (lambda: UnbatchedClassifierFreeGuidanceLogitsProcessor(float("nan"), None), "guidance_scale"),
    (lambda: encoder_repetition_penalty_process(np.zeros((1, 3), dtype=np.float32), np.array([[1], [2]]), 2.0),
     "encoder_input_ids"),
    (lambda: encoder_repetition_penalty_process(np.zeros((1, 3), dtype=np.float32), np.array([[5]]), 2.0),
     "encoder_input_ids"),
])
def test_invalid_arguments_name_the_parameter(make, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        make()
