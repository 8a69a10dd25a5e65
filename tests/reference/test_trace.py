"""refdecode.reference.trace: step traces record what the loops computed, validate against the schema, and replay.

The recorded values are checked against what ``generate`` itself returns (``output_scores``,
``sequences``, ``beam_indices``), never against numbers the recorder computed.
"""

from __future__ import annotations

import json
import zlib

import jsonschema
import numpy as np
import pytest
from conftest import MODELS

from refdecode import GPT2, Tokenizer, from_pretrained, generate
from refdecode.model.stand_ins import TableModel
from refdecode.recorder import NO_TRACE, Recorder
from refdecode.reference.trace import TRACE_SCHEMA, TraceRecorder, replay, summarize_rows


@pytest.fixture(scope="module")
def shakespeare():
    model = GPT2.from_pretrained(MODELS / "tiny-shakespeare")
    ids, mask = Tokenizer(MODELS / "tiny-shakespeare").encode_batch(["ROMEO:\n", "JULIET: O"])
    return model, ids, mask


def _traced(model, ids, mask=None, **kwargs):
    """generate(...) with a trace -> (output, trace dict after a strict JSON round trip)."""
    recorder = TraceRecorder()
    out = generate(model, ids, attention_mask=mask, trace=recorder, **kwargs)
    return out, json.loads(json.dumps(recorder.to_dict(), allow_nan=False))


def _table_model():
    return TableModel(np.random.default_rng(0).standard_normal((11, 11)).astype(np.float32), noise=0.5,
                      eos_token_id=3)


MODES = {
    "greedy_search": dict(repetition_penalty=1.3, no_repeat_ngram_size=2),
    "sample": dict(do_sample=True, temperature=0.7, top_k=6, top_p=0.9, seed=1, num_return_sequences=2),
    "beam_search": dict(num_beams=3, num_return_sequences=2, repetition_penalty=1.2),
    "beam_sample": dict(num_beams=3, do_sample=True, top_p=0.8, seed=2),
    "group_beam_search": dict(num_beams=4, num_beam_groups=2, diversity_penalty=0.5),
}


# ---- off by default, and the same result either way


def test_the_default_recorder_does_nothing_and_hands_scores_back():
    scores = np.zeros((2, 3), dtype=np.float32)
    assert NO_TRACE.stage("logits", scores) is scores
    assert NO_TRACE.step(np.zeros((2, 1), dtype=np.int64)) is None
    assert type(NO_TRACE) is Recorder


@pytest.mark.parametrize("mode", MODES)
def test_tracing_does_not_change_the_output(mode):
    """Same sequences and scores with and without a recorder (the recorder only reads)."""
    model, ids = _table_model(), np.array([[1, 2], [4, 5]])
    kwargs = dict(max_new_tokens=6, return_dict_in_generate=True, output_scores=True, **MODES[mode])
    plain = generate(model, ids, **kwargs)
    traced, trace = _traced(model, ids, **kwargs)
    assert trace["mode"] == mode
    np.testing.assert_array_equal(plain.sequences, traced.sequences)
    for a, b in zip(plain.scores, traced.scores):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_writes_a_schema_valid_strict_json_trace(mode):
    _, trace = _traced(_table_model(), np.array([[1, 2], [4, 5]]), max_new_tokens=5, **MODES[mode])
    jsonschema.validate(trace, TRACE_SCHEMA)
    assert trace["format"] == "refdecode-trace" and trace["version"] == 1 and trace["transformers"] == "4.38.2"
    assert len(trace["steps"]) == len(trace["final"]["sequences"][0]) - 2 or trace["stop"]["reason"] != ""


def test_generate_refuses_a_trace_that_is_not_a_recorder():
    with pytest.raises(TypeError, match="`trace` has to be a refdecode.reference.trace.TraceRecorder"):
        generate(_table_model(), np.array([[1]]), max_new_tokens=2, trace="trace.json")


