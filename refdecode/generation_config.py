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

import copy
import dataclasses
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .generation_rules import check_fields, check_processor_fields, generation_warnings
from .text.files import read_json_file
from .validation import warn

__all__ = ["GenerationConfig", "model_generation_config", "GENERATE_ONLY", "METADATA_FIELDS"]

#: ``generate()`` arguments that a config must not hold (4.38.2's ``validate``, step 5: a ValueError)
GENERATE_ONLY = ("logits_processor", "stopping_criteria", "prefix_allowed_tokens_fn", "synced_gpus",
                 "assistant_model", "streamer", "negative_prompt_ids", "negative_prompt_attention_mask")
#: what equality and ``to_json_string(ignore_metadata=True)`` leave out
METADATA_FIELDS = ("_from_model_config", "_commit_hash", "_original_object_hash", "transformers_version")
CONFIG_NAME = "generation_config.json"
TRANSFORMERS_VERSION = "4.38.2"  # written as ``transformers_version``: the release whose semantics refdecode keeps


@dataclass(init=False, eq=False)
class GenerationConfig:
    """Generation parameters; field names, defaults and meaning as transformers 4.38.2.

    Length: ``max_length`` counts the prompt, ``max_new_tokens`` (if set) overrides it with
    prompt + max_new_tokens; ``min_length`` counts the prompt, ``min_new_tokens`` does not.

    As transformers' class: a keyword that is not a field is kept as an attribute (a model-specific
    parameter), except ``generate()``'s own arguments (:data:`GENERATE_ONLY`: a ValueError); equality compares
    the JSON of all attributes without metadata; ``save_pretrained`` / ``from_pretrained`` read and write
    ``generation_config.json`` (local folders only: nothing is downloaded).
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

    def __init__(self, **kwargs: Any) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
        from_model_config = kwargs.pop("_from_model_config", False)  # then keywords that are not fields are dropped
        for key, value in kwargs.items():
            if key in _FIELD_NAMES or not from_model_config:
                setattr(self, key, value)
        self.validate()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GenerationConfig):
            return False
        return self.to_json_string(use_diff=False, ignore_metadata=True) == \
            other.to_json_string(use_diff=False, ignore_metadata=True)

    def __hash__(self) -> int:
        return hash(self.to_json_string(ignore_metadata=True))

    def __repr__(self) -> str:
        return f"{type(self).__name__} {self.to_json_string(ignore_metadata=True)}"

    # ---- validation

    def validate(self) -> None:
        """Raise ``ValueError`` naming the field for values transformers rejects or refdecode lacks.

        transformers' own checks (``GenerationConfig.validate``): early_stopping in {True, False,
        "never"}; max_new_tokens > 0; group beam search needs do_sample=False, num_beams divisible
        by num_beam_groups and diversity_penalty > 0; num_return_sequences is 1 for greedy and
        <= num_beams for beam methods. refdecode first checks every field's type and range
        (:data:`refdecode.generation_rules.FIELD_RULES`), where transformers lets a wrong value through to a later crash or to
        a silent other meaning (``early_stopping=1.0`` ran as ``"never"``, ``pad_token_id=7.9`` as 7),
        and stores the normalised value (``np.int64(5)`` -> ``5``, ``np.True_`` -> ``True``).
        """
        check_fields(self)  # refdecode: every field's type and range (refdecode/generation_rules.py), normalised
        check_processor_fields(self)  # the ranges and shapes of the processor / warper fields
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
        for message in generation_warnings(self):  # where transformers 4.38.2 warns (a value that will be ignored)
            warn(message)
        for arg in GENERATE_ONLY:
            if hasattr(self, arg):
                raise ValueError(f"Argument `{arg}` is not a valid argument of `GenerationConfig`. It should be passed "
                                 "to `generate()` (or a pipeline) directly.")

    def update(self, **kwargs: Any) -> dict[str, Any]:
        """Set the attributes named in ``kwargs`` that exist (fields, and keywords kept at construction), re-validate,
        and return the other kwargs (4.38.2: ``generate`` refuses them as unused model kwargs)."""
        used = {key: value for key, value in kwargs.items() if hasattr(self, key)}
        for key, value in used.items():
            setattr(self, key, value)
        self.validate()
        return {k: v for k, v in kwargs.items() if k not in used}

    # ---- construction

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """``cls(**config_dict, **kwargs)``; with ``return_unused_kwargs=True``, also the kwargs that set nothing."""
        return_unused = kwargs.pop("return_unused_kwargs", False)
        config = cls(**{**config_dict, **kwargs})  # validated once, by the constructor
        unused = config.update(**kwargs) if kwargs else {}
        return (config, unused) if return_unused else config

    @classmethod
    def from_json_file(cls, path: str | Path, **kwargs: Any) -> Any:
        """Read a ``generation_config.json`` (its ``_from_model_config`` is transformers' metadata, dropped).

        Regular files only (a FIFO is refused, not waited on); a file that is not UTF-8 JSON holding an
        object, or holds a bad value, raises an error naming the file (:func:`~refdecode.text.files.read_json_file`).
        """
        values = read_json_file(path, "generation config")
        values.pop("_from_model_config", None)
        try:
            return cls.from_dict(values, **kwargs)
        except ValueError as e:  # ArgumentTypeError included
            raise type(e)(f"{path}: {e}") from None

    @classmethod
    def from_pretrained(cls, pretrained_model_name: str | Path, config_file_name: str | None = None,
                        **kwargs: Any) -> Any:
        """``<folder>/generation_config.json`` (or ``config_file_name``), ``kwargs`` overriding its values.

        A local folder only. ``config_name=`` is taken as ``config_file_name`` (transformers' tests pass it,
        which 4.38.2 ignores: it loads generation_config.json and keeps ``config_name`` as an attribute).
        """
        name = config_file_name or kwargs.pop("config_name", None) or CONFIG_NAME
        return cls.from_json_file(Path(pretrained_model_name) / name, **kwargs)

    @classmethod
    def from_model_config(cls, model_config: Any) -> GenerationConfig:
        """The generation fields a model config carries (GPT-2: ``bos_token_id``, ``eos_token_id``), as transformers:
        the model config's other keys are dropped.

        Accepts a dataclass, an object with a ``to_dict``/``__dict__``, or a plain dict.
        """
        if isinstance(model_config, dict):
            values = dict(model_config)
        elif dataclasses.is_dataclass(model_config):
            values = dataclasses.asdict(model_config)
        elif hasattr(model_config, "to_dict"):
            values = model_config.to_dict()
        else:
            values = dict(vars(model_config))
        values.pop("_from_model_config", None)
        return cls(**values, _from_model_config=True)

    # ---- serialisation

    def to_dict(self) -> dict[str, Any]:
        """Every attribute (fields and kept keywords) as a plain dict, ``transformers_version`` the pinned one."""
        out = copy.deepcopy({k: v for k, v in vars(self).items() if k not in ("_commit_hash", "_original_object_hash")})
        out["transformers_version"] = TRANSFORMERS_VERSION
        return out

    def to_diff_dict(self) -> dict[str, Any]:
        """The attributes that differ from ``GenerationConfig()``'s (and ``transformers_version``)."""
        default = GenerationConfig().to_dict()
        return {k: v for k, v in self.to_dict().items()
                if k not in default or k == "transformers_version" or v != default[k]}

    def to_json_string(self, use_diff: bool = True, ignore_metadata: bool = False) -> str:
        """JSON of :meth:`to_diff_dict` (``use_diff``) or :meth:`to_dict`, keys sorted, 2-space indent."""
        values = self.to_diff_dict() if use_diff else self.to_dict()
        if ignore_metadata:
            values = {k: v for k, v in values.items() if k not in METADATA_FIELDS}
        return json.dumps(_string_keys(values), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file_path: str | Path, use_diff: bool = True) -> None:
        Path(json_file_path).write_text(self.to_json_string(use_diff=use_diff), encoding="utf-8")

    def save_pretrained(self, save_directory: str | Path, config_file_name: str | None = None,
                        push_to_hub: bool = False, **kwargs: Any) -> None:
        """Write ``<save_directory>/generation_config.json`` (the diff from the defaults), as 4.38.2.

        A config that ``validate`` warns about or rejects is not saved (a ValueError saying "Fix these issues
        to save the configuration."). ``push_to_hub`` is refused (refdecode never uses the network);
        ``config_name=`` is taken as ``config_file_name`` (see :meth:`from_pretrained`).
        """
        if push_to_hub:
            raise ValueError("`push_to_hub=True`: refdecode does not use the network; save locally, then upload")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.validate()
            if caught:
                raise ValueError(str([str(w.message) for w in caught]))
        except ValueError as e:
            raise ValueError("The generation config instance is invalid -- `.validate()` throws warnings and/or "
                             "exceptions. Fix these issues to save the configuration.\n\nThrown during validation:\n"
                             + str(e)) from None
        folder = Path(save_directory)
        if folder.is_file():
            raise ValueError(f"`save_directory` ({folder}) has to be a directory, not a file")
        folder.mkdir(parents=True, exist_ok=True)
        self.to_json_file(folder / (config_file_name or kwargs.get("config_name") or CONFIG_NAME))


#: the names of GenerationConfig's fields (the other attributes are keywords it keeps)
_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(GenerationConfig))


def _string_keys(obj: Any) -> Any:
    """Dict keys as strings, nested (``sequence_bias`` has tuple keys), as 4.38.2's ``convert_keys_to_string``."""
    if isinstance(obj, dict):
        return {str(k): _string_keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_string_keys(v) for v in obj]
    return obj


def model_generation_config(model: Any) -> GenerationConfig:
    """The model's default generation config: ``model.generation_config`` if it has one, else the
    generation fields of ``model.config`` (transformers' ``GenerationConfig.from_model_config``)."""
    config = getattr(model, "generation_config", None)
    if isinstance(config, GenerationConfig):
        return config
    return GenerationConfig.from_model_config(model.config)
