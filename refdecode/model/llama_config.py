r"""Llama-family hyper-parameters: Hugging Face ``config.json`` (llama, mistral, qwen2) -> a validated, frozen :class:`LlamaConfig`.

Contract: in comes the ``config.json`` that ``transformers`` writes for a ``LlamaForCausalLM``,
``MistralForCausalLM`` or ``Qwen2ForCausalLM`` (or a dict of it); out comes a dataclass holding the fields the
forward pass (:mod:`refdecode.model.llama`) needs, checked once here, each under transformers' name. Training-only
fields (dropout, initializer range) are ignored; a field that would change the arithmetic in a way refdecode does
not implement (``mlp_bias``, a ``head_dim`` other than hidden_size / num_attention_heads, a quantized checkpoint,
an unknown ``rope_scaling`` type) is refused with one line naming it.

The three model types share one forward pass; they differ in their defaults (those of transformers 4.38.2's
``LlamaConfig``, ``MistralConfig``, ``Qwen2Config``, applied by :meth:`LlamaConfig.from_dict`) and in two places:

=========  ==========================================  ===============================================
type       attention biases                            rope_scaling / sliding window
=========  ==========================================  ===============================================
llama      q, k, v and o when ``attention_bias``       ``linear``, ``dynamic`` (4.38.2), ``llama3`` (4.43)
mistral    none                                        ``sliding_window`` (sequences longer refused)
qwen2      q, k and v always, never o                  ``sliding_window`` (sequences longer refused)
=========  ==========================================  ===============================================

>>> cfg = LlamaConfig.from_dict({"model_type": "llama", "hidden_size": 32, "num_attention_heads": 4,
...                              "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100})
>>> cfg.head_dim, cfg.n_rep, cfg.n_positions, cfg.tie_word_embeddings
(8, 2, 2048, False)

Docs: docs/gpt2.md (loading a Llama checkpoint), docs/parity.md (the sliding window).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..text.files import read_json_file
from ..validation import check_boolean, check_float, check_integer, check_token_ids, describe

__all__ = ["LlamaConfig", "MODEL_TYPES", "ROPE_TYPES"]

#: The model types this config (and :class:`refdecode.model.llama_model.Llama`) reads.
MODEL_TYPES = ("llama", "mistral", "qwen2")
#: ``rope_scaling`` types, with the keys each needs besides its type: 4.38.2's two, and 4.43.0's ``llama3``.
ROPE_TYPES = {"linear": ("factor",), "dynamic": ("factor",),
              "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}

#: Each model type's defaults where they differ from LlamaConfig's (transformers 4.38.2's configuration_*.py).
TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {},
    "mistral": {"intermediate_size": 14336, "num_key_value_heads": 8, "max_position_embeddings": 4096 * 32,
                "sliding_window": 4096},
    "qwen2": {"vocab_size": 151936, "intermediate_size": 22016, "num_key_value_heads": 32,
              "max_position_embeddings": 32768, "bos_token_id": None, "eos_token_id": None, "sliding_window": 4096},
}
SPECIAL_TOKEN_FIELDS = ("bos_token_id", "eos_token_id", "pad_token_id")


@dataclass(frozen=True)
class LlamaConfig:
    """A Llama-family architecture, under transformers' names (defaults: ``transformers.LlamaConfig``'s).

    Args:
        model_type: ``"llama"``, ``"mistral"`` or ``"qwen2"`` (which biases, which rope options: module docstring).
        vocab_size: V. hidden_size: E. intermediate_size: F, the MLP's hidden width.
        num_hidden_layers: L. num_attention_heads: H, query heads; D = E / H.
        num_key_value_heads: key/value heads (grouped-query attention); H must be a multiple; None means H.
        hidden_act: the MLP gate's activation; ``"silu"`` (SwiGLU), the only one the family uses.
        max_position_embeddings: the context the model was trained for (RoPE has no table that ends there).
        rms_norm_eps: the epsilon of every RMSNorm.
        tie_word_embeddings: the LM head is ``embed_tokens`` (False by default for this family).
        rope_theta: RoPE's base. rope_scaling: None or ``{"type": "linear"|"dynamic", "factor": f}``, or 4.43's
            ``{"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
            "original_max_position_embeddings"}`` (llama only).
        attention_bias: llama: biases on q, k, v and o. sliding_window: mistral/qwen2's attention window.
        use_sliding_window, max_window_layers: qwen2's flags, read but not needed (see :attr:`n_positions`).
        head_dim: must be E / H if given (4.38.2 has no other). mlp_bias: must be False (4.38.2 has none).
        pretraining_tp: tensor-parallel slices of 4.38.2's matmuls; the same products summed in pieces.
    """

    model_type: str = "llama"
    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    pad_token_id: int | None = None
    tie_word_embeddings: bool = False
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    attention_bias: bool = False
    sliding_window: int | None = None
    use_sliding_window: bool = False
    max_window_layers: int | None = None
    head_dim: int | None = None
    mlp_bias: bool = False
    pretraining_tp: int = 1

    def __post_init__(self) -> None:
        """Check every field and normalise it (``num_key_value_heads`` and ``head_dim`` filled in)."""
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"`model_type` must be one of {list(MODEL_TYPES)}, got {self.model_type!r}")
        v: dict[str, Any] = {}
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                     "max_position_embeddings", "pretraining_tp"):
            v[name] = check_integer(name, getattr(self, name), minimum=1)
        H = v["num_attention_heads"]
        kv = check_integer("num_key_value_heads", self.num_key_value_heads, minimum=1, allow_none=True)
        v["num_key_value_heads"] = H if kv is None else kv
        if v["hidden_size"] % H:
            raise ValueError(f"`hidden_size` must be divisible by `num_attention_heads`, got hidden_size="
                             f"{v['hidden_size']} and num_attention_heads={H}")
        if H % v["num_key_value_heads"]:
            raise ValueError(f"`num_attention_heads` must be a multiple of `num_key_value_heads` (grouped-query "
                             f"attention), got num_attention_heads={H} and num_key_value_heads={kv}")
        head_dim = check_integer("head_dim", self.head_dim, minimum=1, allow_none=True)
        if head_dim is not None and head_dim != v["hidden_size"] // H:
            raise ValueError(f"`head_dim` must be hidden_size / num_attention_heads = {v['hidden_size'] // H} "
                             f"(transformers 4.38.2 has no other), got {head_dim}")
        v["head_dim"] = v["hidden_size"] // H
        if self.hidden_act != "silu":
            raise ValueError(f"`hidden_act` must be 'silu' (the SwiGLU gate), got {describe(self.hidden_act)}")
        v["rms_norm_eps"] = check_float("rms_norm_eps", self.rms_norm_eps, minimum=0.0, min_open=True)
        v["rope_theta"] = check_float("rope_theta", self.rope_theta, minimum=0.0, min_open=True)
        v["rope_scaling"] = _check_rope_scaling(self.rope_scaling, self.model_type)
        for name in ("tie_word_embeddings", "attention_bias", "use_sliding_window", "mlp_bias"):
            v[name] = check_boolean(name, getattr(self, name))
        if v["mlp_bias"]:
            raise ValueError("`mlp_bias` must be false (transformers 4.38.2's Llama MLP has no biases), got true")
        if v["attention_bias"] and self.model_type != "llama":
            raise ValueError(f"`attention_bias` must be false for model_type {self.model_type!r} (its biases are "
                             f"fixed by the type: qwen2 has q/k/v biases, mistral none), got true")
        window = check_integer("sliding_window", self.sliding_window, minimum=1, allow_none=True)
        v["sliding_window"] = window if self.model_type != "llama" else None  # 4.38.2's Llama has no window
        v["max_window_layers"] = check_integer("max_window_layers", self.max_window_layers, minimum=0,
                                               allow_none=True)
        for name in SPECIAL_TOKEN_FIELDS:
            v[name] = _check_special_token(name, getattr(self, name))
        for name, value in v.items():
            object.__setattr__(self, name, value)  # frozen: normalised once, here

    # ---- derived sizes: the names the decode loops read on every model (n_positions, n_layer, n_embd)

    @property
    def n_rep(self) -> int:
        """Query heads per key/value head: H / num_key_value_heads (1 = plain multi-head attention)."""
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def n_positions(self) -> int:
        """The longest sequence (cached + new tokens) refdecode runs this model on.

        ``max_position_embeddings``, times the factor of a ``linear`` or ``dynamic`` ``rope_scaling`` (the context
        the scaling is for); for mistral and qwen2 at most ``sliding_window``: past the window transformers 4.38.2's
        default (sdpa) attention ignores the window and its eager attention applies it, so refdecode runs only
        where the two agree (docs/parity.md). transformers runs RoPE models past this length; refdecode refuses.
        """
        limit = self.max_position_embeddings
        if self.rope_scaling is not None and self.rope_scaling["type"] in ("linear", "dynamic"):
            limit = int(limit * self.rope_scaling["factor"])
        return limit if self.sliding_window is None else min(limit, self.sliding_window)

    @property
    def n_positions_reason(self) -> str:
        """Why :attr:`n_positions` is what it is when the sliding window sets it (for the error message), else ''."""
        if self.sliding_window is None or self.sliding_window > self.n_positions:
            return ""
        return (f" ({self.model_type}'s sliding_window: refdecode refuses sequences longer than the window, where "
                f"transformers 4.38.2's eager and sdpa attention disagree; docs/parity.md)")

    @property
    def n_layer(self) -> int:
        """L (GPT-2's name for num_hidden_layers, which the decode loops use for every model)."""
        return self.num_hidden_layers

    @property
    def n_embd(self) -> int:
        """E (GPT-2's name for hidden_size)."""
        return self.hidden_size

    @property
    def n_head(self) -> int:
        """H (GPT-2's name for num_attention_heads): what a head-size rule reads on every model."""
        return self.num_attention_heads

    @property
    def attention_biases(self) -> tuple[str, ...]:
        """The attention projections that carry a bias: llama all four with ``attention_bias``, qwen2 q/k/v."""
        if self.model_type == "qwen2":
            return ("q_proj", "k_proj", "v_proj")
        return ("q_proj", "k_proj", "v_proj", "o_proj") if self.attention_bias else ()

    def n_params(self) -> int:
        """Number of weights the checkpoint holds (the LM head counted once when tied).

        >>> LlamaConfig(vocab_size=10, hidden_size=4, intermediate_size=8, num_hidden_layers=1,
        ...             num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True).n_params()
        196
        """
        E, F, V, KV = self.hidden_size, self.intermediate_size, self.vocab_size, self.num_key_value_heads
        kv_width = KV * self.head_dim
        biases = {"q_proj": E, "k_proj": kv_width, "v_proj": kv_width, "o_proj": E}
        per_layer = (2 * E + E * E + 2 * E * kv_width + E * E + 3 * E * F
                     + sum(biases[name] for name in self.attention_biases))
        return V * E + self.num_hidden_layers * per_layer + E + (0 if self.tie_word_embeddings else V * E)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LlamaConfig:
        """Build from a ``config.json`` dict with its model type's defaults; other keys are ignored.

        >>> LlamaConfig.from_dict({"model_type": "mistral"}).sliding_window
        4096
        """
        if not isinstance(d, dict):
            raise TypeError(f"config must be a dict, got {type(d).__name__}")
        model_type = d.get("model_type")
        if model_type not in MODEL_TYPES:
            raise ValueError(f"`model_type` must be one of {list(MODEL_TYPES)}, got {model_type!r}")
        if d.get("quantization_config") is not None:
            raise ValueError("`quantization_config`: refdecode reads float checkpoints (F32, F16, BF16) only, "
                             "this one is quantized")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**TYPE_DEFAULTS[model_type], **{k: v for k, v in d.items() if k in names}})

    @classmethod
    def from_json_file(cls, path: str | Path) -> LlamaConfig:
        """Read ``config.json`` (a file, or a directory holding one); errors name the file."""
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        d = read_json_file(path, "config file")
        try:
            return cls.from_dict(d)
        except ValueError as e:
            raise type(e)(f"{path}: {e}") from None


