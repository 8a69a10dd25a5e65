r"""The Llama-family model object the decode loops are handed: ``Llama`` = config + parameters + the forward pass.

Contract: the interface of :class:`refdecode.model.modeling.GPT2`, so no decode loop needs to know which family it
runs: ``Llama.from_pretrained(path)`` reads ``config.json`` (``model_type`` llama, mistral or qwen2),
``model.safetensors`` or the shards of ``model.safetensors.index.json``, and ``generation_config.json`` if present;
calling the model validates its arguments (:func:`~refdecode.model.modeling.checked_call`, GPT-2's checks) and
runs :func:`refdecode.model.llama.llama`::

    out = model(input_ids, attention_mask=..., position_ids=..., past_key_values=cache, logits_to_keep=n)
    out.logits            float32 (B, T, V)   (or (B, n, V))
    out.past_key_values   the KVCache (num_key_value_heads heads), now holding S + T tokens

and it answers what the loops ask of every model: ``config.vocab_size``, ``config.n_positions``,
``generation_config``, ``new_cache``, ``nonfinite_weights``, hidden states and attentions on request.
``Llama.from_pretrained(path, forward="fast")`` runs :func:`refdecode.model.fast.llama.llama_fast` instead (the same math
with the measured few-row products of :mod:`refdecode.model.fast.products`), as GPT2's ``forward="fast"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .checkpoint import nonfinite_tensors
from .kv_cache import KVCache
from .fast.llama import llama_fast, load_llama_params_measured
from .llama import llama
from .llama_checkpoint import load_llama_params
from .llama_config import LlamaConfig
from .modeling import CausalLMOutput, checked_call
from ..generation_config import GenerationConfig

__all__ = ["Llama", "LLAMA_FORWARDS"]

#: The forward passes a Llama can run, by the name given as ``forward=``.
LLAMA_FORWARDS = {"plain": llama, "fast": llama_fast}


class Llama:
    """A Llama, Mistral or Qwen2 language model: :class:`LlamaConfig` + parameters; calling it runs
    :func:`refdecode.model.llama.llama`.

    >>> model = Llama.from_pretrained("models/llama-tiny")   # random weights, GPT-2's vocabulary
    >>> out = model(np.array([[15496, 995]]))                 # "Hello world"
    >>> out.logits.shape, out.logits.dtype, out.past_key_values.length
    ((1, 2, 50257), dtype('float32'), 2)
    >>> step = model(np.array([[11]]), past_key_values=out.past_key_values)   # one more token, cached
    >>> step.logits.shape, step.past_key_values.n_head == model.config.num_key_value_heads
    ((1, 1, 50257), True)
    """

    def __init__(self, config: LlamaConfig, params: dict[str, Any],
                 generation_config: GenerationConfig | None = None, forward: str = "plain") -> None:
        if forward not in LLAMA_FORWARDS:
            raise ValueError(f"`forward` has to be one of {sorted(LLAMA_FORWARDS)}, but is {forward!r}")
        self.forward = forward  # the name of the forward pass __call__ runs (LLAMA_FORWARDS)
        self.config = config
        self.params = params
        # generate()'s defaults, as transformers' ``model.generation_config``: the checkpoint's
        # generation_config.json when it has one, else the generation fields of config.json.
        self.generation_config = (generation_config if generation_config is not None
                                  else GenerationConfig.from_model_config(config))

    @classmethod
    def from_pretrained(cls, path: str | Path, mmap: bool = False, forward: str = "plain") -> Llama:
        """Load a model directory (local files only; nothing is downloaded); every tensor checked before any is kept.

        ``mmap``: as :meth:`refdecode.model.modeling.GPT2.from_pretrained` (views of the memory-mapped files).
        ``forward="fast"``: the fast pass, on weights fused and stored in the measured order
        (:func:`refdecode.model.fast.llama.load_llama_params_measured`; read into memory, whatever ``mmap``).
        """
        if forward not in LLAMA_FORWARDS:
            raise ValueError(f"`forward` has to be one of {sorted(LLAMA_FORWARDS)}, but is {forward!r}")
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"model directory not found: {path}")
        config = LlamaConfig.from_json_file(path / "config.json")
        gen_path = path / "generation_config.json"
        present = gen_path.exists() or gen_path.is_symlink()  # a dangling symlink is reported, not skipped
        generation_config = GenerationConfig.from_json_file(gen_path) if present else None
        if forward == "fast":
            return cls(config, load_llama_params_measured(path, config), generation_config, forward=forward)
        return cls(config, load_llama_params(path, config, mmap=mmap), generation_config)

    def nonfinite_weights(self) -> list[str]:
        """The weights that hold NaN or inf (``layers.1.mlp.up_proj.weight (1 non-finite of 4096)``); see GPT2's."""
        return nonfinite_tensors(self.params)

    @property
    def cache_layout(self) -> tuple[int, int, int]:
        """(num_hidden_layers, num_key_value_heads, head_dim): grouped-query attention caches KV heads only."""
        c = self.config
        return c.num_hidden_layers, c.num_key_value_heads, c.head_dim

    def new_cache(self, batch_size: int, capacity: int) -> KVCache:
        """An empty KVCache for ``batch_size`` rows with room for ``capacity`` tokens (grows if exceeded)."""
        n_layer, heads, head_dim = self.cache_layout
        return KVCache(n_layer, batch_size, heads, head_dim, capacity)

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray | None = None,
                 position_ids: np.ndarray | None = None, past_key_values: KVCache | None = None,
                 logits_to_keep: int = 0, output_hidden_states: bool = False,
                 output_attentions: bool = False) -> CausalLMOutput:
        """Run T new tokens through the model, after the S in ``past_key_values``; arguments as ``GPT2.__call__``.

        Returns:
            CausalLMOutput(logits float32 (B, T or n, V), past_key_values = the cache, S + T tokens; hidden_states
            num_hidden_layers + 1 arrays (B, T, E) and attentions num_hidden_layers arrays (B, H, T, S + T) when asked).
        """
        input_ids, attention_mask, position_ids, cache, keep = checked_call(
            self, input_ids, attention_mask, position_ids, past_key_values, logits_to_keep)
        if self.forward != "plain":
            if output_hidden_states or output_attentions:
                raise ValueError("`output_hidden_states` / `output_attentions` need the plain forward pass: load the "
                                 f"model with forward='plain' (it has forward={self.forward!r})")
            logits = llama_fast(input_ids, position_ids, self.params, self.config, cache, attention_mask, keep)
            return CausalLMOutput(logits=logits, past_key_values=cache)
        hidden: list | None = [] if output_hidden_states else None
        attentions: list | None = [] if output_attentions else None
        logits = llama(input_ids, position_ids, self.params, self.config, cache, attention_mask, keep,
                       hidden_states=hidden, attentions=attentions)
        return CausalLMOutput(logits=logits, past_key_values=cache,
                              hidden_states=None if hidden is None else tuple(hidden),
                              attentions=None if attentions is None else tuple(attentions))
