"""Tests for refdecode/processors/serving_penalties.py: the presence and frequency penalties and logit bias (in no
version of transformers, so no golden file: hand-worked rows from OpenAI's formula, written inline), the inputs
left unchanged, float32, every bad argument's message, and a run through generate(..., logits_processor=...)."""

from __future__ import annotations

import numpy as np
import pytest

from refdecode import (
    FrequencyPenaltyLogitsProcessor,
    LogitBiasLogitsProcessor,
    LogitsProcessorList,
    PresencePenaltyLogitsProcessor,
    generate,
)
from refdecode.model.stand_ins import TableModel
from refdecode.processors.serving_penalties import (
    frequency_penalty_process,
    generated_token_counts,
    logit_bias_process,
    presence_penalty_process,
)

F32 = np.float32


def test_counts_skip_the_prompt_and_count_repeats():
    """Prompt [3, 3]; generated [0, 2, 0] and [1, 1, 1]: token 3 only in the prompt counts 0."""
    ids = np.array([[3, 3, 0, 2, 0], [3, 3, 1, 1, 1]])
    np.testing.assert_array_equal(generated_token_counts(ids, 2, 4), [[2, 0, 1, 0], [0, 3, 0, 0]])
    np.testing.assert_array_equal(generated_token_counts(ids, 5, 4), np.zeros((2, 4)))  # nothing generated yet


def test_frequency_penalty_subtracts_count_times_penalty_whatever_the_sign():
    """Counts [2, 0, 1, 0]: 1.0 - 2*0.5 = 0.0, -1.0 unchanged (count 0), -2.0 - 0.5 = -2.5 (a negative logit
    moves further down, unlike the repetition penalty, which multiplies it), 4.0 unchanged."""
    s = np.array([[1.0, -1.0, -2.0, 4.0]], dtype=F32)
    out = frequency_penalty_process(np.array([[3, 0, 2, 0]]), s, 0.5, 1)
    np.testing.assert_array_equal(out, [[0.0, -1.0, -2.5, 4.0]])
    assert out.dtype == np.float32


def test_negative_frequency_penalty_rewards_repetition():
    """Penalty -2 (the bottom of the range): token 1 seen three times gains 6."""
    out = frequency_penalty_process(np.array([[1, 1, 1]]), np.zeros((1, 3), dtype=F32), -2.0, 0)
    np.testing.assert_array_equal(out, [[0.0, 6.0, 0.0]])


def test_presence_penalty_subtracts_once_however_often():
    """Counts [2, 0, 1, 0]: tokens 0 and 2 lose 0.75 once each (token 0's two occurrences do not double it); token 3
    occurs only in the prompt, so it keeps 4.0."""
    s = np.array([[1.0, -1.0, -2.0, 4.0]], dtype=F32)
    out = presence_penalty_process(np.array([[3, 0, 2, 0]]), s, 0.75, 1)
    np.testing.assert_array_equal(out, [[0.25, -1.0, -2.75, 4.0]])
    assert out.dtype == np.float32


def test_openai_formula_frequency_then_presence_per_row():
    """Two rows, prompt length 1. Row 0 generated [1, 1]: token 1 gets 3.0 - 2*0.5 - 1.0 = 1.0. Row 1 generated
    [2, 0]: tokens 0 and 2 get -0.5 - 1.0 = -1.5 off."""
    ids = np.array([[0, 1, 1], [1, 2, 0]])
    s = np.array([[1.0, 3.0, 2.0], [1.0, 3.0, 2.0]], dtype=F32)
    out = LogitsProcessorList([FrequencyPenaltyLogitsProcessor(0.5, 1), PresencePenaltyLogitsProcessor(1.0, 1)])(ids, s)
    np.testing.assert_array_equal(out, [[1.0, 1.0, 2.0], [-0.5, 3.0, 0.5]])


def test_logit_bias_adds_per_token_in_every_row():
    """{0: -100, 2: 1.5}: -100 all but bans token 0; -inf stays -inf; token 1 untouched."""
    s = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, -np.inf]], dtype=F32)
    out = logit_bias_process(s, {0: -100.0, 2: 1.5})
    np.testing.assert_array_equal(out, [[-99.0, -1.0, 2.0], [-100.0, 2.0, -np.inf]])
    assert out.dtype == np.float32
    assert LogitBiasLogitsProcessor({0: -100.0, 2: 1.5}, vocab_size=3)(np.zeros((2, 1), int), s).tolist() == out.tolist()


def test_zero_penalties_and_empty_bias_leave_scores_unchanged():
    s = np.array([[1.5, -0.25, 3.0]], dtype=F32)
    ids = np.array([[0, 1, 1, 2]])
    for out in (frequency_penalty_process(ids, s, 0.0, 1), presence_penalty_process(ids, s, 0.0, 1),
                logit_bias_process(s, {})):
        np.testing.assert_array_equal(out, s)


def test_inputs_are_left_unchanged():
    s = np.array([[1.0, 2.0, 3.0]], dtype=F32)
    ids = np.array([[0, 1, 1]])
    before_s, before_ids = s.copy(), ids.copy()
    for proc in (FrequencyPenaltyLogitsProcessor(1.0, 0), PresencePenaltyLogitsProcessor(1.0, 0),
                 LogitBiasLogitsProcessor({1: 2.0})):
        out = proc(ids, s)
        assert out is not s
    np.testing.assert_array_equal(s, before_s)
    np.testing.assert_array_equal(ids, before_ids)