@pytest.mark.parametrize("kwargs", [dict(top_n=0), dict(full_vocab_max=-1), dict(top_n=2.0)])
def test_recorder_arguments_are_checked(kwargs):
    with pytest.raises(ValueError, match="has to be"):
        TraceRecorder(**kwargs)


# ---- what a step holds


def test_stages_are_named_as_in_transformers_and_in_order():
    _, trace = _traced(_table_model(), np.array([[1, 2]]), max_new_tokens=3, **MODES["sample"])
    names = [s["name"] for s in trace["steps"][0]["stages"]]
    assert names == ["logits", "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper"]
    _, trace = _traced(_table_model(), np.array([[1, 2]]), max_new_tokens=3, **MODES["beam_search"])
    assert [s["name"] for s in trace["steps"][0]["stages"]] == ["log_softmax", "RepetitionPenaltyLogitsProcessor"]


def test_small_vocabulary_rows_are_recorded_whole_and_equal_the_returned_scores():
    """The last stage of each step is what ``output_scores`` returns (sample: the warped scores, -inf kept)."""
    out, trace = _traced(_table_model(), np.array([[1, 2], [4, 5]]), max_new_tokens=5, return_dict_in_generate=True,
                         output_scores=True, **MODES["sample"])
    for step, scores in zip(trace["steps"], out.scores):
        last = step["stages"][-1]
        recorded = np.array([[float(v) for v in row["values"]] for row in last["values"]], dtype=np.float32)
        np.testing.assert_array_equal(recorded, scores)
        assert [row["n_neg_inf"] for row in last["values"]] == np.isneginf(scores).sum(axis=1).tolist()
    tokens = [sel["tokens"] for step in trace["steps"] for sel in step["selected"]]
    np.testing.assert_array_equal(np.array(tokens).T, out.sequences[:, 2:])


def test_large_vocabulary_rows_keep_the_top_n_and_a_checksum(shakespeare):
    """GPT-2's 50257 entries: top 20 (value descending), count of -inf, CRC-32 of the float32 bytes."""
    model, ids, mask = shakespeare
    out, trace = _traced(model, ids[:1], mask[:1], max_new_tokens=3, do_sample=True, top_p=0.9, seed=0,
                         return_dict_in_generate=True, output_scores=True)
    for step, scores in zip(trace["steps"], out.scores):
        row, expected = step["stages"][-1]["values"][0], scores[0]
        assert "values" not in row and len(row["top_tokens"]) == min(20, np.isfinite(expected).sum())
        assert row["top_tokens"] == np.argsort(-expected, kind="stable")[: len(row["top_tokens"])].tolist()
        assert row["top_values"] == expected[row["top_tokens"]].tolist()
        assert row["n_neg_inf"] == int(np.isneginf(expected).sum())
        assert row["crc32"] == zlib.crc32(expected.astype("<f4").tobytes())


def test_summaries_of_filtered_and_tied_rows():
    """Ties: lower id first; an all -inf row has no top entries; non-finite values become strings."""
    rows = np.array([[1.0, 2.0, 2.0, -np.inf], [-np.inf] * 4], dtype=np.float32)
    tied, empty = summarize_rows(rows, top_n=2, full_vocab_max=4)
    assert tied["top_tokens"] == [1, 2] and tied["n_neg_inf"] == 1 and tied["last_token"] == 0
    assert tied["values"] == [1.0, 2.0, 2.0, "-inf"]
    assert empty["top_tokens"] == [] and empty["n_neg_inf"] == 4 and empty["logsumexp"] == "-inf"


