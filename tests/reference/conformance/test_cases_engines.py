"""refdecode.reference.conformance.cases_engines: the engines group expects what transformers 4.38.2 returned,
covers the finishing grid, and finishes hypotheses early (the eos is a token the model emits)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from conftest import GOLDEN

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode import Tokenizer
from refdecode.reference.conformance.cases_engines import PROMPTS, SHIPPED, build_engine_cases, engine_settings
from refdecode.reference.conformance.compare import compare_decode
from refdecode.reference.conformance.registry import REGISTRY, select

ENGINE_TYPES = ("engines_greedy", "engines_beam_search")


@pytest.fixture(scope="module")
def built() -> dict[str, list]:
    return {name: list(REGISTRY[name].build()) for name in ENGINE_TYPES}


def test_prompts_are_what_the_shipped_tokenizer_makes_of_their_text():
    tok = Tokenizer(SHIPPED)
    assert {text: list(map(int, tok.encode(text))) for text in PROMPTS} == PROMPTS


def _golden_key(case, beams: bool) -> str:
    """The golden entry of a case: its setting's index and its prompt's."""
    config, prompt = case.input["config"], case.input["input_ids"][0].tolist()
    settings = [s for s, _ in engine_settings(beams, [198], 12 if beams else 24)]
    index = next(i for i, s in enumerate(settings) if all(config[k] == v for k, v in s.items())
                 and all(config[k] == v for k, v in _defaults_apart_from(s).items()))
    return f"{'b' if beams else 'g'}{index:02d}p{list(PROMPTS.values()).index(prompt)}"


def _defaults_apart_from(setting: dict) -> dict:
    keys = ("num_beams", "length_penalty", "early_stopping", "num_return_sequences", "repetition_penalty",
            "no_repeat_ngram_size", "min_new_tokens", "min_length")
    defaults = {"num_beams": 1, "length_penalty": 1.0, "early_stopping": False, "num_return_sequences": 1,
                "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "min_new_tokens": 0, "min_length": 0}
    return {k: defaults[k] for k in keys if k not in setting}


@pytest.mark.slow
def test_cases_expect_what_transformers_returned(built):
    """Every case's expected answer is transformers 4.38.2's (tools/golden/make_engines_golden.py): sequences
    exact, sequences_scores within 1e-4 + 1e-5 relative (length_penalty -1 multiplies by the length)."""
    golden = np.load(GOLDEN / "engines.npz")
    assert json.loads(str(golden["meta"]))["transformers"] == "4.38.2"
    for name, cases in built.items():
        beams = name.endswith("beam_search")
        for case in cases:
            key = _golden_key(case, beams)
            answer = REGISTRY[name].run(case.input)
            assert np.array_equal(answer["sequences"], golden[f"{key}/sequences"]), (name, case.note)
            if beams:
                np.testing.assert_allclose(answer["sequences_scores"], golden[f"{key}/sequences_scores"],
                                           rtol=1e-5, atol=1e-4)
            assert "beam_indices" not in answer


@pytest.mark.slow
def test_the_case_count_is_what_the_build_yields(built):
    """``count()`` (what the suite's case count reads, without decodes) is the number of cases built."""
    for name in ENGINE_TYPES:
        assert REGISTRY[name].count() == len(built[name]) > 0, name
    assert all(REGISTRY[name].count() > 0 for name in ("engines_124m_greedy", "engines_124m_beam_search"))


@pytest.mark.slow
def test_the_finishing_grid_is_covered_and_hypotheses_finish_early(built):
    beam_cases = built["engines_beam_search"]
    grid = {(c.input["config"]["num_beams"], c.input["config"]["length_penalty"], c.input["config"]["early_stopping"])
            for c in beam_cases}
    assert grid >= set(itertools.product((2, 3, 4, 5), (-1.0, 0.0, 0.5, 1.0, 2.0), (True, False, "never")))
    early = 0
    for case in beam_cases:
        sequences = REGISTRY["engines_beam_search"].run(case.input)["sequences"]
        prompt_len, limit = case.input["input_ids"].shape[1], case.input["config"]["max_new_tokens"]
        early += any(198 in row[prompt_len:prompt_len + limit - 1].tolist() for row in sequences)
    assert early >= len(beam_cases) // 2  # the eos (198) ends a hypothesis before the last step in most cases
    assert {"repetition_penalty", "no_repeat_ngram_size", "min_new_tokens", "min_length", "num_return_sequences"} \
        <= {k for c in beam_cases for k, v in c.input["config"].items() if k in _defaults_apart_from({})
            and v != _defaults_apart_from({})[k]}


@pytest.mark.slow
def test_an_engine_answer_is_judged_on_sequences_and_optional_scores(built):
    case = built["engines_beam_search"][0]
    expected = REGISTRY["engines_beam_search"].run(case.input)
    as_json = {"type": "engines_beam_search", "input": case.input, "expected": _jsonable(expected)}
    only_sequences = {"sequences": expected["sequences"].tolist()}
    assert compare_decode(as_json, only_sequences)[0] == "pass"
    wrong = expected["sequences"].copy()
    wrong[0, -1] = (wrong[0, -1] + 1) % 50257
    verdict, message = compare_decode(as_json, {"sequences": wrong.tolist()})
    assert verdict == "fail" and "sequences" in message
    scores_off = {"sequences": expected["sequences"].tolist(), "sequences_scores": (expected["sequences_scores"] + 0.01).tolist()}
    assert compare_decode(as_json, scores_off)[0] == "fail"


def _jsonable(output: dict) -> dict:
    from refdecode.reference.conformance.kinds import to_json
    return {k: to_json(v) for k, v in output.items()}


def test_the_124m_group_is_opt_in_and_names_its_script_when_missing(tmp_path):
    assert not set(select(None)) & {"engines_124m_greedy", "engines_124m_beam_search"}
    assert select("engines_124m") == ["engines_124m_greedy", "engines_124m_beam_search"]
    with pytest.raises(ValueError, match="make_gpt2_124m_shaped.py"):
        next(build_engine_cases(tmp_path / "gpt2-124m-shaped", True, (1,), 4, 1))


def _widen():
    import importlib.util

    from conftest import ROOT
    spec = importlib.util.spec_from_file_location("make_124m", ROOT / "tools" / "engines" / "make_gpt2_124m_shaped.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.widen


def test_the_widened_checkpoint_computes_the_shipped_models_logits(tmp_path):
    """tools/engines/make_gpt2_124m_shaped.py's construction, into a smaller target (256 wide, 8 heads of 32,
    6 layers, 512 positions) so that the test stays small: every tensor has the target's shape, the logits are
    the shipped model's within float32 rounding, and the layers past the shipped model's 4 add exactly zero."""
    import shutil

    from safetensors.numpy import load_file, save_file

    from refdecode import GPT2
    small_config = json.loads((SHIPPED / "config.json").read_text())
    big_config = {**small_config, "n_embd": 256, "n_head": 8, "n_layer": 6, "n_positions": 512,
                  "torch_dtype": "float32"}
    tensors = _widen()(load_file(SHIPPED / "model.safetensors"), small_config, big_config)
    assert tensors["transformer.h.0.attn.c_attn.weight"].shape == (256, 768)
    assert tensors["transformer.h.0.mlp.c_proj.weight"].shape == (1024, 256)
    assert tensors["transformer.wpe.weight"].shape == (512, 256)
    assert all(v.dtype == np.float32 for v in tensors.values())
    assert not tensors["transformer.h.5.mlp.c_proj.weight"].any() and tensors["transformer.h.5.mlp.c_fc.weight"].any()
    (tmp_path / "config.json").write_text(json.dumps(big_config))
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    shutil.copyfile(SHIPPED / "tokenizer.json", tmp_path / "tokenizer.json")
    small, big = GPT2.from_pretrained(SHIPPED), GPT2.from_pretrained(tmp_path)
    for ids in list(PROMPTS.values())[:3]:
        x = np.array([ids], dtype=np.int64)
        want, got = small(x).logits, big(x).logits
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)
        assert (got.argmax(-1) == want.argmax(-1)).all()


def test_widening_refuses_a_shape_it_cannot_fill():
    config = json.loads((SHIPPED / "config.json").read_text())
    with pytest.raises(ValueError, match="cannot widen"):
        _widen()({}, config, {**config, "n_embd": 200})
