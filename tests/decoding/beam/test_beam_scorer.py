"""BeamHypotheses and BeamSearchScorer against hand-worked cases and Hypothesis invariants (4.38.2 rules)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refdecode.decoding.beam.beam_scorer import BeamHypotheses, BeamSearchScorer

# ---- BeamHypotheses.add


def test_add_scores_by_generated_length_and_keeps_best():
    """score = sum_logprobs / generated_len ** lp; the lowest is dropped once more than num_beams are held."""
    h = BeamHypotheses(num_beams=2, length_penalty=2.0, early_stopping=False)
    h.add(np.array([9, 1, 2]), -4.0, generated_len=2)      # -4 / 4 = -1
    h.add(np.array([9, 1, 2, 3]), -9.0, generated_len=3)   # -9 / 9 = -1 (tie with the first)
    h.add(np.array([9, 5]), -0.5, generated_len=1)          # -0.5: the earliest of the -1 ties is dropped
    assert [s for s, _, _ in h.beams] == [-1.0, -0.5]
    assert h.beams[0][1].tolist() == [9, 1, 2, 3]            # tie: (score, index) sort drops the lower index
    assert h.worst_score == -1.0


def test_worst_score_starts_at_1e9_and_rejects_worse_when_full():
    h = BeamHypotheses(num_beams=1, length_penalty=0.0, early_stopping=False)
    assert h.worst_score == 1e9
    h.add(np.array([1]), -1.0, generated_len=1)
    h.add(np.array([2]), -2.0, generated_len=1)      # worse: not added
    h.add(np.array([3]), -1.0, generated_len=1)      # equal: not added (strict >)
    assert [b[1].tolist() for b in h.beams] == [[1]]


# ---- BeamHypotheses.is_done


def full(early_stopping, lp=1.0, max_length=None, score=-2.0, generated_len=2):
    h = BeamHypotheses(num_beams=1, length_penalty=lp, early_stopping=early_stopping, max_length=max_length)
    h.add(np.array([1, 2]), score, generated_len=generated_len)
    return h


def test_is_done_needs_num_beams_hypotheses():
    h = BeamHypotheses(num_beams=2, length_penalty=1.0, early_stopping=True)
    h.add(np.array([1]), -1.0, generated_len=1)
    assert not h.is_done(-100.0, cur_len=5)


def test_is_done_true_stops_at_once():
    assert full(True).is_done(best_sum_logprobs=-0.001, cur_len=3)


def test_is_done_false_heuristic_uses_cur_len_minus_prompt():
    """worst = -2/2 = -1. best -2.5 at generated length 3 - 1 = 2 -> -1.25 <= -1: done; -1.9 -> -0.95: not."""
    h = full(False)
    assert h.is_done(-2.5, cur_len=3, decoder_prompt_len=1)
    assert not h.is_done(-1.9, cur_len=3, decoder_prompt_len=1)
    assert not h.is_done(-2.5, cur_len=3, decoder_prompt_len=0)   # -2.5/3 = -0.83 > -1


def test_is_done_never_with_positive_lp_uses_max_length():
    """"never", lp > 0: the bound divides by max_length - prompt (the longest possible): -9/9 = -1 <= -1."""
    h = full("never", lp=1.0, max_length=10)
    assert h.is_done(-9.0, cur_len=3, decoder_prompt_len=1)
    assert not h.is_done(-8.0, cur_len=3, decoder_prompt_len=1)   # -8/9 > -1
    assert full(False).is_done(-8.0, cur_len=3, decoder_prompt_len=1)  # the heuristic would stop here


def test_is_done_never_with_nonpositive_lp_uses_cur_len():
    h = full("never", lp=0.0, max_length=10)                      # worst = -2
    assert h.is_done(-2.0, cur_len=3) and not h.is_done(-1.5, cur_len=3)
    h = full("never", lp=-1.0, max_length=10)                     # worst = -2 * 2 = -4
    assert h.is_done(-2.0, cur_len=3, decoder_prompt_len=1)       # -2 * 2 = -4 <= -4
    assert not h.is_done(-1.9, cur_len=3, decoder_prompt_len=1)


def test_is_done_never_raises_when_max_length_not_beyond_prompt():
    with pytest.raises(ValueError, match="max_length is not larger than decoder prompt length"):
        full("never", lp=1.0, max_length=3).is_done(-1.0, cur_len=4, decoder_prompt_len=3)


def test_string_early_stopping_needs_max_length():
    with pytest.raises(ValueError, match="max_length"):
        BeamHypotheses(2, 1.0, "never")


# ---- BeamSearchScorer.process


def scorer(**kw):
    args = dict(batch_size=1, num_beams=2, length_penalty=1.0, do_early_stopping=False, max_length=20)
    args.update(kw)
    return BeamSearchScorer(**args)


def test_constructor_errors_name_the_argument():
    with pytest.raises(ValueError, match="num_beams"):
        BeamSearchScorer(1, 1)
    with pytest.raises(ValueError, match="num_beam_groups"):
        BeamSearchScorer(1, 4, num_beam_groups=3)


def test_process_eos_ranked_below_group_size_is_ignored_and_top_eos_finishes():
    """Candidates (rank: token, score, beam): 0: eos -1.0 from beam 1 -> finished (len 4 - 2 + ... ),
    1: 7 -1.5, 2: eos -1.6 (rank 2 >= 2: ignored), 3: 8 -2.0. Running: 7, 8."""
    s = scorer()
    ids = np.array([[5, 6, 1], [5, 6, 2]])
    out = s.process(ids, np.array([[-1.0, -1.5, -1.6, -2.0]], dtype=np.float32), np.array([[0, 7, 0, 8]]),
                    np.array([[1, 0, 0, 1]]), pad_token_id=3, eos_token_id=0, decoder_prompt_len=2)
    assert out["next_beam_tokens"].tolist() == [7, 8]
    assert out["next_beam_indices"].tolist() == [0, 1]
    assert out["next_beam_scores"].dtype == np.float32 and out["next_beam_scores"].tolist() == [-1.5, -2.0]
    hyps = s.beam_hyps[0][0]
    assert len(hyps) == 1
    score, hyp, _ = hyps.beams[0]
    assert hyp.tolist() == [5, 6, 2]                   # stored without the eos
    assert score == -1.0 / 2                           # generated length counts eos: cur_len 4 - prompt 2


def test_process_pad_step_for_done_prompt():
    """A done prompt gets pad tokens, score 0, continuing row 0 of the batch (not its own first row: quirk)."""
    s = scorer(batch_size=2, do_early_stopping=True)
    ids = np.array([[1], [1], [2], [2]])
    cand = dict(next_scores=np.array([[-1.0, -2.0, -3.0, -4.0], [-1.0, -2.0, -3.0, -4.0]], dtype=np.float32),
                next_tokens=np.array([[5, 6, 7, 8], [0, 0, 5, 6]]), next_indices=np.array([[0, 0, 1, 1], [0, 1, 0, 1]]))
    s.process(ids, **cand, pad_token_id=9, eos_token_id=0)
    assert s.done.tolist() == [[False], [True]] and not s.is_done
    out = s.process(np.hstack([ids, ids]), **cand, pad_token_id=9, eos_token_id=0)
    assert out["next_beam_tokens"].tolist()[2:] == [9, 9]
    assert out["next_beam_scores"].tolist()[2:] == [0.0, 0.0] and out["next_beam_indices"].tolist()[2:] == [0, 0]


def test_process_too_many_eos_raises():
    s = scorer()
    with pytest.raises(ValueError, match="can be equal to `eos_token_id"):
        s.process(np.array([[1], [1]]), np.array([[-1.0, -2.0]], dtype=np.float32), np.array([[0, 0]]),
                  np.array([[0, 1]]), pad_token_id=0, eos_token_id=0)


def test_process_checks_row_count():
    with pytest.raises(ValueError, match="beam size of 3"):
        scorer().process(np.zeros((3, 1), dtype=np.int64), np.zeros((1, 4), np.float32), np.zeros((1, 4), np.int64),
                         np.zeros((1, 4), np.int64))


def test_process_records_beam_index_history_for_finished():
    s = scorer()
    s.process(np.array([[1], [1]]), np.array([[-1.0, -2.0, -3.0, -4.0]], dtype=np.float32),
              np.array([[0, 5, 6, 7]]), np.array([[1, 0, 0, 1]]), pad_token_id=0, eos_token_id=0,
              beam_indices=np.array([[0], [0]]))
    assert s.beam_hyps[0][0].beams[0][2] == (0, 1)


# ---- BeamSearchScorer.finalize


def test_finalize_appends_first_eos_and_pads():
    """Finished [1, 2] (eos stripped) and running [1, 3, 4]: width = min(3 + 1, max_length)."""
    s = scorer(num_beam_hyps_to_keep=2, length_penalty=0.0)
    s.beam_hyps[0][0].add(np.array([1, 2]), -0.1, beam_indices=(0, 1), generated_len=2)
    out = s.finalize(np.array([[1, 3, 4], [1, 3, 5]]), np.array([-0.5, -0.9], dtype=np.float32),
                     max_length=10, pad_token_id=8, eos_token_id=[6, 7], beam_indices=np.array([[0, 0], [0, 0]]),
                     decoder_prompt_len=1)
    assert out["sequences"].tolist() == [[1, 2, 6, 8], [1, 3, 4, 6]]
    assert out["sequence_scores"].dtype == np.float32
    assert out["sequence_scores"].tolist() == pytest.approx([-0.1, -0.5])
    assert out["beam_indices"].tolist() == [[0, 1, -1, -1], [0, 0, -1, -1]]


def test_finalize_width_capped_by_max_length_and_equal_lengths_get_no_eos():
    s = scorer()
    out = s.finalize(np.array([[1, 3, 4], [1, 3, 5]]), np.array([-0.5, -0.9], dtype=np.float32),
                     max_length=3, pad_token_id=8, eos_token_id=6)
    assert out["sequences"].tolist() == [[1, 3, 4]] and out["beam_indices"] is None


def test_finalize_ties_later_inserted_wins():
    """sorted() is stable and the best is popped from the end: on equal scores the later one wins."""
    s = scorer(length_penalty=0.0, do_early_stopping=True)
    s.beam_hyps[0][0].add(np.array([1, 2]), -1.0, generated_len=1)
    s.beam_hyps[0][0].add(np.array([1, 3]), -1.0, generated_len=1)
    s.done[:] = True
    out = s.finalize(np.zeros((2, 2), np.int64), np.zeros(2, np.float32), max_length=5,
                     pad_token_id=0, eos_token_id=9)
    assert out["sequences"].tolist() == [[1, 3, 9]]


def test_finalize_pools_groups():
    s = BeamSearchScorer(1, 4, length_penalty=0.0, num_beam_groups=2, num_beam_hyps_to_keep=2, max_length=9)
    s.beam_hyps[0][0].add(np.array([1, 2]), -3.0, generated_len=1)
    s.beam_hyps[0][1].add(np.array([1, 4]), -1.0, generated_len=1)
    s.done[:] = [[True, True]]
    out = s.finalize(np.zeros((4, 2), np.int64), np.zeros(4, np.float32), max_length=9,
                     pad_token_id=0, eos_token_id=9)
    assert out["sequences"].tolist() == [[1, 4, 9], [1, 2, 9]]


# ---- Hypothesis invariants

scores_st = st.lists(st.floats(-20, 0, allow_nan=False, width=32), min_size=1, max_size=12)


@given(st.integers(1, 4), scores_st, st.sampled_from([-1.0, 0.0, 1.0, 2.0]))
def test_hypotheses_never_exceed_num_beams_and_track_worst(num_beams, sums, lp):
    h = BeamHypotheses(num_beams, lp, early_stopping=False)
    for i, s in enumerate(sums):
        h.add(np.arange(i + 1), s, generated_len=i % 3 + 1)
        assert len(h) <= num_beams
        assert h.worst_score == min(score for score, _, _ in h.beams)


@given(st.data())
def test_process_returns_group_size_live_beams_every_step(data):
    """Whatever the candidates, each prompt gets exactly group_size running (non-eos) beams per step."""
    batch, beams = data.draw(st.integers(1, 3)), data.draw(st.integers(2, 4))
    eos = [0, 1][: data.draw(st.integers(1, 2))]
    s = BeamSearchScorer(batch, beams, do_early_stopping=data.draw(st.sampled_from([True, False, "never"])),
                         max_length=30)
    ids = np.zeros((batch * beams, 2), dtype=np.int64)
    n_cand = max(2, 1 + len(eos)) * beams
    for _ in range(data.draw(st.integers(1, 5))):
        vals = np.sort(np.array(data.draw(st.lists(st.floats(-30, 0, width=32), min_size=batch * n_cand,
                                                     max_size=batch * n_cand)), dtype=np.float32)
                       .reshape(batch, n_cand), axis=1)[:, ::-1]
        # at most `beams` eos among the candidates of a prompt, as top-k over K*V guarantees
        tokens = np.array([[data.draw(st.integers(0, 6)) if j < beams else data.draw(st.integers(2, 6))
                            for j in range(n_cand)] for _ in range(batch)])
        order = np.argsort(np.random.default_rng(0).random((batch, n_cand)), axis=1)
        tokens = np.take_along_axis(tokens, order, axis=1)
        tokens[np.isin(tokens, eos).cumsum(axis=1) > beams] = 5
        out = s.process(ids, vals.copy(), tokens, np.zeros_like(tokens) + np.arange(n_cand) % beams,
                        pad_token_id=6, eos_token_id=eos)
        live = out["next_beam_tokens"].reshape(batch, beams)
        assert live.shape == (batch, beams)
        assert not np.isin(live[~s.done[:, 0]], eos).any()
        ids = np.hstack([ids[out["next_beam_indices"]], out["next_beam_tokens"][:, None]])


@given(st.integers(1, 3), st.integers(2, 4), st.data())
def test_finalize_returns_hyps_to_keep_sorted(batch, beams, data):
    keep = data.draw(st.integers(1, beams))
    s = BeamSearchScorer(batch, beams, length_penalty=data.draw(st.sampled_from([0.0, 1.0])),
                         num_beam_hyps_to_keep=keep)
    for b in range(batch):
        for _ in range(data.draw(st.integers(0, 5))):
            n = data.draw(st.integers(2, 5))
            s.beam_hyps[b][0].add(np.arange(n), data.draw(st.floats(-10, -0.01)), generated_len=n - 1)
    ids = np.tile(np.arange(4), (batch * beams, 1))
    final_scores = np.array(data.draw(st.lists(st.floats(-10, -0.125, width=32), min_size=batch * beams,
                                               max_size=batch * beams)), dtype=np.float32)
    out = s.finalize(ids, final_scores, max_length=8, pad_token_id=0, eos_token_id=9, decoder_prompt_len=1)
    assert out["sequences"].shape[0] == batch * keep
    per_prompt = out["sequence_scores"].reshape(batch, keep)
    assert (np.diff(per_prompt, axis=1) <= 0).all()


def test_finalize_running_beams_scored_by_generated_length_without_eos():
    """Running beams enter finalize with generated length T - prompt (no eos step counted): -3 / 3."""
    s = scorer(length_penalty=1.0)
    out = s.finalize(np.array([[1, 3, 4, 5], [1, 3, 5, 6]]), np.array([-3.0, -6.0], dtype=np.float32),
                     max_length=4, pad_token_id=8, eos_token_id=6, decoder_prompt_len=1)
    assert out["sequence_scores"].tolist() == [-1.0]


def test_device_keyword_is_accepted_and_ignored_and_a_device_in_length_penalty_refused():
    """transformers' ``BeamSearchScorer(batch_size, num_beams, device, length_penalty, ...)``: here ``device``
    is keyword-only in effect, and the third positional (``length_penalty``) must be a number."""
    scorer = BeamSearchScorer(1, 2, device="cpu", length_penalty=0.5)
    assert scorer.length_penalty == 0.5 and scorer.beam_hyps[0][0].length_penalty == 0.5
    with pytest.raises(TypeError, match=r"`length_penalty` has to be a number, but is 'cpu'.*`device=`"):
        BeamSearchScorer(1, 2, "cpu")
    for bad in (None, True, [1.0]):
        with pytest.raises(TypeError, match="`length_penalty` has to be a number"):
            BeamSearchScorer(1, 2, bad)


# ---- bad-input catalogue


@pytest.mark.parametrize("lp, match", [
    (-float("inf"), "must be a finite number"), (float("inf"), "must be a finite number"),
    (float("nan"), "must be a finite number"), (250.0, r"\|length_penalty\| \* ln\(max_length\) <= 709"),
    (-250.0, r"\|length_penalty\| \* ln\(max_length\) <= 709"),
])
def test_length_penalty_refused_before_it_crashes(lp, match):
    """transformers (and refdecode before) raised ZeroDivisionError for -inf (2 ** -inf = 0) and OverflowError
    for 250 (18 ** 250 > 1.8e308) in the middle of the search; NaN made every score NaN."""
    with pytest.raises(ValueError, match=f"`length_penalty` .*{match}"):
        BeamSearchScorer(1, 2, length_penalty=lp, max_length=20)
    with pytest.raises(ValueError, match="`length_penalty`"):
        BeamHypotheses(2, lp, False, max_length=20)


def test_length_penalty_bound_follows_max_length_and_add_checks_without_it():
    BeamSearchScorer(1, 2, length_penalty=236.0, max_length=20)  # 236 * ln 20 = 707 <= 709
    h = BeamHypotheses(1, 300.0, False)  # no max_length: the bound is checked when a length is scored
    h.add(np.array([1]), -1.0, generated_len=5)                    # 5 ** 300 = 4.9e209: fine
    with pytest.raises(ValueError, match="`length_penalty`=300.0 makes length \\*\\* length_penalty overflow at "
                                         "length 20"):
        h.add(np.array([1]), -1.0, generated_len=20)


@pytest.mark.parametrize("value", [1.0, 0.0, 1, "True"])
def test_early_stopping_must_be_exactly_true_false_or_never(value):
    """``is_done`` tests ``is True``/``is False``: 1.0 passed ``== True`` checks and ran as "never"."""
    with pytest.raises(ValueError, match="early_stopping` must be one of True, False, 'never'"):
        BeamHypotheses(2, 1.0, value, max_length=10)
    with pytest.raises(ValueError, match="`do_early_stopping` must be one of"):
        BeamSearchScorer(1, 2, do_early_stopping=value, max_length=10)


def test_numpy_bool_early_stopping_and_numpy_int_sizes_are_accepted():
    h = BeamHypotheses(np.int64(2), 1.0, np.True_, max_length=np.int32(10))
    assert h.early_stopping is True and h.num_beams == 2 and type(h.max_length) is int
    s = BeamSearchScorer(np.int64(1), np.int64(4), num_beam_groups=np.int64(2), num_beam_hyps_to_keep=np.int64(2))
    assert (s.batch_size, s.num_beams, s.group_size) == (1, 4, 2)


def test_the_interfaces_transformers_code_calls_run_unchanged():
    """``BeamHypotheses.add`` with 4.38.2's default ``generated_len=None`` (the whole hypothesis
    length), ``finalize`` with 4.38.2's full positional signature, and ``_beam_hyps`` laid out as there."""
    h = BeamHypotheses(num_beams=2, length_penalty=1.0, early_stopping=False)
    h.add(np.array([1, 2, 3, 4]), -2.0)                         # no generated_len: divided by 4, the hyp's length
    h.add(np.array([1, 2, 3, 4]), -2.0, None, 2)                # positionally, as 4.38.2 allows: divided by 2
    assert [s for s, _, _ in h.beams] == [-0.5, -1.0]
    s = BeamSearchScorer(batch_size=2, num_beams=4, num_beam_groups=2, length_penalty=0.0)
    assert s._beam_hyps == [s.beam_hyps[0][0], s.beam_hyps[0][1], s.beam_hyps[1][0], s.beam_hyps[1][1]]
    s = BeamSearchScorer(batch_size=1, num_beams=2, length_penalty=0.0)
    ids, scores = np.array([[1, 3, 4], [1, 3, 5]]), np.array([-0.5, -0.9], dtype=np.float32)
    ported = s.finalize(ids, scores, None, None, 4, 0, 9, None, 1)   # tokens, indices, max_length, pad, eos, ..
    assert ported["sequences"].tolist() == [[1, 3, 4, 9]]


def test_the_scorer_checks_its_pools_settings_once_not_once_per_pool(monkeypatch):
    """``length_penalty`` was checked again by each of the B x G pools (17 times for 8 prompts x 2 groups)."""
    from refdecode.decoding.beam import beam_scorer
    calls = []
    check = beam_scorer.check_length_penalty
    monkeypatch.setattr(beam_scorer, "check_length_penalty", lambda *a: calls.append(a) or check(*a))
    s = BeamSearchScorer(batch_size=8, num_beams=4, num_beam_groups=2, length_penalty=0.5, max_length=10)
    assert len(calls) == 2                                  # the scorer's own check, and its pools' one
    pools = [hyps for per_prompt in s.beam_hyps for hyps in per_prompt]
    assert len({id(h) for h in pools}) == 16 and len({id(h.beams) for h in pools}) == 16   # 16 separate pools
    assert all((h.num_beams, h.length_penalty, h.early_stopping, h.max_length) == (2, 0.5, False, 10) for h in pools)
    pools[0].add(np.array([1, 2]), -1.0, generated_len=1)
    assert [len(h) for h in pools] == [1] + [0] * 15
