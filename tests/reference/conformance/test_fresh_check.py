"""examples/engines/fresh_check.py against an adapter that misbehaves: junk, an output without sequences, a hang;
three misses in a row end the run (as ``conformance check`` does); an answer to another case is no answer."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np

from conformance_suites import python_implementation
from conftest import ROOT

from refdecode.reference.conformance.fresh import write_fresh
from refdecode.reference.conformance.suite import load_suite


def _fresh_check():
    sys.path.insert(0, str(ROOT / "examples" / "engines"))
    try:
        spec = importlib.util.spec_from_file_location("fresh_check", ROOT / "examples" / "engines" / "fresh_check.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["fresh_check"] = module   # a dataclass resolves its module's names through sys.modules
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "examples" / "engines"))


def _cases(tmp_path, n: int) -> list[dict]:
    """Fresh greedy cases, written and loaded as fresh_check.main does."""
    write_fresh(tmp_path / "suite", n, 5, ("greedy",))
    return load_suite(tmp_path / "suite")[1]


ADAPTER = '''
from refdecode.reference.conformance.serve import answer
n = 0
for line in sys.stdin:
    request = json.loads(line)
    n += 1
    if n == 1:
        print("junk", flush=True)
    elif n == 2:
        print(json.dumps({"id": request["id"], "output": "no sequences"}), flush=True)
    elif n == 3:
        time.sleep(600)
    else:
        print(answer(line), flush=True)
'''


def test_junk_and_hangs_are_no_answers_and_three_in_a_row_stop_the_run(tmp_path):
    fresh_check = _fresh_check()
    cases = _cases(tmp_path, 6)
    result = fresh_check.check_engine("transformers-4.38.2", cases, 3.0, python_implementation(tmp_path, ADAPTER))
    assert result["no_answer"] == 3 and result.get("stopped") == "three cases in a row without an answer"
    assert [m["why"][:9] for m in result["mismatches"]] == ["no answer"] * 3
    assert result["answered"] == 0


def test_an_adapter_that_answers_is_compared_with_the_profile(tmp_path):
    fresh_check = _fresh_check()
    cases = _cases(tmp_path, 4)
    adapter = "from refdecode.reference.conformance.serve import answer\nfor line in sys.stdin:\n" \
              "    print(answer(line), flush=True)\n"
    result = fresh_check.check_engine("transformers-4.38.2", cases, 30.0, python_implementation(tmp_path, adapter))
    assert (result["answered"], result["same"], result["no_answer"]) == (4, 4, 0), result


def test_an_answer_to_another_case_or_without_sequences_is_no_answer():
    answer_sequences = _fresh_check().answer_sequences
    assert answer_sequences({"id": "b/1", "output": {"sequences": [[1]]}}, "a/1").startswith("no answer")
    assert answer_sequences([1, 2], "a/1").startswith("no answer")
    assert answer_sequences({"id": "a/1", "output": {"sequences": "x"}}, "a/1").startswith("no answer")
    assert answer_sequences({"id": "a/1", "unsupported": "no beams"}, "a/1") is None
    assert answer_sequences({"id": "a/1", "output": {"sequences": [[1, 2]]}}, "a/1") == [[1, 2]]


def test_an_engine_that_refuses_is_asked_further_streams_until_it_has_answered_enough(tmp_path, monkeypatch):
    """--answered: stream after stream of the same seed until the adapter has answered the number asked for."""
    fresh_check = _fresh_check()
    refuses_beams = ("from refdecode.reference.conformance.serve import answer\nfor line in sys.stdin:\n"
                     "    r = json.loads(line)\n"
                     "    if r['input']['config'].get('num_beams', 1) > 1:\n"
                     "        print(json.dumps({'id': r['id'], 'unsupported': 'no beams'}), flush=True)\n"
                     "    else:\n        print(answer(line), flush=True)\n")
    cmd = python_implementation(tmp_path, refuses_beams)
    monkeypatch.setattr(fresh_check, "command", lambda engine: cmd)
    result = fresh_check.check_fresh("transformers-4.38.2", tmp_path / "fresh", 3, 5, 30.0, answered=4)
    # 3 cases a stream, greedy one in three: 4 answered take four streams (the fourth stops at its first greedy)
    assert (result["answered"], result["same"], result["streams"]) == (4, 4, 4), result
    assert result["unsupported"] == result["asked"] - 4 and not result["mismatches"]
    assert sorted(p.name for p in (tmp_path / "fresh").iterdir()) == ["common-0", "common-1", "common-2", "common-3"]


def test_each_fit_gives_a_case_its_engine_takes():
    fresh_check = _fresh_check()
    base = {"model": {"kind": "gpt2", "path": "x"}, "config": {
        "eos_token_id": [3, 7], "num_beams": 3, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2,
        "min_length": 9, "min_new_tokens": 2, "length_penalty": 2.0, "early_stopping": "never"}}
    vllm = fresh_check.for_vllm(base)["config"]
    assert (vllm["no_repeat_ngram_size"], vllm["repetition_penalty"], vllm["min_length"], vllm["min_new_tokens"]) \
        == (0, 1.0, 0, 0)
    assert fresh_check.for_vllm(base)["model"]["path"].endswith("tiny-shakespeare")
    assert fresh_check.for_flax(base)["config"]["eos_token_id"] == [3]
    assert fresh_check.for_tf(base)["config"]["min_length"] == 0
    assert fresh_check.for_tf({**base, "config": dict(base["config"], eos_token_id=[3])})["config"]["min_length"] == 9
    keras = fresh_check.for_keras(base)["config"]
    assert (keras["length_penalty"], keras["early_stopping"], keras["repetition_penalty"]) == (1.0, False, 1.0)
    assert fresh_check.for_openvino(base)["config"]["min_length"] == 0
    assert base["config"]["min_length"] == 9   # the drawn input is left as it was


def test_the_scratch_fit_keeps_one_eos_and_cuts_the_shipped_samples():
    fresh_check = _fresh_check()
    drawn = {"model": {"kind": "gpt2", "path": "models/tiny-shakespeare"}, "input_ids": [[1, 2], [3, 4]],
             "config": {"eos_token_id": [198, 11], "repetition_penalty": 1.3, "top_p": 0.8, "do_sample": True,
                        "max_new_tokens": 9, "num_return_sequences": 2}, "uniforms": list(range(36))}
    fitted = fresh_check.for_scratch(drawn)
    c = fitted["config"]
    assert (c["eos_token_id"], c["repetition_penalty"], c["top_p"], c["max_new_tokens"]) == ([198], 1.0, 1.0, 4)
    assert fitted["uniforms"] == list(range(16))        # steps 0-3 of the 4 rows, the draw order t * N + r
    tiny = fresh_check.for_scratch({**drawn, "model": {"kind": "gpt2", "path": "tests/golden/models/decode-a"}})
    assert tiny["config"]["max_new_tokens"] == 9 and len(tiny["uniforms"]) == 36
    assert drawn["config"]["eos_token_id"] == [198, 11]   # the drawn input is left as it was


def test_where_the_profile_predicts_undefined_a_failure_is_modelled_and_rows_are_listed_apart(tmp_path, monkeypatch):
    """onnxruntime-genai G5 at the first step: the engine reads memory it never wrote; an error there is the failure
    the profile allows, rows there are listed as undefined_answered, neither a mismatch."""
    from refdecode.reference.engines.beam import Undefined

    fresh_check = _fresh_check()
    cases = _cases(tmp_path, 4)

    def undefined(*args, **kwargs):
        raise Undefined("reads uninitialised memory")
    monkeypatch.setattr(fresh_check, "decode_as", undefined)
    fails = ("for line in sys.stdin:\n    r = json.loads(line)\n"
             "    print(json.dumps({'id': r['id'], 'error': 'RuntimeError: indices element out of data bounds'}),"
             " flush=True)\n")
    result = fresh_check.check_engine("onnxruntime-genai", cases, 30.0, python_implementation(tmp_path, fails))
    assert (result["failed_as_modelled"], result["no_answer"], result["mismatches"]) == (4, 0, [])
    answers = "from refdecode.reference.conformance.serve import answer\nfor line in sys.stdin:\n" \
              "    print(answer(line), flush=True)\n"
    result = fresh_check.check_engine("onnxruntime-genai", cases, 30.0, python_implementation(tmp_path, answers))
    assert (result["answered"], len(result["undefined_answered"]), result["mismatches"]) == (0, 4, [])


def test_the_llama_family_keeps_each_engines_draw_on_the_llama_checkpoints():
    """``--family llama``: the engine's own groups and fit, on the Llama family, in a folder of its own name."""
    fresh_check = _fresh_check()
    for engine in ("transformers-4.38.2", "transformers-4.38.2-flax", "ctranslate2"):
        gpt2, llama = fresh_check.draw_of(engine), fresh_check.draw_of(engine, family="llama")
        assert (gpt2.family, llama.family) == ("gpt2", "llama")
        assert llama.name == f"{gpt2.name}-llama" and llama.groups == gpt2.groups and llama.fit is gpt2.fit
    assert fresh_check.draw_of("ctranslate2", ("greedy",), "llama").groups == ("greedy",)
    # an engine with a Llama draw of its own (no sampling cases: a llama_sample line can pass the loader's limit)
    assert fresh_check.draw_of("llama-cpp", family="llama") is fresh_check.LLAMA_DRAWS["llama-cpp"]
    assert fresh_check.draw_of("llama-cpp", family="llama").groups == ("plain_greedy",)
    # without a family, each draw's own: a teaching peer drawn on the Llama family stays there
    assert fresh_check.draw_of("litgpt").family == "llama" and fresh_check.draw_of("ctranslate2").family == "gpt2"
    assert fresh_check.draw_of("litgpt", family="gpt2").family == "gpt2"


