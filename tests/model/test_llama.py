"""The Llama-family forward pass (refdecode/model/llama.py) against transformers 4.38.2, and ``generate`` on it.

Golden files (every mode but stop strings, which 4.38.2 lacks: tests/decoding cover them on llama-tiny): tests/golden/llama.npz and the checkpoints tests/golden/models/{llama-*, mistral-window, qwen2-bias},
from ``tools/golden/make_llama_golden.py`` (see its docstring); tests/golden/llama3.npz and models/llama3-rope from
transformers 4.43.0, the first release with the ``llama3`` rope type (``tools/golden/make_llama3_golden.py``). The logits must agree within 1e-4 of their scale
(max |logit|) at every real (non-padding) position of a left-padded prefill and of 6 cached steps; greedy, beam,
group beam and sample ``generate`` token for token (sampling replays torch's multinomial draws), scores and beam
``sequences_scores`` within 1e-4.
"""

from __future__ import annotations

import numpy as np
import pytest
from decode_golden import check, check_scores, golden, replay
from conftest import GOLDEN

from refdecode import from_pretrained, generate
from refdecode.model.llama import apply_rotary_pos_emb, repeat_kv, rms_norm, rope_cos_sin, rotate_half, swiglu_mlp
from refdecode.model.llama_config import LlamaConfig

RTOL = 1e-4  # relative to the logits' scale
OTHER_MODES = ("contrastive", "beam_sample", "constrained", "assisted", "prompt_lookup")


def cases(mode: str, file: str = "llama.npz") -> list[str]:
    meta, _ = golden(file)
    return [c["id"] for c in meta["cases"] if c["mode"] == mode]


def file_of(cid: str) -> str:
    return "llama3.npz" if cid.startswith("llama3-") else "llama.npz"


def model_of(cid: str):
    return from_pretrained(GOLDEN / "models" / cid.split("/")[0])


def assert_close(name: str, ours: np.ndarray, ref: np.ndarray, rows: np.ndarray | None = None) -> None:
    assert ours.dtype == np.float32 and ours.shape == ref.shape, (name, ours.dtype, ours.shape, ref.shape)
    diff = np.abs(ours - ref) if rows is None else np.abs(ours - ref)[rows]
    scale = np.abs(ref).max()
    assert diff.max() <= RTOL * scale, f"{name}: max |diff| {diff.max():.3g} > {RTOL} x {scale:.3g}"


def test_golden_file_says_where_it_comes_from():
    meta, _ = golden("llama.npz")
    assert meta["transformers"] == "4.38.2" and "make_llama_golden" in meta["regenerate"]
    assert len(cases("forward")) == 6 and all(len(cases(m)) == 6 for m in ("greedy", "beam", "group", "sample"))
    assert [len(cases(m)) for m in OTHER_MODES] == [2, 2, 2, 1, 2]
    meta3, _ = golden("llama3.npz")
    assert meta3["transformers"] == "4.43.0" and "make_llama3_golden" in meta3["regenerate"]


@pytest.mark.parametrize("cid", cases("forward") + cases("forward", "llama3.npz"))
def test_forward_prefill_and_cached_steps(cid):
    """Prefill of a left-padded batch, then cached steps: dynamic RoPE past max_position_embeddings included."""
    meta, arrays = golden(file_of(cid))
    model = model_of(cid)
    ids, mask = (arrays[f"{cid}/{k}"].astype(np.int64) for k in ("input_ids", "attention_mask"))
    out = model(ids, attention_mask=mask)
    assert_close(f"{cid} prefill", out.logits, arrays[f"{cid}/prefill_logits"], rows=mask.astype(bool))
    tokens, cache = arrays[f"{cid}/step_tokens"].astype(np.int64), out.past_key_values
    for step in range(meta["n_steps"]):
        mask = np.concatenate([mask, np.ones((2, 1), np.int64)], axis=1)
        out = model(tokens[:, step:step + 1], attention_mask=mask, past_key_values=cache)
        assert_close(f"{cid} step {step}", out.logits, arrays[f"{cid}/step{step}_logits"])
    assert cache.length == ids.shape[1] + meta["n_steps"]
    assert cache.n_head == model.config.num_key_value_heads  # GQA caches the key/value heads only