@pytest.mark.parametrize("cls, name", [(FrequencyPenaltyLogitsProcessor, "frequency_penalty"),
                                       (PresencePenaltyLogitsProcessor, "presence_penalty")])
def test_penalty_arguments(cls, name):
    for bad in (2.5, -2.01, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=rf"`{name}` has to be a float in \[-2.0, 2.0\], but is {bad}"):
            cls(bad, 0)
    with pytest.raises(TypeError, match=rf"`{name}` has to be a float in \[-2.0, 2.0\], but is str '1'"):
        cls("1", 0)
    for bad in (-1, 1.5, None):
        with pytest.raises(ValueError, match=r"`prompt_length` has to be an integer >= 0"):
            cls(1.0, bad)
    assert cls(2, 0)(np.array([[0]]), np.zeros((1, 2), F32)).tolist()[0][0] == -2.0  # an int is a number


def test_prompt_longer_than_input_ids_and_ids_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"`prompt_length` has to be at most input_ids.shape\[1\] = 2, but is 3"):
        FrequencyPenaltyLogitsProcessor(1.0, 3)(np.array([[0, 1]]), np.zeros((1, 2), F32))
    with pytest.raises(ValueError, match=r"`input_ids` has to hold token ids in \[0, 1\] \(vocab size\), but holds 5"):
        PresencePenaltyLogitsProcessor(1.0, 0)(np.array([[0, 5]]), np.zeros((1, 2), F32))
    with pytest.raises(ValueError, match=r"`input_ids` has to have shape \(batch, seq\)"):
        PresencePenaltyLogitsProcessor(1.0, 0)(np.array([[0], [1]]), np.zeros((1, 2), F32))
    with pytest.raises(TypeError, match="float32"):
        PresencePenaltyLogitsProcessor(1.0, 0)(np.array([[0]]), np.zeros((1, 2)))


def test_logit_bias_arguments():
    with pytest.raises(TypeError, match=r"`logit_bias` has to be a dict token id -> float, but is list"):
        LogitBiasLogitsProcessor([(0, 1.0)])
    with pytest.raises(ValueError, match=r"`logit_bias` has to have integer token ids >= 0 as keys, but has '0'"):
        LogitBiasLogitsProcessor({"0": 1.0})  # OpenAI's JSON keys are strings: convert them first
    with pytest.raises(ValueError, match=r"`logit_bias` has to have integer token ids >= 0 as keys, but has -1"):
        LogitBiasLogitsProcessor({-1: 1.0})
    for bad in (float("nan"), float("inf"), "1", None):
        with pytest.raises(ValueError, match=rf"`logit_bias` has to map token ids to finite floats, but maps 0 to"):
            LogitBiasLogitsProcessor({0: bad})
    with pytest.raises(ValueError, match=r"`logit_bias` has to hold token ids in \[0, 2\] \(vocab size\), but holds 3"):
        LogitBiasLogitsProcessor({3: 1.0}, vocab_size=3)
    with pytest.raises(ValueError, match=r"`logit_bias` has to hold token ids in \[0, 2\] \(vocab size\), but holds 3"):
        LogitBiasLogitsProcessor({3: 1.0})(np.array([[0]]), np.zeros((1, 3), F32))


TABLE = np.tile(np.array([0.1, 3.0, 2.0, 0.0], dtype=F32), (4, 1))  # the same logits after every token


def test_generate_runs_the_frequency_penalty_on_generated_tokens_only():
    """Logits [0.1, 3, 2, 0] at every step, prompt [1], penalty 2. Step 1: the prompt's 1 is not counted, so 1
    (3.0). Step 2: 1 counted once -> 1.0 < 2.0, so 2. Step 3: 1 -> 1.0, 2 -> 0.0: 1. Step 4: 1 -> -1.0, 2 -> 0.0,
    0 -> 0.1: 0. (Counting the prompt, as llama.cpp does, step 1 would give 1.0 < 2.0 and pick 2.)"""
    model = TableModel(TABLE)
    plain = generate(model, np.array([[1]]), max_new_tokens=4, pad_token_id=0)
    assert plain[0, 1:].tolist() == [1, 1, 1, 1]
    out = generate(model, np.array([[1]]), max_new_tokens=4, pad_token_id=0,
                   logits_processor=LogitsProcessorList([FrequencyPenaltyLogitsProcessor(2.0, prompt_length=1)]))
    assert out[0, 1:].tolist() == [1, 2, 1, 0]


def test_generate_with_presence_penalty_and_logit_bias():
    """Presence 1.5: step 1 picks 1 (3.0); then 1 -> 1.5 < 2.0, so 2; then 1 -> 1.5, 2 -> 0.5, 0 -> 0.1: 1 again
    (presence does not grow). A bias of +5 on token 3 makes it win every step instead (0 + 5 > 3)."""
    model = TableModel(TABLE)
    out = generate(model, np.array([[1]]), max_new_tokens=3, pad_token_id=0,
                   logits_processor=LogitsProcessorList([PresencePenaltyLogitsProcessor(1.5, 1)]))
    assert out[0, 1:].tolist() == [1, 2, 1]
    out = generate(model, np.array([[1]]), max_new_tokens=3, pad_token_id=0,
                   logits_processor=LogitsProcessorList([LogitBiasLogitsProcessor({3: 5.0}, vocab_size=4)]))
    assert out[0, 1:].tolist() == [3, 3, 3]
