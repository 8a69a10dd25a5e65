"""refdecode.model.fast against the plain refdecode.model.gpt2 (and, through it, transformers 4.38.2 goldens).

The plain forward pass is what ``GPT2`` runs by default, so tests/model/test_gpt2.py checks it against the
transformers goldens. Here: (1) the plain path passes the same goldens, (2) each in-place
kernel gives the plain expression's bits, (3) the blocked attention and the few-row products agree with the
plain functions to float32 rounding, for every branch (block boundaries, cached prefixes, padding, scaling
options, C- and F-ordered weights), and (4) generate() picks the same tokens either way.

Why "to float32 rounding" and not bit for bit: the blocked attention sums each softmax row over the keys
a query may see rather than over all S + T of them (NumPy sums pairwise, so the grouping changes), and
(W^T @ x^T)^T is a different OpenBLAS kernel than x @ W.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import GOLDEN, MODELS
from numeric_checks import rel_err
from hypothesis import given
from hypothesis import strategies as st

import refdecode.model.fast.forward as fast
from refdecode.model.fast import products
from refdecode import GenerationConfig, generate
from refdecode.model.config import GPT2Config
from refdecode.model.gpt2 import attend, attention_scores, layer_norm, linear
from refdecode.model.modeling import GPT2
from refdecode.numerics import gelu_new, softmax
from random_models import random_model

GOLDEN_MODELS = ["save_pretrained", "hub", "f16_gelu", "bf16_relu"]
LOGITS_RTOL = 1e-5  # fast vs plain, relative to the largest |logit|: float32 rounding, 10x below the golden RTOL


def both(model: GPT2, ids: np.ndarray, prefix: np.ndarray | None = None, **kwargs):
    """(plain logits, fast logits, plain cache, fast cache): each path first prefills ``prefix`` (if any)
    into its own cache, then runs ``ids`` after it."""
    out = []
    for forward in ("plain", "fast"):
        m = GPT2(model.config, model.params, forward=forward)  # the same weights, either forward pass
        cache = None
        if prefix is not None:
            cache = m.new_cache(prefix.shape[0], prefix.shape[1] + ids.shape[1])
            m(prefix, past_key_values=cache)
        r = m(ids, past_key_values=cache, **kwargs)
        out.append((r.logits, r.past_key_values))
    (a, ca), (b, cb) = out
    return a, b, ca, cb


# ----------------------------------------------------------------------------------------------------
# (1) the plain path still matches transformers
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", GOLDEN_MODELS)
def test_plain_path_matches_transformers(name):
    g = np.load(GOLDEN / f"model_{name}.npz")
    assert json.loads(str(g["meta"]))["format_version"] == 1
    model = GPT2.from_pretrained(GOLDEN / "models" / name, forward="plain")
    assert rel_err(model(g["single_input_ids"]).logits, g["single_logits"]) <= 1e-4
    out = model(g["batch_input_ids"], attention_mask=g["batch_attention_mask"])
    assert rel_err(out.logits, g["batch_logits"]) <= 1e-4


@pytest.mark.parametrize("name", GOLDEN_MODELS)
def test_fast_equals_plain_on_golden_checkpoints(name):
    g = np.load(GOLDEN / f"model_{name}.npz")
    model = GPT2.from_pretrained(GOLDEN / "models" / name)
    a, b, _, _ = both(model, g["single_input_ids"])
    assert rel_err(b, a) <= LOGITS_RTOL
    a, b, _, _ = both(model, g["batch_input_ids"], attention_mask=g["batch_attention_mask"])
    assert rel_err(b, a) <= LOGITS_RTOL


# ----------------------------------------------------------------------------------------------------
# (2) in-place kernels: the same bits as the plain expressions
# ----------------------------------------------------------------------------------------------------


finite32 = st.floats(-60, 60, width=32)


@given(st.lists(finite32, min_size=1, max_size=40), st.integers(1, 3))
def test_softmax_in_place_is_bitwise_softmax(values, rows):
    x = np.tile(np.array(values, dtype=np.float32), (rows, 1))
    want = softmax(x)
    got = fast.softmax_(x.copy())
    assert got.dtype == np.float32 and np.array_equal(got, want)


@given(st.lists(st.floats(-20, 20, width=32), min_size=1, max_size=64))
def test_gelu_new_in_place_is_bitwise_gelu_new(values):
    x = np.array(values, dtype=np.float32).reshape(1, -1)
    got = fast.gelu_new_(x.copy())
    assert got.dtype == np.float32 and np.array_equal(got, gelu_new(x))


def test_gelu_by_rows_is_bitwise_gelu_new_on_a_large_array():
    x = np.random.default_rng(0).standard_normal((70, 300), dtype=np.float32) * np.float32(4.0)
    assert np.array_equal(fast.by_rows(fast.gelu_new_, x.copy(), rows=32), gelu_new(x))


def test_layer_norm_in_place_is_bitwise_and_leaves_x_alone():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((5, 48), dtype=np.float32), rng.standard_normal(48, dtype=np.float32), \
        rng.standard_normal(48, dtype=np.float32)
    x0 = x.copy()
    got = fast.layer_norm_(x, w, b, 1e-5)
    assert np.array_equal(got, layer_norm(x0, w, b, 1e-5)) and np.array_equal(x, x0) and got.dtype == np.float32


@pytest.mark.parametrize("rows", [1, 2, 4, fast.FEW_ROWS, fast.FEW_ROWS + 1, 40])
@pytest.mark.parametrize("order", ["C", "F"])
def test_fast_linear_equals_plain_linear(rows, order):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 96), dtype=np.float32)
    w = np.asarray(rng.standard_normal((96, 200), dtype=np.float32), order=order)
    b = rng.standard_normal(200, dtype=np.float32)
    got = fast.linear(x, w, b)
    assert got.dtype == np.float32 and got.flags.c_contiguous and got.shape == (rows, 200)
    np.testing.assert_allclose(got, linear(x, w, b), rtol=0, atol=2e-5)


@pytest.mark.parametrize("rows", [2, 4, 11, fast.FEW_ROWS])
def test_few_rows_product_in_blocks_under_openblas_small_matrix_bound(monkeypatch, rows):
    """Every block is one OpenBLAS call with M * N * K under 100**3 (its small-matrix kernel, no packed copy), the
    blocks cover W^T's rows once (a ragged last block included), and the product is x @ W^T.T to rounding."""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 768), dtype=np.float32)
    wt = rng.standard_normal((2304 + 37, 768), dtype=np.float32)
    calls = []
    matmul = np.matmul

    def recording(a, b, out):
        calls.append((a.shape, b.shape))
        return matmul(a, b, out=out)

    monkeypatch.setattr(fast.np, "matmul", recording)
    got = fast.few_rows_product(x, wt)
    monkeypatch.undo()
    assert got.shape == (rows, wt.shape[0]) and got.dtype == np.float32
    assert all(a[0] * b[1] * a[1] <= fast.SMALL_GEMM_MNK <= 100**3 for a, b in calls), calls
    assert sum(a[0] for a, _ in calls) == wt.shape[0] and len(calls) > 1
    assert rel_err(got, x @ wt.T) <= LOGITS_RTOL  # float32 rounding: another kernel groups the sums


