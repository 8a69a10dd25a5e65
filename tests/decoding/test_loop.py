"""refdecode.decoding.loop: the model calls and bookkeeping every decode loop shares, tested on their own.

The loops' golden and property tests (test_greedy.py, test_sampling.py, test_beam_search.py,
test_group_beam_search.py) exercise these helpers end to end; here each one's contract is pinned down
on hand-sized inputs, so a change to one shows up here first and not as a diff in a generated sequence.
"""

import numpy as np
import pytest

from refdecode.decoding.beam.beam_scorer import BeamSearchScorer
from refdecode.decoding.loop import (
    append_tokens,
    check_no_nan,
    check_pad_token,
    collect,
    decode_step,
    model_capacity,
    prefill,
    repeat_run_length,
    end_stream,
    step_records,
    stream,
)
from refdecode.decoding.beam.bookkeeping import check_beam_rows
from refdecode.decoding.randomness import make_rng
from refdecode.model.stand_ins import TableModel

TABLE = np.log(np.array([[.1, .2, .7], [.6, .3, .1], [.2, .5, .3]], dtype=np.float32))


def test_repeat_run_length_finds_runs_of_identical_rows_including_the_mask():
    ids = np.array([[1, 2], [1, 2], [1, 2], [1, 2]])
    assert repeat_run_length(ids, None) == 4
    mask = np.array([[1, 1], [1, 1], [0, 1], [0, 1]])  # the same ids, different masks: runs of 2
    assert repeat_run_length(ids, mask) == 2


def test_prefill_runs_each_distinct_prompt_once_and_expands_the_cache():
    model = TableModel(TABLE)
    ids = np.array([[0, 1], [0, 1], [2, 2], [2, 2]])
    logits, cache = prefill(model, ids, None, capacity=8)
    assert model.calls == [(2, 2)]  # two distinct prompts, not four rows
    assert logits.shape == (4, 3) and logits.dtype == np.float32
    np.testing.assert_array_equal(logits, TABLE[[1, 1, 2, 2]])  # row r continues its own prompt
    assert cache.tokens.tolist() == ids.tolist()


def test_decode_step_appends_a_mask_column_and_grows_the_cache():
    model = TableModel(TABLE)
    _, cache = prefill(model, np.array([[0], [1]]), np.array([[1], [1]]), capacity=8)
    logits, mask = decode_step(model, np.array([2, 0]), np.array([[1], [1]]), cache)
    assert mask.tolist() == [[1, 1], [1, 1]] and cache.length == 2
    np.testing.assert_array_equal(logits, TABLE[[2, 0]])
    assert decode_step(model, np.array([1, 1]), None, cache)[1] is None


def test_model_capacity_is_max_length_capped_at_n_positions():
    model = TableModel(TABLE, n_positions=10)
    assert (model_capacity(model, None), model_capacity(model, 7), model_capacity(model, 50)) == (10, 7, 10)


def test_append_tokens_pads_finished_rows_and_marks_eos():
    ids, unfinished = append_tokens(np.array([[5], [6], [7]]), np.array([1, 2, 3]), np.array([1, 1, 0]), [2], 9)
    assert ids.tolist() == [[5, 1], [6, 2], [7, 9]]  # row 2 was finished: pad 9
    assert unfinished.tolist() == [1, 0, 0]  # row 1 just emitted eos 2
    ids, unfinished = append_tokens(np.array([[5]]), np.array([2]), np.array([1]), None, None)
    assert ids.tolist() == [[5, 2]] and unfinished.tolist() == [1]  # no eos: nothing padded or marked


def test_records_are_kept_only_when_asked_for():
    assert step_records(True, True, True) == ((), ())
    assert step_records(False, True, True) == (None, None)  # output_* need return_dict_in_generate
    assert step_records(True, False, True) == (None, ())
    assert collect(None, np.zeros(1)) is None and len(collect((), np.zeros(1))) == 1


def test_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match="pad_token_id"):
        check_pad_token([0], None)
    check_pad_token(None, None)
    with pytest.raises(ValueError, match="NaN at generation step 4.*rows \\[1\\]"):
        check_no_nan(np.array([[0.0, 1.0], [np.nan, 0.0]], dtype=np.float32), 4)
    with pytest.raises(ValueError, match="either `rng` or `seed`"):
        make_rng(np.random.default_rng(0), 0)
    with pytest.raises(TypeError, match="`rng`.*Generator.*int"):
        make_rng(3)
    assert make_rng(seed=1).random() == np.random.default_rng(1).random()
    with pytest.raises(ValueError, match="should be 4, but is 3"):
        check_beam_rows(np.zeros((3, 1), np.int64), BeamSearchScorer(batch_size=2, num_beams=2))


def test_stream_hands_tokens_to_a_streamer_if_there_is_one():
    class Recorder:
        def __init__(self):
            self.seen = []

        def put(self, tokens):
            self.seen.append(tokens.tolist())

        def end(self):
            self.seen.append("end")

    streamer = Recorder()
    stream(streamer, np.array([4, 5]))
    end_stream(streamer)
    assert streamer.seen == [[4, 5], "end"]
    stream(None, np.array([1]))  # no streamer: nothing to do
    end_stream(None)
