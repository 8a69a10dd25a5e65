r"""The model object the decode loops are handed: ``GPT2`` = config + parameters + a forward pass, with its checks.

Contract: ``GPT2.from_pretrained(path)`` reads ``config.json``, ``model.safetensors`` and (if present)
``generation_config.json`` from a local directory; calling the model validates its arguments and runs
one forward pass (:func:`refdecode.model.gpt2.gpt2` by default) with transformers' calling convention::

    out = model(input_ids, attention_mask=..., position_ids=..., past_key_values=cache, logits_to_keep=n)
    out.logits            float32 (B, T, V)   (or (B, n, V))
    out.past_key_values   the KVCache, now holding S + T tokens

Which forward pass runs is chosen at the call site, so a reader sees which code runs:

- ``GPT2.from_pretrained(path)``: :func:`refdecode.model.gpt2.gpt2`, the readable one (the default);
- ``GPT2.from_pretrained(path, forward="fast")``: :func:`refdecode.model.fast.forward.gpt2_fast`, the same math with fewer
  passes over memory, and the weights stored column-major for it (docs/gpt2.md, benchmarks/README.md).

This module is where the model meets generation's defaults: ``model.generation_config`` is a
:class:`~refdecode.generation_config.GenerationConfig`, as in transformers. The forward passes
(``gpt2.py``, ``fast/``) import neither this module nor anything of generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .checkpoint import load_params, nonfinite_tensors
from .config import GPT2Config
from .fast import gpt2_fast, load_params_measured
from ..generation_config import GenerationConfig
from .gpt2 import default_position_ids, gpt2
from .kv_cache import KVCache

__all__ = ["GPT2", "CausalLMOutput", "FORWARDS", "checked_call"]

#: The forward passes a GPT2 can run, by the name given as ``forward=``.
FORWARDS = {"plain": gpt2, "fast": gpt2_fast}


@dataclass
class CausalLMOutput:
    """What :class:`GPT2` returns (transformers' ``CausalLMOutputWithCrossAttentions``, trimmed).

    Attributes:
        logits: float32 (B, T, V), or (B, n, V) with ``logits_to_keep=n``.
        past_key_values: the KVCache, now holding S + T tokens.
        hidden_states: with ``output_hidden_states=True``, n_layer + 1 arrays float32 (B, T, E): each
            block's input, then the last block's output after ``ln_f`` (transformers' layout); else None.
        attentions: with ``output_attentions=True``, n_layer arrays float32 (B, H, T, S + T); else None.
    """

    logits: np.ndarray
    past_key_values: KVCache
    hidden_states: tuple[np.ndarray, ...] | None = None
    attentions: tuple[np.ndarray, ...] | None = None


class GPT2:
    """A GPT-2 language model: :class:`GPT2Config` + parameters; calling it runs the forward pass named by
    ``forward``: ``"plain"`` (:func:`refdecode.model.gpt2.gpt2`, the default) or ``"fast"``
    (:func:`refdecode.model.fast.forward.gpt2_fast`).

    >>> model = GPT2.from_pretrained("models/gpt2-tiny")   # random weights, real vocabulary
    >>> out = model(np.array([[15496, 995]]))               # "Hello world"
    >>> out.logits.shape, out.logits.dtype, out.past_key_values.length
    ((1, 2, 50257), dtype('float32'), 2)
    >>> step = model(np.array([[11]]), past_key_values=out.past_key_values)   # one more token, cached
    >>> step.logits.shape, step.past_key_values.length
    ((1, 1, 50257), 3)
    >>> fast = GPT2.from_pretrained("models/gpt2-tiny", forward="fast")
    >>> bool(np.allclose(fast(np.array([[15496, 995]])).logits, out.logits, rtol=0, atol=1e-5))
    True
    """

    def __init__(self, config: GPT2Config, params: dict[str, Any],
                 generation_config: GenerationConfig | None = None, forward: str = "plain") -> None:
        if forward not in FORWARDS:
            raise ValueError(f"`forward` has to be one of {sorted(FORWARDS)}, but is {forward!r}")
        self.config = config
        self.params = params
        self.forward = forward  # the name of the forward pass __call__ runs (FORWARDS)
        # generate()'s defaults, as transformers' ``model.generation_config``: the checkpoint's
        # generation_config.json when it has one, else the generation fields of config.json.
        self.generation_config = (generation_config if generation_config is not None
                                  else GenerationConfig.from_model_config(config))

    def nonfinite_weights(self) -> list[str]:
        """The weights that hold NaN or inf (``h.1.mlp.c_fc.weight (1 non-finite of 4096)``).

        The decode loops ask when the logits turn NaN, to name the checkpoint as the cause (not the processors);
        loading does not scan (a memory-mapped checkpoint stays unread until used).
        """
        return nonfinite_tensors(self.params)  # asked only on the error path, so nothing is kept

    @classmethod
    def from_pretrained(cls, path: str | Path, mmap: bool = False, forward: str = "plain") -> GPT2:
        """Load ``path/config.json`` and ``path/model.safetensors`` (local files only; nothing is downloaded).

        ``mmap``: read the weights into memory (False, faster decoding) or use read-only views of the
        memory-mapped file (True: instant loading, pages shared between processes). See
        :mod:`refdecode.model.checkpoint`. ``forward="fast"`` stores each 2-D weight row- or column-major (unless
        memory-mapped), as a short calibration finds it multiplied fastest here (:mod:`refdecode.model.fast.layout`).
        """
        if forward not in FORWARDS:
            raise ValueError(f"`forward` has to be one of {sorted(FORWARDS)}, but is {forward!r}")
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"model directory not found: {path}")
        config = GPT2Config.from_json_file(path / "config.json")
        gen_path = path / "generation_config.json"
        # optional, but a dangling symlink is reported rather than skipped (exists() is False for it)
        present = gen_path.exists() or gen_path.is_symlink()
        generation_config = GenerationConfig.from_json_file(gen_path) if present else None
        if forward == "fast" and not mmap:  # the layout measured fastest on this machine
            params = load_params_measured(path / "model.safetensors", config)
        else:
            params = load_params(path / "model.safetensors", config, mmap=mmap)
        return cls(config, params, generation_config, forward=forward)

    @property
    def cache_layout(self) -> tuple[int, int, int]:
        """(n_layer, heads, head_dim) of the KVCache this model reads and writes."""
        c = self.config
        return c.n_layer, c.n_head, c.head_dim

    def new_cache(self, batch_size: int, capacity: int) -> KVCache:
        """An empty KVCache for ``batch_size`` rows with room for ``capacity`` tokens (grows if exceeded)."""
        return KVCache(self.cache_layout[0], batch_size, *self.cache_layout[1:], capacity)

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray | None = None,
                 position_ids: np.ndarray | None = None, past_key_values: KVCache | None = None,
                 logits_to_keep: int = 0, output_hidden_states: bool = False,
                 output_attentions: bool = False) -> CausalLMOutput:
        """Run T new tokens through the model, after the S in ``past_key_values`` (see module docstring).

        Args:
            input_ids: int (B, T), values in [0, V).
            attention_mask: int or bool (B, S + T) of 0/1, covering cached and new tokens; None = all ones.
            position_ids: int (B, T) in [0, n_positions); None = :func:`~refdecode.model.gpt2.default_position_ids`.
            past_key_values: KVCache with B rows, or None for a fresh one of capacity T.
            logits_to_keep: 0 = logits of all T positions; n in [1, T] = the last n only.
            output_hidden_states, output_attentions: also return every layer's hidden states / attention
                weights (the plain forward pass only: it is the one that keeps them).

        Returns:
            CausalLMOutput(logits float32 (B, T or n, V), past_key_values = the cache, S + T tokens).
        """
        c = self.config
        input_ids, attention_mask, position_ids, past_key_values, logits_to_keep = checked_call(
            self, input_ids, attention_mask, position_ids, past_key_values, logits_to_keep)
        if output_hidden_states or output_attentions:  # the readable pass collects them layer by layer
            if self.forward != "plain":
                raise ValueError("`output_hidden_states` / `output_attentions` need the plain forward pass: load "
                                 f"the model with forward='plain' (it has forward={self.forward!r})")
            hidden: list | None = [] if output_hidden_states else None
            attentions: list | None = [] if output_attentions else None
            logits = gpt2(input_ids, position_ids, self.params, c, past_key_values, attention_mask,
                          logits_to_keep, hidden_states=hidden, attentions=attentions)
            return CausalLMOutput(logits=logits, past_key_values=past_key_values,
                                  hidden_states=None if hidden is None else tuple(hidden),
                                  attentions=None if attentions is None else tuple(attentions))
        forward = FORWARDS[self.forward]  # refdecode.model.gpt2.gpt2 or refdecode.model.fast.forward.gpt2_fast
        logits = forward(input_ids, position_ids, self.params, c, past_key_values, attention_mask, logits_to_keep)
        return CausalLMOutput(logits=logits, past_key_values=past_key_values)


def checked_call(model: Any, input_ids: Any, attention_mask: Any, position_ids: Any, past_key_values: Any,
                 logits_to_keep: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, KVCache, int]:
    """The checks at the door of every model's ``__call__`` (GPT-2's and Llama's): arguments -> validated arrays.

    ``model`` supplies ``config.vocab_size``, ``config.n_positions`` (the longest sequence it runs on),
    ``cache_layout`` (the (n_layer, heads, head_dim) its KVCache must have) and ``new_cache``. Returns int arrays
    ``input_ids`` (B, T), ``attention_mask`` (B, S + T) or None, ``position_ids`` (B, T) (the defaults of
    :func:`~refdecode.model.gpt2.default_position_ids` when None), the cache (a fresh one when None) and
    ``logits_to_keep`` as an int; TypeError/ValueError naming the argument otherwise.
    """
    c = model.config
    input_ids = _int_array("input_ids", input_ids, ndim=2)
    B, T = input_ids.shape
    if B < 1 or T < 1:
        raise ValueError(f"`input_ids` must have shape (B, T) with B >= 1 and T >= 1, got {input_ids.shape}")
    _check_range("input_ids", input_ids, 0, c.vocab_size)
    past_key_values = model.new_cache(B, T) if past_key_values is None else past_key_values
    _check_cache(past_key_values, B, model.cache_layout)
    S = past_key_values.length
    if S + T > c.n_positions:
        raise ValueError(f"cached + new tokens must be <= n_positions={c.n_positions}"
                         f"{getattr(c, 'n_positions_reason', '')}, got S={S} + T={T} = {S + T}")
    if attention_mask is not None:
        attention_mask = _int_array("attention_mask", attention_mask, ndim=2, allow_bool=True)
        if attention_mask.shape != (B, S + T):
            raise ValueError(
                f"`attention_mask` must have shape (B, S + T) = {(B, S + T)}, got {attention_mask.shape}"
            )
        _check_range("attention_mask", attention_mask, 0, 2)
    if position_ids is None:
        position_ids = default_position_ids(attention_mask, S, B, T)
    else:
        position_ids = _int_array("position_ids", position_ids, ndim=2)
        if position_ids.shape != (B, T):
            raise ValueError(f"`position_ids` must have shape (B, T) = {(B, T)}, got {position_ids.shape}")
        _check_range("position_ids", position_ids, 0, c.n_positions)
    if isinstance(logits_to_keep, bool) or not isinstance(logits_to_keep, (int, np.integer)) \
            or not 0 <= logits_to_keep <= T:
        raise ValueError(f"`logits_to_keep` must be an integer in [0, T={T}], got {logits_to_keep!r}")
    return input_ids, attention_mask, position_ids, past_key_values, int(logits_to_keep)


def _check_cache(cache: Any, batch_size: int, layout: tuple[int, int, int]) -> None:
    """TypeError/ValueError naming ``past_key_values`` unless it is a KVCache shaped for this model and batch."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"`past_key_values` must be a KVCache or None, got {type(cache).__name__}")
    n_layer, n_head, head_dim = layout
    if (cache.batch_size, cache.n_layer, cache.n_head, cache.head_dim) != (batch_size, n_layer, n_head, head_dim):
        raise ValueError(
            f"`past_key_values` must hold batch_size={batch_size}, n_layer={n_layer}, n_head={n_head}, "
            f"head_dim={head_dim}; got {cache!r}"
        )


def _int_array(name: str, value: Any, ndim: int, allow_bool: bool = False) -> np.ndarray:
    """``value`` as an integer ndarray of ``ndim`` dims, or TypeError/ValueError naming ``name``."""
    arr = np.asarray(value)
    kinds = "iub" if allow_bool else "iu"
    if arr.dtype.kind not in kinds:
        raise TypeError(f"`{name}` must be an integer array (int64), got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"`{name}` must have {ndim} dimensions, got shape {arr.shape}")
    return arr


def _check_range(name: str, arr: np.ndarray, low: int, high: int) -> None:
    """ValueError naming ``name`` unless every value is in [low, high)."""
    if arr.size and (arr.min() < low or arr.max() >= high):
        raise ValueError(f"`{name}` values must be in [{low}, {high}), got min {arr.min()} and max {arr.max()}")
