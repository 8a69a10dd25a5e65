r"""What each GenerationConfig field accepts, and when transformers 4.38.2 warns about a value.

Contract: :func:`check_fields` checks every field of a config with its rule (:data:`FIELD_RULES`: type and range,
a ``ValueError`` / ``ArgumentTypeError`` naming the field, the allowed values and the value received) and stores
the normalised value (``np.int64(5)`` -> ``5``); :func:`check_processor_fields` the ranges and shapes of the
processor and warper fields; :func:`generation_warnings` the messages 4.38.2's ``validate`` warns with (a value
the selected mode ignores). :class:`~refdecode.generation_config.GenerationConfig` calls them from ``validate``;
this module knows nothing else of it.
"""

from __future__ import annotations

from typing import Any

from .validation import (
    ArgumentTypeError,
    bad_words_bias,
    check_boolean,
    check_choice,
    check_float,
    check_integer,
    check_probability,
    check_sequence_bias,
    check_token_ids,
    check_token_list,
    describe,
    warn,
)

__all__ = ["FIELD_RULES", "SEMANTICS", "check_fields", "check_processor_fields", "generation_warnings"]


# ---- per-field rules (refdecode): type and range of every field, before transformers' relational checks


def _integer(minimum: int | None = None, allow_none: bool = False) -> Any:
    return lambda name, v: check_integer(name, v, minimum=minimum, allow_none=allow_none)


def _number(minimum: float | None = None, min_open: bool = False, allow_none: bool = False) -> Any:
    return lambda name, v: check_float(name, v, minimum=minimum, min_open=min_open, allow_none=allow_none)


def _boolean(allow_none: bool = False) -> Any:
    return lambda name, v: check_boolean(name, v, allow_none=allow_none)


def _off_if_not_positive(name: str, v: Any) -> int | None:
    """An n-gram size: transformers builds no processor for a value <= 0, so a negative one is "off"; said so."""
    v = check_integer(name, v, allow_none=True)
    if v is not None and v < 0:
        warn(f"`{name}` is {v}; a negative size switches the n-gram ban off, as 0 does "
                      "(transformers 4.38.2 does the same, silently)")
    return v


def _max_time(name: str, v: Any) -> float | None:
    """Seconds, or None; a negative budget is spent at once: generation stops after the first token."""
    v = check_float(name, v, allow_none=True, allow_inf=True)
    if v is not None and v < 0:
        warn(f"`max_time` is {v} s; a negative time limit stops generation after the first token "
                      "(as in transformers 4.38.2)")
    return v


def _type_only(kind: type | tuple[type, ...], allowed: str) -> Any:
    def check(name: str, v: Any) -> Any:
        if v is not None and not isinstance(v, kind):
            raise ArgumentTypeError(f"`{name}` must be {allowed} or None, got {describe(v)}")
        return v
    return check


#: field -> check(name, value) -> normalised value; raises ArgumentTypeError (a TypeError and a ValueError)
#: or ValueError naming the field, the allowed values and the value received.
FIELD_RULES: dict[str, Any] = {
    "max_length": _integer(minimum=1),
    "max_new_tokens": _integer(minimum=1, allow_none=True),
    "min_length": _integer(minimum=0),
    "min_new_tokens": _integer(minimum=0, allow_none=True),
    "early_stopping": lambda name, v: check_choice(name, v, (True, False, "never")),
    "max_time": _max_time,
    "do_sample": _boolean(),
    "num_beams": _integer(minimum=1),
    "num_beam_groups": _integer(minimum=1),
    "penalty_alpha": _number(allow_none=True),
    "use_cache": _boolean(),
    "temperature": _number(allow_none=True),  # > 0 is checked by the warper, when sampling uses it
    "top_k": _integer(minimum=0, allow_none=True),
    "top_p": lambda name, v: check_probability(name, v, allow_none=True),
    "typical_p": _number(allow_none=True),
    "epsilon_cutoff": _number(allow_none=True),
    "eta_cutoff": _number(allow_none=True),
    "diversity_penalty": _number(minimum=0.0),
    "repetition_penalty": _number(minimum=0.0, min_open=True, allow_none=True),
    "encoder_repetition_penalty": _number(allow_none=True),
    "length_penalty": _number(),  # the bound that keeps length ** length_penalty finite: generate()
    "no_repeat_ngram_size": _off_if_not_positive,
    "renormalize_logits": _boolean(),
    "forced_bos_token_id": lambda name, v: check_token_ids(name, v, allow_list=False),
    "forced_eos_token_id": lambda name, v: check_token_ids(name, v),
    "remove_invalid_values": _boolean(),
    "guidance_scale": _number(allow_none=True),
    "low_memory": _boolean(allow_none=True),
    "stop_strings": _type_only((str, list), "a string or a list of strings"),
    "num_return_sequences": _integer(minimum=1),
    "output_attentions": _boolean(),
    "output_hidden_states": _boolean(),
    "output_scores": _boolean(),
    "output_logits": _boolean(allow_none=True),
    "return_dict_in_generate": _boolean(),
    "pad_token_id": lambda name, v: check_token_ids(name, v, allow_list=False, no_token=True),
    "bos_token_id": lambda name, v: check_token_ids(name, v, allow_list=False),
    "eos_token_id": lambda name, v: check_token_ids(name, v, no_token=True),
    "encoder_no_repeat_ngram_size": _off_if_not_positive,
    "decoder_start_token_id": lambda name, v: check_token_ids(name, v),
    "num_assistant_tokens": _integer(minimum=1),
    "num_assistant_tokens_schedule": lambda name, v: check_choice(name, v, ("heuristic", "heuristic_transient",
                                                                            "constant")),
    "cache_implementation": _type_only(str, "a string"),
    "prompt_lookup_num_tokens": _integer(minimum=1, allow_none=True),
    "max_matching_ngram_size": _integer(minimum=1, allow_none=True),
    "generation_kwargs": _type_only(dict, "a dict"),
    "constraints": _type_only((list, tuple), "a list of Constraint objects"),
    "force_words_ids": _type_only(list, "a list of token-id lists"),
    "transformers_version": _type_only(str, "a string"),
    "semantics": lambda name, v: check_choice(name, v, SEMANTICS),
}


