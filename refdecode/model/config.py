r"""GPT-2 hyper-parameters: Hugging Face ``config.json`` -> a validated, frozen :class:`GPT2Config`.

Contract: in comes the ``config.json`` that ``transformers`` writes for GPT-2 (or a dict of it); out comes
a dataclass holding only the fields the forward pass needs, checked once here so the model code never
re-checks them. Training-only fields (dropout rates, initializer range, summary heads) are ignored.
Loading the weights is :mod:`refdecode.model.checkpoint`'s job; using them is :mod:`refdecode.model.gpt2`'s.

The defaults are those of ``transformers.GPT2Config`` (transformers 4.38.2,
``models/gpt2/configuration_gpt2.py``), so a ``config.json`` that omits a field means the same here.

>>> cfg = GPT2Config.from_dict({"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 2})
>>> cfg.head_dim, cfg.inner_dim, cfg.vocab_size
(8, 128, 50257)

Docs: docs/gpt2.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..numerics import ACT2FN
from ..text.files import read_json_file
from ..validation import (
    check_boolean,
    check_choice,
    check_float,
    check_integer,
    check_token_ids,
)

__all__ = ["GPT2Config"]


SPECIAL_TOKEN_FIELDS = ("bos_token_id", "eos_token_id")


def _check_special_token(name: str, value: Any) -> int | None:
    """bos: a token id or None; eos also a negative id (no token matches it: never stop, as transformers' tests use)."""
    return check_token_ids(name, value, allow_list=False, no_token=name == "eos_token_id")


@dataclass(frozen=True)
class GPT2Config:
    """The GPT-2 architecture, as in ``transformers.GPT2Config`` (names and defaults).

    Args:
        vocab_size: V, rows of ``wte``.
        n_positions: rows of ``wpe``; the longest sequence (cached + new tokens) the model accepts.
        n_embd: E, the residual width.
        n_layer: L, number of transformer blocks.
        n_head: H; the head size is D = E / H, so E must be a multiple of H.
        n_inner: width of the MLP's hidden layer; ``None`` means 4 * E.
        activation_function: ``"gelu_new"`` (GPT-2's tanh approximation), ``"gelu"`` or ``"relu"``.
        layer_norm_epsilon: the epsilon of every LayerNorm.
        bos_token_id, eos_token_id: special ids (50256 for GPT-2's tokenizer).
        scale_attn_weights: divide attention scores by sqrt(D) (True for every GPT-2).
        scale_attn_by_inverse_layer_idx: further divide the scores of layer i by (i + 1).
        reorder_and_upcast_attn: Mistral's variant: scale q·k by 1/sqrt(D) inside the matmul (a multiply
            instead of a divide); in float32 this differs from the default only by rounding.
        tie_word_embeddings: the LM head is ``wte`` (True for GPT-2); False means a separate
            ``lm_head.weight`` must be in the checkpoint.
    """

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None
    activation_function: str = "gelu_new"
    layer_norm_epsilon: float = 1e-5
    bos_token_id: int | None = 50256
    eos_token_id: int | None = 50256
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False
    tie_word_embeddings: bool = True

    def __post_init__(self) -> None:
        """Check every field (refdecode/validation.py's meaning of integer, float, boolean) and normalise it.

        transformers' ``PretrainedConfig`` takes any JSON value, so ``"scale_attn_weights": "false"`` (a
        truthy string) ran as True there; here it is refused, as are floats for sizes and NaN epsilons.
        """
        values: dict[str, Any] = {}
        for name in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
            values[name] = check_integer(name, getattr(self, name), minimum=1)
        values["n_inner"] = check_integer("n_inner", self.n_inner, minimum=1, allow_none=True)
        if values["n_embd"] % values["n_head"] != 0:
            raise ValueError(
                f"`n_embd` must be divisible by `n_head`, got n_embd={self.n_embd} and n_head={self.n_head}"
            )
        values["activation_function"] = check_choice("activation_function", self.activation_function,
                                                     sorted(ACT2FN))
        values["layer_norm_epsilon"] = check_float("layer_norm_epsilon", self.layer_norm_epsilon, minimum=0.0,
                                                   min_open=True)
        for name in SPECIAL_TOKEN_FIELDS:
            values[name] = _check_special_token(name, getattr(self, name))
        for name in ("scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
                     "tie_word_embeddings"):
            values[name] = check_boolean(name, getattr(self, name))
        for name, value in values.items():
            object.__setattr__(self, name, value)  # frozen: normalised once, here

    def n_params(self) -> int:
        """Number of float32 weights the checkpoint must hold (biases and LayerNorms included).

        >>> GPT2Config().n_params()   # GPT-2 124M (tied LM head counted once)
        124439808
        """
        E, F, V = self.n_embd, self.inner_dim, self.vocab_size
        per_layer = 2 * E + (E * 3 * E + 3 * E) + (E * E + E) + 2 * E + (E * F + F) + (F * E + E)
        lm_head = 0 if self.tie_word_embeddings else V * E
        return V * E + self.n_positions * E + self.n_layer * per_layer + 2 * E + lm_head

    @property
    def head_dim(self) -> int:
        """D = E / H, the width of one attention head."""
        return self.n_embd // self.n_head

    @property
    def inner_dim(self) -> int:
        """Width of the MLP hidden layer: ``n_inner``, or 4 * E when it is None (as transformers)."""
        return self.n_inner if self.n_inner is not None else 4 * self.n_embd

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GPT2Config:
        """Build from a ``config.json`` dict; unknown keys are ignored, ``model_type`` must be ``"gpt2"``.

        >>> GPT2Config.from_dict({"model_type": "llama"})
        Traceback (most recent call last):
        ...
        ValueError: `model_type` must be 'gpt2' (refdecode implements GPT-2 only), got 'llama'
        """
        if not isinstance(d, dict):
            raise TypeError(f"config must be a dict, got {type(d).__name__}")
        model_type = d.get("model_type")
        if model_type != "gpt2":
            raise ValueError(f"`model_type` must be 'gpt2' (refdecode implements GPT-2 only), got {model_type!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_json_file(cls, path: str | Path) -> GPT2Config:
        """Read ``config.json`` (a file, or a directory holding one)."""
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        d = read_json_file(path, "config file")  # regular UTF-8 JSON object, errors name the file
        try:
            return cls.from_dict(d)
        except ValueError as e:  # ArgumentTypeError included
            raise type(e)(f"{path}: {e}") from None


def _set_special_token(self: GPT2Config, name: str, value: Any) -> None:
    """The architecture is frozen; the special token ids may be set, as on transformers' ``PretrainedConfig``.

    transformers' tests write ``model.config.eos_token_id = -1`` before ``generate``. It changes nothing there: 4.38.2's
    ``generate`` reads ``model.generation_config`` (the token ids are not among the model-config fields its legacy
    route copies), and neither does refdecode's (docs/porting.md).

    >>> c = GPT2Config(); c.eos_token_id = -1; c.eos_token_id
    -1
    >>> c.n_layer = 3
    Traceback (most recent call last):
    ...
    dataclasses.FrozenInstanceError: cannot assign to field 'n_layer' (only ('bos_token_id', 'eos_token_id') may change after loading: the weights fix the rest)
    """
    if name not in SPECIAL_TOKEN_FIELDS:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r} (only {SPECIAL_TOKEN_FIELDS} "
                                              f"may change after loading: the weights fix the rest)")
    object.__setattr__(self, name, _check_special_token(name, value))


GPT2Config.__setattr__ = _set_special_token  # type: ignore[method-assign]  # (a frozen dataclass may not define it)
