"""refdecode.model.config.GPT2Config: transformers' defaults, what config.json may say, and what is refused."""

from __future__ import annotations

import dataclasses
import json

import pytest
from json_fuzz import FUZZ_EXAMPLES, json_file_contents
from conftest import GOLDEN, MODELS

from refdecode.model.config import GPT2Config


def test_defaults_are_transformers_gpt2():
    """transformers 4.38.2 GPT2Config() defaults (configuration_gpt2.py): GPT-2 124M."""
    c = GPT2Config()
    assert (c.vocab_size, c.n_positions, c.n_embd, c.n_layer, c.n_head) == (50257, 1024, 768, 12, 12)
    assert (c.activation_function, c.layer_norm_epsilon, c.bos_token_id, c.eos_token_id) == ("gelu_new", 1e-5,
                                                                                             50256, 50256)
    assert c.scale_attn_weights and not c.scale_attn_by_inverse_layer_idx and not c.reorder_and_upcast_attn
    assert c.n_inner is None and c.inner_dim == 3072 and c.head_dim == 64 and c.tie_word_embeddings


def test_reads_the_shipped_and_golden_configs():
    tiny = GPT2Config.from_json_file(MODELS / "gpt2-tiny")  # a directory is fine
    assert (tiny.n_embd, tiny.n_layer, tiny.n_head, tiny.vocab_size) == (32, 2, 2, 50257)
    relu = GPT2Config.from_json_file(GOLDEN / "models" / "bf16_relu" / "config.json")
    assert (relu.activation_function, relu.n_inner, relu.inner_dim, relu.reorder_and_upcast_attn) == ("relu", 48, 48,
                                                                                                      True)


def test_unknown_keys_are_ignored_and_config_is_frozen():
    c = GPT2Config.from_dict({"model_type": "gpt2", "n_ctx": 1024, "resid_pdrop": 0.1, "architectures": ["x"]})
    assert c == GPT2Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.n_layer = 3  # type: ignore[misc]


@pytest.mark.parametrize("changes, match", [
    ({"model_type": "llama"}, "`model_type` must be 'gpt2'.*'llama'"),
    ({"model_type": None}, "`model_type` must be 'gpt2'.*None"),
    ({"activation_function": "silu"}, r"`activation_function` must be one of 'gelu', 'gelu_new', 'relu'.*'silu'"),
    ({"n_embd": 30, "n_head": 4}, "`n_embd` must be divisible by `n_head`.*n_embd=30 and n_head=4"),
    ({"n_layer": 0}, "`n_layer` must be an integer >= 1, got 0"),
    ({"n_head": 2.0}, "`n_head` must be an integer >= 1, got 2.0"),
    ({"n_inner": 0}, "`n_inner` must be an integer >= 1 or None, got 0"),
    ({"layer_norm_epsilon": 0.0}, r"`layer_norm_epsilon` must be a finite number > 0.0, got 0.0"),
    ({"bos_token_id": -1}, r"`bos_token_id` must be a token id \(an integer >= 0\) or None, got -1"),
    ({"eos_token_id": 1.5}, r"`eos_token_id` must be a token id \(an integer; negative: no token\) or None, got 1.5"),
])
def test_bad_configs_are_refused_with_the_field_named(changes, match):
    with pytest.raises(ValueError, match=match):
        GPT2Config.from_dict({"model_type": "gpt2"} | changes)


def test_special_token_ids_may_be_set_the_architecture_may_not():
    # transformers' streamer tests write model.config.eos_token_id = -1 ("never stop") before generate
    c = GPT2Config()
    c.eos_token_id = -1
    c.bos_token_id = 7
    assert (c.eos_token_id, c.bos_token_id) == (-1, 7)
    assert GPT2Config.from_dict({"model_type": "gpt2", "eos_token_id": -1}).eos_token_id == -1
    with pytest.raises(ValueError, match=r"`bos_token_id` must be a token id \(an integer >= 0\) or None, got -2"):
        c.bos_token_id = -2
    with pytest.raises(dataclasses.FrozenInstanceError, match="'n_embd'"):
        c.n_embd = 64


def test_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="config file not found"):
        GPT2Config.from_json_file(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        GPT2Config.from_json_file(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="config.json must hold a JSON object, got a JSON array"):
        GPT2Config.from_json_file(tmp_path)


# ---- fuzz: random config.json files end in a config or an error naming the file

from hypothesis import given, settings  # noqa: E402

_FIELDS = ["model_type", "vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner", "activation_function",
           "layer_norm_epsilon", "bos_token_id", "eos_token_id", "scale_attn_weights", "scale_attn_by_inverse_layer_idx",
           "reorder_and_upcast_attn", "tie_word_embeddings"]


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(content=json_file_contents(_FIELDS))
def test_fuzzed_config_json_loads_or_names_the_file(tmp_path_factory, content):
    """Any bytes in config.json: a GPT2Config whose fields have their declared types, or a ValueError /
    TypeError naming the file (never a raw JSONDecodeError, UnicodeDecodeError or AttributeError)."""
    path = tmp_path_factory.mktemp("fuzz") / "config.json"
    path.write_bytes(content)
    try:
        config = GPT2Config.from_json_file(path)
    except (ValueError, TypeError) as e:
        assert str(path) in str(e), str(e)
        return
    assert all(type(getattr(config, n)) is int for n in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"))
    assert type(config.scale_attn_weights) is bool and type(config.layer_norm_epsilon) is float