def test_greedy_rows_say_when_they_emitted_eos_and_what_stopped_the_loop():
    """TableModel's docstring example: row 1 emits eos (1) at step 0, row 0 at step 1; then all are done."""
    model = TableModel(np.log(np.array([[.1, .2, .7], [.6, .3, .1], [.2, .5, .3]], dtype=np.float32)))
    _, trace = _traced(model, np.array([[0], [2]]), max_length=5, eos_token_id=1, pad_token_id=0)
    assert [d["reason"] for d in trace["steps"][0]["done"]] == ["running", "emitted eos"]
    assert [d["reason"] for d in trace["steps"][1]["done"]] == ["emitted eos",
                                                              "finished at an earlier step (pad token appended)"]
    assert trace["stop"] == {"step": 1, "cur_len": 3, "reason": "every row finished (eos)"}


def test_beam_steps_record_candidates_selection_reorder_and_is_done(shakespeare):
    model, ids, mask = shakespeare
    out, trace = _traced(model, ids, mask, max_new_tokens=4, num_beams=3, return_dict_in_generate=True,
                         output_scores=True)
    step = trace["steps"][1]
    assert len(step["candidates"]) == 2 and len(step["candidates"][0]["tokens"]) == 6       # 2 prompts, 2K each
    assert step["candidates"][0]["scores"] == sorted(step["candidates"][0]["scores"], reverse=True)
    assert all(b == 0 for b in trace["steps"][0]["candidates"][0]["beams"])                 # only beam 0 is live
    assert len(step["selected"][0]["beam_idx"]) == 6
    not_full = "0 of 3 finished hypotheses held: not done before the pool is full"
    assert [d["reason"] for d in step["done"]] == [not_full] * 2
    assert trace["stop"]["reason"] == f"MaxLengthCriteria(max_length={ids.shape[1] + 4}) fired"


def test_hypotheses_record_the_scores_the_pool_holds(shakespeare):
    """With '.' and '\\n' as eos ids, hypotheses appear; their scores are those BeamSearchScorer kept."""
    model, ids, mask = shakespeare
    out, trace = _traced(model, ids, mask, max_new_tokens=10, num_beams=3, num_return_sequences=3,
                         eos_token_id=[13, 198], pad_token_id=0, return_dict_in_generate=True, output_scores=True)
    hyps = [h for step in trace["steps"] for h in step.get("hypotheses", [])]
    assert len(hyps) >= 3
    for h in hyps:
        assert h["token"] in (13, 198) and h["rank"] < 3
        assert h["score"] == pytest.approx(h["sum_logprobs"] / h["generated_len"])   # length_penalty 1.0
    kept = {round(h["score"], 5) for h in hyps if h["kept"]}
    returned = {round(float(s), 5) for s in out.sequences_scores}
    assert returned & kept, "a returned hypothesis should be one the trace saw being kept"


# ---- replay: the trace alone rebuilds the output


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    dict(num_beams=4, num_return_sequences=2),
    dict(num_beams=3, num_return_sequences=3, eos_token_id=[13, 198], pad_token_id=0, length_penalty=0.5),
    dict(num_beams=3, early_stopping=True, eos_token_id=[13, 198], pad_token_id=0),
    dict(num_beams=3, do_sample=True, top_p=0.9, seed=1),
], ids=["plain", "eos-hypotheses", "early-stopping", "beam-sample"])
def test_a_beam_trace_replays_to_the_same_sequences_and_beam_indices(shakespeare, kwargs):
    """From the JSON trace alone (no model, no scorer): tokens + beam_idx + hypotheses + done -> the output."""
    model, ids, mask = shakespeare
    out, trace = _traced(model, ids, mask, max_new_tokens=8, return_dict_in_generate=True, output_scores=True,
                         **kwargs)
    rebuilt = replay(trace)
    np.testing.assert_array_equal(rebuilt["sequences"], out.sequences)
    np.testing.assert_array_equal(rebuilt["beam_indices"], out.beam_indices)


def test_replay_needs_a_beam_trace():
    _, trace = _traced(_table_model(), np.array([[1]]), max_new_tokens=2)
    with pytest.raises(ValueError, match="replay rebuilds beam_search / beam_sample traces"):
        replay(trace)


