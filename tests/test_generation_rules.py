"""refdecode.generation_rules: every field's type and range, normalised values, and the warnings of transformers
4.38.2's validate."""

from __future__ import annotations

import warnings

import pytest

from refdecode.generation_config import GenerationConfig
from refdecode.generation_rules import generation_warnings

NAN, INF = float("nan"), float("inf")


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    assert all(w.category is UserWarning for w in caught)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("field, value", [
    ("typical_p", 0.9), ("epsilon_cutoff", 3e-4), ("eta_cutoff", 1e-3), ("min_p", 0.1), ("bad_words_ids", [[1]]),
    ("renormalize_logits", True), ("forced_eos_token_id", 2), ("forced_eos_token_id", [2, 3]),
    ("forced_bos_token_id", 0), ("suppress_tokens", [1]), ("begin_suppress_tokens", []), ("guidance_scale", 1.5),
    ("sequence_bias", {(1,): 1.0}), ("remove_invalid_values", True), ("encoder_repetition_penalty", 1.3),
    ("encoder_no_repeat_ngram_size", 2), ("exponential_decay_length_penalty", (3, 1.5)),
])
def test_processor_fields_accept_valid_values(field, value):
    """these fields are implemented now (refdecode/processors/truncation_warpers.py, bad_words_and_forcing.py, ...)."""
    assert getattr(GenerationConfig(**{field: value}), field) == value


@pytest.mark.parametrize("field, value", [
    ("typical_p", 0.0), ("typical_p", 1.5), ("typical_p", "0.9"), ("epsilon_cutoff", 1.0), ("epsilon_cutoff", -0.1),
    ("eta_cutoff", 2.0), ("min_p", 1.1), ("min_p", -0.5), ("encoder_repetition_penalty", 0.0),
    ("guidance_scale", float("inf")), ("renormalize_logits", 1), ("remove_invalid_values", "yes"),
    ("encoder_no_repeat_ngram_size", 1.5), ("forced_bos_token_id", -1),
    ("forced_eos_token_id", []), ("forced_eos_token_id", [1, -2]), ("suppress_tokens", [1, "a"]),
    ("suppress_tokens", 3), ("begin_suppress_tokens", [-1]), ("bad_words_ids", []), ("bad_words_ids", [1, 2]),
    ("bad_words_ids", [[1], []]), ("bad_words_ids", [(1, 2)]), ("bad_words_ids", [[1, -2]]),
    ("sequence_bias", {}), ("sequence_bias", {1: 1.0}), ("sequence_bias", {(): 1.0}), ("sequence_bias", {(1,): 1}),
    ("exponential_decay_length_penalty", (3,)), ("exponential_decay_length_penalty", (-1, 1.5)),
    ("exponential_decay_length_penalty", (2, 0.0)), ("exponential_decay_length_penalty", 1.5),
])
def test_processor_fields_refuse_invalid_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=f"`{field}`"):
        GenerationConfig(**{field: value})


@pytest.mark.parametrize("value", [7.9, True, [3], "3"])
def test_pad_token_id_must_be_a_token_id(value):
    """``pad_token_id=7.9`` padded with 7, ``True`` with 1, ``[3]`` with 3 (a negative id: no token, accepted)."""
    with pytest.raises(ValueError, match=r"`pad_token_id` must be a token id \(an integer; negative: no token\)"):
        GenerationConfig(pad_token_id=value)


def test_numpy_integers_accepted_everywhere_and_stored_as_python_ints():
    """``max_new_tokens=np.int64(5)`` was refused with "must be greater than 0, but is 5"."""
    import numpy as np
    cfg = GenerationConfig(max_new_tokens=np.int64(5), num_beams=np.int32(4), eos_token_id=[np.int64(2)],
                           pad_token_id=np.uint16(1), top_k=np.int64(3), length_penalty=np.float32(0.5))
    assert (cfg.max_new_tokens, cfg.num_beams, cfg.eos_token_id, cfg.pad_token_id, cfg.top_k) == (5, 4, [2], 1, 3)
    assert all(type(v) is int for v in (cfg.max_new_tokens, cfg.num_beams, cfg.pad_token_id, cfg.top_k))
    assert type(cfg.length_penalty) is float


@pytest.mark.parametrize("kwargs, field", [
    (dict(do_sample="yes"), "do_sample"), (dict(do_sample=1), "do_sample"),
    (dict(max_new_tokens=True), "max_new_tokens"), (dict(max_new_tokens=5.0), "max_new_tokens"),
    (dict(top_p=True), "top_p"), (dict(top_p="0.9"), "top_p"), (dict(top_k=2.0), "top_k"),
    (dict(num_beams=True), "num_beams"), (dict(output_scores="yes"), "output_scores"),
    (dict(return_dict_in_generate=1), "return_dict_in_generate"), (dict(use_cache=None), "use_cache"),
    (dict(eos_token_id=[1, True]), "eos_token_id"), (dict(eos_token_id=2.0), "eos_token_id"),
    (dict(temperature="hot"), "temperature"), (dict(length_penalty=None), "length_penalty"),
    (dict(no_repeat_ngram_size=2.0), "no_repeat_ngram_size"), (dict(max_time="1s"), "max_time"),
    (dict(generation_kwargs=[]), "generation_kwargs"),
])
def test_wrong_types_are_type_errors_naming_the_field(kwargs, field):
    with pytest.raises(TypeError, match=f"`{field}` must be"):
        GenerationConfig(**kwargs)