def _check_special_token(name: str, value: Any) -> int | list[int] | None:
    """bos/pad: a token id or None; eos also a list of ids (Llama 3) or a negative id (never stop)."""
    return check_token_ids(name, value, allow_list=name == "eos_token_id", no_token=name == "eos_token_id")


def _check_rope_scaling(value: Any, model_type: str) -> dict[str, Any] | None:
    """``rope_scaling`` -> None or ``{"type": t, <its keys as floats/ints>}``; ValueError naming what is wrong.

    transformers 4.38.2 names the type ``"type"``; 4.43 writes ``"rope_type"`` (and reads both).
    """
    if value is None:
        return None
    if model_type != "llama":
        raise ValueError(f"`rope_scaling` must be null for model_type {model_type!r} (transformers 4.38.2's "
                         f"{model_type} has no RoPE scaling), got {describe(value)}")
    if not isinstance(value, dict):
        raise ValueError(f"`rope_scaling` must be null or an object with `type` and `factor`, got {describe(value)}")
    kind = value.get("rope_type", value.get("type"))
    if kind not in ROPE_TYPES:
        raise ValueError(f"`rope_scaling` type must be one of {sorted(ROPE_TYPES)}, got {kind!r}")
    out: dict[str, Any] = {"type": kind}
    for key in ROPE_TYPES[kind]:
        if key not in value:
            raise ValueError(f"`rope_scaling` of type {kind!r} needs the key {key!r}, got {sorted(value)}")
        if key == "original_max_position_embeddings":
            out[key] = check_integer(f"rope_scaling.{key}", value[key], minimum=1)
        else:
            out[key] = check_float(f"rope_scaling.{key}", value[key], minimum=0.0, min_open=True)
    if kind in ("linear", "dynamic") and out["factor"] <= 1.0:  # 4.38.2: "factor field must be a float > 1"
        raise ValueError(f"`rope_scaling.factor` must be a float > 1, got {value['factor']!r}")
    if kind == "llama3" and out["low_freq_factor"] >= out["high_freq_factor"]:
        raise ValueError(f"`rope_scaling.low_freq_factor` must be < `high_freq_factor`, got "
                         f"{out['low_freq_factor']} and {out['high_freq_factor']}")
    return out


def _set_special_token(self: LlamaConfig, name: str, value: Any) -> None:
    """As :class:`~refdecode.model.config.GPT2Config`: the special token ids may be set after loading, nothing else."""
    if name not in SPECIAL_TOKEN_FIELDS:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r} (only {SPECIAL_TOKEN_FIELDS} "
                                              f"may change after loading: the weights fix the rest)")
    object.__setattr__(self, name, _check_special_token(name, value))


LlamaConfig.__setattr__ = _set_special_token  # type: ignore[method-assign]  # (a frozen dataclass may not define it)
