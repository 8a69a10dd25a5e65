"""Contrastive search and the hidden-state / attention outputs: golden parity with transformers 4.38.2, properties.

Golden cases come from ``tools/golden/make_contrastive_golden.py`` (see its docstring): 43 contrastive
searches and 9 greedy / sample / beam search calls with ``output_hidden_states`` and ``output_attentions``,
on the tiny random GPT-2s of ``tests/golden/models/decode-*``. Sequences and beam indices equal; scores,
hidden states and attention weights within 1e-4.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import GOLDEN
from hypothesis import given
from hypothesis import strategies as st
from decode_golden import any_model, check, check_scores, golden, golden_model, replay

from refdecode.decoding.contrastive_search import contrastive_search, degeneration_penalty, rank_candidates
from refdecode.generate import generate
from refdecode.decoding.greedy import greedy_search
from refdecode.model.modeling import GPT2
from refdecode.model.stand_ins import TableModel

FILE = "decode_contrastive.npz"
CASES = golden(FILE)[0]["cases"]


def test_golden_meta():
    meta, _ = golden(FILE)
    assert meta["transformers"] == "4.38.2" and meta["format_version"] == 1
    modes = [c["mode"] for c in CASES]
    assert modes.count("contrastive") >= 40 and {"greedy", "sample", "beam_search"} <= set(modes)
    assert sum("hidden_steps" in c for c in CASES) >= 12


def _steps(arrays: dict, cid: str, name: str, n_steps: int) -> list[list[np.ndarray]]:
    layers = sorted({k.rsplit("/", 1)[1] for k in arrays if k.startswith(f"{cid}/{name}/00/")})
    return [[arrays[f"{cid}/{name}/{i:02d}/{j}"] for j in layers] for i in range(n_steps)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['id']}-{c['mode']}")
def test_golden(case):
    _, arrays = golden(FILE)
    cid = case["id"]
    draw = replay(arrays, cid, case["n_draws"]) if case["n_draws"] else None
    out = generate(golden_model(case["model"]), arrays[f"{cid}/input_ids"].astype(np.int64),
                   attention_mask=arrays[f"{cid}/attention_mask"].astype(np.int64), draw=draw, **case["kwargs"])
    check(f"{cid} sequences", out.sequences, arrays[f"{cid}/sequences"], True)
    if f"{cid}/beam_indices" in arrays:
        check(f"{cid} beam_indices", out.beam_indices, arrays[f"{cid}/beam_indices"], True)
        check(f"{cid} sequences_scores", out.sequences_scores, arrays[f"{cid}/sequences_scores"], False)
    check_scores(cid, out.scores, arrays)
    for name, key in (("hidden_states", "hidden_steps"), ("attentions", "attention_steps")):
        if key not in case:
            assert getattr(out, name) is None
            continue
        expected = _steps(arrays, cid, name, case[key])
        ours = getattr(out, name)
        assert len(ours) == len(expected), f"{cid} {name}: {len(ours)} steps, golden {len(expected)}"
        for i, (mine, theirs) in enumerate(zip(ours, expected)):
            assert len(mine) == len(theirs)
            for j, (a, b) in enumerate(zip(mine, theirs)):
                assert a.dtype == np.float32
                check(f"{cid} {name} step {i} layer {j}", a, b, False)


# ---- the pieces, by hand ------------------------------------------------------------------------------


def test_degeneration_penalty_is_the_max_cosine_over_the_context():
    ctx = np.array([[[3.0, 4.0], [0.0, -1.0]]], dtype=np.float32)
    cands = np.array([[[6.0, 8.0], [0.0, 1.0], [-1.0, 0.0]]], dtype=np.float32)
    # cand 0 repeats context 0 (cos 1); cand 1: cos with (3,4)/5 = 0.8, with (0,-1) = -1; cand 2: -0.6 and 0
    assert np.allclose(degeneration_penalty(ctx, cands), [[1.0, 0.8, 0.0]])


def test_ranking_trades_probability_for_novelty_and_takes_the_first_of_equals():
    ctx = np.array([[[1.0, 0.0]]], dtype=np.float32)
    cands = np.array([[[1.0, 0.0], [0.0, 1.0]]], dtype=np.float32)
    assert rank_candidates(ctx, cands, np.array([[0.9, 0.1]], dtype=np.float32), 0.3)[0] == 0   # .63-.3 > .07
    assert rank_candidates(ctx, cands, np.array([[0.6, 0.4]], dtype=np.float32), 0.5)[0] == 1   # .3-.5 < .2
    assert rank_candidates(ctx, cands[:, ::-1], np.array([[0.5, 0.5]], dtype=np.float32), 0.0)[0] == 0


def test_contrastive_needs_hidden_states_and_use_cache():
    table = TableModel(np.zeros((4, 4), dtype=np.float32))
    with pytest.raises(TypeError):
        generate(table, np.array([[1]]), penalty_alpha=0.5, top_k=2, max_new_tokens=2)
    fast = GPT2.from_pretrained(GOLDEN / "models" / "decode-a", forward="fast")
    with pytest.raises(ValueError, match="plain forward pass"):
        generate(fast, np.array([[1, 2]]), penalty_alpha=0.5, top_k=2, max_new_tokens=2)
    with pytest.raises(ValueError, match="use_cache"):
        generate(golden_model("decode-a"), np.array([[1, 2]]), penalty_alpha=0.5, top_k=2, max_new_tokens=2,
                 use_cache=False)


@given(seed=st.integers(0, 10**6), top_k=st.integers(2, 6), steps=st.integers(1, 6), rows=st.integers(1, 3))
def test_penalty_alpha_zero_is_greedy(seed, top_k, steps, rows):
    """alpha = 0 ranks the k candidates by probability alone: greedy search's tokens (the mode needs alpha > 0,
    so the loop is called directly). GPT-2s and Llamas (their hidden states feed the degeneration penalty)."""
    rng = np.random.default_rng(seed)
    model = any_model(["decode-a", "decode-b", "decode-c", "llama-gqa-tied", "qwen2-bias"][seed % 5])
    ids = rng.integers(1, model.config.vocab_size, size=(rows, 4))
    kw = dict(max_length=4 + steps, pad_token_id=model.generation_config.eos_token_id)
    ours = contrastive_search(model, ids, top_k=top_k, penalty_alpha=0.0, **kw)
    assert np.array_equal(ours, greedy_search(model, ids, **kw))