def run_generate(cid: str) -> None:
    meta, arrays = golden(file_of(cid))
    case = next(c for c in meta["cases"] if c["id"] == cid)
    prompt = cid if f"{cid}/input_ids" in arrays else f"{case['model']}/forward"  # the other modes: own prompts
    ids, mask = (arrays[f"{prompt}/{k}"].astype(np.int64) for k in ("input_ids", "attention_mask"))
    draw = replay(arrays, cid, case["n_draws"]) if case["n_draws"] else None
    extra = {"assistant_model": from_pretrained(GOLDEN / "models" / case["assistant"])} if case.get("assistant") else {}
    out = generate(model_of(cid), ids, attention_mask=mask, output_scores=True, return_dict_in_generate=True,
                   pad_token_id=0, draw=draw, **case["kwargs"], **extra)
    if draw is not None:
        assert not draw.remaining, "fewer draws than transformers made"
    check(f"{cid} sequences", out.sequences, arrays[f"{cid}/sequences"], True)
    if f"{cid}/sequences_scores" in arrays:
        check(f"{cid} sequences_scores", out.sequences_scores, arrays[f"{cid}/sequences_scores"], False)
    if f"{cid}/beam_indices" in arrays:  # (4.38.2's constrained beam search returns none)
        check(f"{cid} beam_indices", out.beam_indices, arrays[f"{cid}/beam_indices"], True)
    check_scores(cid, out.scores, arrays)


@pytest.mark.parametrize("cid", cases("greedy") + cases("beam") + cases("group") + cases("sample")
                         + cases("greedy", "llama3.npz"))
def test_generate_token_for_token(cid):
    run_generate(cid)


@pytest.mark.parametrize("cid", [c for m in OTHER_MODES for c in cases(m)])
def test_other_decoding_modes_token_for_token(cid):
    """Contrastive, beam sample, constrained, assisted (a Mistral drafting for a Llama), prompt lookup."""
    run_generate(cid)


# ---- the layers, by hand


def test_rms_norm_divides_by_root_mean_square():
    x = np.array([[1.0, -2.0, 2.0]], dtype=np.float32)                     # mean of squares 3
    y = rms_norm(x, np.array([1.0, 1.0, 2.0], np.float32), 1e-6)
    np.testing.assert_allclose(y, [[1 / 3**0.5, -2 / 3**0.5, 4 / 3**0.5]], rtol=1e-6)
    assert y.dtype == np.float32


def test_rotary_embedding_makes_scores_depend_on_relative_position():
    """q at m and k at n give the same product as q at m + 7 and k at n + 7 (RoPE's point)."""
    cfg = LlamaConfig(hidden_size=8, num_attention_heads=1)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 1, 1, 1, 8)).astype(np.float32)
    def score(m, n):
        cq, sq = rope_cos_sin(np.array([[m]]), cfg)
        ck, sk = rope_cos_sin(np.array([[n]]), cfg)
        return float((apply_rotary_pos_emb(q, q, cq, sq)[0] * apply_rotary_pos_emb(k, k, ck, sk)[1]).sum())
    assert score(5, 2) == pytest.approx(score(12, 9), rel=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 3), rel=1e-3)
    assert rotate_half(np.arange(4.0)).tolist() == [-2.0, -3.0, 0.0, 1.0]


def test_rope_scaling_linear_divides_positions_and_dynamic_enlarges_the_base_past_the_context():
    plain = LlamaConfig(hidden_size=8, num_attention_heads=1, max_position_embeddings=10)
    linear = LlamaConfig(hidden_size=8, num_attention_heads=1, max_position_embeddings=10,
                         rope_scaling={"type": "linear", "factor": 2.0})
    dynamic = LlamaConfig(hidden_size=8, num_attention_heads=1, max_position_embeddings=10,
                          rope_scaling={"type": "dynamic", "factor": 2.0})
    np.testing.assert_array_equal(rope_cos_sin(np.array([[6]]), linear)[0], rope_cos_sin(np.array([[3]]), plain)[0])
    short = np.array([[0, 9]])                                             # seq_len 10: no change
    np.testing.assert_array_equal(rope_cos_sin(short, dynamic)[1], rope_cos_sin(short, plain)[1])
    long = np.array([[0, 9], [3, 12]])                                     # seq_len 13 (the batch's largest)
    assert not np.allclose(rope_cos_sin(long, dynamic)[1][0], rope_cos_sin(short, plain)[1][0])


def test_repeat_kv_and_swiglu():
    kv = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
    assert repeat_kv(kv, 2)[0, :, 0, 0].tolist() == [0.0, 0.0, 2.0, 2.0, 4.0, 4.0]
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    eye = {"weight": np.eye(2, dtype=np.float32)}
    y = swiglu_mlp(x, eye, {"weight": np.full((2, 2), 0.5, np.float32)}, eye)  # silu(x) * 1.5
    np.testing.assert_allclose(y, [[1.5 / (1 + np.exp(-1.0)), 1.5 * 2 / (1 + np.exp(-2.0))]], rtol=1e-6)
    assert y.dtype == np.float32
