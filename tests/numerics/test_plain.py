"""Tests for refdecode/numerics/plain.py softmax / log_softmax: float32 in and out, stable for large and
-inf scores, and equal to a float64 reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from refdecode.numerics import log_softmax, softmax

score_el = st.one_of(st.floats(-1e4, 1e4, width=32), st.just(-np.inf), st.integers(-3, 3).map(float))


@st.composite
def rows(draw):
    """float32 (B, V) with -inf entries, ties and large magnitudes; at least one finite entry per row."""
    batch, vocab = draw(st.integers(1, 4)), draw(st.integers(1, 40))
    x = draw(hnp.arrays(np.float32, (batch, vocab), elements=score_el))
    x[:, draw(st.integers(0, vocab - 1))] = draw(st.floats(-1e4, 1e4, width=32))
    return x


def reference_softmax(x: np.ndarray) -> np.ndarray:
    """float64 softmax, the definition written out."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reference_log_softmax(x: np.ndarray) -> np.ndarray:
    """float64 log-softmax (not log(softmax): that loses everything below exp's subnormal range)."""
    x = x.astype(np.float64)
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


@given(rows())
def test_softmax_is_float32_sums_to_one_and_matches_float64(x):
    p = softmax(x)
    assert p.dtype == np.float32 and p.shape == x.shape
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(p, reference_softmax(x), rtol=1e-5, atol=1e-7)
    assert (p[np.isneginf(x)] == 0).all()


@given(rows())
def test_log_softmax_is_float32_and_matches_float64(x):
    lp = log_softmax(x)
    assert lp.dtype == np.float32
    assert np.isneginf(lp[np.isneginf(x)]).all()
    finite = np.isfinite(x)
    ref = reference_log_softmax(x)
    np.testing.assert_allclose(lp[finite], ref[finite], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.exp(lp.astype(np.float64)).sum(-1), 1.0, atol=1e-5)


def test_large_scores_do_not_overflow():
    """exp(1000) overflows float32; the max-shift keeps it finite."""
    x = np.array([[1000.0, 999.0, -np.inf]], dtype=np.float32)
    np.testing.assert_allclose(softmax(x), [[1 / (1 + np.exp(-1)), 1 / (1 + np.exp(1)), 0.0]], rtol=1e-6)
    np.testing.assert_allclose(log_softmax(x)[0, :2], [-np.log1p(np.exp(-1.0)), -1 - np.log1p(np.exp(-1.0))], rtol=1e-6)


def test_axis_argument():
    x = np.array([[0.0, 0.0], [np.log(3.0), 0.0]], dtype=np.float32)
    np.testing.assert_allclose(softmax(x, axis=0), [[0.25, 0.5], [0.75, 0.5]], rtol=1e-6)


def test_row_of_all_neginf_is_nan_like_torch():
    """No distribution: NaN, as torch.softmax gives; other rows are unaffected."""
    x = np.array([[-np.inf, -np.inf], [0.0, 0.0]], dtype=np.float32)
    with np.errstate(invalid="ignore"):
        p = softmax(x)
    assert np.isnan(p[0]).all() and p[1].tolist() == [0.5, 0.5]


def test_inputs_not_mutated():
    x = np.array([[1.0, 2.0, -np.inf]], dtype=np.float32)
    before = x.copy()
    softmax(x), log_softmax(x)
    np.testing.assert_array_equal(x, before)
