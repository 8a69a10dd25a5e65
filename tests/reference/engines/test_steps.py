"""Prompt: what each processor sees of a row, and the processors on one row of scores."""

from __future__ import annotations

import numpy as np

from refdecode.model.stand_ins import TableModel
from refdecode.reference.engines.rules import EngineRules
from refdecode.reference.engines.steps import NextTokenLogits, Prompt, log_softmax, softmax

CFG = {"eos_token_id": [0], "pad_token_id": 0, "max_new_tokens": 3, "repetition_penalty": 2.0,
       "no_repeat_ngram_size": 0, "min_length": 0, "min_new_tokens": None}


def prompt(rules: EngineRules, row=(0, 0, 3, 4), mask=(0, 0, 1, 1), **cfg) -> Prompt:
    return Prompt(list(row), list(mask), {**CFG, **cfg}, rules, 1)


def test_contexts():
    p = prompt(EngineRules())
    assert p.context("row", [5]) == [0, 0, 3, 4, 5]
    assert p.context("unpadded", [5]) == [3, 4, 5]
    assert p.context("tail", [5]) == [4, 5]
    assert p.context("none", [5]) == [5]
    assert p.context("right_padded", [5]) == [3, 4, 0, 0, 5]


def test_penalty_over_padding_is_the_difference():
    """4.38.2 penalises the pad id 0 (it is in the row); 5.x / llama.cpp do not (it is padding)."""
    x = np.array([1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32)
    assert prompt(EngineRules()).process(x, [], np.float32(-np.inf))[0] == np.float32(0.5)
    assert prompt(EngineRules(rp_ctx="unpadded")).process(x, [], np.float32(-np.inf))[0] == np.float32(1.0)


def test_the_penalty_is_the_package_rule_on_what_each_context_sees():
    """Every context penalises each token it lists once (4.38.2's rule); "unpadded" is transformers 5.x's rule
    (processors/transformers5.py, semantics="5"): the same as the rule on the row without its left padding."""
    from refdecode.processors.transformers5 import repetition_penalty_process

    rng = np.random.default_rng(3)
    for _ in range(20):
        pad = int(rng.integers(0, 3))
        row = [0] * pad + [int(t) for t in rng.integers(0, 6, 4)]
        gen = [int(t) for t in rng.integers(0, 6, int(rng.integers(0, 3)))]
        x = rng.standard_normal(6).astype(np.float32)
        for ctx in ("row", "unpadded", "tail", "none", "right_padded"):
            p = prompt(EngineRules(rp_ctx=ctx), row=row, mask=[0] * pad + [1] * 4, repetition_penalty=1.3)
            seen = sorted(set(p.context(ctx, gen)))
            want = x.copy()
            want[seen] = np.where(x[seen] < 0, x[seen] * np.float32(1.3), x[seen] / np.float32(1.3))
            np.testing.assert_array_equal(p.process(x, gen, np.float32(-np.inf)), want)
        five = repetition_penalty_process(np.array([row + gen]), x[None], 1.3, pad)[0]
        np.testing.assert_array_equal(prompt(EngineRules(rp_ctx="unpadded"), row=row, mask=[0] * pad + [1] * 4,
                                             repetition_penalty=1.3).process(x, gen, np.float32(-np.inf)), five)


def test_process_is_out_of_place_and_masks_eos_until_min_length():
    x = np.zeros(5, dtype=np.float32)
    p = prompt(EngineRules(), repetition_penalty=1.0, min_new_tokens=2)
    y = p.process(x, [1], np.float32(-7))
    assert y[0] == -7 and (x == 0).all()
    assert p.process(x, [1, 2], np.float32(-7))[0] == 0


def test_min_length_5_lets_min_new_tokens_void_min_length():
    assert prompt(EngineRules(), min_length=9, min_new_tokens=0).min_gen == 5      # 9 - width 4
    assert prompt(EngineRules(min_length="5"), min_length=9, min_new_tokens=0).min_gen == 0


def test_beam_min_new_off_drops_the_minimum_in_beam_search_only():
    """OpenVINO GenAI O4: its beam search runs no LogitProcessor (no eos mask); greedy keeps min_new_tokens."""
    assert prompt(EngineRules(), min_new_tokens=3, num_beams=2).min_gen == 3
    assert prompt(EngineRules(beam_min_new=False), min_new_tokens=3, num_beams=2).min_gen == 0
    assert prompt(EngineRules(beam_min_new=False), min_new_tokens=3, num_beams=1).min_gen == 3


def test_ban_ngrams_waits_for_min_seen():
    """GenAI bans n-grams only once the context holds more than one token (sampler.cpp ``full_text.size() > 1``):
    with n = 1 a one-token context bans nothing there, and everything it holds under 4.38.2's rule."""
    p = prompt(EngineRules(ngram_ctx="unpadded"), row=(0, 3), mask=(0, 1), no_repeat_ngram_size=1)
    x = np.zeros(5, dtype=np.float32)
    assert p.ban_ngrams(x.copy(), [], np.float32(-1))[3] == -1
    assert (p.ban_ngrams(x.copy(), [], np.float32(-1), min_seen=2) == 0).all()
    assert p.ban_ngrams(x.copy(), [4], np.float32(-1), min_seen=2)[[3, 4]].tolist() == [-1, -1]


def test_trailing_pad_is_padding_reads_the_first_step_early():
    p = Prompt([3, 4, 0], [1, 1, 1], dict(CFG), EngineRules(trailing_pad_is_padding=True), 1)
    assert p.model_tokens([]) == [3, 4] and p.model_tokens([7]) == [3, 4, 0, 7]   # batch 1: mask all ones later
    p2 = Prompt([3, 4, 0], [1, 1, 1], dict(CFG), EngineRules(trailing_pad_is_padding=True), 2)
    assert p2.model_tokens([7]) == [3, 4, 7]


def test_log_softmax_softmax_float32():
    x = np.array([0.0, np.log(3.0), -np.inf], dtype=np.float32)
    assert log_softmax(x).dtype == np.float32 and np.allclose(np.exp(log_softmax(x))[:2], [0.25, 0.75])
    assert np.allclose(softmax(np.array([0.0, np.log(3.0)], dtype=np.float32)), [0.25, 0.75])


def test_next_token_logits_memoises():
    model = TableModel(np.eye(4, dtype=np.float32))
    logits = NextTokenLogits(model)
    first = logits((1, 2))
    assert first.dtype == np.float32 and first.argmax() == 2
    logits([1, 2])
    assert len(model.calls) == 1


def test_rp_window_sees_only_the_last_tokens():
    """mlx-lm M1: row (3, 4) + generated [5, 6], rp_window 2: only 5 and 6 are penalised (1.0 -> 0.5); 4.38.2's
    whole row penalises 0 (pads), 3, 4, 5 and 6."""
    x = np.ones(7, dtype=np.float32)
    windowed = prompt(EngineRules(rp_ctx="unpadded", rp_window=2)).process(x, [5, 6], np.float32(-np.inf))
    assert windowed.dtype == np.float32
    assert windowed.tolist() == [1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5]
    assert prompt(EngineRules()).process(x, [5, 6], np.float32(-np.inf)).tolist() == [0.5, 1.0, 1.0, 0.5, 0.5,
                                                                                         0.5, 0.5]
def test_tf_penalty_multiplies_by_the_reciprocal():
    """rp_reciprocal (TF's penalty): 4.125 * float32(1 / 1.3) is one float32 step from 4.125 / 1.3; negative
    scores are multiplied by the penalty under both rules, unseen tokens are untouched."""
    x = np.array([4.125, 1.0, -2.0, 3.0], dtype=np.float32)
    rows = {}
    for tf_rule in (False, True):
        p = prompt(EngineRules(rp_reciprocal=tf_rule), row=(0, 2), mask=(1, 1), repetition_penalty=1.3)
        rows[tf_rule] = p.process(x, [], np.float32(-np.inf))
        assert rows[tf_rule].dtype == np.float32
        assert rows[tf_rule][2] == np.float32(-2.0) * np.float32(1.3)
        assert rows[tf_rule][1] == x[1] and rows[tf_rule][3] == x[3]
    assert rows[False][0] == np.float32(4.125) / np.float32(1.3)
    assert rows[True][0] == np.float32(4.125) * np.float32(1 / 1.3)
    assert rows[True][0] != rows[False][0]


def test_tf_min_length_ignores_min_new_tokens():
    """min_length="tf": no MinNewTokens processor; min_length still counts the padded width (4 here)."""
    x = np.zeros(5, dtype=np.float32)
    masked = np.float32(-np.inf)
    assert prompt(EngineRules(), min_new_tokens=2).process(x, [], masked)[0] == masked
    assert prompt(EngineRules(min_length="tf"), min_new_tokens=2).process(x, [], masked)[0] == 0
    assert prompt(EngineRules(min_length="tf"), min_length=5).process(x, [], masked)[0] == masked
    assert prompt(EngineRules(min_length="tf"), min_length=5).process(x, [3], masked)[0] == 0


def test_the_ggml_activation_holds_for_one_call_and_moves_the_logits_a_little():
    """llama.cpp's fp16-table GELU (``activation="ggml_fp16"``): other logits by up to a few 1e-3, the shared
    activation table restored after each call (also when the call raises)."""
    from refdecode import GPT2
    from refdecode.numerics import ACT2FN, gelu, gelu_new

    from conftest import ROOT

    model = GPT2.from_pretrained(ROOT / "tests" / "golden" / "models" / "decode-b")
    assert model.config.activation_function == "gelu_new"
    exact, ggml = NextTokenLogits(model)([3, 4, 5]), NextTokenLogits(model, "ggml_fp16")([3, 4, 5])
    assert ACT2FN["gelu_new"] is gelu_new
    assert ggml.dtype == np.float32 and 0 < np.abs(ggml - exact).max() < 1e-2
    broken = NextTokenLogits(model, "ggml_fp16")
    try:
        broken([10 ** 6])                                  # an id outside the vocabulary: the model raises
    except (IndexError, ValueError):
        pass
    assert ACT2FN["gelu_new"] is gelu_new
    # a checkpoint with the erf GELU: llama.cpp computes its one (tanh) GELU through the table there too
    erf = GPT2.from_pretrained(ROOT / "tests" / "golden" / "models" / "decode-c")
    assert erf.config.activation_function == "gelu"
    moved = NextTokenLogits(erf, "ggml_fp16")([3, 4, 5]) - NextTokenLogits(erf)([3, 4, 5])
    assert 0 < np.abs(moved).max() < 1e-1 and ACT2FN["gelu"] is gelu