@pytest.mark.parametrize("use_copy", [True, False])
def test_few_row_logits_take_the_row_major_head_copy_only_when_measured_faster(monkeypatch, model64, use_copy):
    """Greedy (one row) never makes the row-major copy of a column-major head; beams (4 rows) make it once, and keep
    it, only if the calibration chose a form on it (forced here either way); the logits agree with plain."""
    monkeypatch.setattr(products, "calibrate_rows",
                        lambda shape, order, bucket, other: ("blocks", 1, True) if use_copy and other
                        else ("matmul", 4, False))
    params = {k: v for k, v in model64.params.items() if k != "head_rows"}  # without another test's copy
    params["wte"] = np.asfortranarray(params["wte"])  # wte.T row-major: the head's W as AVX2 machines store it
    fast_model = GPT2(model64.config, params, forward="fast")
    fast_model(np.array([[5]]))
    assert "head_rows" not in params
    ids = np.random.default_rng(4).integers(0, 97, size=(4, 1))
    got = fast_model(ids).logits
    assert ("head_rows" in params) == use_copy
    if use_copy:
        rows = params["head_rows"]
        assert rows.flags.c_contiguous and np.array_equal(rows, params["wte"])
        fast_model(ids)
        assert params["head_rows"] is rows
    plain = GPT2(model64.config, model64.params, forward="plain")(ids).logits
    assert got.dtype == np.float32 and rel_err(got, plain) <= LOGITS_RTOL


