"""Sampling: the draw function (validation, reproducibility, chi-square), sample() and beam_sample() plumbing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refdecode.decoding.beam.beam_scorer import BeamSearchScorer
from refdecode.decoding.beam.beam_search import beam_sample, sample_candidates
from refdecode.decoding.greedy import greedy_search
from refdecode.processors.logits_warp import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
from refdecode.numerics import softmax
from refdecode.decoding.sampling import sample
from refdecode.decoding.randomness import multinomial
from refdecode.model.stand_ins import TableModel
from numeric_checks import CHI2_CRIT, chi_square

# chi-square critical values at significance 0.001 (tables): df -> value


def test_draws_follow_the_distribution_chi_square():
    """20000 draws with replacement from a 6-way distribution (fixed seed): chi2 below the 0.001 critical value."""
    p = np.array([0.05, 0.1, 0.15, 0.2, 0.2, 0.3])
    draws = multinomial(np.tile(p, (20000, 1)), 1, replacement=True, rng=np.random.default_rng(1234))[:, 0]
    assert chi_square(np.bincount(draws, minlength=6), 20000 * p) < CHI2_CRIT[5]


def test_draws_follow_warped_distribution_chi_square():
    """Through the warpers: temperature 0.7, top-k 4, top-p 0.9 on fixed logits, then sample()'s draw."""
    logits = np.array([[2.0, 1.5, 1.0, 0.2, -0.5, -1.0]], dtype=np.float32)
    warped = TopPLogitsWarper(0.9)(None, TopKLogitsWarper(4)(None, TemperatureLogitsWarper(0.7)(None, logits)))
    p = softmax(warped)[0].astype(np.float64)
    draws = multinomial(np.tile(softmax(warped), (20000, 1)), 1, rng=np.random.default_rng(7))[:, 0]
    counts = np.bincount(draws, minlength=6)
    kept = p > 0
    assert counts[~kept].sum() == 0
    assert chi_square(counts[kept], 20000 * p[kept]) < CHI2_CRIT[kept.sum() - 1]


def test_without_replacement_pairs_follow_sequential_sampling():
    """P(first=i, second=j) = p_i p_j / (1 - p_i): what torch.multinomial(replacement=False) samples (beam sample)."""
    p = np.array([0.1, 0.2, 0.3, 0.4])
    n = 20000
    d = multinomial(np.tile(p, (n, 1)), 2, replacement=False, rng=np.random.default_rng(99))
    assert (d[:, 0] != d[:, 1]).all()
    pairs = list(itertools.permutations(range(4), 2))
    counts = np.array([np.sum((d[:, 0] == i) & (d[:, 1] == j)) for i, j in pairs])
    expected = np.array([n * p[i] * p[j] / (1 - p[i]) for i, j in pairs])
    assert chi_square(counts, expected) < CHI2_CRIT[11]


@pytest.mark.parametrize("probs, n, replacement, match", [
    ([[0.5, np.nan]], 1, False, "NaN"), ([[0.5, -0.1]], 1, False, "negative"), ([[0.0, 0.0]], 1, False, "mass"),
    ([[0.5, 0.5, 0.0]], 3, False, "num_samples"),
])
def test_multinomial_rejects_bad_input(probs, n, replacement, match):
    with pytest.raises(ValueError, match=match):
        multinomial(np.array(probs), n, replacement, np.random.default_rng(0))


def test_multinomial_needs_a_generator():
    with pytest.raises(TypeError, match="rng"):
        multinomial(np.array([[1.0]]), 1, False, 0)


MODEL = TableModel(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32), noise=0.3)


def test_same_seed_same_tokens_and_rng_or_seed():
    a = sample(MODEL, np.array([[1], [2]]), max_length=8, seed=3)
    b = sample(MODEL, np.array([[1], [2]]), max_length=8, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, sample(MODEL, np.array([[1], [2]]), max_length=8, seed=s)) for s in range(4, 8))
    with pytest.raises(ValueError, match="either `rng` or `seed`"):
        sample(MODEL, np.array([[1]]), max_length=3, seed=1, rng=np.random.default_rng(1))


def test_every_draw_goes_through_draw():
    calls = []

    def draw(probs, num_samples, replacement, rng):
        calls.append((probs.shape, num_samples, replacement))
        return np.zeros((probs.shape[0], num_samples), dtype=np.int64)
    out = sample(MODEL, np.array([[1], [2]]), max_length=4, seed=0, draw=draw)
    assert out[:, 1:].tolist() == [[0, 0, 0], [0, 0, 0]] and calls == [((2, 8), 1, False)] * 3


def test_scores_are_warped_scores():
    out = sample(MODEL, np.array([[1]]), logits_warper=[TopKLogitsWarper(3)], max_length=3, seed=0,
                 output_scores=True, return_dict_in_generate=True)
    assert [np.isneginf(s).sum() for s in out.scores] == [5, 5]


def test_nan_scores_while_sampling_raise():
    def nan_processor(input_ids, scores, **kwargs):
        return np.full_like(scores, np.nan)
    with pytest.raises(ValueError, match="NaN"):
        sample(MODEL, np.array([[1]]), logits_processor=[nan_processor], max_length=3, seed=0)


@given(st.integers(0, 2**31), st.integers(1, 3))
def test_sample_with_top_k_1_equals_greedy(seed, batch):
    rng = np.random.default_rng(seed)
    model = TableModel(rng.standard_normal((7, 7)).astype(np.float32), noise=0.5)
    ids = rng.integers(0, 7, size=(batch, 2))
    kw = dict(max_length=9, eos_token_id=3, pad_token_id=0)
    np.testing.assert_array_equal(sample(model, ids, logits_warper=[TopKLogitsWarper(1)], seed=seed, **kw),
                                  greedy_search(model, ids, **kw))


def test_sample_candidates_sorted_and_distinct():
    total = np.log(np.array([[[0.1, 0.2], [0.3, 0.4]]], dtype=np.float32))   # (B=1, K=2, V=2)
    scores, beams, tokens = sample_candidates(total, 4, multinomial, np.random.default_rng(0))
    assert (np.diff(scores[0]) <= 0).all()
    assert sorted(zip(beams[0], tokens[0], strict=True)) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_beam_sample_initial_scores_are_zero_and_draws_2k_from_all_beams():
    """All K beams start at score 0 (not -1e9): the first draw is over K*V equally weighted copies."""
    calls = []

    def draw(probs, num_samples, replacement, rng):
        calls.append((probs.copy(), num_samples, replacement))
        return multinomial(probs, num_samples, replacement, rng)
    beam_sample(MODEL, np.array([[1], [1], [1]]), BeamSearchScorer(1, 3), max_length=4, seed=0, draw=draw,
                eos_token_id=7, pad_token_id=0)
    probs, n, replacement = calls[0]
    assert probs.shape == (1, 24) and n == 6 and replacement is False
    np.testing.assert_allclose(probs[0, :8], probs[0, 8:16], rtol=1e-6)