SEMANTICS = ("4.38", "5")  # GenerationConfig.semantics: transformers 4.38.2 (default) or 5.x


def check_fields(config: Any) -> None:
    """Check every field with its rule and store the normalised value (Python int/float/bool)."""
    for name, rule in FIELD_RULES.items():
        value = getattr(config, name)
        checked = rule(name, value)
        if checked is not value:
            object.__setattr__(config, name, checked)


def check_processor_fields(c: Any) -> None:
    """Range and shape of the processor / warper fields, after :func:`check_fields` checked their types.

    transformers 4.38.2 checks most of these only when it builds the processor (and ignores
    ``epsilon_cutoff`` / ``eta_cutoff`` outside (0, 1)); refdecode checks them here, whatever the mode.
    """
    def real(name: str, ok, allowed: str) -> None:
        v = getattr(c, name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not ok(v)):
            raise ValueError(f"`{name}` has to be {allowed}, but is {v!r}")

    real("typical_p", lambda v: 0.0 < v <= 1.0, "a float in (0, 1] (1.0 = off)")
    real("epsilon_cutoff", lambda v: 0.0 <= v < 1.0, "a float in [0, 1) (0.0 = off)")
    real("eta_cutoff", lambda v: 0.0 <= v < 1.0, "a float in [0, 1) (0.0 = off)")
    real("min_p", lambda v: 0.0 <= v <= 1.0, "a float in [0, 1] (None = off)")
    real("encoder_repetition_penalty", lambda v: v > 0, "a float > 0 (1.0 = off)")
    real("guidance_scale", lambda v: abs(v) < float("inf"), "a finite float (None or 1 = off)")
    if isinstance(c.forced_eos_token_id, list) and not c.forced_eos_token_id:
        raise ValueError("`forced_eos_token_id` has to be a token id or a non-empty list of them, but is []")
    for name in ("suppress_tokens", "begin_suppress_tokens"):
        if getattr(c, name) is not None:
            check_token_list(name, getattr(c, name))
    if c.bad_words_ids is not None:
        bad_words_bias(c.bad_words_ids, None)
    if c.sequence_bias is not None:
        check_sequence_bias(c.sequence_bias)
    pair = c.exponential_decay_length_penalty
    if pair is not None and (not isinstance(pair, (tuple, list)) or len(pair) != 2 or isinstance(pair[0], bool)
                             or not isinstance(pair[0], int) or pair[0] < 0 or isinstance(pair[1], bool)
                             or not isinstance(pair[1], (int, float)) or not pair[1] > 0):
        raise ValueError(f"`exponential_decay_length_penalty` has to be a pair (start_index: int >= 0, "
                         f"decay_factor: float > 0), but is {pair!r}")


# ---- warnings: the conditions of transformers 4.38.2 (GenerationConfig.validate, generate's length checks)


def generation_warnings(config: Any) -> list[str]:
    """Messages for fields that will be **ignored** in the mode ``config`` selects, as 4.38.2's ``validate`` warns.

    Sampling-only fields without ``do_sample`` (temperature, top_p, typical_p, top_k other than 50,
    epsilon/eta cutoff), beam-only fields with one beam (early_stopping, num_beam_groups,
    diversity_penalty, length_penalty, constraints). Same conditions and wording as transformers.

    >>> from refdecode import GenerationConfig
    >>> generation_warnings(GenerationConfig(max_new_tokens=5))
    []
    >>> config = GenerationConfig(max_new_tokens=5, early_stopping=True)   # (this warns too)
    >>> [message.split(" -- ")[0] for message in generation_warnings(config)]
    ['`num_beams` is set to 1. However, `early_stopping` is set to `True`']
    """
    messages = []
    if config.do_sample is False:
        sampling_only = [("temperature", config.temperature, 1.0), ("top_p", config.top_p, 1.0),
                         ("typical_p", config.typical_p, 1.0),
                         ("top_k", config.top_k if config.penalty_alpha is None else None, 50),  # contrastive uses it
                         ("epsilon_cutoff", config.epsilon_cutoff, 0.0), ("eta_cutoff", config.eta_cutoff, 0.0)]
        messages += [f"`do_sample` is set to `False`. However, `{name}` is set to `{value}` -- this flag is only used "
                     f"in sample-based generation modes. You should set `do_sample=True` or unset `{name}`."
                     for name, value, off in sampling_only if value is not None and value != off]
    if config.num_beams == 1:
        beam_only = [("early_stopping", config.early_stopping, False), ("num_beam_groups", config.num_beam_groups, 1),
                     ("diversity_penalty", config.diversity_penalty, 0.0),
                     ("length_penalty", config.length_penalty, 1.0), ("constraints", config.constraints, None)]
        messages += [f"`num_beams` is set to 1. However, `{name}` is set to `{value}` -- this flag is only used in "
                     f"beam-based generation modes. You should set `num_beams>1` or unset `{name}`."
                     for name, value, off in beam_only if value is not None and value is not off and value != off]
    return messages