# ----------------------------------------------------------------------------------------------------
# (3) blocked attention and the whole forward pass: equal to float32 rounding
# ----------------------------------------------------------------------------------------------------


@given(S=st.integers(0, 20), T=st.integers(1, 40), block=st.integers(1, 16), D=st.sampled_from([4, 8, 16]),
       inverse_layer=st.booleans(), reorder=st.booleans(), seed=st.integers(0, 2**16))
def test_blocked_attention_equals_full_masked_attention(S, T, block, D, inverse_layer, reorder, seed):
    cfg = GPT2Config(n_embd=2 * D, n_head=2, scale_attn_by_inverse_layer_idx=inverse_layer,
                     reorder_and_upcast_attn=reorder)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((2, 2, T, D), dtype=np.float32)
    k, v = (rng.standard_normal((2, 2, S + T, D), dtype=np.float32) for _ in range(2))
    want = attend(attention_scores(q, k, 3, cfg), v, None)
    got = fast.attend_causal_blocked(q, k, v, 3, cfg, block_size=block)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)


def test_scale_folding_is_used_only_where_it_is_exact():
    assert fast._scale_is_exact(64, GPT2Config())  # GPT-2: 1/8
    assert fast._scale_is_exact(16, GPT2Config())
    assert not fast._scale_is_exact(32, GPT2Config())  # 1/sqrt(32) is not a power of two
    assert not fast._scale_is_exact(8, GPT2Config())
    assert not fast._scale_is_exact(64, GPT2Config(scale_attn_by_inverse_layer_idx=True))
    assert not fast._scale_is_exact(64, GPT2Config(reorder_and_upcast_attn=True))


@pytest.fixture(scope="module")
def model64():
    """head_dim 64 like GPT-2 (exact scale folding), long enough for several query blocks."""
    return random_model(n_embd=128, n_head=2, n_positions=300)


@pytest.mark.parametrize("T", [1, 2, 63, 64, 65, 150])
@pytest.mark.parametrize("logits_to_keep", [0, 1, 3])
def test_fast_prefill_equals_plain(model64, T, logits_to_keep):
    """All logits or the last few (the fast path then runs the last layer on those rows only); the cache
    holds every token's keys and values either way."""
    ids = np.random.default_rng(T).integers(0, 97, size=(2, T))
    keep = min(logits_to_keep, T)
    a, b, ca, cb = both(model64, ids, logits_to_keep=keep)
    assert b.dtype == np.float32 and b.shape == (2, keep or T, 97) and rel_err(b, a) <= LOGITS_RTOL
    assert ca.length == cb.length == T
    for layer in range(2):
        np.testing.assert_allclose(cb.keys(layer), ca.keys(layer), rtol=0, atol=1e-4)
        np.testing.assert_allclose(cb.values(layer), ca.values(layer), rtol=0, atol=1e-4)


def test_fast_cached_prefill_equals_plain(model64):
    """A 30-token prefix in the cache, then 70 new tokens at once: the query blocks start after S = 30 keys."""
    rng = np.random.default_rng(5)
    prefix, ids = rng.integers(0, 97, size=(3, 30)), rng.integers(0, 97, size=(3, 70))
    a, b, ca, cb = both(model64, ids, prefix=prefix)
    assert rel_err(b, a) <= LOGITS_RTOL and ca.length == cb.length == 100


@pytest.mark.parametrize("rows", [1, 4, 20])
def test_fast_decoding_steps_equal_plain_for_few_and_many_rows(model64, rows):
    rng = np.random.default_rng(rows)
    a, b, _, _ = both(model64, rng.integers(0, 97, size=(rows, 1)), prefix=rng.integers(0, 97, size=(rows, 9)))
    assert rel_err(b, a) <= LOGITS_RTOL


