"""EngineRules / PROFILES: every default is 4.38.2's, every switch is checked at the door."""

from __future__ import annotations

import pytest

from refdecode.reference.engines.rules import PROFILES, EngineRules, rules_for, switches_of


def test_defaults_are_transformers_4382():
    assert PROFILES["transformers-4.38.2"] == EngineRules()
    assert switches_of(EngineRules()) == {}


def test_profiles_name_the_engines_and_differ():
    assert set(PROFILES) == {"transformers-4.38.2", "transformers-5", "ctranslate2", "onnxruntime-genai",
                             "transformers-js", "llama-cpp", "keras-hub", "ctranslate2-per-prompt", "mlx-lm",
                             "mlx-lm-per-prompt", "openvino-genai", "transformers-4.38.2-tf",
                             "vllm", "transformers-4.38.2-flax", "llama2-py",
                             "llms-from-scratch", "llms-from-scratch-kv", "llms-from-scratch-qwen3", "litgpt",
                             "llama-models"}
    # two teaching peers depart alike: llama2-py and llms-from-scratch's KV-cache loop both hard-code RMSNorm's
    # 1e-5 and stop on no eos (their FINDINGS P2, P3 and S4, S5); every other profile has switches of its own
    alike = {"llms-from-scratch-kv"}
    sets = [tuple(sorted(switches_of(r).items())) for name, r in PROFILES.items() if name not in alike]
    assert len(set(sets)) == len(sets), "two engines with the same switches"
    assert switches_of(PROFILES["llms-from-scratch-kv"]) == switches_of(PROFILES["llama2-py"])


def test_switches_of_lists_only_departures():
    assert switches_of(PROFILES["llama-cpp"]) == {"rp_ctx": "unpadded", "warpers": "llama", "activation": "ggml_fp16"}


@pytest.mark.parametrize("field,value", [("rp_ctx", "padded"), ("loop", "6"), ("candidates", "3k")])
def test_bad_choice_names_the_switch(field, value):
    with pytest.raises(ValueError, match=f"`{field}` must be one of"):
        EngineRules(**{field: value})


def test_bad_flag_is_a_type_error():
    with pytest.raises(TypeError, match="`offset` must be a bool"):
        EngineRules(offset=1)
    for bad in (-1, True, 2.0):
        with pytest.raises(TypeError, match="`rp_window` must be an int >= 0"):
            EngineRules(rp_window=bad)


def test_rules_for():
    rules = EngineRules(offset=True)
    assert rules_for(rules) is rules
    assert rules_for("ctranslate2") is PROFILES["ctranslate2"]
    with pytest.raises(ValueError, match="`profile` must be one of"):
        rules_for("mistral-rs")
