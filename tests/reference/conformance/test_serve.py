"""refdecode.reference.conformance.serve: one request line -> one response line; every failure is a response that
names the field, the rule and the value.

Before: serve answered with Python internals (``KeyError: 'top_k'``, ``AttributeError: 'list' object has no attribute
'items'``, ``TypeError: unhashable type: 'list'``, ``IndexError``), accepted NaN / Infinity literals and 1e400, grew
toward hundreds of GB for ``batch_size=10**9`` and to 2.7 GB for a 100 MB line.
"""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance import serve as serve_module
from refdecode.reference.conformance.registry import REGISTRY, select
from refdecode.reference.conformance.serve import answer, serve

TOP_K = {"scores": [[1.0, 3.0, 2.0]], "top_k": 2, "min_tokens_to_keep": 1}


def _error(line: str) -> str:
    response = json.loads(answer(line))
    assert "output" not in response, response
    return response["error"]


def test_answer_reports_errors_as_responses():
    assert _error("not json").startswith("BadRequest: the request is not JSON")
    response = json.loads(answer('{"id": "x/1", "type": "top_k", "input": {"scores": [[1.0]], "top_k": 0, '
                                 '"min_tokens_to_keep": 1}}'))
    assert response["id"] == "x/1" and "top_k" in response["error"]


@pytest.mark.parametrize("inp, names", [
    ({"scores": [[1.0, 3.0]], "min_tokens_to_keep": 1}, "missing required field 'top_k'"),           # was KeyError
    ({**TOP_K, "top_k": [2]}, "input.top_k"),                                                          # wrong type
    ({**TOP_K, "scores": {"a": 1}}, "input.scores"),
    ({**TOP_K, "extra": 1}, "unexpected field 'extra'"),
])
def test_a_request_against_its_schema_is_named_by_field(inp, names):
    assert names in _error(json.dumps({"id": "t/0", "type": "top_k", "input": inp}))


def test_sequence_bias_and_bad_words_as_the_wrong_shape_are_named():
    """Were AttributeError ('list' object has no attribute 'items') and TypeError (unhashable type: 'list')."""
    inp = {"input_ids": [[1]], "scores": [[0.0, 0.0]], "sequence_bias": {"a": 1}}
    assert "input.sequence_bias" in _error(json.dumps({"id": "t/0", "type": "sequence_bias", "input": inp}))
    inp = {"input_ids": [[1]], "scores": [[0.0, 0.0, 0.0]], "bad_words_ids": [[7]], "eos_token_id": [0]}
    assert "`bad_words_ids` has to hold token ids in [0, 2]" in _error(
        json.dumps({"id": "t/0", "type": "no_bad_words", "input": inp}))


@pytest.mark.parametrize("text, says", [
    ('{"id": "t", "type": "top_k", "input": {"scores": [[NaN, 1.0]], "top_k": 1, "min_tokens_to_keep": 1}}',
     "NaN is not JSON"),
    ('{"id": "t", "type": "top_k", "input": {"scores": [[Infinity, 1.0]], "top_k": 1, "min_tokens_to_keep": 1}}',
     "Infinity is not JSON"),
    ('{"id": "t", "type": "top_k", "input": {"scores": [[1e400, 1.0]], "top_k": 1, "min_tokens_to_keep": 1}}',
     "beyond float64"),
])
def test_non_json_numbers_are_refused(text, says):
    assert says in _error(text)


def test_what_a_request_may_make_refdecode_allocate_is_bounded():
    calls = [{"op": "finalize", "input_ids": [[1]], "final_beam_scores": [0.0], "max_length": 3, "pad_token_id": 0,
              "eos_token_id": [1], "beam_indices": None, "decoder_prompt_len": 0}]
    inp = {"batch_size": 10**9, "num_beams": 2, "length_penalty": 1.0, "do_early_stopping": False,
           "num_beam_hyps_to_keep": 1, "num_beam_groups": 1, "max_length": 3, "calls": calls}
    assert f"input.batch_size is 1000000000: serve answers integers up to {2**20}" in _error(
        json.dumps({"id": "t/0", "type": "beam_scorer", "input": inp}))


