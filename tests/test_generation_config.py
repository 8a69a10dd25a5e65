"""GenerationConfig: transformers 4.38.2 names/defaults, validation naming the field, loading, mode selection."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from conftest import MODELS

from refdecode.model.config import GPT2Config
from refdecode.generation_config import GenerationConfig
from refdecode.dispatch import generation_mode
from refdecode.generate import generate
from refdecode.model.stand_ins import TableModel

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
    (dict(eos_token_id=1.5), "eos_token_id"),
    (dict(eos_token_id=[2, "a"]), "eos_token_id"),
])
def test_invalid_values_raise_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"`{field}`"):
        GenerationConfig(**kwargs)


def test_every_decoder_only_field_is_implemented():
    """What was refused before (contrastive search, forced decoder ids, hidden states / attentions) now selects
    its behaviour; a static cache is refused as 4.38.2 refuses it for GPT-2, and other cache names are ignored."""
    assert generation_mode(GenerationConfig(penalty_alpha=0.6, top_k=4)) == "contrastive_search"
    assert generation_mode(GenerationConfig(penalty_alpha=0.6, top_k=1)) == "greedy_search"   # top_k > 1 needed
    GenerationConfig(forced_decoder_ids=[[1, 2]], output_attentions=True, output_hidden_states=True,
                     cache_implementation="sliding")
    with pytest.raises(ValueError, match="`cache_implementation`"):
        GenerationConfig(cache_implementation="static")


def test_num_return_sequences_allowed_for_sampling_and_group_checks_skip_greedy():
    GenerationConfig(do_sample=True, num_return_sequences=3)
    GenerationConfig(num_beams=1, num_beam_groups=2)   # transformers only warns; the mode stays greedy


def test_update_validates_and_returns_unused():
    cfg = GenerationConfig()
    assert cfg.update(num_beams=3, foo=1) == {"foo": 1} and cfg.num_beams == 3
    with pytest.raises(ValueError, match="num_return_sequences"):
        cfg.update(num_return_sequences=4)


def test_load_generation_config_json(tmp_path):
    cfg = GenerationConfig.from_pretrained(MODELS / "gpt2-tiny")
    assert cfg.eos_token_id == 50256 and cfg.bos_token_id == 50256 and cfg.max_length == 20
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({"num_beams": 4, "early_stopping": True, "_from_model_config": False}))
    assert GenerationConfig.from_json_file(path).num_beams == 4


def test_from_model_config_takes_token_ids():
    cfg = GenerationConfig.from_model_config(GPT2Config(vocab_size=10, bos_token_id=3, eos_token_id=4))
    assert (cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id) == (3, 4, None)


# ---- bad-input catalogue: each value once meant something else or crashed later


def _early_stopping_model():
    """A bigram table (seed 0, V=6, eos 0) on which early_stopping True and "never" give different beams."""
    import numpy as np

    from refdecode.model.stand_ins import TableModel
    return TableModel(np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32), eos_token_id=0)


def test_early_stopping_numpy_bool_runs_as_bool_and_float_is_refused():
    """``early_stopping=1.0`` passed ``in {True, False, "never"}`` (1.0 == True) and then failed ``is True``,
    so it ran as "never"; ``np.True_`` did the same. Now np.True_ is True, 1.0 / 0.0 / 1 are refused."""
    import numpy as np

    from refdecode.generate import generate
    model, prompt = _early_stopping_model(), np.array([[3]])
    run = lambda es: generate(model, prompt, num_beams=2, max_length=12, early_stopping=es).tolist()  # noqa: E731
    assert run(True) == [[3, 3, 1, 0]] and run("never") == [[3] * 12]  # the two rules differ here
    assert run(np.True_) == run(True) and run(np.False_) == run(False)
    assert GenerationConfig(early_stopping=np.True_).early_stopping is True
    for value in (1.0, 0.0, 1, 0, "True"):
        with pytest.raises(ValueError, match="`early_stopping` must be one of True, False, 'never'"):
            GenerationConfig(early_stopping=value)




# ---- generation_config.json on disk


@pytest.mark.parametrize("content, match", [
    (b"[]", "must hold a JSON object, got a JSON array"),
    (b'{"num_beams": 2', "is not valid JSON"),
    (b'{"eos_token_id": "\xff"}', "is not UTF-8 text"),
    (b'{"num_beams": "4"}', "`num_beams` must be an integer"),
])
def test_bad_generation_config_json_names_the_file(tmp_path, content, match):
    """``[]`` gave an AttributeError, malformed JSON a raw JSONDecodeError with no path."""
    path = tmp_path / "generation_config.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match) as e:
        GenerationConfig.from_json_file(path)
    assert str(path) in str(e.value)


# ---- warnings where transformers 4.38.2 warns (same conditions; UserWarning; says what to do)


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    assert all(w.category is UserWarning for w in caught)
    return [str(w.message) for w in caught]


def _generate_messages(**kwargs):
    from refdecode import generate
    from refdecode.model.stand_ins import TableModel

    model = TableModel(np.zeros((3, 3), dtype=np.float32))
    return _caught(lambda: generate(model, np.array([[1, 2]]), **kwargs))


def test_generate_warns_for_the_default_max_length_and_for_both_lengths():
    assert [m[:50] for m in _generate_messages()] == ["Using the model-agnostic default `max_length` (=20"]
    both = _generate_messages(max_length=10, max_new_tokens=3)
    assert len(both) == 1 and both[0].startswith("Both `max_new_tokens` (=3) and `max_length`(=10)")
    assert _generate_messages(max_new_tokens=3) == []  # a plain call: no warning
    assert _generate_messages(max_length=20) == []      # passed explicitly: not the "default"


def test_generate_warns_once_for_an_ignored_temperature():
    messages = _generate_messages(max_new_tokens=3, temperature=0.5)
    assert len(messages) == 1 and "`temperature` is set to `0.5`" in messages[0]


# ---- fuzz: random generation_config.json files

import dataclasses as _dc  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from json_fuzz import FUZZ_EXAMPLES, json_file_contents  # noqa: E402


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(content=json_file_contents([f.name for f in _dc.fields(GenerationConfig)]))
def test_fuzzed_generation_config_json_loads_or_names_the_file(tmp_path_factory, content):
    """Any bytes in generation_config.json: a validated GenerationConfig, or a ValueError/TypeError naming the
    file (``[]`` gave an AttributeError, malformed JSON a JSONDecodeError without the path)."""
    import warnings
    path = tmp_path_factory.mktemp("fuzz") / "generation_config.json"
    path.write_bytes(content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            config = GenerationConfig.from_json_file(path)
        except (ValueError, TypeError) as e:
            assert str(path) in str(e), str(e)
            return
    assert type(config.max_length) is int and config.early_stopping in (True, False, "never")


def test_a_negative_or_empty_eos_matches_no_token_as_in_transformers():
    """transformers' tests set ``eos_token_id=-1`` to mean "never stop" (4.38.2 accepts it; no token
    has id -1), and ``[]`` stops on nothing too; refdecode refused both. Now generation runs to max_new_tokens, and
    a processor that would write the eos column refuses a negative id instead of writing the last token's."""
    model = TableModel(np.log(np.array([[.1, .9], [.9, .1]], dtype=np.float32)), eos_token_id=0)
    for eos in (-1, [], [-1]):
        assert GenerationConfig(eos_token_id=eos).eos_token_id == eos
        out = generate(model, np.array([[1]]), max_new_tokens=4, eos_token_id=eos, pad_token_id=0)
        assert out.tolist() == [[1, 0, 1, 0, 1]]                   # 0 would have been eos: it does not stop here
    assert generate(model, np.array([[1]]), max_new_tokens=2, eos_token_id=-1).tolist() == [[1, 0, 1]]  # pad = -1
    with pytest.raises(ValueError, match="make sure that `pad_token_id` is defined"):   # 4.38.2: IndexError on []
        generate(model, np.array([[1]]), max_new_tokens=2, eos_token_id=[])
    assert generate(model, np.array([[1]]), max_new_tokens=4).tolist() == [[1, 0]]
    with pytest.raises(ValueError, match="`eos_token_id` has to hold non-negative ids .* last token"):
        generate(model, np.array([[1]]), max_new_tokens=4, eos_token_id=-1, min_new_tokens=2)


