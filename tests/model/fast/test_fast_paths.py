"""The speed-ups inside the readable functions give exactly what the plain algorithm gives.

``top_candidates``, ``TopPLogitsWarper`` and ``multinomial`` each carry a speed-up inside them (a partition
before the sort, the rule on the finite scores only, a cumulative sum over the non-zero entries only). Each
is checked here, bit for bit, against the plain algorithm written out in this file (the version the
docstrings describe, and what these functions were before the speed-up).

Guards against a speed-up that changes results: if ``top_candidates``' tie rule drifted (equal scores
must go to the lower flat index ``beam*V + token``), beams would silently differ from transformers on
ties, which random logits almost never produce and -inf / -1e9 padding produce all the time.
"""

import numpy as np
import pytest

from refdecode.model.checkpoint import read_header, read_tensor
from refdecode.decoding.beam.bookkeeping import top_candidates
from refdecode.model.fast.layout import read_tensor_column_major
from refdecode.model.kv_cache import KVCache


def top_candidates_full_sort(total, n):
    """The plain rule: the first n of a stable argsort of all K*V negated scores."""
    batch, beams, vocab = total.shape
    flat = total.reshape(batch, beams * vocab)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :n]
    return np.take_along_axis(flat, order, axis=1), order // vocab, order % vocab


def assert_same(total, n):
    plain, fast = top_candidates_full_sort(total, n), top_candidates(total, n)
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
# TopPLogitsWarper (the rule on the finite scores where that is exact) == sorting every score, bit for bit
# ----------------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from refdecode.processors.logits_warp import TopPLogitsWarper, top_k_warp, top_p_warp  # noqa: E402
from refdecode.numerics import softmax  # noqa: E402
from refdecode.numerics.introsort import torch_cpu_sort_order  # noqa: E402


def top_p_full_sort(scores, top_p, filter_value=-np.inf, min_tokens_to_keep=1):
    """The plain rule on the whole batch: sort all V scores ascending in torch's CPU order (stable up to 16
    entries; libstdc++'s introsort above: torch_cpu_sort_order), drop the prefix of mass <= 1 - top_p."""
    vocab = scores.shape[1]
    order = torch_cpu_sort_order(scores)
    probs = softmax(np.take_along_axis(scores, order, axis=-1))
    cumulative = np.cumsum(probs, axis=-1, dtype=np.float64).astype(np.float32)
    remove_sorted = cumulative <= np.float32(1.0 - top_p)
    remove_sorted[:, max(vocab - min_tokens_to_keep, 0):] = False
    remove = np.empty_like(remove_sorted)
    np.put_along_axis(remove, order, remove_sorted, axis=-1)
    return np.where(remove, np.float32(filter_value), scores)


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
        want = top_p_full_sort(scores, top_p, filter_value, min_tokens)
        got = TopPLogitsWarper(top_p, filter_value, min_tokens)(np.zeros((batch, 1), dtype=np.int64), scores)
        assert np.array_equal(top_p_warp(scores, top_p, filter_value, min_tokens), got, equal_nan=True)  # the rule
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)  # NaN == NaN here


@pytest.mark.parametrize("seed", range(5))
def test_top_p_on_finite_scores_is_bitwise_top_p_on_gpt2_sized_rows(seed):
    """V = 50257 after top_k=50, temperature 0.8: the sampling benchmark's case, through the warper class."""
    rng = np.random.default_rng(seed)
    scores = top_k_warp((rng.standard_normal((2, 50257)) * 4.0 / 0.8).astype(np.float32), 50)
    got = TopPLogitsWarper(0.9)(np.zeros((2, 1), dtype=np.int64), scores)
    np.testing.assert_array_equal(got, top_p_full_sort(scores, 0.9))
    assert 1 <= np.isfinite(got).sum(axis=1).min() and np.isfinite(got).sum(axis=1).max() <= 50


@pytest.mark.parametrize("pad", [0, 6])
def test_top_p_on_finite_scores_drops_a_token_whose_predecessors_mass_is_exactly_p(pad):
    """Dyadic probabilities make the cumulative sum hit 1 - p exactly: that token goes (<=, not <)."""
    scores = np.log(np.array([[0.5, 0.25, 0.125, 0.125]], dtype=np.float32))
    scores = np.concatenate([scores, np.full((1, pad), -np.inf, dtype=np.float32)], axis=1)  # as after top-k
    got = TopPLogitsWarper(0.75)(np.zeros((1, 1), dtype=np.int64), scores)
    np.testing.assert_array_equal(got, top_p_full_sort(scores, 0.75))
    np.testing.assert_array_equal(top_p_warp(scores, 0.75), got)
    assert np.flatnonzero(np.isfinite(got[0])).tolist() == [0, 1]


# ----------------------------------------------------------------------------------------------------
# multinomial (a cumulative sum over the non-zero entries only) == the sum over every entry, bit for bit
# ----------------------------------------------------------------------------------------------------

from refdecode.decoding.randomness import multinomial  # noqa: E402