def test_a_request_line_longer_than_the_bound_is_skipped_unread(monkeypatch):
    monkeypatch.setattr(serve_module, "MAX_REQUEST_BYTES", 1000)
    good = json.dumps({"id": "t/1", "type": "top_k", "input": TOP_K})
    out = io.StringIO()
    serve(io.StringIO("x" * 5000 + "\n" + good + "\n"), out)
    first, second = map(json.loads, out.getvalue().splitlines())
    assert "longer than 1000 bytes" in first["error"] and second["output"]["scores"] == [["-inf", 3.0, 2.0]]


def _mutations(request: dict) -> st.SearchStrategy:
    """A request with one part replaced by junk: a value, a key, the type, nesting, huge or odd numbers."""
    junk = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=False),
                     st.text(max_size=5), st.lists(st.integers(-3, 3), max_size=3),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))

    def mutate(draw_key, value):
        inp = dict(request["input"])
        if draw_key in inp:
            inp[draw_key] = value
        else:
            inp[str(draw_key)] = value
        return {**request, "input": inp}

    keys = st.sampled_from(list(request["input"]) + ["junk"])
    return st.builds(mutate, keys, junk) | st.builds(lambda v: {**request, "type": v}, junk) | \
        st.builds(lambda v: {**request, "input": v}, junk)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_requests_get_a_protocol_answer_never_an_internal_error(data):
    """Every case type's first request with one part mutated: the answer is an output or a protocol error naming
    what is wrong, never "internal error" (a Python exception of refdecode's)."""
    import refdecode.reference.conformance.kinds as kinds

    name = data.draw(st.sampled_from([n for n in select(None) if not n.startswith("gpt2")]))
    case = next(iter(REGISTRY[name].build()))
    request = {"id": "f/0", "type": name, "input": kinds.to_json(case.input)}
    mutated = data.draw(_mutations(request))
    response = json.loads(answer(json.dumps(mutated)))
    assert "output" in response or "internal error" not in response["error"], (mutated, response)


# ---- serve --as ENGINE: decodes answered under an engine's profile


def _engine_request(record: dict) -> str:
    from engine_records import model_dir

    inp = {"model": {"kind": "gpt2", "path": str(model_dir(record["model"]))}, "input_ids": record["input_ids"],
           "attention_mask": record["attention_mask"], "config": record["config"]}
    return json.dumps({"id": record["id"], "type": record["type"], "input": inp})


def test_serve_as_engine_gives_the_engines_answer_where_it_differs():
    """A case where CTranslate2 departs from 4.38.2: `--as ctranslate2` answers as the engine did, not as 4.38.2."""
    from engine_records import differing

    record = next(r for r in differing("ctranslate2") if r["type"] == "engines_beam_search")
    got = json.loads(answer(_engine_request(record), "ctranslate2"))
    assert got["output"]["sequences"] == record["response"]["output"]["sequences"] != record["expected"]["sequences"]
    plain = json.loads(answer(_engine_request(record)))
    assert plain["output"]["sequences"] == record["expected"]["sequences"]


def test_serve_as_engine_answers_only_the_outputs_the_engine_returns():
    """onnxruntime-genai returns no beam scores (its recorded beam answers have sequences only): `--as` answers the
    same keys, so check does not compare scores the engine never gave; CTranslate2 returns them, and so does `--as`."""
    from engine_records import recorded

    for engine in ("onnxruntime-genai", "ctranslate2"):
        record = next(r for r in recorded(engine) if r["type"] == "engines_beam_search")
        got = json.loads(answer(_engine_request(record), engine))["output"]
        assert set(got) == set(record["response"]["output"]), engine
        assert got["sequences"] == record["response"]["output"]["sequences"], engine
    genai = next(r for r in recorded("onnxruntime-genai") if r["type"] == "engines_beam_search")
    assert "sequences_scores" not in json.loads(answer(_engine_request(genai), "onnxruntime-genai"))["output"]
    assert "sequences_scores" in json.loads(answer(_engine_request(genai), "transformers-4.38.2"))["output"]


def test_serve_as_engine_says_unsupported_for_beam_indices():
    from engine_records import recorded

    record = next(r for r in recorded("transformers-4.38.2") if r["type"] == "gpt2_beam_search")
    got = json.loads(answer(_engine_request(record), "transformers-5"))
    assert got["id"] == record["id"] and "sequences (and beam scores)" in got["unsupported"]


def test_serve_as_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="`profile` must be one of"):
        serve(io.StringIO(""), io.StringIO(), profile="mistral-rs")