def test_group_beam_search_records_each_group_with_its_rows():
    _, trace = _traced(_table_model(), np.array([[1, 2]]), max_new_tokens=3, **MODES["group_beam_search"])
    stages = trace["steps"][1]["stages"]
    assert [(s["name"], s["group"], s["rows"]) for s in stages] == [
        ("log_softmax", 0, [0, 1]), ("HammingDiversityLogitsProcessor", 0, [0, 1]),
        ("log_softmax", 1, [2, 3]), ("HammingDiversityLogitsProcessor", 1, [2, 3])]
    assert [c["group"] for c in trace["steps"][1]["candidates"]] == [0, 1]


def test_assisted_decoding_is_not_traced_and_says_so():
    with pytest.raises(ValueError, match="assisted generation .* is not traced"):
        generate(_table_model(), np.array([[1, 2, 1, 2]]), max_new_tokens=3, prompt_lookup_num_tokens=2,
                 trace=TraceRecorder())


def test_constrained_beam_search_is_traced_with_every_tokens_total():
    """The constrained loop records log-softmax, each processor, then transformers' ``scores_for_all_vocab`` (the
    processed log-probs plus the running scores), the candidates and the selection, like the other beam loops."""
    recorder = TraceRecorder()
    out = generate(_table_model(), np.array([[1, 2]]), max_new_tokens=4, num_beams=2, force_words_ids=[[4]],
                   repetition_penalty=1.3, trace=recorder)
    trace = recorder.to_dict()
    jsonschema.validate(trace, TRACE_SCHEMA)
    assert trace["mode"] == "constrained_beam_search"
    assert [s["name"] for s in trace["steps"][0]["stages"]] == [
        "log_softmax", "RepetitionPenaltyLogitsProcessor", "scores_for_all_vocab"]
    first = trace["steps"][0]
    # step 0: only beam 0 is live (the other starts at -1e9), so the totals of row 0 are its processed log-probs
    assert first["stages"][2]["values"][0]["values"] == first["stages"][1]["values"][0]["values"]
    assert 4 in out[0, 2:]
    assert trace["final"]["sequences"] == out.tolist()
    assert len(trace["steps"]) == out.shape[1] - 2


@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-tiny"])
def test_contrastive_search_is_traced_with_its_ranking(name):
    """Each step records the k candidates of every row and their contrastive scores; the token appended is the
    candidate with the best score (the first among equal), and the final sequences are the output."""
    model = from_pretrained(MODELS / name)
    recorder = TraceRecorder()
    out = generate(model, np.array([[15496, 11, 616]]), max_new_tokens=5, penalty_alpha=0.6, top_k=4,
                   trace=recorder)
    trace = recorder.to_dict()
    jsonschema.validate(trace, TRACE_SCHEMA)
    assert trace["mode"] == "contrastive_search"
    for t, step in enumerate(trace["steps"]):
        (ranked,) = step["ranked"]
        assert len(ranked["tokens"]) == 4
        best = ranked["tokens"][int(np.argmax(ranked["scores"]))]
        assert step["selected"][0]["tokens"] == [best] == [int(out[0, 3 + t])]
    assert trace["final"]["sequences"] == out.tolist()


def test_a_minimal_trace_from_another_engine_is_schema_valid():
    """What docs/traces.md shows another engine writing: full rows only, no statistics, no header."""
    minimal = {"format": "refdecode-trace", "version": 1, "steps": [
        {"step": 0, "cur_len": 2, "selected": [{"tokens": [1]}],
         "stages": [{"name": "logits", "rows": [0], "values": [{"values": [0.0, 2.0, "-inf"]}]}]}]}
    jsonschema.validate(minimal, TRACE_SCHEMA)
    minimal["steps"][0]["stages"][0]["values"][0] = {"n_neg_inf": 1}      # neither values nor top entries
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(minimal, TRACE_SCHEMA)
