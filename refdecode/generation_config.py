r"""``GenerationConfig``: every knob of ``generate``, with transformers 4.38.2's names and defaults.

Contract: a dataclass validated once (``__post_init__`` and :meth:`GenerationConfig.update`);
:func:`generation_mode` says which decoding algorithm it selects, as transformers'
``_get_generation_mode`` does. ``generate.py`` turns it into processors, warpers and a loop.

Fields refdecode does not implement (contrastive search, constraints, typical/epsilon/eta
sampling, forced tokens, ...) exist so that a transformers ``generation_config.json`` loads, but
they are accepted only where transformers would ignore them (their defaults, or a value the
4.38.2 code treats as "off"); anything else raises a ``ValueError`` naming the field.
Docs: docs/generate.md.

>>> cfg = GenerationConfig(num_beams=4, num_return_sequences=2)
>>> generation_mode(cfg), cfg.max_length, cfg.top_k
('beam_search', 20, 50)
>>> GenerationConfig(num_beams=4, num_return_sequences=5)
Traceback (most recent call last):
...
ValueError: `num_return_sequences` (5) has to be smaller or equal to `num_beams` (4).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["GenerationConfig", "generation_mode", "model_generation_config"]


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
    # encoder-decoder / assisted generation / cache (not used by a decoder-only model)
    encoder_no_repeat_ngram_size: int = 0
    decoder_start_token_id: int | None = None
    num_assistant_tokens: int = 5
    num_assistant_tokens_schedule: str = "heuristic"
    cache_implementation: str | None = None
    prompt_lookup_num_tokens: int | None = None
    generation_kwargs: dict = field(default_factory=dict)
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
        <= num_beams for beam methods. refdecode adds type/range checks transformers leaves to a
        later crash (num_beams >= 1, max_length >= 1, ...).
        """
        if self.early_stopping not in {True, False, "never"} or isinstance(self.early_stopping, int) and \
                not isinstance(self.early_stopping, bool):
            raise ValueError(f"`early_stopping` must be a boolean or 'never', but is {self.early_stopping}.")
        for name in ("max_length", "num_beams", "num_beam_groups", "num_return_sequences"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"`{name}` has to be a positive integer, but is {value!r}")
        if self.max_new_tokens is not None and (not isinstance(self.max_new_tokens, int) or self.max_new_tokens <= 0):
            raise ValueError(f"`max_new_tokens` must be greater than 0, but is {self.max_new_tokens}.")
        if not isinstance(self.min_length, int) or self.min_length < 0:
            raise ValueError(f"`min_length` has to be a non-negative integer, but is {self.min_length!r}")
        if self.min_new_tokens is not None and (not isinstance(self.min_new_tokens, int) or self.min_new_tokens < 0):
            raise ValueError(f"`min_new_tokens` has to be a non-negative integer, but is {self.min_new_tokens!r}")
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
        if self.num_return_sequences != 1:
            if self.num_beams == 1 and self.do_sample is False:
                raise ValueError("Greedy methods without beam search do not support `num_return_sequences` "
                                 f"different than 1 (got {self.num_return_sequences}).")
            if self.num_beams > 1 and self.num_return_sequences > self.num_beams:
                raise ValueError(f"`num_return_sequences` ({self.num_return_sequences}) has to be smaller or equal "
                                 f"to `num_beams` ({self.num_beams}).")
        # refdecode: transformers ignores top_p >= 1 and builds no warper; a value outside [0, 1] is a typo
        if self.top_p is not None and not 0.0 <= self.top_p <= 1.0:
            raise ValueError(f"`top_p` has to be a float in [0, 1], but is {self.top_p!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 0):
            raise ValueError(f"`top_k` has to be a non-negative integer (0 = off), but is {self.top_k!r}")
        if self.eos_token_id is not None:
            eos = self.eos_token_id if isinstance(self.eos_token_id, list) else [self.eos_token_id]
            if not eos or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in eos):
                raise ValueError(f"`eos_token_id` has to be a non-negative integer or a non-empty list of them, "
                                 f"but is {self.eos_token_id!r}")
        for name, inactive in _UNIMPLEMENTED.items():
            value = getattr(self, name)
            if not inactive(value):
                raise ValueError(f"`{name}`={value!r} is not implemented by refdecode (it only accepts the values "
                                 f"transformers 4.38.2 treats as off, e.g. the default "
                                 f"{_DEFAULTS[name]!r})")

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
        """Read a transformers ``generation_config.json`` (unknown keys such as ``_from_model_config`` ignored)."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

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


_DEFAULTS = {f.name: (f.default if f.default is not dataclasses.MISSING else {})
             for f in dataclasses.fields(GenerationConfig)}

#: field -> predicate "transformers 4.38.2 would not act on this value" (the conditions of
#: ``_get_logits_processor`` / ``_get_logits_warper`` / ``_get_generation_mode``).
_UNIMPLEMENTED = {
    "penalty_alpha": lambda v: v is None or v <= 0,
    "typical_p": lambda v: v is None or v >= 1.0,
    "epsilon_cutoff": lambda v: v is None or not 0.0 < v < 1.0,
    "eta_cutoff": lambda v: v is None or not 0.0 < v < 1.0,
    "encoder_repetition_penalty": lambda v: v is None or v == 1.0,
    "bad_words_ids": lambda v: v is None,
    "force_words_ids": lambda v: v is None,
    "renormalize_logits": lambda v: v is False,
    "constraints": lambda v: v is None,
    "forced_bos_token_id": lambda v: v is None,
    "forced_eos_token_id": lambda v: v is None,
    "remove_invalid_values": lambda v: v is False,
    "exponential_decay_length_penalty": lambda v: v is None,
    "suppress_tokens": lambda v: v is None,
    "begin_suppress_tokens": lambda v: v is None,
    "forced_decoder_ids": lambda v: v is None,
    "sequence_bias": lambda v: v is None,
    "guidance_scale": lambda v: v is None or v == 1,
    "output_attentions": lambda v: v is False,
    "output_hidden_states": lambda v: v is False,
    "encoder_no_repeat_ngram_size": lambda v: v is None or v <= 0,
    "cache_implementation": lambda v: v is None,
    "prompt_lookup_num_tokens": lambda v: v is None,
}


def generation_mode(config: GenerationConfig) -> str:
    """The decoding algorithm ``config`` selects, as 4.38.2's ``_get_generation_mode``.

    num_beams == 1: "greedy_search" (do_sample False) or "sample"; num_beams > 1:
    "group_beam_search" (num_beam_groups > 1), else "beam_sample" (do_sample) or "beam_search".

    >>> sampling, beam_sampling = GenerationConfig(do_sample=True), GenerationConfig(num_beams=2, do_sample=True)
    >>> generation_mode(sampling), generation_mode(beam_sampling)
    ('sample', 'beam_sample')
    """
    if config.num_beams == 1:
        return "sample" if config.do_sample else "greedy_search"
    if config.num_beam_groups > 1:
        return "group_beam_search"
    return "beam_sample" if config.do_sample else "beam_search"


def model_generation_config(model: Any) -> GenerationConfig:
    """The model's default generation config: ``model.generation_config`` if it has one, else the
    generation fields of ``model.config`` (transformers' ``GenerationConfig.from_model_config``)."""
    config = getattr(model, "generation_config", None)
    if isinstance(config, GenerationConfig):
        return config
    return GenerationConfig.from_model_config(model.config)