# ---- the interface code written for transformers 4.38.2's GenerationConfig expects


def test_save_and_load_round_trip_with_overrides_and_a_file_name(tmp_path):
    config = GenerationConfig(do_sample=True, temperature=0.7, length_penalty=1.0, bad_words_ids=[[1, 2, 3], [4, 5]])
    config.save_pretrained(tmp_path, config_name="foo.json")
    assert (tmp_path / "foo.json").is_file()
    loaded = GenerationConfig.from_pretrained(tmp_path, config_name="foo.json")
    assert loaded == config and loaded.bad_words_ids == [[1, 2, 3], [4, 5]]
    assert (loaded.top_k, loaded.max_length, loaded.max_time) == (50, 20, None)
    config.save_pretrained(tmp_path)
    assert GenerationConfig.from_pretrained(tmp_path, temperature=1.0).temperature == 1.0     # kwargs override
    saved = json.loads((tmp_path / "generation_config.json").read_text())
    assert saved == {"do_sample": True, "temperature": 0.7, "bad_words_ids": [[1, 2, 3], [4, 5]],
                     "transformers_version": "4.38.2"}                                          # only the diff


def test_update_sets_what_exists_and_returns_the_rest_without_side_effects():
    config = GenerationConfig()
    kwargs = {"max_new_tokens": 1024, "foo": "bar"}
    assert config.update(**kwargs) == {"foo": "bar"} and config.max_new_tokens == 1024
    assert kwargs == {"max_new_tokens": 1024, "foo": "bar"}


