r"""GPT-2 hyper-parameters: Hugging Face ``config.json`` -> a validated, frozen :class:`GPT2Config`.

Contract: in comes the ``config.json`` that ``transformers`` writes for GPT-2 (or a dict of it); out comes
a dataclass holding only the fields the forward pass needs, checked once here so the model code never
re-checks them. Training-only fields (dropout rates, initializer range, summary heads) are ignored.
Loading the weights is :mod:`refdecode.checkpoint`'s job; using them is :mod:`refdecode.gpt2`'s.

The defaults are those of ``transformers.GPT2Config`` (transformers 4.38.2,
``models/gpt2/configuration_gpt2.py``), so a ``config.json`` that omits a field means the same here.

>>> cfg = GPT2Config.from_dict({"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 2})
>>> cfg.head_dim, cfg.inner_dim, cfg.vocab_size
(8, 128, 50257)

Docs: docs/gpt2.md.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .numerics import ACT2FN

__all__ = ["GPT2Config"]


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
        for name in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"`{name}` must be an integer >= 1, got {value!r}")
        if self.n_inner is not None and (isinstance(self.n_inner, bool) or not isinstance(self.n_inner, int)
                                         or self.n_inner < 1):
            raise ValueError(f"`n_inner` must be None or an integer >= 1, got {self.n_inner!r}")
        if self.n_embd % self.n_head != 0:
            raise ValueError(
                f"`n_embd` must be divisible by `n_head`, got n_embd={self.n_embd} and n_head={self.n_head}"
            )
        if self.activation_function not in ACT2FN:
            raise ValueError(
                f"`activation_function` must be one of {sorted(ACT2FN)}, got {self.activation_function!r}"
            )
        eps = self.layer_norm_epsilon
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
            raise ValueError(f"`layer_norm_epsilon` must be a float > 0, got {eps!r}")
        for name in ("bos_token_id", "eos_token_id"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"`{name}` must be None or an integer >= 0, got {value!r}")

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
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from e
        return cls.from_dict(d)
