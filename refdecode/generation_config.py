r"""``GenerationConfig``: every knob of ``generate``, with transformers 4.38.2's names and defaults.

Contract: a dataclass validated once (``__post_init__`` and :meth:`GenerationConfig.update`).
:func:`refdecode.dispatch.generation_mode` says which decoding algorithm it selects, as transformers'
``_get_generation_mode`` does; :mod:`refdecode.pipeline` turns it into processors, warpers and stopping
criteria.

Every field of 4.38.2's ``GenerationConfig`` that a decoder-only model uses is implemented;
``cache_implementation="static"`` is refused as 4.38.2 refuses it for GPT-2. ``min_p`` and
``stop_strings`` are transformers 4.41 fields (newer than the pinned 4.38.2).
Docs: docs/generate.md.

>>> cfg = GenerationConfig(num_beams=4, num_return_sequences=2)
>>> cfg.num_beams, cfg.max_length, cfg.top_k
(4, 20, 50)
>>> GenerationConfig(num_beams=4, num_return_sequences=5)
Traceback (most recent call last):
...
ValueError: `num_return_sequences` (5) has to be smaller or equal to `num_beams` (4).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
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
    read_json_file,
    warn,
)

__all__ = ["GenerationConfig", "model_generation_config", "generation_warnings"]


@dataclass
class GenerationConfig:
    """Generation parameters; field names, defaults and meaning as transformers 4.38.2.

    Length: ``max_length`` counts the prompt, ``max_new_tokens`` (if set) overrides it with
    prompt + max_new_tokens; ``min_length`` counts the prompt, ``min_new_tokens`` does not.
    """

    # length
    max_length: int = 20
    max_new_tokens: int | None = None
    min_length: int = 0
    min_new_tokens: int | None = None
    early_stopping: bool | str = False
    max_time: float | None = None
    # strategy
    do_sample: bool = False
    num_beams: int = 1
    num_beam_groups: int = 1
    penalty_alpha: float | None = None
    use_cache: bool = True
    # logits manipulation
    temperature: float = 1.0
    top_k: int | None = 50
    top_p: float | None = 1.0
    typical_p: float | None = 1.0
    epsilon_cutoff: float | None = 0.0
    eta_cutoff: float | None = 0.0
    min_p: float | None = None  # transformers 4.41 (newer than the pinned 4.38.2)
    diversity_penalty: float = 0.0
    repetition_penalty: float | None = 1.0
    encoder_repetition_penalty: float | None = 1.0
    length_penalty: float = 1.0
    no_repeat_ngram_size: int | None = 0
    bad_words_ids: Any = None
    force_words_ids: Any = None
    renormalize_logits: bool = False
    constraints: Any = None
    forced_bos_token_id: int | None = None
    forced_eos_token_id: Any = None
    remove_invalid_values: bool = False
    exponential_decay_length_penalty: Any = None
    suppress_tokens: Any = None
    begin_suppress_tokens: Any = None
    forced_decoder_ids: Any = None
    sequence_bias: Any = None
    guidance_scale: float | None = None
    low_memory: bool | None = None
    stop_strings: str | list[str] | None = None  # not in 4.38.2: transformers 4.41's StopStringCriteria
    # outputs
    num_return_sequences: int = 1
    output_attentions: bool = False
    output_hidden_states: bool = False
    output_scores: bool = False
    output_logits: bool | None = None
    return_dict_in_generate: bool = False
    # special tokens
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    # encoder-decoder / cache (not used by a decoder-only model)
    encoder_no_repeat_ngram_size: int = 0
    decoder_start_token_id: int | None = None
    cache_implementation: str | None = None
    # assisted generation and prompt lookup (docs/speculative-decoding.md); 4.38.2 reads num_assistant_tokens
    # and its schedule from the *assistant's* generation config
    num_assistant_tokens: int = 5
    num_assistant_tokens_schedule: str = "heuristic"
    prompt_lookup_num_tokens: int | None = None
    max_matching_ngram_size: int | None = None  # not in 4.38.2 (which always uses 2): a later transformers name
    generation_kwargs: dict = field(default_factory=dict)
    # refdecode: which transformers to reproduce where the algorithms differ (docs/parity.md,
    # "transformers 5.x semantics"): "4.38" (the pin, default) or "5" (5.x's repetition penalty
    # skips each row's left padding)
    semantics: str = "4.38"
    # metadata
    transformers_version: str | None = None

    def __post_init__(self) -> None:
        self.validate()

    # ---- validation

    def validate(self) -> None:
        """Raise ``ValueError`` naming the field for values transformers rejects or refdecode lacks.

        transformers' own checks (``GenerationConfig.validate``): early_stopping in {True, False,
        "never"}; max_new_tokens > 0; group beam search needs do_sample=False, num_beams divisible
        by num_beam_groups and diversity_penalty > 0; num_return_sequences is 1 for greedy and
        <= num_beams for beam methods. refdecode first checks every field's type and range
        (:data:`_FIELD_RULES`), where transformers lets a wrong value through to a later crash or to
        a silent other meaning (``early_stopping=1.0`` ran as ``"never"``, ``pad_token_id=7.9`` as 7),
        and stores the normalised value (``np.int64(5)`` -> ``5``, ``np.True_`` -> ``True``).
        """
        _check_fields(self)  # refdecode: every field's type and range (refdecode/validation.py), normalised
        _check_processor_fields(self)  # the ranges and shapes of the processor / warper fields (issue 13)
        if self.num_beams > 1 and (self.diversity_penalty != 0.0 or self.num_beam_groups != 1):
            prefix = ("`diversity_penalty` is not 0.0 or `num_beam_groups` is not 1, triggering group beam search. "
                      "In this generation mode, ")
            if self.do_sample is True:
                raise ValueError(prefix + "`do_sample` must be set to `False`")
            if self.num_beams % self.num_beam_groups != 0:
                raise ValueError(prefix + "`num_beams` should be divisible by `num_beam_groups`, but `num_beams` is "
                                 f"{self.num_beams} and `num_beam_groups` is {self.num_beam_groups}")
            if self.diversity_penalty == 0.0:
                raise ValueError(prefix + "`diversity_penalty` should be greater than `0.0`, otherwise your groups "
                                 "will be identical.")
        if self.num_beams > 1 and self.constraints is not None:
            prefix = ("`constraints` is not `None`, triggering constrained beam search. However, `{0}` is set to "
                      "`{1}`, which is incompatible with this generation mode. Set `constraints=None` or unset "
                      "`{0}` to continue.")
            if self.do_sample is True:
                raise ValueError(prefix.format("do_sample", self.do_sample))
            if self.num_beam_groups != 1:
                raise ValueError(prefix.format("num_beam_groups", self.num_beam_groups))
        if self.num_return_sequences != 1:
            if self.num_beams == 1 and self.do_sample is False:
                raise ValueError("Greedy methods without beam search do not support `num_return_sequences` "
                                 f"different than 1 (got {self.num_return_sequences}).")
            if self.num_beams > 1 and self.num_return_sequences > self.num_beams:
                raise ValueError(f"`num_return_sequences` ({self.num_return_sequences}) has to be smaller or equal "
                                 f"to `num_beams` ({self.num_beams}).")
        if self.cache_implementation == "static":  # 4.38.2 raises this for GPT-2 (no `_setup_cache`)
            raise ValueError("The `generation_config` defines a `cache_implementation` that is not compatible with "
                             "this model (`cache_implementation`='static' needs a static-cache model; GPT-2 has "
                             "none in transformers 4.38.2). Leave it None.")
        _warn(generation_warnings(self))  # where transformers 4.38.2 warns (a value that will be ignored)

    def update(self, **kwargs: Any) -> dict[str, Any]:
        """Set the fields named in ``kwargs``, re-validate, and return the kwargs that are not fields."""
        names = {f.name for f in dataclasses.fields(self)}
        for key, value in kwargs.items():
            if key in names:
                setattr(self, key, value)
        self.validate()
        return {k: v for k, v in kwargs.items() if k not in names}

    # ---- construction

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any]) -> GenerationConfig:
        """Build from a dict, keeping only GenerationConfig fields (a model config has many others)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in config_dict.items() if k in names})

    @classmethod
    def from_json_file(cls, path: str | Path) -> GenerationConfig:
        """Read a transformers ``generation_config.json`` (unknown keys such as ``_from_model_config`` ignored).

        Regular files only (a FIFO is refused, not waited on); a file that is not UTF-8 JSON holding an
        object, or holds a bad value, raises an error naming the file (:func:`~refdecode.validation.read_json_file`).
        """
        values = read_json_file(path, "generation config")
        try:
            return cls.from_dict(values)
        except ValueError as e:  # ArgumentTypeError included
            raise type(e)(f"{path}: {e}") from None

    @classmethod
    def from_pretrained(cls, model_dir: str | Path) -> GenerationConfig:
        """``<model_dir>/generation_config.json``."""
        return cls.from_json_file(Path(model_dir) / "generation_config.json")

    @classmethod
    def from_model_config(cls, model_config: Any) -> GenerationConfig:
        """The generation fields a model config carries (GPT-2: ``bos_token_id``, ``eos_token_id``), as transformers.

        Accepts a dataclass, an object with a ``to_dict``/``__dict__``, or a plain dict.
        """
        if isinstance(model_config, dict):
            values = model_config
        elif dataclasses.is_dataclass(model_config):
            values = dataclasses.asdict(model_config)
        elif hasattr(model_config, "to_dict"):
            values = model_config.to_dict()
        else:
            values = vars(model_config)
        return cls.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dict."""
        return dataclasses.asdict(self)


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
_FIELD_RULES: dict[str, Any] = {
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


def _check_fields(config: GenerationConfig) -> None:
    """Check every field with its rule and store the normalised value (Python int/float/bool)."""
    for name, rule in _FIELD_RULES.items():
        value = getattr(config, name)
        checked = rule(name, value)
        if checked is not value:
            object.__setattr__(config, name, checked)


def _check_processor_fields(c: GenerationConfig) -> None:
    """Range and shape of the processor / warper fields, after ``_check_fields`` checked their types.

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


def generation_warnings(config: GenerationConfig) -> list[str]:
    """Messages for fields that will be **ignored** in the mode ``config`` selects, as 4.38.2's ``validate`` warns.

    Sampling-only fields without ``do_sample`` (temperature, top_p, typical_p, top_k other than 50,
    epsilon/eta cutoff), beam-only fields with one beam (early_stopping, num_beam_groups,
    diversity_penalty, length_penalty, constraints). Same conditions and wording as transformers.

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


def _warn(messages: list[str]) -> None:
    for message in messages:
        warn(message)


def model_generation_config(model: Any) -> GenerationConfig:
    """The model's default generation config: ``model.generation_config`` if it has one, else the
    generation fields of ``model.config`` (transformers' ``GenerationConfig.from_model_config``)."""
    config = getattr(model, "generation_config", None)
    if isinstance(config, GenerationConfig):
        return config
    return GenerationConfig.from_model_config(model.config)
