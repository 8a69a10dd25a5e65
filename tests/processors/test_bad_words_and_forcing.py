"""Tests for refdecode/processors/bad_words_and_forcing.py: golden parity with transformers 4.38.2, hand-sized cases,
Hypothesis properties (forced BOS/EOS leave exactly one finite token), argument validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from processor_golden import check_standalone, standalone_cases

from refdecode.processors.bad_words_and_forcing import (
    ForcedBOSTokenLogitsProcessor,
    ForcedEOSTokenLogitsProcessor,
    NoBadWordsLogitsProcessor,
    PrefixConstrainedLogitsProcessor,
    SequenceBiasLogitsProcessor,
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
    forced_bos_process,
    forced_eos_process,
    no_bad_words_process,
    sequence_bias_process,
)

CLASSES = {"NoBadWordsLogitsProcessor", "SequenceBiasLogitsProcessor", "PrefixConstrainedLogitsProcessor",
           "ForcedBOSTokenLogitsProcessor", "ForcedEOSTokenLogitsProcessor", "SuppressTokensLogitsProcessor",
           "SuppressTokensAtBeginLogitsProcessor"}


@pytest.mark.parametrize("case, arrays", standalone_cases("processors_more.npz", CLASSES))
def test_golden(case, arrays):
    check_standalone(case, arrays)


def test_golden_counts():
    names = [c.values[0]["name"] for c in standalone_cases("processors_more.npz", CLASSES)]
    assert {n: names.count(n) for n in set(names)} == {
        "bad_words": 24, "sequence_bias": 24, "prefix_constrained": 9, "forced_bos": 9, "forced_eos": 18,
        "suppress": 4, "suppress_at_begin": 12}


# ---- hand-sized cases

def test_multi_token_bad_word_only_bans_its_last_token_after_its_prefix():
    """bad word [1, 2]: after a row ending in 1 the 2 is banned; elsewhere it is allowed."""
    s = np.zeros((2, 3), dtype=np.float32)
    out = no_bad_words_process(np.array([[0, 1], [1, 0]]), s, [[1, 2]])
    assert np.isneginf(out).tolist() == [[False, False, True], [False, False, False]]


def test_eos_as_a_bad_word_is_dropped_and_an_eos_only_list_changes_nothing():
    """transformers 4.38.2 validates the words before dropping ``[eos]`` ones, so
    ``bad_words_ids=[[4]], eos_token_id=4`` is accepted and the scores come back unchanged (refdecode refused it)."""
    s = np.zeros((1, 3), dtype=np.float32)
    assert np.isfinite(no_bad_words_process(np.array([[1]]), s, [[0], [2]], eos_token_id=0)[0, 0])
    scores = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
    out = NoBadWordsLogitsProcessor([[4]], eos_token_id=4)(np.array([[1, 2], [3, 4]]), scores)
    assert out is not scores and np.array_equal(out, scores)
    assert np.array_equal(NoBadWordsLogitsProcessor([[0]], eos_token_id=[0, 1])(np.array([[1]]), s), s)


def test_a_bad_word_outside_the_vocabulary_is_blamed_on_bad_words_ids():
    """the id was blamed on `sequence_bias`, an argument the caller never gave."""
    with pytest.raises(ValueError, match="`bad_words_ids` has to hold token ids in \\[0, 2\\]"):
        NoBadWordsLogitsProcessor([[7]], eos_token_id=0)(np.array([[1]]), np.zeros((1, 3), dtype=np.float32))


def test_sequence_bias_accumulates_on_the_same_last_token():
    """(2,) always, (1, 2) after a 1: both biases add on token 2; a sequence longer than the row is skipped."""
    s = np.zeros((1, 3), dtype=np.float32)
    out = sequence_bias_process(np.array([[0, 1]]), s, {(2,): 1.0, (1, 2): 0.5, (0, 0, 1, 2): 9.0})
    assert out.tolist() == [[0.0, 0.0, 1.5]]


def test_prefix_constrained_batch_id_is_row_over_num_beams():
    seen = []
    proc = PrefixConstrainedLogitsProcessor(lambda b, ids: seen.append((b, ids.tolist())) or [0], num_beams=2)
    proc(np.array([[5], [6], [7], [8]]), np.zeros((4, 2), dtype=np.float32))
    assert seen == [(0, [5]), (0, [6]), (1, [7]), (1, [8])]


def test_forced_bos_only_at_length_one_and_forced_eos_only_at_max_length_minus_one():
    s = np.zeros((1, 4), dtype=np.float32)
    assert np.array_equal(forced_bos_process(np.array([[1, 2]]), s, 3), s)
    assert np.array_equal(forced_eos_process(np.array([[1, 2]]), s, 4, 3), s)
    assert np.isfinite(forced_eos_process(np.array([[1, 2, 3]]), s, 4, 3)).tolist() == [[False, False, False, True]]


@pytest.mark.parametrize("proc", [SuppressTokensLogitsProcessor([1]), SuppressTokensAtBeginLogitsProcessor([1], 1),
                                  ForcedBOSTokenLogitsProcessor(0), ForcedEOSTokenLogitsProcessor(2, 0),
                                  NoBadWordsLogitsProcessor([[1]], 0), SequenceBiasLogitsProcessor({(1,): 2.0}),
                                  PrefixConstrainedLogitsProcessor(lambda b, ids: [0], 1)])
def test_float32_and_not_in_place(proc):
    s = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    out = proc(np.array([[2]]), s)
    assert out.dtype == np.float32 and s.tolist() == [[1.0, 2.0, 3.0]] and out is not s


# ---- properties

rows = hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(2, 12)), elements=st.floats(-30, 30, width=32))


@given(rows, st.data())
def test_forced_bos_and_eos_leave_exactly_one_finite_token_at_their_step(scores, data):
    vocab = scores.shape[1]
    token = data.draw(st.integers(0, vocab - 1))
    bos = forced_bos_process(np.zeros((scores.shape[0], 1), dtype=np.int64), scores, token)
    eos = forced_eos_process(np.zeros((scores.shape[0], 4), dtype=np.int64), scores, 5, token)
    for out in (bos, eos):
        assert (np.isfinite(out).sum(axis=-1) == 1).all() and (out[:, token] == 0).all()


# ---- argument validation

@pytest.mark.parametrize("make, name", [
    (lambda: NoBadWordsLogitsProcessor([], 0), "bad_words_ids"), (lambda: NoBadWordsLogitsProcessor([1], 0), "bad_words_ids"),
    (lambda: NoBadWordsLogitsProcessor([[1], []], 0), "bad_words_ids"),
    (lambda: NoBadWordsLogitsProcessor([[1, -1]], 0), "bad_words_ids"),
    (lambda: NoBadWordsLogitsProcessor([[1.0]], 0), "bad_words_ids"),
    (lambda: SequenceBiasLogitsProcessor({}), "sequence_bias"), (lambda: SequenceBiasLogitsProcessor({(1,): 1}), "sequence_bias"),
    (lambda: SequenceBiasLogitsProcessor({(): 1.0}), "sequence_bias"),
    (lambda: SequenceBiasLogitsProcessor([((1,), 1.0)]), "sequence_bias"),
    (lambda: PrefixConstrainedLogitsProcessor(None, 1), "prefix_allowed_tokens_fn"),
    (lambda: PrefixConstrainedLogitsProcessor(lambda b, i: [0], 0), "num_beams"),
    (lambda: ForcedBOSTokenLogitsProcessor(-1), "forced_bos_token_id"),
    (lambda: ForcedEOSTokenLogitsProcessor(5, [1, "x"]), "forced_eos_token_id"),
    (lambda: ForcedEOSTokenLogitsProcessor(0, 1), "max_length"),
    (lambda: SuppressTokensLogitsProcessor([1, -1]), "suppress_tokens"),
    (lambda: SuppressTokensAtBeginLogitsProcessor([1], -1), "begin_index"),
    (lambda: SuppressTokensLogitsProcessor([7])(np.array([[0]]), np.zeros((1, 3), dtype=np.float32)), "suppress_tokens"),
    (lambda: SequenceBiasLogitsProcessor({(7,): 1.0})(np.array([[0]]), np.zeros((1, 3), dtype=np.float32)),
     "sequence_bias"),
    (lambda: PrefixConstrainedLogitsProcessor(lambda b, i: [], 1)(np.array([[0]]), np.zeros((1, 3), dtype=np.float32)),
     "prefix_allowed_tokens_fn"),
])
def test_invalid_arguments_name_the_parameter(make, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        make()


# ---- ForceTokensLogitsProcessor (forced_decoder_ids): golden from tools/golden/make_force_tokens_golden.py ----


def _force_golden():
    from decode_golden import golden
    return golden("force_tokens.npz")


@pytest.mark.parametrize("case", [c for c in _force_golden()[0]["cases"] if c["kind"] == "processor"],
                         ids=lambda c: c["id"])
def test_force_tokens_processor_golden(case):
    from refdecode.processors.bad_words_and_forcing import ForceTokensLogitsProcessor
    _, arrays = _force_golden()
    cid = case["id"]
    scores = arrays[f"{cid}/scores"]
    out = ForceTokensLogitsProcessor(case["forced_decoder_ids"])(arrays[f"{cid}/input_ids"], scores)
    assert out.dtype == np.float32 and np.array_equal(out, arrays[f"{cid}/out"])
    assert out is not scores


@pytest.mark.parametrize("case", [c for c in _force_golden()[0]["cases"] if c["kind"] == "generate"],
                         ids=lambda c: c["id"])
def test_forced_decoder_ids_in_generate_golden(case):
    """Greedy and beam search with forced_decoder_ids (and begin_suppress_tokens, moved past the forced positions)."""
    from decode_golden import check, golden_model

    from refdecode.generate import generate
    _, arrays = _force_golden()
    cid = case["id"]
    out = generate(golden_model(case["model"]), arrays[f"{cid}/input_ids"].astype(np.int64), **case["kwargs"])
    check(f"{cid} sequences", out.sequences, arrays[f"{cid}/sequences"], True)


@pytest.mark.parametrize("bad", [[[1]], [[1, -2]], "x", [[1.5, 2]], [[True, 2]]])
def test_forced_decoder_ids_validated(bad):
    from refdecode.processors.bad_words_and_forcing import ForceTokensLogitsProcessor
    with pytest.raises(ValueError, match="forced_decoder_ids"):
        ForceTokensLogitsProcessor(bad)


def test_bark_eos_prioritizer_keeps_only_eos_where_it_is_likely_enough():
    """4.38.2's test_early_stop_processor: uniform rows over 4 tokens; row 0's eos score set to -6,
    below log(0.1): row 0 unchanged, row 1 (p(eos) = 0.25 > 0.1) keeps only its eos score(s)."""
    from refdecode import BarkEosPrioritizerLogitsProcessor

    scores = np.full((2, 4), 0.25, dtype=np.float32)
    for eos in (2, [2, 3]):
        s = scores.copy()
        s[0, eos] = -6.0
        out = BarkEosPrioritizerLogitsProcessor(eos_token_id=eos, min_eos_p=0.1)(None, s)
        expected_row_1 = [-np.inf, -np.inf, 0.25, 0.25 if eos == [2, 3] else -np.inf]
        assert out.tolist() == [s[0].tolist(), expected_row_1]
    assert np.array_equal(BarkEosPrioritizerLogitsProcessor(2, None)(None, scores), scores)      # off
    with pytest.raises(ValueError, match="`min_eos_p` has to be a positive float"):
        BarkEosPrioritizerLogitsProcessor(2, 0.0)
