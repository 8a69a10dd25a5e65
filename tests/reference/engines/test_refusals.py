"""What each engine refuses: a profile answers ``unsupported`` exactly where its engine did, with the engine's reason.

The engines' recorded answers (examples/engines/<engine>/responses.jsonl) hold each refusal word for word; a
refusal that is the adapter's (the engine would sample, but cannot be given the case's uniforms) is kept apart.
"""

from __future__ import annotations

import json

import pytest
from engine_records import ENGINES, ROOT, model_dir

from refdecode.model.config import GPT2Config
from refdecode.reference.conformance.serve import answer
from refdecode.reference.engines.refusals import ADAPTER_LIMITS, REFUSALS, refusal, refusing_rule
from refdecode.reference.engines.rules import PROFILES, EngineRules

# models/gpt2-124m-shaped (500 MB, not committed): tiny-shakespeare widened to 124M's shape
# (tools/engines/make_gpt2_124m_shaped.py SHAPE: n_embd 768, n_head 12; n_inner and the activation kept)
SHAPED_124M = {"n_embd": 768, "n_head": 12}


def model_config(name: str) -> GPT2Config:
    if name == "gpt2-124m-shaped":
        d = json.loads((model_dir("tiny-shakespeare") / "config.json").read_text())
        return GPT2Config.from_dict({**d, **SHAPED_124M, "n_positions": 1024})
    return GPT2Config.from_json_file(model_dir(name))


def records(engine: str) -> list[dict]:
    lines = (ROOT / "examples" / "engines" / engine / "responses.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def profile_says(engine: str, record: dict) -> str | None:
    return refusal(engine, record["config"], len(record["input_ids"][0]), model_config(record["model"]))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_profile_refuses_exactly_the_cases_the_engine_refused(engine):
    """Every recorded case: the engine's refusal (or its answer) is the profile's, reason for reason; a refusal
    that is the adapter's is a sampling case (the profile answers it with the case's uniforms)."""
    engine_refused, adapter_refused, wrong = set(), 0, []
    for record in records(engine):
        said = record["response"].get("unsupported")
        if said in ADAPTER_LIMITS.get(engine, ()):
            assert record["config"]["do_sample"], record["id"]
            adapter_refused += 1
            continue
        if said is not None:
            engine_refused.add(record["id"])
        if profile_says(engine, record) != said:
            wrong.append((record["id"], said, profile_says(engine, record)))
    assert not wrong, wrong[:3]
    assert bool(engine_refused) == (engine in REFUSALS), engine   # a profile with rules: each used by the records
    assert adapter_refused in ((12,) if engine in ADAPTER_LIMITS else (0,)), engine   # the 12 gpt2_sample cases


@pytest.mark.parametrize("engine", sorted(e for e in REFUSALS if e in ENGINES))
def test_every_named_rule_refuses_a_recorded_case(engine):
    """No dead rule: each is the first to hold on at least one recorded refusal."""
    fired = {refusing_rule(engine, r["config"], len(r["input_ids"][0]), model_config(r["model"]))
             for r in records(engine)}
    assert {rule.name for rule in fired if rule} == {rule.name for rule in REFUSALS[engine]}


BASE = {"max_new_tokens": 4, "eos_token_id": [1], "pad_token_id": 1}
SMALL = GPT2Config(n_embd=32, n_head=4)                        # head size 8, vLLM's CPU attention refuses it
SHIPPED = GPT2Config(n_embd=128, n_head=4)                     # head size 32


@pytest.mark.parametrize("engine,config,model,reason", [
    # OpenVINO GenAI: GenerationConfig::validate refuses a repetition penalty with beams; greedy takes it
    ("openvino-genai", {"num_beams": 2, "repetition_penalty": 1.3}, SHIPPED,
     "GenAI refuses the settings: 'repetition_penalty' is not currently supported by beam search and should be "
     "1.0f, but got 1.3"),
    ("openvino-genai", {"num_beams": 1, "repetition_penalty": 1.3}, SHIPPED, None),
    # ... and a min_length above the prompt width (T = 3 here): min_new_tokens only
    ("openvino-genai", {"min_length": 4}, SHIPPED, "min_length=4: GenAI has min_new_tokens only (no total minimum)"),
    ("openvino-genai", {"min_length": 3}, SHIPPED, None),
    # TF: two eos ids with min_length > 0 (TFMinLengthLogitsProcessor takes one int); without min_length it runs
    ("transformers-4.38.2-tf", {"eos_token_id": [1, 2], "min_length": 2}, SHIPPED,
     "TF's generate raises for this config: ValueError: `eos_token_id` has to be a positive integer, but is [1, 2]"),
    ("transformers-4.38.2-tf", {"eos_token_id": [1, 2], "min_length": 0}, SHIPPED, None),
    ("transformers-4.38.2-tf", {"eos_token_id": [1], "min_length": 2}, SHIPPED, None),
    # TF: min_length > max_length (T 3 + 4 new = 7)
    ("transformers-4.38.2-tf", {"min_length": 8}, SHIPPED, "TF's generate raises for this config: ValueError: "
     "Unfeasable length constraints: the minimum length (8) is larger than the maximum length (7)"),
    ("transformers-4.38.2-tf", {"min_length": 7}, SHIPPED, None),
    # Flax: one eos id only, min_length or not
    ("transformers-4.38.2-flax", {"eos_token_id": [1, 2]}, SHIPPED, "eos_token_id [1, 2]: Flax generate takes one "
     "eos id (FlaxMinLengthLogitsProcessor raises for a list, flax_logits_process.py:256; the loops compare with "
     "one id)"),
    ("transformers-4.38.2-flax", {"eos_token_id": [2]}, SHIPPED, None),
    # vLLM: the checkpoint's head size, and beams with a minimum length or a penalty
    ("vllm", {}, SMALL, "head size 8: vLLM's CPU attention (cpu_attn.py) takes head sizes [32, 64, 80, 96, 112, "
     "128, 160, 192, 224, 256, 512]"),
    ("vllm", {}, SHIPPED, None),
    ("vllm", {"num_beams": 2, "min_new_tokens": 1}, SHIPPED,
     "beam search with sampling or a minimum length: BeamSearchParams has neither"),
    ("vllm", {"num_beams": 1, "min_new_tokens": 1}, SHIPPED, None),
    ("vllm", {"num_beams": 2, "repetition_penalty": 0.8}, SHIPPED,
     "beam search with repetition_penalty: BeamSearchParams has no penalties"),
    # keras-hub: no length normalisation nor finishing rule in BeamSampler (greedy ignores both)
    ("keras-hub", {"num_beams": 2, "early_stopping": "never"}, SHIPPED,
     "no option for early_stopping='never' (BeamSampler has no finishing rule)"),
    ("keras-hub", {"num_beams": 1, "early_stopping": "never", "length_penalty": 2.0}, SHIPPED, None),
    # mlx-lm: its GPT-2 has one MLP (4 * n_embd, tanh GELU)
    ("mlx-lm", {}, GPT2Config(n_embd=128, n_head=4, activation_function="gelu"),
     "mlx-lm's GPT-2 has no n_inner and only the tanh GELU (models/gpt2.py MLP)"),
    ("mlx-lm-per-prompt", {}, SHIPPED, None),
    # llama.cpp: no beam search; onnxruntime-genai: early_stopping is a bool
    ("llama-cpp", {"num_beams": 2}, SHIPPED, "no beam search: node-llama-cpp 3.21.1 / llama.cpp have none "
     "(num_beams > 1)"),
    ("onnxruntime-genai", {"num_beams": 2, "early_stopping": "never"}, SHIPPED,
     "no option for early_stopping='never' (a bool only)"),
    ("onnxruntime-genai", {"num_beams": 2, "early_stopping": True}, SHIPPED, None),
    # engines that refuse none of these
    ("transformers-4.38.2", {"num_beams": 2, "eos_token_id": [1, 2], "min_length": 9}, SMALL, None),
    (EngineRules(), {"num_beams": 2, "repetition_penalty": 1.3}, SMALL, None),
])
def test_named_rules_each_way(engine, config, model, reason):
    assert refusal(engine, {**BASE, **config}, 3, model) == reason


def test_each_rule_is_named_sourced_and_once():
    for engine, rules in REFUSALS.items():
        assert engine in PROFILES
        names = [rule.name for rule in rules]
        assert len(set(names)) == len(names), engine
        assert all(rule.reason and rule.source for rule in rules), engine
    assert set(ADAPTER_LIMITS) <= set(PROFILES)
    assert REFUSALS["mlx-lm-per-prompt"] == REFUSALS["mlx-lm"]


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="`profile` must be one of"):
        refusal("mistral-rs", BASE, 3, SHIPPED)


