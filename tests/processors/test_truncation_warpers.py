"""Tests for refdecode/processors/truncation_warpers.py: golden parity (typical/epsilon/eta with transformers 4.38.2,
min-p with 4.41.0), hand-sized cases, Hypothesis properties, argument validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from processor_golden import check_standalone, standalone_cases

from refdecode.processors.truncation_warpers import (
    EpsilonLogitsWarper,
    EtaLogitsWarper,
    MinPLogitsWarper,
    TypicalLogitsWarper,
    epsilon_warp,
    eta_warp,
    min_p_warp,
    typical_warp,
)

CLASSES = {"TypicalLogitsWarper", "EpsilonLogitsWarper", "EtaLogitsWarper", "LogitNormalization"}


@pytest.mark.parametrize("case, arrays", standalone_cases("processors_more.npz", CLASSES))
def test_golden_typical_epsilon_eta(case, arrays):
    check_standalone(case, arrays)


@pytest.mark.parametrize("case, arrays", standalone_cases("min_p.npz", {"MinPLogitsWarper"}))
def test_golden_min_p_against_transformers_4_41(case, arrays):
    check_standalone(case, arrays)


def test_golden_counts():
    names = [c.values[0]["name"] for c in standalone_cases("processors_more.npz", CLASSES)]
    assert sum(n.startswith("typical") for n in names) >= 80
    assert sum(n.startswith("epsilon") for n in names) >= 80 and sum(n.startswith("eta") for n in names) >= 80
    assert len(standalone_cases("min_p.npz", {"MinPLogitsWarper"})) >= 60


# ---- hand-sized cases

def kept(scores):
    return np.flatnonzero(np.isfinite(scores[0])).tolist()


def test_typical_can_drop_the_most_probable_token():
    """p = [0.9, 0.02 x 5]: H = 0.48, surprisal of the best 0.11 (distance 0.37) and of the others 3.9
    (distance 3.4): the best is the typical one and mass 0.9 is reached by it alone; with p peaked at
    0.3 among many small ones the top token is *far* from typical and goes first."""
    s = np.log(np.array([[0.9, 0.02, 0.02, 0.02, 0.02, 0.02]], dtype=np.float32))
    assert kept(typical_warp(s, 0.5)) == [0]
    flat = np.log(np.array([[0.3] + [0.7 / 20] * 20], dtype=np.float32))   # H = 2.56; -log 0.3 = 1.20
    assert 0 not in kept(typical_warp(flat, 0.5))


def test_epsilon_and_eta_min_tokens_to_keep_keeps_ties_with_the_mth():
    s = np.array([[0.0, 0.0, 0.0, -9.0]], dtype=np.float32)          # p = 1/3 each, ~0 for the last
    assert kept(epsilon_warp(s, 0.5, min_tokens_to_keep=1)) == [0, 1, 2]  # all three tie with the best
    assert kept(eta_warp(s, 0.5, min_tokens_to_keep=1)) == [0, 1, 2]


def test_eta_cutoff_follows_its_equation():
    """eta = min(eps, sqrt(eps) exp(-H)) computed independently in float64: a flat row (H = 2.6) gets
    eta = sqrt(0.1) e^-2.6 = 0.023, far below eps = 0.1, so tokens with p = 0.03 survive; epsilon sampling
    at 0.09 removes them."""
    p = np.array([[0.25, 0.15, 0.1] + [0.5 / 16] * 16], dtype=np.float64)
    entropy = -(p * np.log(p)).sum()
    eta = min(0.1, np.sqrt(0.1) * np.exp(-entropy))
    assert 0.02 < eta < 0.025
    s = np.log(p).astype(np.float32)
    assert kept(eta_warp(s, 0.1)) == np.flatnonzero(p[0] >= eta).tolist() == list(range(19))
    assert kept(epsilon_warp(s, 0.09)) == [0, 1, 2]


def test_eta_refuses_a_row_without_distribution():
    with pytest.raises(ValueError, match="all -inf"):
        eta_warp(np.full((1, 3), -np.inf, dtype=np.float32), 0.1)


def test_min_p_ties_stable_order():
    """min_tokens_to_keep picks the first m in descending score order; among equal scores the lower id first
    (torch's argsort is stable on CPU up to 16 entries)."""
    s = np.array([[5.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    assert kept(min_p_warp(s, 0.9, min_tokens_to_keep=3)) == [0, 1, 2]


@pytest.mark.parametrize("warp", [typical_warp, epsilon_warp, eta_warp, min_p_warp])
def test_float32_and_not_in_place(warp):
    s = np.random.default_rng(0).normal(size=(3, 10)).astype(np.float32)
    before = s.copy()
    out = warp(s, 0.3)
    assert out.dtype == np.float32 and np.array_equal(s, before)


# ---- properties

rows = hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(1, 20)),
                  elements=st.floats(-20, 20, width=32))


@given(rows, st.floats(0.01, 0.99), st.integers(1, 6), st.sampled_from(["typical", "epsilon", "eta", "min_p"]))
def test_never_empties_a_row_and_keeps_min_tokens(scores, p, m, which):
    """Every row keeps >= min(m, V) tokens, and they include the m best (by score) for epsilon/eta/min-p."""
    warp = {"typical": typical_warp, "epsilon": epsilon_warp, "eta": eta_warp, "min_p": min_p_warp}[which]
    out = warp(scores, p, min_tokens_to_keep=m)
    n_kept = np.isfinite(out).sum(axis=-1)
    assert (n_kept >= min(m, scores.shape[1])).all() and (n_kept >= 1).all()
    assert np.array_equal(out[np.isfinite(out)], scores[np.isfinite(out)])   # survivors unchanged
    if which != "typical":
        best = np.argmax(scores, axis=-1)
        assert np.isfinite(out[np.arange(len(best)), best]).all()


# ---- argument validation

@pytest.mark.parametrize("make, name", [
    (lambda: TypicalLogitsWarper(0.0), "typical_p"), (lambda: TypicalLogitsWarper(1.0), "typical_p"),
    (lambda: TypicalLogitsWarper(float("nan")), "typical_p"), (lambda: EpsilonLogitsWarper(1.0), "epsilon_cutoff"),
    (lambda: EpsilonLogitsWarper(-0.1), "epsilon_cutoff"), (lambda: EtaLogitsWarper(0.0), "eta_cutoff"),
    (lambda: MinPLogitsWarper(1.5), "min_p"), (lambda: MinPLogitsWarper("0.1"), "min_p"),
    (lambda: TypicalLogitsWarper(0.5, min_tokens_to_keep=0), "min_tokens_to_keep"),
    (lambda: EtaLogitsWarper(0.5, min_tokens_to_keep=1.5), "min_tokens_to_keep"),
    (lambda: EpsilonLogitsWarper(0.5, filter_value="x"), "filter_value"),
])
def test_invalid_arguments_name_the_parameter(make, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        make()
