"""Fast variants used by the decode loops give exactly what the plain versions beside them give.

Guards against a speed-up that changes results: beam_search ranks candidates with
``top_candidates_partitioned`` (partition + sort of a small pool) instead of a stable argsort of all
K*V scores; if its tie rule drifted (equal scores must go to the lower flat index ``beam*V + token``),
beams would silently differ from transformers on ties, which random logits almost never produce
and -inf / -1e9 padding produce all the time.
"""

import numpy as np
import pytest

from refdecode.beam_search import top_candidates, top_candidates_partitioned
from refdecode.checkpoint import read_header, read_tensor, read_tensor_column_major
from refdecode.kv_cache import KVCache


def assert_same(total, n):
    plain, fast = top_candidates(total, n), top_candidates_partitioned(total, n)
    for a, b in zip(plain, fast, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(20))
def test_partitioned_equals_full_sort_on_tie_heavy_scores(seed):
    """Scores drawn from a handful of values (plus -inf and -1e9), so ties cross the n-th place."""
    rng = np.random.default_rng(seed)
    batch, beams, vocab = rng.integers(1, 4), rng.integers(1, 5), rng.integers(1, 40)
    values = np.array([-np.inf, -1e9, -3.0, -1.0, -1.0, 0.0, -0.0], dtype=np.float32)
    total = rng.choice(values, size=(batch, beams, vocab)).astype(np.float32)
    for n in range(1, beams * vocab + 3):  # past K*V too: both return all K*V then
        assert_same(total, n)


@pytest.mark.parametrize("seed", range(5))
def test_partitioned_equals_full_sort_on_gpt2_sized_rows(seed):
    rng = np.random.default_rng(seed)
    total = rng.standard_normal((2, 4, 50257), dtype=np.float32)
    total[0, 1:] = -1e9  # the first step: beams 1.. start at -1e9
    assert_same(total, 8)


def test_reorder_skipping_unmoved_rows_matches_a_full_gather():
    rng = np.random.default_rng(0)
    for _ in range(50):
        B = int(rng.integers(1, 6))
        cache = KVCache(n_layer=2, batch_size=B, n_head=2, head_dim=3, capacity=5)
        for layer in range(2):
            kv = rng.standard_normal((B, 2, 4, 3), dtype=np.float32)
            cache.append(layer, kv, -kv)
        cache.advance(4)
        before = [(cache.keys(i).copy(), cache.values(i).copy()) for i in range(2)]
        beam_idx = rng.integers(0, B, size=B)
        cache.reorder(beam_idx)
        for i, (k, v) in enumerate(before):
            np.testing.assert_array_equal(cache.keys(i), k[beam_idx])
            np.testing.assert_array_equal(cache.values(i), v[beam_idx])


def test_column_major_read_holds_the_same_values(tmp_path):
    from safetensors.numpy import save_file

    w = np.random.default_rng(0).standard_normal((37, 5), dtype=np.float32)
    save_file({"w": w}, str(tmp_path / "w.safetensors"))
    info = read_header(tmp_path / "w.safetensors")["w"]
    for rows in (1, 4, 37, 100):
        got = read_tensor_column_major(tmp_path / "w.safetensors", info, rows_per_read=rows)
        assert got.flags.f_contiguous and got.dtype == np.float32
        np.testing.assert_array_equal(got, read_tensor(tmp_path / "w.safetensors", info))


# ----------------------------------------------------------------------------------------------------
# top-p sorting only the finite scores (what TopPLogitsWarper runs) == top_p_warp, bit for bit
# ----------------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from refdecode.logits_warp import TopPLogitsWarper, top_k_warp, top_p_warp, top_p_warp_finite  # noqa: E402


@given(seed=st.integers(0, 2**32 - 1), vocab=st.integers(1, 300), batch=st.integers(1, 3),
       top_k=st.integers(0, 60), top_p=st.sampled_from([0.0, 0.1, 0.5, 0.75, 0.9, 0.999, 1.0]),
       min_tokens=st.integers(1, 4), filter_value=st.sampled_from([-np.inf, -1e9, 0.0]),
       ties=st.booleans(), extra=st.sampled_from([None, "nan", "+inf", "all -inf"]))
@settings(deadline=None)
def test_top_p_on_finite_scores_is_bitwise_top_p(seed, vocab, batch, top_k, top_p, min_tokens, filter_value,
                                                   ties, extra):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((batch, vocab)).astype(np.float32) * np.float32(3.0)
    if ties:  # many equal scores, so the tie rule decides who straddles the cut
        scores = np.round(scores).astype(np.float32)
    if top_k:  # most of the row -inf, as after top-k
        scores = top_k_warp(scores, top_k)
    if extra == "nan":
        scores[0, 0] = np.nan
    elif extra == "+inf":
        scores[-1, -1] = np.inf
    elif extra == "all -inf":
        scores[0] = -np.inf
    with np.errstate(invalid="ignore"):
        want = top_p_warp(scores, top_p, filter_value, min_tokens)
        got = top_p_warp_finite(scores, top_p, filter_value, min_tokens)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)  # NaN == NaN here


@pytest.mark.parametrize("seed", range(5))
def test_top_p_on_finite_scores_is_bitwise_top_p_on_gpt2_sized_rows(seed):
    """V = 50257 after top_k=50, temperature 0.8: the sampling benchmark's case, through the warper class."""
    rng = np.random.default_rng(seed)
    scores = top_k_warp((rng.standard_normal((2, 50257)) * 4.0 / 0.8).astype(np.float32), 50)
    got = TopPLogitsWarper(0.9)(np.zeros((2, 1), dtype=np.int64), scores)
    np.testing.assert_array_equal(got, top_p_warp(scores, 0.9))
    assert 1 <= np.isfinite(got).sum(axis=1).min() and np.isfinite(got).sum(axis=1).max() <= 50


@pytest.mark.parametrize("pad", [0, 6])
def test_top_p_on_finite_scores_drops_a_token_whose_predecessors_mass_is_exactly_p(pad):
    """Dyadic probabilities make the cumulative sum hit 1 - p exactly: that token goes (<=, not <)."""
    scores = np.log(np.array([[0.5, 0.25, 0.125, 0.125]], dtype=np.float32))
    scores = np.concatenate([scores, np.full((1, pad), -np.inf, dtype=np.float32)], axis=1)  # as after top-k
    got = top_p_warp_finite(scores, 0.75)
    np.testing.assert_array_equal(got, top_p_warp(scores, 0.75))
    assert np.flatnonzero(np.isfinite(got[0])).tolist() == [0, 1]
