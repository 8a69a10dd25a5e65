"""GenerationConfig: transformers 4.38.2 names/defaults, validation naming the field, loading, mode selection."""

from __future__ import annotations

import json

import pytest
from conftest import MODELS

from refdecode.config import GPT2Config
from refdecode.generation_config import GenerationConfig, generation_mode

# transformers 4.38.2 generation/configuration_utils.py, GenerationConfig.__init__
DEFAULTS_4_38_2 = dict(
    max_length=20, max_new_tokens=None, min_length=0, min_new_tokens=None, early_stopping=False, max_time=None,
    do_sample=False, num_beams=1, num_beam_groups=1, penalty_alpha=None, use_cache=True, temperature=1.0,
    top_k=50, top_p=1.0, typical_p=1.0, epsilon_cutoff=0.0, eta_cutoff=0.0, diversity_penalty=0.0,
    repetition_penalty=1.0, encoder_repetition_penalty=1.0, length_penalty=1.0, no_repeat_ngram_size=0,
    bad_words_ids=None, force_words_ids=None, renormalize_logits=False, constraints=None, forced_bos_token_id=None,
    forced_eos_token_id=None, remove_invalid_values=False, exponential_decay_length_penalty=None,
    suppress_tokens=None, begin_suppress_tokens=None, forced_decoder_ids=None, sequence_bias=None,
    guidance_scale=None, low_memory=None, num_return_sequences=1, output_attentions=False,
    output_hidden_states=False, output_scores=False, output_logits=None, return_dict_in_generate=False,
    pad_token_id=None, bos_token_id=None, eos_token_id=None, encoder_no_repeat_ngram_size=0,
    decoder_start_token_id=None, num_assistant_tokens=5, num_assistant_tokens_schedule="heuristic",
    cache_implementation=None, prompt_lookup_num_tokens=None, generation_kwargs={},
)


def test_defaults_match_transformers_4_38_2():
    cfg = GenerationConfig().to_dict()
    for name, value in DEFAULTS_4_38_2.items():
        assert cfg[name] == value, name


@pytest.mark.parametrize("kwargs, field", [
    (dict(early_stopping="sometimes"), "early_stopping"),
    (dict(early_stopping=1), "early_stopping"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(num_beams=0), "num_beams"),
    (dict(num_beams=2.0), "num_beams"),
    (dict(max_length=0), "max_length"),
    (dict(num_return_sequences=0), "num_return_sequences"),
    (dict(num_beams=4, num_beam_groups=3, diversity_penalty=1.0), "num_beam_groups"),
    (dict(num_beams=4, num_beam_groups=2), "diversity_penalty"),
    (dict(num_beams=4, num_beam_groups=2, diversity_penalty=1.0, do_sample=True), "do_sample"),
    (dict(num_beams=2, num_return_sequences=3), "num_return_sequences"),
    (dict(num_return_sequences=2), "num_return_sequences"),
    (dict(min_length=-1), "min_length"),
    (dict(eos_token_id=-3), "eos_token_id"),
    (dict(eos_token_id=[]), "eos_token_id"),
])
def test_invalid_values_raise_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"`{field}`"):
        GenerationConfig(**kwargs)


@pytest.mark.parametrize("field, value", [
    ("penalty_alpha", 0.6), ("typical_p", 0.9), ("epsilon_cutoff", 3e-4), ("eta_cutoff", 1e-3),
    ("bad_words_ids", [[1]]), ("renormalize_logits", True), ("forced_eos_token_id", 2), ("suppress_tokens", [1]),
    ("guidance_scale", 1.5), ("output_attentions", True), ("sequence_bias", {(1,): 1.0}),
])
def test_unimplemented_fields_only_accept_inactive_values(field, value):
    with pytest.raises(ValueError, match=f"`{field}`.*not implemented"):
        GenerationConfig(**{field: value})


def test_inactive_values_of_unimplemented_fields_are_accepted():
    """Values 4.38.2 itself ignores (typical_p >= 1, epsilon_cutoff outside (0, 1), guidance_scale 1)."""
    GenerationConfig(typical_p=1.0, epsilon_cutoff=0.0, guidance_scale=1.0, penalty_alpha=0.0)


def test_num_return_sequences_allowed_for_sampling_and_group_checks_skip_greedy():
    GenerationConfig(do_sample=True, num_return_sequences=3)
    GenerationConfig(num_beams=1, num_beam_groups=2)   # transformers only warns; the mode stays greedy


def test_update_validates_and_returns_unused():
    cfg = GenerationConfig()
    assert cfg.update(num_beams=3, foo=1) == {"foo": 1} and cfg.num_beams == 3
    with pytest.raises(ValueError, match="num_return_sequences"):
        cfg.update(num_return_sequences=4)


@pytest.mark.parametrize("kwargs, mode", [
    ({}, "greedy_search"), (dict(do_sample=True), "sample"), (dict(num_beams=2), "beam_search"),
    (dict(num_beams=2, do_sample=True), "beam_sample"),
    (dict(num_beams=4, num_beam_groups=2, diversity_penalty=1.0), "group_beam_search"),
])
def test_generation_mode(kwargs, mode):
    assert generation_mode(GenerationConfig(**kwargs)) == mode


def test_load_generation_config_json(tmp_path):
    cfg = GenerationConfig.from_pretrained(MODELS / "gpt2-tiny")
    assert cfg.eos_token_id == 50256 and cfg.bos_token_id == 50256 and cfg.max_length == 20
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({"num_beams": 4, "early_stopping": True, "_from_model_config": False}))
    assert GenerationConfig.from_json_file(path).num_beams == 4


def test_from_model_config_takes_token_ids():
    cfg = GenerationConfig.from_model_config(GPT2Config(vocab_size=10, bos_token_id=3, eos_token_id=4))
    assert (cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id) == (3, 4, None)