def test_fast_left_padded_batch_equals_plain_at_every_position(model64):
    """With padding the fast path keeps the plain attention, so even the (unused) pad positions agree."""
    ids = np.random.default_rng(7).integers(0, 97, size=(2, 80))
    mask = np.ones((2, 80), dtype=np.int64)
    mask[0, :13] = 0
    a, b, _, _ = both(model64, ids, attention_mask=mask)
    assert rel_err(b, a) <= LOGITS_RTOL
    a, b, _, _ = both(model64, ids, attention_mask=mask, logits_to_keep=2)
    assert b.shape == (2, 2, 97) and rel_err(b, a) <= LOGITS_RTOL


def test_row_major_weights_take_the_plain_products_and_agree():
    """mmap=True keeps weights as stored (row-major): linear falls back to x @ W."""
    c_order, f_order = random_model(column_major=False, seed=3), random_model(column_major=True, seed=3)
    assert not c_order.params["h"][0]["attn"]["c_attn"]["weight"].flags.f_contiguous
    ids = np.random.default_rng(0).integers(0, 97, size=(1, 20))
    np.testing.assert_allclose(c_order(ids).logits, f_order(ids).logits, rtol=0, atol=1e-4)


def test_every_fast_intermediate_is_float32(monkeypatch):
    seen = []

    def recording(name, f):
        def wrapper(*args, **kwargs):
            result = f(*args, **kwargs)
            seen.append((name, result.dtype))
            return result
        return wrapper

    for name in ("linear", "layer_norm_", "attend_causal_blocked", "softmax_", "gelu_new_"):
        monkeypatch.setattr(fast, name, recording(name, getattr(fast, name)))
    model = random_model(n_positions=100)
    cache = model.new_cache(1, 41)
    assert model(np.arange(40).reshape(1, 40), past_key_values=cache).logits.dtype == np.float32  # prefill
    assert model(np.array([[3]]), past_key_values=cache).logits.dtype == np.float32  # a decoding step
    assert {name for name, _ in seen} == {"linear", "layer_norm_", "attend_causal_blocked", "softmax_", "gelu_new_"}
    assert all(dtype == np.float32 for _, dtype in seen), seen


# ----------------------------------------------------------------------------------------------------
# (4) generate: the same tokens either way; loading: column-major weights hold the file's values
# ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shakespeare():
    return {forward: GPT2.from_pretrained(MODELS / "tiny-shakespeare", forward=forward)
            for forward in ("plain", "fast")}


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    dict(do_sample=False, max_new_tokens=30),
    dict(do_sample=False, num_beams=4, max_new_tokens=20, num_return_sequences=2),
    dict(do_sample=True, top_k=50, top_p=0.9, temperature=0.8, max_new_tokens=30),
])
def test_generate_gives_the_same_tokens_on_both_paths(shakespeare, kwargs):
    ids = np.array([[5, 622, 2662, 46, 25, 198], [1722, 13, 4522, 12, 9, 11]])  # a batch of two prompts
    out = {}
    for forward, model in shakespeare.items():
        out[forward] = generate(model, ids, generation_config=GenerationConfig(**kwargs), seed=0,
                                output_scores=True, return_dict_in_generate=True)
    assert np.array_equal(out["fast"].sequences, out["plain"].sequences)
    for s_fast, s_plain in zip(out["fast"].scores, out["plain"].scores):
        finite = np.isfinite(s_plain)
        assert np.array_equal(finite, np.isfinite(s_fast))
        np.testing.assert_allclose(s_fast[finite], s_plain[finite], rtol=0, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("lookup", [2, 10])
def test_prompt_lookup_gives_the_same_tokens_on_both_paths(shakespeare, lookup):
    """Prompt lookup's verification passes (2..11 rows, the few-row products of fast.linear) pick greedy's tokens
    on the fast path as on the plain one."""
    ids = np.array([[5, 622, 2662, 46, 25, 198, 5, 622, 2662, 46, 25, 198, 5, 622]])  # a repeated line
    out = {forward: generate(model, ids, max_new_tokens=24, prompt_lookup_num_tokens=lookup)
           for forward, model in shakespeare.items()}
    plain_greedy = generate(shakespeare["plain"], ids, max_new_tokens=24)
    assert np.array_equal(out["fast"], out["plain"]) and np.array_equal(out["plain"], plain_greedy)