def test_validate_warns_raises_and_keeps_model_specific_keywords_as_4382():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = GenerationConfig(foo="bar")
        assert config.foo == "bar" and config.to_dict()["foo"] == "bar"
    assert not caught
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GenerationConfig(do_sample=False, temperature=0.5)
    assert len(caught) == 1
    with pytest.raises(ValueError, match="`logits_processor` is not a valid argument of `GenerationConfig`"):
        GenerationConfig(logits_processor="foo")
    with pytest.raises(ValueError):
        GenerationConfig(do_sample=False, num_beams=1, num_return_sequences=2)
    model_config = {"bos_token_id": 3, "eos_token_id": 4, "n_embd": 8}          # a model config's other keys: dropped
    assert not hasattr(GenerationConfig.from_model_config(model_config), "n_embd")


def test_a_config_that_validate_objects_to_is_not_saved(tmp_path):
    config = GenerationConfig()
    config.temperature = 0.5                                   # a warning at validation: refused, nothing written
    with pytest.raises(ValueError, match="Fix these issues to save the configuration."):
        config.save_pretrained(tmp_path / "a")
    assert not (tmp_path / "a").exists()
    config = GenerationConfig()
    config.num_return_sequences = 2                            # an error at validation
    with pytest.raises(ValueError, match="Fix these issues"):
        config.save_pretrained(tmp_path / "b")
    GenerationConfig().save_pretrained(tmp_path / "c")
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["generation_config.json"]
    with pytest.raises(ValueError, match="network"):
        GenerationConfig().save_pretrained(tmp_path / "d", push_to_hub=True)


def test_equality_and_hash_ignore_metadata_and_see_every_attribute():
    a, b = GenerationConfig(top_k=3), GenerationConfig(top_k=3, transformers_version="4.30.0")
    assert a == b and hash(a) == hash(b) and a != GenerationConfig(top_k=4) and a != "top_k=3"
    assert GenerationConfig(foo=1) != GenerationConfig(foo=2)
    assert json.loads(a.to_json_string()) == {"top_k": 3, "transformers_version": "4.38.2"}
    assert json.loads(GenerationConfig(sequence_bias={(45, 67): -0.6}).to_json_string())["sequence_bias"] == \
        {"(45, 67)": -0.6}
