r"""The Llama forward pass of :mod:`refdecode.model.llama`, with the measured few-row products: same contract, same math.

Contract: exactly that of :func:`refdecode.model.llama.llama` (int64 ids (B, T), positions, parameters, a KVCache of
``num_key_value_heads`` heads holding S tokens, an optional 0/1 mask (B, S + T) -> float32 logits (B, T or n, V),
cache appended in place), on the parameters of :func:`load_llama_params_measured`. ``Llama.from_pretrained(path,
forward="fast")`` runs it; read :mod:`refdecode.model.llama` to learn the model.

What changes, and why (a decoding step reads every weight once: the products are the step):

1. **The products of :mod:`refdecode.model.fast.products`**: up to FEW_ROWS rows (decoding, beams, a verification
   pass) each weight product is taken the way a short calibration measured fastest on this machine, each weight
   stored in the order measured fastest for one row (the checkpoint stores ``Linear`` weights (out, in), i.e. W^T).
2. **Fused projections**: q, k and v as one (E, (H + 2 KV) D) matrix, gate and up as one (E, 2F): one product
   instead of three and two (fewer calls, each streaming a longer matrix). Each output is still one dot product over
   the same inputs.
3. **Grouped-query attention without repeating the cache**: the n_rep query heads that share a key/value head are
   multiplied by it as one (n_rep T, D) block, instead of copying the keys and values n_rep times per step
   (``repeat_kv``).
4. **The last layer only where the logits are read** (``logits_to_keep``), as the GPT-2 fast pass.

Logits agree with the plain pass to float32 rounding (tests/model/fast/test_llama.py: within 1e-5 of the largest
logit).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..gpt2 import lm_head
from ..kv_cache import KVCache
from ..llama import apply_rotary_pos_emb, attention_mask_bias, rms_norm, rope_cos_sin
from ..llama_checkpoint import load_llama_params
from ..llama_config import LlamaConfig
from ...numerics import silu, softmax
from .layout import transpose_into
from .products import FEW_ROWS, product, storage_order

__all__ = ["llama_fast", "load_llama_params_measured", "linear", "attention", "mlp"]


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """``x @ weight (+ bias)`` for a weight W (E_in, E_out) in either order; x (N, E_in) -> (N, E_out), C-contiguous.

    (The plain pass's :func:`refdecode.model.llama.linear` takes the checkpoint's (out, in) matrix; here W = its
    transpose, stored as measured.)
    """
    y = product(x, weight) if x.shape[0] <= FEW_ROWS else x @ weight  # (N, E_in) @ (E_in, E_out)
    return np.ascontiguousarray(y) if bias is None else np.add(y, bias, out=np.empty(y.shape, np.float32))


def attention(x: np.ndarray, qkv: dict, o_proj: dict, *, shape: tuple[int, int], keep: int, layer: int,
              cache: KVCache, rope: tuple[np.ndarray, np.ndarray], bias: np.ndarray | None,
              config: LlamaConfig) -> np.ndarray:
    """:func:`refdecode.model.llama.attention` for the last ``keep`` of the T queries; x (B*T, E) -> (B*keep, E)."""
    B, T = shape
    H, KV, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    y = linear(x, **qkv)  # (B*T, E) -> (B*T, (H + 2 KV) D): q, k, v side by side
    q = y[:, : H * D].reshape(B, T, H, D).transpose(0, 2, 1, 3)  # (B, H, T, D)
    k = y[:, H * D : (H + KV) * D].reshape(B, T, KV, D).transpose(0, 2, 1, 3)  # (B, KV, T, D)
    v = y[:, (H + KV) * D :].reshape(B, T, KV, D).transpose(0, 2, 1, 3)  # (B, KV, T, D)
    q, k = apply_rotary_pos_emb(q, k, *rope)
    k, v = cache.append(layer, k, v)  # (B, KV, S+T, D) each
    n_rep = H // KV  # query heads kv * n_rep .. kv * n_rep + n_rep - 1 read key/value head kv (repeat_kv's order)
    g = q[:, :, T - keep :].reshape(B, KV, n_rep * keep, D)  # (B, KV, n_rep*keep, D)
    w = g @ k.swapaxes(-1, -2) / np.float32(math.sqrt(D))  # (B, KV, n_rep*keep, S+T)
    if bias is not None:  # (B or 1, 1, T, S+T) -> the kept queries, for each of the n_rep heads
        w = (w.reshape(B, KV, n_rep, keep, -1) + bias[:, :, None, T - keep :]).reshape(w.shape)
    out = softmax(w, axis=-1) @ v  # (B, KV, n_rep*keep, D)
    out = out.reshape(B, H, keep, D).transpose(0, 2, 1, 3).reshape(B * keep, H * D)  # merge heads
    return linear(out, **o_proj)  # (B*keep, E)


def mlp(x: np.ndarray, gate_up: dict, down_proj: dict) -> np.ndarray:
    """:func:`refdecode.model.llama.swiglu_mlp` with gate and up as one product; (N, E) -> (N, 2F) -> (N, E)."""
    y = linear(x, **gate_up)  # (N, 2F): gate, then up
    F = y.shape[1] // 2
    return linear(silu(y[:, :F]) * y[:, F:], **down_proj)


def llama_fast(input_ids: np.ndarray, position_ids: np.ndarray, params: dict[str, Any], config: LlamaConfig,
               cache: KVCache, attention_mask: np.ndarray | None = None, logits_to_keep: int = 0) -> np.ndarray:
    """Same arguments and result as :func:`refdecode.model.llama.llama` (without hidden states or attentions)."""
    B, T = input_ids.shape
    eps, n = config.rms_norm_eps, logits_to_keep if logits_to_keep > 0 else T
    x = params["embed_tokens"][input_ids].reshape(B * T, -1)  # (B*T, E)
    rope = rope_cos_sin(position_ids, config)  # (B, T, D) twice
    bias = attention_mask_bias(attention_mask, B, cache.length, T)  # (B, 1, T, S+T) or None
    for i, p in enumerate(params["layers"]):
        keep = n if i == len(params["layers"]) - 1 else T  # the last layer: only the rows the logits read
        h = attention(rms_norm(x, **p["input_layernorm"], eps=eps), **p["self_attn"], shape=(B, T), keep=keep,
                      layer=i, cache=cache, rope=rope, bias=bias, config=config)  # (B*keep, E)
        if keep < T:
            x = x.reshape(B, T, -1)[:, T - keep :].reshape(B * keep, -1)
        x = x + h
        x = x + mlp(rms_norm(x, **p["post_attention_layernorm"], eps=eps), **p["mlp"])
    cache.advance(T)
    x = rms_norm(x, **params["norm"], eps=eps)  # (B*n, E)
    head = params.get("lm_head", params["embed_tokens"])  # (V, E): W^T of the head
    if 1 < B * n <= FEW_ROWS:
        return np.ascontiguousarray(product(x, head.T, other=lambda: _head_rows(params).T)).reshape(B, n, -1)
    return lm_head(x, head).reshape(B, n, -1)  # (B*n, E) @ (E, V), thread-count independent for one row


def _head_rows(params: dict[str, Any]) -> np.ndarray:
    """The LM head (V, E) row-major, made on first use if it is stored column-major; kept in ``params``."""
    if "head_rows" not in params:
        params["head_rows"] = np.ascontiguousarray(params.get("lm_head", params["embed_tokens"]))
    return params["head_rows"]


# ----------------------------------------------------------------------------------------------------
# Loading: the plain parameters, fused and stored in the measured order
# ----------------------------------------------------------------------------------------------------


def _in_order(wt: np.ndarray) -> np.ndarray:
    """W = wt.T (E_in, E_out) from a row-major W^T ``wt`` (E_out, E_in), stored in the order measured fastest."""
    w = wt.T  # column-major W, no copy
    if storage_order(w.shape) == "F":
        return w
    out = np.empty(w.shape, dtype=np.float32)
    transpose_into(out, wt)  # (E_out, E_in) -> (E_in, E_out) row-major
    return out


def load_llama_params_measured(path: str | Path, config: LlamaConfig) -> dict[str, Any]:
    """:func:`refdecode.model.llama_checkpoint.load_llama_params` (in memory), then per layer q, k, v fused into
    ``self_attn["qkv"]`` and gate, up into ``mlp["gate_up"]``, every product's W = weight.T stored in the order
    :func:`refdecode.model.fast.products.storage_order` measures fastest (the head: ``embed_tokens`` column-major
    when W = its transpose is fastest row-major). One layer at a time, so at most one layer is held twice."""
    params = load_llama_params(path, config, mmap=False)
    for layer in params["layers"]:
        a, m = layer["self_attn"], layer["mlp"]
        qkv = {"weight": _in_order(np.concatenate([a[n]["weight"] for n in ("q_proj", "k_proj", "v_proj")]))}
        if "bias" in a["q_proj"]:
            qkv["bias"] = np.concatenate([a[n]["bias"] for n in ("q_proj", "k_proj", "v_proj")])
        o_proj = {"weight": _in_order(a["o_proj"]["weight"]), **({"bias": a["o_proj"]["bias"]} if "bias" in a["o_proj"]
                                                                  else {})}  # llama's attention_bias: o_proj too
        layer["self_attn"] = {"qkv": qkv, "o_proj": o_proj}
        layer["mlp"] = {"gate_up": {"weight": _in_order(np.concatenate([m["gate_proj"]["weight"],
                                                                          m["up_proj"]["weight"]]))},
                        "down_proj": {"weight": _in_order(m["down_proj"]["weight"])}}
    name = "lm_head" if "lm_head" in params else "embed_tokens"
    params[name] = _in_order(params[name]).T  # (V, E), stored so that its transpose is in the measured order
    return params