def test_serve_as_engine_answers_the_engines_refusal():
    """`serve --as openvino-genai` on a case GenAI refused: unsupported, the engine's reason; as 4.38.2: an answer."""
    record = next(r for r in records("openvino-genai") if r["type"] == "engines_beam_search"
                  and "repetition_penalty" in r["response"].get("unsupported", ""))
    inp = {"model": {"kind": "gpt2", "path": str(model_dir(record["model"]))}, "input_ids": record["input_ids"],
           "attention_mask": record["attention_mask"], "config": record["config"]}
    line = json.dumps({"id": record["id"], "type": record["type"], "input": inp})
    assert json.loads(answer(line, "openvino-genai")) == {"id": record["id"],
                                                          "unsupported": record["response"]["unsupported"]}
    assert "output" in json.loads(answer(line, "transformers-4.38.2"))


def test_refusals_read_a_llama_checkpoint_too():
    """The facts come from the model's config whatever its family: a Llama has no GPT-2 MLP (n_inner None) and its
    head size is hidden_size // num_attention_heads (vLLM refuses the tiny Llamas' head of 8, takes the shipped one)."""
    import refdecode
    from refdecode.reference.engines.refusals import refusal

    shipped = refdecode.from_pretrained(ROOT / "models" / "tiny-shakespeare-llama").config   # head 32
    tiny = refdecode.from_pretrained(ROOT / "models" / "llama-tiny").config                  # head 8
    config = {"max_new_tokens": 4, "eos_token_id": [198], "pad_token_id": 198}
    assert refusal("vllm", config, 3, shipped) is None
    assert refusal("vllm", config, 3, tiny) is not None
    assert refusal("mlx-lm", config, 3, shipped) is None
