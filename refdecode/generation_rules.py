r"""The door of a request: what each GenerationConfig field accepts, what ``generate`` accepts, and when
transformers 4.38.2 warns about a value.

Contract: :func:`check_fields` checks every field of a config with its rule (:data:`FIELD_RULES`: type and range,
a ``ValueError`` / ``ArgumentTypeError`` naming the field, the allowed values and the value received) and stores
the normalised value (``np.int64(5)`` -> ``5``); :func:`check_processor_fields` the ranges and shapes of the
processor and warper fields (with the token-id rules the processors' constructors share: :func:`eos_list`,
:func:`check_token_list`, :func:`check_id_sequences`, :func:`check_sequence_bias`); :func:`generation_warnings`
the messages 4.38.2's ``validate`` warns with (a value the selected mode ignores).
:class:`~refdecode.generation_config.GenerationConfig` calls them from ``validate``; this module knows nothing
else of it. The request checks (:func:`check_inputs`, :func:`check_lengths`, :func:`check_memory`, ...) are
what ``generate`` checks once, before it builds anything; they read the model's ``config`` only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .recorder import NO_TRACE, Recorder
from .validation import (
    ArgumentTypeError,
    check_allocation,
    check_boolean,
    check_choice,
    check_float,
    check_integer,
    check_probability,
    check_token_ids,
    describe,
    is_float,
    is_integer,
    warn,
)

__all__ = ["FIELD_RULES", "SEMANTICS", "check_fields", "check_processor_fields", "generation_warnings", "eos_list",
           "check_token_list", "check_id_sequences", "check_sequence_bias", "check_inputs", "check_negative_prompt",
           "check_lengths", "check_memory", "check_trace"]


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
        check_id_sequences("bad_words_ids", c.bad_words_ids)
    if c.sequence_bias is not None:
        check_sequence_bias(c.sequence_bias)
    pair = c.exponential_decay_length_penalty
    if pair is not None and (not isinstance(pair, (tuple, list)) or len(pair) != 2 or isinstance(pair[0], bool)
                             or not isinstance(pair[0], int) or pair[0] < 0 or isinstance(pair[1], bool)
                             or not isinstance(pair[1], (int, float)) or not pair[1] > 0):
        raise ValueError(f"`exponential_decay_length_penalty` has to be a pair (start_index: int >= 0, "
                         f"decay_factor: float > 0), but is {pair!r}")


# ---- token ids and id sequences, in transformers 4.38.2's wording: the config's fields and the constructors of the
# processors that take them (refdecode.processors) check them with the same rules


def eos_list(eos_token_id: Any, *, no_token: bool = False) -> list[int] | None:
    """``eos_token_id`` (an id or a list of ids) -> a list of Python ints: the one place an eos id becomes a list.

    Default (a processor that writes the eos scores): non-negative ids. A negative id, which ``generate``
    accepts (no token matches it), is refused there: torch would write the last token's. ``no_token=True``
    (the loops and beam scorers, where eos only ends rows): None stays None and a negative id is kept.

    >>> eos_list(np.int64(3)), eos_list([1, 2]), eos_list(None, no_token=True), eos_list(-1, no_token=True)
    ([3], [1, 2], None, [-1])
    """
    if no_token and eos_token_id is None:
        return None
    ids = [eos_token_id] if is_integer(eos_token_id) else eos_token_id
    if not isinstance(ids, (list, tuple)) or not all(is_integer(i) for i in ids):
        raise ValueError(
            f"`eos_token_id` has to be a non-negative integer or a list of non-negative integers, but is {eos_token_id}"
        )
    if not no_token and any(i < 0 for i in ids):
        raise ValueError(f"`eos_token_id` has to hold non-negative ids for a processor that writes the eos scores, "
                         f"but is {eos_token_id}: a negative id matches no token (decoding never stops on eos), and "
                         f"transformers 4.38.2 would write the vocabulary's last token here (torch indexes from the "
                         f"end); leave min_length / min_new_tokens / forced_eos_token_id / "
                         f"exponential_decay_length_penalty unset with a negative eos")
    return [int(i) for i in ids]


def check_token_list(name: str, ids: Any) -> list[int]:
    """A list (or tuple) of non-negative integer token ids."""
    if not isinstance(ids, (list, tuple)) or not all(is_integer(i) and i >= 0 for i in ids):
        raise ValueError(f"`{name}` has to be a list of non-negative integer token ids, but is {ids!r}")
    return [int(i) for i in ids]


#: ``bad_words_ids`` / ``sequence_bias``: container, item type, and the words of transformers' messages for them
_ID_SEQUENCES = {"sequence_bias": (dict, tuple, "dictionary", "a dict with tuples as keys", "Each key in", "tuple"),
                 "bad_words_ids": (list, list, "list", "a list of lists", "Each list in", "list")}


def check_id_sequences(name: str, value: Any) -> None:
    """``value`` a non-empty container of non-empty sequences of ids >= 0 (transformers' checks and messages)."""
    kind, item_kind, kind_word, shape_words, each, item_word = _ID_SEQUENCES[name]
    if not isinstance(value, kind) or len(value) == 0:
        raise ValueError(f"`{name}` has to be a non-empty {kind_word}, but is {value!r}.")
    if any(not isinstance(seq, item_kind) for seq in value):  # a dict's keys
        raise ValueError(f"`{name}` has to be {shape_words}, but is {value!r}.")
    if any(len(seq) == 0 or not all(is_integer(t) and t >= 0 for t in seq) for seq in value):
        raise ValueError(f"{each} `{name}` has to be a non-empty {item_word} of non-negative integers, "
                         f"but is {value!r}.")


def check_sequence_bias(sequence_bias: Any) -> dict:
    """A non-empty dict {tuple of token ids: float} (transformers' ``_validate_arguments``)."""
    check_id_sequences("sequence_bias", sequence_bias)
    if any(not is_float(bias) for bias in sequence_bias.values()):
        raise ValueError(f"`sequence_bias` has to be a dict with floats as values, but is {sequence_bias!r}.")
    return {tuple(int(t) for t in seq): float(bias) for seq, bias in sequence_bias.items()}


# ---- the request: what generate checks once, before it builds anything (the model is read through its config)


def check_inputs(model: Any, input_ids: Any, attention_mask: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate the prompt: int (B, T) ids in [0, V); mask None or (B, T) of 0/1. Returns them as int64."""
    if not isinstance(input_ids, np.ndarray) or input_ids.dtype.kind not in "iu":
        kind = getattr(getattr(input_ids, "dtype", None), "name", type(input_ids).__name__)
        raise ValueError(f"`input_ids` has to be an integer numpy array (int64 token ids), but is {kind}")
    if input_ids.ndim != 2 or input_ids.shape[0] < 1 or input_ids.shape[1] < 1:
        raise ValueError(f"`input_ids` has to have shape (batch_size, sequence_length) with both >= 1, "
                         f"but has shape {input_ids.shape}")
    vocab = int(model.config.vocab_size)
    if input_ids.min() < 0 or input_ids.max() >= vocab:
        raise ValueError(f"`input_ids` has to hold token ids in [0, {vocab}) (the vocabulary), but holds values "
                         f"from {int(input_ids.min())} to {int(input_ids.max())}")
    if attention_mask is None:
        return input_ids.astype(np.int64), None
    attention_mask = np.asarray(attention_mask)
    if attention_mask.shape != input_ids.shape:
        raise ValueError(f"`attention_mask` has to have the shape of `input_ids` {input_ids.shape}, "
                         f"but has shape {attention_mask.shape}")
    if attention_mask.dtype.kind not in "iub" or not np.isin(attention_mask, (0, 1)).all():
        raise ValueError(f"`attention_mask` has to hold 0/1 (or bool) values, but has dtype "
                         f"{attention_mask.dtype} and values {np.unique(attention_mask)[:5].tolist()}")
    empty = np.flatnonzero(~attention_mask.astype(bool).any(axis=1))
    if empty.size:  # transformers runs on: the first new token would be computed from padding only
        raise ValueError(f"`attention_mask` has to mark at least one real token (a 1) in every row, but rows "
                         f"{empty[:10].tolist()} are all 0 (a prompt of padding only)")
    return input_ids.astype(np.int64), attention_mask.astype(np.int64)


def check_negative_prompt(model: Any, negative_prompt_ids: Any) -> np.ndarray | None:
    """``negative_prompt_ids``: None or int (N, T) token ids of the vocabulary, returned as int64."""
    if negative_prompt_ids is None:
        return None
    ids = np.asarray(negative_prompt_ids)
    vocab = int(model.config.vocab_size)
    if ids.dtype.kind not in "iu" or ids.ndim != 2 or ids.size == 0 or ids.min() < 0 or ids.max() >= vocab:
        raise ValueError(f"`negative_prompt_ids` has to be an integer (rows, length) array of token ids in "
                         f"[0, {vocab}), but has dtype {ids.dtype}, shape {ids.shape}")
    return ids.astype(np.int64)


def check_lengths(model: Any, config: Any, prompt_len: int) -> None:
    """The prompt must be shorter than max_length, max_length fit in n_positions, eos/pad ids in the vocabulary."""
    if prompt_len >= config.max_length:
        raise ValueError(f"Input length of input_ids is {prompt_len}, but `max_length` is set to {config.max_length}. "
                         "This can lead to unexpected behavior. You should consider increasing `max_length` or, "
                         "better yet, setting `max_new_tokens`.")
    n_positions = int(model.config.n_positions)
    if config.max_length > n_positions:
        name = "max_new_tokens" if config.max_new_tokens is not None else "max_length"
        raise ValueError(f"`{name}` is too large: prompt length {prompt_len} + new tokens "
                         f"{config.max_length - prompt_len} = {config.max_length} exceeds the model's n_positions "
                         f"({n_positions})")
    vocab = int(model.config.vocab_size)
    for name in ("eos_token_id", "pad_token_id"):
        for i in eos_list(getattr(config, name), no_token=True) or []:
            if i >= vocab:  # negative: no token (transformers' tests' "never stop" -1)
                raise ValueError(f"`{name}` has to be below {vocab} (the vocabulary; negative: no token), but is {i}")
    if config.min_new_tokens is not None and config.min_new_tokens + prompt_len > config.max_length or \
            config.min_length > config.max_length:
        warn("Unfeasible length constraints: the minimum length is larger than `max_length`; generation "
             "will stop at `max_length`.")


def check_memory(model: Any, config: Any, rows_from: str, batch: int, prompt_len: int) -> None:
    """Refuse, before allocating, a request larger than the machine's memory (refdecode.validation).

    ``rows_from``: the config field that gives the rows per prompt (the mode's). Lower bound of what the loop
    holds at once: ~4 float32 (rows, V) arrays per step (logits, processed scores, log-probabilities,
    candidates), the KV cache (2 x L x rows x max_length x E floats, for a model that has one) and, with
    ``output_scores``/``output_logits``, one (rows, V) array per new token.
    """
    rows = batch * getattr(config, rows_from)
    vocab, steps = int(model.config.vocab_size), config.max_length - prompt_len
    need, parts = 4 * 4 * rows * vocab, [f"{rows} rows x vocabulary {vocab} x 4 float32 arrays per step"]
    n_layer, n_embd = getattr(model.config, "n_layer", None), getattr(model.config, "n_embd", None)
    if n_layer is not None and n_embd is not None:
        need += 2 * 4 * int(n_layer) * rows * config.max_length * int(n_embd)
        parts.append(f"KV cache 2 x {n_layer} layers x {rows} rows x {config.max_length} positions x {n_embd}")
    kept = bool(config.return_dict_in_generate) * (bool(config.output_scores) + bool(config.output_logits))
    if kept:
        need += kept * 4 * rows * vocab * steps
        parts.append(f"{kept} x {steps} steps x {rows} rows x {vocab} kept scores/logits")
    check_allocation("generate()", need, f"batch {batch} x `{rows_from}`={getattr(config, rows_from)}: "
                     + "; ".join(parts))


def check_trace(trace: Any, traced: bool) -> Recorder:
    """``trace=None`` -> nobody watching; a Recorder as is, if the mode can be ``traced``."""
    if trace is None:
        return NO_TRACE
    if not isinstance(trace, Recorder):
        raise TypeError(f"`trace` has to be a refdecode.reference.trace.TraceRecorder (or None), but is "
                        f"{type(trace).__name__}")
    if not traced:
        raise ValueError("`trace` records greedy, sample, contrastive search and the beam modes; assisted generation "
                         "(several tokens per model call) is not traced")
    return trace


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
