"""greedy_search on stand-in models: selection, the pad step, scores, the KV cache used once per prompt."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import GOLDEN
from hypothesis import given
from hypothesis import strategies as st

from refdecode.model.modeling import GPT2
from refdecode.decoding.greedy import greedy_search
from refdecode.processors.logits_process import MinLengthLogitsProcessor
from refdecode.decoding.stopping_criteria import MaxLengthCriteria
from refdecode.model.stand_ins import TableModel

CYCLE = np.log(np.array([[.1, .6, .3], [.2, .1, .7], [.5, .3, .2]], dtype=np.float32))  # 0->1->2->0


class Recorder:
    """A processor that records what it is given and changes nothing."""

    def __init__(self):
        self.seen = []

    def __call__(self, input_ids, scores, **kwargs):
        self.seen.append(scores.copy())
        return scores


def test_argmax_ties_go_to_lowest_id():
    model = TableModel(np.zeros((4, 4), dtype=np.float32))
    assert greedy_search(model, np.array([[3]]), max_length=3).tolist() == [[3, 0, 0]]


def test_processors_see_raw_logits_and_scores_record_their_output():
    """Greedy/sample processors get the logits, not log-probs (beam modes differ)."""
    model, rec = TableModel(CYCLE + 5.0), Recorder()
    out = greedy_search(model, np.array([[0]]), logits_processor=[rec, MinLengthLogitsProcessor(2, 2)],
                        max_length=3, eos_token_id=2, pad_token_id=0, output_scores=True, return_dict_in_generate=True)
    np.testing.assert_array_equal(rec.seen[0], (CYCLE + 5.0)[[0]])
    assert out.scores[0][0, 2] == -np.inf and out.scores[1][0, 2] == CYCLE[1, 2] + 5.0
    assert out.scores[0].dtype == np.float32 and out.sequences.tolist() == [[0, 1, 2]]


def test_finished_rows_get_pad_and_loop_stops_when_all_finished():
    model = TableModel(CYCLE)
    out = greedy_search(model, np.array([[0], [1]]), max_length=10, eos_token_id=2, pad_token_id=0)
    assert out.tolist() == [[0, 1, 2], [1, 2, 0]]


def test_prefill_once_then_one_token_per_step_and_distinct_rows_only():
    model = TableModel(CYCLE)
    greedy_search(model, np.array([[0, 1], [0, 1]]), max_length=5)
    assert model.calls == [(1, 2), (2, 1), (2, 1)]   # the two identical rows were prefilled once


def test_does_not_mutate_input_ids():
    ids = np.array([[0, 1]])
    greedy_search(TableModel(CYCLE), ids, max_length=4)
    assert ids.tolist() == [[0, 1]]


def test_eos_without_pad_raises():
    with pytest.raises(ValueError, match="pad_token_id"):
        greedy_search(TableModel(CYCLE), np.array([[0]]), max_length=3, eos_token_id=2)


def test_nan_scores_raise():
    with pytest.raises(ValueError, match="NaN"):
        greedy_search(TableModel(np.full((3, 3), np.nan, dtype=np.float32)), np.array([[0]]), max_length=3)


def test_without_length_criterion_stops_at_n_positions():
    """transformers would loop (and crash past n_positions); refdecode stops there with a warning."""
    with pytest.warns(UserWarning, match="n_positions"):
        out = greedy_search(TableModel(CYCLE, n_positions=6), np.array([[0]]))
    assert out.shape == (1, 6)


def test_cached_equals_uncached_on_a_real_model(family_model):
    """The loop's KV cache (prefill + one token per step) gives the tokens of recomputing the prefix (GPT-2, Llama)."""
    model = family_model
    ids = np.array([[0, 0, 5, 7], [3, 9, 11, 2]])
    mask = np.array([[0, 0, 1, 1], [1, 1, 1, 1]])
    ours = greedy_search(model, ids, attention_mask=mask, stopping_criteria=[MaxLengthCriteria(10)],
                         eos_token_id=[], pad_token_id=0)
    seq = ids
    for _ in range(6):
        m = np.hstack([mask, np.ones((2, seq.shape[1] - ids.shape[1]), dtype=np.int64)])
        logits = model(seq, attention_mask=m).logits[:, -1]
        seq = np.hstack([seq, logits.argmax(-1)[:, None]])
    np.testing.assert_array_equal(ours, seq)


@given(st.integers(0, 2**31), st.integers(1, 4), st.integers(0, 5))
def test_finished_rows_only_receive_pad(seed, batch, eos):
    """After a row's first eos, every later token of that row is the pad token (4.38 pad step)."""
    rng = np.random.default_rng(seed)
    model = TableModel(rng.standard_normal((6, 6)).astype(np.float32), noise=0.5)
    ids = rng.integers(0, 6, size=(batch, 2))
    out = greedy_search(model, ids, max_length=12, eos_token_id=eos, pad_token_id=5 - eos)
    for row in out[:, 2:]:
        hits = np.flatnonzero(row == eos)
        if hits.size:
            assert (row[hits[0] + 1:] == 5 - eos).all()