def multinomial_full_rows(probs, num_samples, replacement=False, rng=None):
    """The plain inverse-CDF draw over every entry of each row (zeros included), with the same checks."""
    p = np.array(probs, dtype=np.float64, ndmin=2)
    if p.ndim != 2:
        raise ValueError(f"`probs` has to be 1-D or 2-D (N, V), but has shape {np.shape(probs)}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("`probs` contains NaN, inf or a negative value")
    if np.any(p.sum(axis=1) <= 0):
        raise ValueError("`probs` has a row with no probability mass")
    if not replacement and np.any(np.count_nonzero(p, axis=1) < num_samples):
        raise ValueError(f"`num_samples` ({num_samples}) is larger than the number of non-zero probabilities")
    rows = np.arange(p.shape[0])
    out = np.empty((p.shape[0], num_samples), dtype=np.int64)
    for s in range(num_samples):
        cdf = np.cumsum(p, axis=1)
        target = rng.random(p.shape[0]) * cdf[:, -1]
        idx = np.sum(cdf <= target[:, None], axis=1)
        last_nonzero = p.shape[1] - 1 - np.argmax(p[:, ::-1] > 0, axis=1)
        idx = np.minimum(idx, last_nonzero)
        out[:, s] = idx
        if not replacement:
            p[rows, idx] = 0.0
    return out


@given(seed=st.integers(0, 2**32 - 1), draw_seed=st.integers(0, 2**32 - 1), vocab=st.integers(1, 200),
       rows=st.integers(1, 4), zeros=st.floats(0.0, 0.99), replacement=st.booleans(), num_samples=st.integers(1, 6),
       dtype=st.sampled_from([np.float32, np.float64]), tiny=st.booleans())
@settings(deadline=None)
def test_multinomial_draws_what_the_full_row_draw_draws(seed, draw_seed, vocab, rows, zeros, replacement,
                                                        num_samples, dtype, tiny):
    rng = np.random.default_rng(seed)
    probs = rng.random((rows, vocab)).astype(dtype)
    if tiny:  # mass spread over many orders of magnitude, some entries near underflow
        probs = probs ** dtype(30.0)
    probs[rng.random((rows, vocab)) < zeros] = 0.0
    probs[:, rng.integers(vocab)] = dtype(0.5)  # every row keeps at least one non-zero entry
    try:
        want = multinomial_full_rows(probs, num_samples, replacement, np.random.default_rng(draw_seed))
    except ValueError as e:  # too few non-zero entries for a draw without replacement: the same error
        with pytest.raises(ValueError, match=str(e)[:40].replace("(", r"\(").replace(")", r"\)")):
            multinomial(probs, num_samples, replacement, np.random.default_rng(draw_seed))
        return
    got = multinomial(probs, num_samples, replacement, np.random.default_rng(draw_seed))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_multinomial_on_a_gpt2_sized_top_k_row_and_the_rng_stream_afterwards():
    scores = top_k_warp(np.random.default_rng(0).standard_normal((3, 50257)).astype(np.float32) * np.float32(4), 50)
    probs = softmax(scores)
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(20):
        np.testing.assert_array_equal(multinomial(probs, 1, False, a), multinomial_full_rows(probs, 1, False, b))
    assert a.random() == b.random()  # both consumed the same uniforms


def test_multinomial_takes_integer_and_1d_weights_like_the_full_row_draw():
    for weights in (np.array([[1, 0, 2, 5]]), np.array([0.2, 0.0, 0.8])):
        np.testing.assert_array_equal(multinomial(weights, 1, rng=np.random.default_rng(4)),
                                      multinomial_full_rows(weights, 1, rng=np.random.default_rng(4)))


@pytest.mark.parametrize("bad", [np.array([[0.5, np.nan]]), np.array([[0.5, -0.1]]), np.array([[0.0, 0.0]]),
                                 np.ones((1, 2, 2))])
def test_multinomial_refuses_what_the_full_row_draw_refuses(bad):
    with pytest.raises((ValueError, TypeError)) as plain:
        multinomial_full_rows(bad, 1, rng=np.random.default_rng(0))
    with pytest.raises(plain.type, match=str(plain.value)[:20].replace("(", r"\(").replace("[", r"\[")):
        multinomial(bad, 1, rng=np.random.default_rng(0))


class ScriptedUniforms(np.random.Generator):
    """A Generator whose ``random`` returns given values: lets a test hit a cumulative sum exactly."""

    def __init__(self, values):
        super().__init__(np.random.PCG64(0))
        self.values = list(values)

    def random(self, size=None, dtype=np.float64, out=None):
        return np.array([self.values.pop(0) for _ in range(size)], dtype=np.float64)


@pytest.mark.parametrize("u, want", [(0.0, 1), (0.25, 3), (0.5, 4), (0.999, 4)])
def test_multinomial_on_exact_cdf_boundaries(u, want):
    """target = u * total landing exactly on a cumulative sum: the draw moves past it (cdf <= target)."""
    probs = np.array([[0.0, 0.25, 0.0, 0.25, 0.5]])  # cdf [0, .25, .25, .5, 1]
    for draw in (multinomial_full_rows, multinomial):
        assert draw(probs, 1, rng=ScriptedUniforms([u]))[0, 0] == want, draw.__name__