def test_the_llama_models_fit_adds_uniforms_for_its_lockstep_budget():
    """llama-models (S1): a row shorter than the longest prompt draws more than max_new_tokens; the fit keeps the
    drawn uniforms first and adds one per row for each step of the difference; greedy cases keep theirs."""
    fresh_check = _fresh_check()
    inp = {"model": {"kind": "llama", "path": "x"}, "input_ids": np.array([[5, 6, 7], [0, 8, 9]]),
           "attention_mask": np.array([[1, 1, 1], [0, 1, 1]]), "uniforms": np.arange(4) / 4.0,
           "config": {"do_sample": True, "max_new_tokens": 2, "top_k": 50, "repetition_penalty": 1.3}}  # not shipped
    out = fresh_check.for_llama_models(inp)
    assert (out["config"]["top_k"], out["config"]["repetition_penalty"]) == (0, 1.0)
    assert out["uniforms"].size == 6 and out["uniforms"][:4].tolist() == inp["uniforms"].tolist()
    assert out["uniforms"].tolist() == fresh_check.for_llama_models(inp)["uniforms"].tolist()   # deterministic
    greedy = fresh_check.for_llama_models({**inp, "config": {"max_new_tokens": 2, "repetition_penalty": 1.3}})
    assert greedy["uniforms"] is inp["uniforms"] and "top_k" not in greedy["config"]
    assert fresh_check.draw_of("llama-models", family="llama").family == "llama"
