"""LlamaConfig: each model type's defaults, and one ValueError naming the field for every config refdecode cannot run."""

from __future__ import annotations

import dataclasses

import pytest

from refdecode.model.llama_config import LlamaConfig

SMALL = {"model_type": "llama", "vocab_size": 100, "hidden_size": 32, "intermediate_size": 64,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}


def test_defaults_per_model_type_follow_transformers_4_38_2():
    llama, mistral, qwen2 = (LlamaConfig.from_dict({"model_type": t}) for t in ("llama", "mistral", "qwen2"))
    assert (llama.num_key_value_heads, llama.tie_word_embeddings, llama.eos_token_id) == (32, False, 2)
    assert (mistral.num_key_value_heads, mistral.sliding_window, mistral.max_position_embeddings) == (8, 4096, 131072)
    assert (qwen2.vocab_size, qwen2.eos_token_id, qwen2.attention_biases) == (151936, None, ("q_proj", "k_proj", "v_proj"))
    assert mistral.n_positions == 4096 and qwen2.n_positions == 4096  # the window (docs/parity.md)


def test_derived_sizes():
    cfg = LlamaConfig.from_dict({**SMALL, "rope_scaling": {"type": "dynamic", "factor": 2.0},
                                 "max_position_embeddings": 16})
    assert (cfg.head_dim, cfg.n_rep, cfg.n_positions, cfg.n_layer, cfg.n_embd) == (8, 2, 32, 2, 32)
    assert cfg.rope_scaling == {"type": "dynamic", "factor": 2.0}
    llama3 = LlamaConfig.from_dict({**SMALL, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 256}})
    assert llama3.rope_scaling["type"] == "llama3" and llama3.n_positions == 2048
    assert LlamaConfig.from_dict({**SMALL, "attention_bias": True}).attention_biases == (
        "q_proj", "k_proj", "v_proj", "o_proj")
    assert LlamaConfig.from_dict({**SMALL, "eos_token_id": [5, 6]}).eos_token_id == [5, 6]   # Llama 3: a list


@pytest.mark.parametrize("change, match", [
    ({"model_type": "gpt_neox"}, r"`model_type` must be one of \['llama', 'mistral', 'qwen2'\]"),
    ({"hidden_size": 30}, "`hidden_size` must be divisible by `num_attention_heads`"),
    ({"num_key_value_heads": 3}, "`num_attention_heads` must be a multiple of `num_key_value_heads`"),
    ({"num_key_value_heads": 0}, "`num_key_value_heads` must be an integer >= 1"),
    ({"head_dim": 16}, "`head_dim` must be hidden_size / num_attention_heads = 8"),
    ({"hidden_act": "gelu"}, "`hidden_act` must be 'silu'"),
    ({"mlp_bias": True}, "`mlp_bias` must be false"),
    ({"rms_norm_eps": 0.0}, "`rms_norm_eps` must be a finite number > 0"),
    ({"rope_theta": -1.0}, "`rope_theta` must be a finite number > 0"),
    ({"rope_scaling": {"type": "yarn", "factor": 2.0}}, r"`rope_scaling` type must be one of \['dynamic', 'linear', "
                                                         r"'llama3'\], got 'yarn'"),
    ({"rope_scaling": {"type": "linear"}}, "`rope_scaling` of type 'linear' needs the key 'factor'"),
    ({"rope_scaling": {"type": "linear", "factor": 1.0}}, r"`rope_scaling.factor` must be a float > 1"),
    ({"rope_scaling": "linear"}, "`rope_scaling` must be null or an object"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                       "original_max_position_embeddings": 8}}, "`rope_scaling.low_freq_factor` must be <"),
    ({"model_type": "mistral", "rope_scaling": {"type": "linear", "factor": 2.0}},
     "`rope_scaling` must be null for model_type 'mistral'"),
    ({"model_type": "qwen2", "attention_bias": True}, "`attention_bias` must be false for model_type 'qwen2'"),
    ({"model_type": "mistral", "sliding_window": 0}, "`sliding_window` must be an integer >= 1"),
    ({"tie_word_embeddings": "false"}, "`tie_word_embeddings` must be True or False"),
    ({"quantization_config": {"bits": 4}}, "`quantization_config`: refdecode reads float checkpoints"),
    ({"eos_token_id": 1.5}, "`eos_token_id` must be a token id"),
])
def test_bad_config_is_one_line_naming_the_field(change, match):
    with pytest.raises(ValueError, match=match) as err:
        LlamaConfig.from_dict({**SMALL, **change})
    assert "\n" not in str(err.value)


def test_frozen_except_special_tokens():
    cfg = LlamaConfig.from_dict(SMALL)
    cfg.eos_token_id = -1
    assert cfg.eos_token_id == -1
    with pytest.raises(dataclasses.FrozenInstanceError, match="num_hidden_layers"):
        cfg.num_hidden_layers = 3


def test_from_json_file_names_the_file(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": 30, "num_attention_heads": 4}')
    with pytest.raises(ValueError, match="config.json: `hidden_size` must be divisible"):
        LlamaConfig.from_json_file(tmp_path)