@pytest.mark.parametrize("kwargs, field", [
    (dict(length_penalty=NAN), "length_penalty"), (dict(length_penalty=INF), "length_penalty"),
    (dict(length_penalty=-INF), "length_penalty"),
    (dict(num_beams=4, num_beam_groups=2, diversity_penalty=-1.0), "diversity_penalty"),
    (dict(num_beams=4, num_beam_groups=2, diversity_penalty=NAN), "diversity_penalty"),
    (dict(diversity_penalty=-0.5), "diversity_penalty"),
    (dict(no_repeat_ngram_size=NAN), "no_repeat_ngram_size"),
    (dict(max_time=NAN), "max_time"),
    (dict(temperature=NAN), "temperature"), (dict(repetition_penalty=NAN), "repetition_penalty"),
    (dict(repetition_penalty=0.0), "repetition_penalty"), (dict(top_p=NAN), "top_p"),
])
def test_nan_and_nonsense_numbers_are_refused(kwargs, field):
    """NaN length_penalty made every ``sequences_scores`` NaN; negative/NaN diversity_penalty gave identical
    groups (transformers refuses 0.0 for that reason); NaN max_time never stops."""
    with pytest.raises(ValueError, match=f"`{field}` must be"):
        GenerationConfig(**kwargs)


def test_values_transformers_treats_as_off_are_accepted_with_a_warning():
    with pytest.warns(UserWarning, match="`no_repeat_ngram_size` is -2; a negative size switches the n-gram ban off"):
        assert GenerationConfig(no_repeat_ngram_size=-2).no_repeat_ngram_size == -2
    with pytest.warns(UserWarning, match="`max_time` is -1.0 s; a negative time limit stops generation after"):
        GenerationConfig(max_time=-1.0)
    assert GenerationConfig(max_time=INF).max_time == INF  # no limit, said explicitly


@pytest.mark.parametrize("field,value", [("temperature", 0.5), ("top_p", 0.5), ("top_k", 3), ("top_k", 0)])
def test_sampling_only_fields_without_do_sample_warn(field, value):
    messages = _caught(lambda: GenerationConfig(**{field: value}))
    assert messages == [f"`do_sample` is set to `False`. However, `{field}` is set to `{value}` -- this flag is only "
                        f"used in sample-based generation modes. You should set `do_sample=True` or unset `{field}`."]
    assert _caught(lambda: GenerationConfig(do_sample=True, **{field: value})) == []


@pytest.mark.parametrize("field,value", [("early_stopping", True), ("early_stopping", "never"),
                                         ("num_beam_groups", 2), ("diversity_penalty", 1.0),
                                         ("length_penalty", 0.5)])
def test_beam_only_fields_with_one_beam_warn(field, value):
    messages = _caught(lambda: GenerationConfig(**{field: value}))
    assert len(messages) == 1 and f"However, `{field}` is set to `{value}`" in messages[0]
    assert "You should set `num_beams>1` or unset" in messages[0]


def test_top_k_50_and_defaults_do_not_warn():
    """top_k=50 is the default (4.38.2 warns only for another value); the default config warns nothing."""
    assert generation_warnings(GenerationConfig(top_k=50)) == []
    assert _caught(lambda: GenerationConfig()) == []
    assert _caught(lambda: GenerationConfig(num_beams=4, early_stopping=True, length_penalty=0.5)) == []


# ---- eos_list: the one place an eos id becomes a list (processors, loops, scorers, generate)


def test_eos_list_makes_every_eos_a_list_of_python_ints():
    import numpy as np
    from refdecode.generation_rules import eos_list
    for value, listed in [(3, [3]), (np.int64(3), [3]), ((1, 2), [1, 2]), ([np.int32(4)], [4])]:
        out = eos_list(value)
        assert out == listed and all(type(i) is int for i in out)
    assert eos_list(None, no_token=True) is None          # a loop without eos: rows end by length only
    assert eos_list([-1, 2], no_token=True) == [-1, 2]      # transformers' tests' "never stop" -1 only ends no row


@pytest.mark.parametrize("value, match", [
    (-1, "non-negative ids for a processor that writes the eos scores"),   # torch would write the last token's
    (None, "non-negative integer or a list of non-negative integers"),
    ("2", "non-negative integer or a list of non-negative integers"),
    ([1.0], "non-negative integer or a list of non-negative integers"),
])
def test_eos_list_for_a_processor_refuses_what_it_cannot_write(value, match):
    from refdecode.generation_rules import eos_list
    with pytest.raises(ValueError, match=match):
        eos_list(value)


def test_the_loops_read_eos_through_eos_list():
    """A NumPy eos id was kept as is by the loops' own ``[eos] if isinstance(eos, int)``: not a list."""
    import numpy as np
    from refdecode.decoding.loop import loop_defaults
    from refdecode.model.stand_ins import TableModel
    model = TableModel(np.zeros((3, 3), dtype=np.float32), eos_token_id=0)
    *_, pad, eos = loop_defaults(model, None, None, 5, 1, np.int64(2))
    assert eos == [2] and type(eos[0]) is int and pad == 1
