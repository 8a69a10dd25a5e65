"""beam_search / beam_sample loops on stand-in models: candidates, initial scores, what processors see, ties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refdecode.decoding.beam.beam_scorer import BeamHypotheses, BeamSearchScorer
from refdecode.decoding.beam.beam_search import beam_sample, beam_search
from refdecode.decoding.greedy import greedy_search
from refdecode.model.stand_ins import TableModel

MODEL = TableModel(np.random.default_rng(1).standard_normal((9, 9)).astype(np.float32), noise=0.4)


class RecordingScorer(BeamSearchScorer):
    """Records the candidate arrays each process() call receives."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.candidates = []

    def process(self, input_ids, next_scores, next_tokens, next_indices, **kwargs):
        self.candidates.append((next_scores.copy(), next_tokens.copy(), next_indices.copy()))
        return super().process(input_ids, next_scores, next_tokens, next_indices, **kwargs)


class OneBeamScorer(BeamSearchScorer):
    """4.38.2's scorer refuses num_beams=1 (use greedy); for the property test we build one anyway."""

    def __init__(self, batch_size):
        super().__init__(batch_size, 2, length_penalty=0.0)
        self.num_beams = self.group_size = 1
        self.beam_hyps = [[BeamHypotheses(1, 0.0, False)] for _ in range(batch_size)]


@pytest.mark.parametrize("eos, per_beam", [(None, 2), (3, 2), ([3, 4], 3), ([3, 4, 5], 4)])
def test_candidate_count_is_max_2_1_plus_n_eos_times_k(eos, per_beam):
    scorer = RecordingScorer(1, 3)
    beam_search(MODEL, np.array([[1]] * 3), scorer, max_length=3, eos_token_id=eos, pad_token_id=0)
    assert scorer.candidates[0][1].shape == (1, per_beam * 3)


def test_initial_scores_make_only_beam_0_live():
    """Beams 1..K-1 start at -1e9: the first step's candidates all extend beam 0, with distinct tokens."""
    scorer = RecordingScorer(1, 3)
    beam_search(MODEL, np.array([[1]] * 3), scorer, max_length=3)
    scores, tokens, beams = scorer.candidates[0]
    assert (beams == 0).all() and len(set(tokens[0].tolist())) == tokens.shape[1]


def test_processors_see_log_probs_and_scores_are_per_step():
    seen = []

    def rec(input_ids, scores, **kwargs):
        seen.append(scores.copy())
        return scores
    out = beam_search(MODEL, np.array([[1]] * 2), BeamSearchScorer(1, 2), logits_processor=[rec], max_length=4,
                      output_scores=True, return_dict_in_generate=True)
    for s in seen:
        np.testing.assert_allclose(np.exp(s).sum(axis=-1), 1.0, rtol=1e-5)   # log-probabilities
    for s, t in zip(out.scores, seen, strict=True):
        np.testing.assert_array_equal(s, t)                                  # not accumulated
    assert out.sequences_scores.dtype == np.float32 and out.beam_indices.shape == out.sequences.shape


def test_rows_must_match_scorer():
    with pytest.raises(ValueError, match="Batch dimension of `input_ids` should be 4"):
        beam_search(MODEL, np.array([[1]] * 3), BeamSearchScorer(2, 2), max_length=4)


def test_return_without_dict_and_sequences_scores_only_with_output_scores():
    seq = beam_search(MODEL, np.array([[1]] * 2), BeamSearchScorer(1, 2), max_length=4)
    out = beam_search(MODEL, np.array([[1]] * 2), BeamSearchScorer(1, 2), max_length=4, return_dict_in_generate=True)
    np.testing.assert_array_equal(seq, out.sequences)
    assert out.sequences_scores is None and out.beam_indices is None and out.scores is None


@given(st.integers(0, 2**31), st.integers(1, 3))
def test_one_beam_without_eos_equals_greedy(seed, batch):
    """With K=1 and no eos, the best continuation is the argmax: beam search is greedy search."""
    rng = np.random.default_rng(seed)
    model = TableModel(rng.standard_normal((7, 7)).astype(np.float32), noise=0.5)
    ids = rng.integers(0, 7, size=(batch, 3))
    np.testing.assert_array_equal(beam_search(model, ids, OneBeamScorer(batch), max_length=9, eos_token_id=None),
                                  greedy_search(model, ids, max_length=9, eos_token_id=None))


def test_beam_sample_reproducible_with_seed():
    a = beam_sample(MODEL, np.array([[1]] * 3), BeamSearchScorer(1, 3), max_length=6, seed=5)
    b = beam_sample(MODEL, np.array([[1]] * 3), BeamSearchScorer(1, 3), max_length=6, seed=5)
    np.testing.assert_array_equal(a, b)


def test_beam_scores_are_the_log_probabilities_a_full_pass_gives(family_model):
    """On a real model of each family (GPT-2, Llama with GQA): with length_penalty 0 and no eos, the best beam's
    score is the sum of its tokens' log-probabilities, recomputed here without a cache. A KV cache reordered wrongly
    after a beam step (the wrong rows of keys/values) breaks the equality."""
    from refdecode.generate import generate
    from refdecode.numerics import log_softmax

    model = family_model
    ids = np.array([[5, 17, 9, 30]])
    out = generate(model, ids, num_beams=3, length_penalty=0.0, max_new_tokens=6, eos_token_id=-1,
                   return_dict_in_generate=True, output_scores=True)
    seq = out.sequences[:1]
    logp = log_softmax(model(seq).logits[0, 3:-1], axis=-1)                       # (6, V): positions predicting
    total = float(logp[np.arange(6), seq[0, 4:]].sum())
    assert out.sequences_scores[0] == pytest.approx(total, abs=1e-4)
    assert out.sequences.dtype == np.int64 and out.sequences_scores.dtype == np.float32
