r"""The GPT-2 forward pass of :mod:`refdecode.model.gpt2`, rewritten to touch memory less: same contract, same math.

Contract: exactly that of :func:`refdecode.model.gpt2.gpt2` (int64 ids (B, T), positions, parameters, a KVCache
holding S tokens, an optional 0/1 mask (B, S + T) -> float32 logits (B, T or n, V), cache appended in
place). :class:`~refdecode.model.modeling.GPT2` runs this version when it is made with ``forward="fast"``; read
:mod:`refdecode.model.gpt2` to learn the model, read this file to see what a NumPy forward pass costs.

What changes, and why. GPT-2 124M, 2 cores (benchmarks/profile_step.py): a 512-token prefill takes
659 ms plain and 428 ms here; a decoding step 17.6 -> 17.1 ms with 1 row, 51.2 -> 42.6 ms with 4 beams (before the
measured few-row products of point 4).

1. **Causal attention by query blocks** (:func:`attend_causal_blocked`). The plain :func:`~refdecode.model.gpt2.attend`
   builds the full (T, S + T) score matrix and then overwrites the future half with ``finfo.min``; for a
   512-token prompt that is 12 heads x 512 x 512 floats per layer, half of them thrown away. Here the
   queries go in blocks of ``block_size``: block [i0, i1) only scores keys [0, S + i1). The keys that are
   left out are exactly those the plain version masks to ``exp(m - max) = 0``, so the probabilities are
   the same numbers; only the softmax *sum* runs over a shorter row (NumPy sums pairwise, so its grouping,
   and hence the last bit, can differ). Used when there is no padding: with padding, a padded query's
   (never used) output depends on every future key, and transformers' values at padded positions are
   reproduced by the plain path.
2. **The last layer only where the logits are read.** With ``logits_to_keep = n`` (a prefill keeps 1) the
   last layer still caches the keys and values of all T tokens, but runs its attention output and MLP on
   the last n rows only: nothing else reaches the logits.
3. **In place, in cache-sized pieces.** Softmax, GELU, layer norm's normalisation, the biases and the
   residual adds write into an array that already exists instead of a new one per operation; GELU (with
   ``c_fc``'s bias) runs 32 rows at a time so its nine passes stay in the core's cache (:func:`by_rows`).
   Each in-place sequence performs the same float32 operations in the same order as the plain expression
   it replaces, so it gives the same bits. Where ``1/sqrt(D)`` is a power of two (GPT-2: 1/8) it is
   applied to q instead of to every score, which is exact.
4. **Few-row products, as measured on this machine** (:func:`linear`, :mod:`refdecode.model.fast.products`). A
   decoding step multiplies 1 row (greedy), K rows (beams) or up to 11 rows (prompt lookup's verification pass) by
   every weight matrix. Which NumPy call does that fastest depends on the CPU's OpenBLAS kernels: on AVX-512, W^T in
   blocks under its small-matrix bound (4 rows ~1.4x one row, one call ~2x); on AVX2, one call on the row-major W
   with the rows padded to a multiple of 4. A short calibration per weight shape picks the storage order at load
   (:func:`refdecode.model.fast.layout.load_params_measured`) and the form per row count on first use, once per
   process. The tied LM head may take its few rows from a row-major copy of ``wte``
   (:func:`refdecode.model.fast.layout.head_rows`, 154 MB for GPT-2 124M), made only if that measured fastest.

tests/model/fast/test_forward.py checks this module against :mod:`refdecode.model.gpt2` on every golden checkpoint
(prefill, padded batches, cached steps, beams) and that generate() gives the same tokens either way.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..config import GPT2Config
from ..gpt2 import MASK_MIN, attend, attention_scores, lm_head, padding_bias
from ..kv_cache import KVCache
from .layout import head_rows
from .products import FEW_ROWS, SMALL_GEMM_MNK, few_rows_product, product
from ...numerics import ACT2FN

__all__ = ["gpt2_fast", "attend_causal_blocked", "softmax_", "gelu_new_", "by_rows", "layer_norm_", "linear",
           "few_rows_product", "mha", "ffn"]

#: Query rows per attention block. GPT-2 124M, 512-token prompt: 32 -> 444 ms, 64 -> 429, 128 -> 421,
#: 256 -> 432 (fewer, larger blocks mean fewer BLAS calls but more of the masked triangle computed).
BLOCK_SIZE = 128

#: Rows per chunk for elementwise work on large activations (:func:`by_rows`): 32 x 3072 floats = 384 kB.
ROWS_PER_CHUNK = 32

# ----------------------------------------------------------------------------------------------------
# In-place elementwise kernels: the plain expressions, one operation at a time, into one buffer
# ----------------------------------------------------------------------------------------------------


def softmax_(w: np.ndarray) -> np.ndarray:
    """:func:`refdecode.numerics.softmax` over the last axis, computed in ``w`` itself (float32, any shape).

    >>> softmax_(np.array([[1.0, 1.0, -np.inf]], dtype=np.float32))
    array([[0.5, 0.5, 0. ]], dtype=float32)
    """
    w -= w.max(axis=-1, keepdims=True)  # x - max
    np.exp(w, out=w)  # e = exp(x - max)
    w /= w.sum(axis=-1, keepdims=True)  # e / sum(e)
    return w


def gelu_new_(x: np.ndarray) -> np.ndarray:
    """:func:`refdecode.numerics.gelu_new` computed in ``x`` itself, the same float32 operations in order.

    >>> from refdecode.numerics import gelu_new
    >>> x = np.linspace(-4, 4, 9, dtype=np.float32)
    >>> np.array_equal(gelu_new_(x.copy()), gelu_new(x))
    True
    """
    t = x * x
    t *= x  # x^3
    t *= 0.044715
    t += x  # x + 0.044715 x^3
    t *= math.sqrt(2.0 / math.pi)  # a Python float: NumPy rounds it to float32, as in gelu_new
    np.tanh(t, out=t)
    t += 1.0
    x *= 0.5  # 0.5 x (exact: a power of two)
    x *= t  # 0.5 x (1 + tanh(...))
    return x


def by_rows(fn: Callable[[np.ndarray], Any], x: np.ndarray, rows: int = ROWS_PER_CHUNK) -> np.ndarray:
    """Apply the in-place ``fn`` to ``x`` (N, ...) ``rows`` rows at a time; returns ``x``.

    Why: ``gelu_new_`` makes nine passes over its array. On a (512, 3072) array (6 MB) every pass goes to
    main memory; on 32 rows (384 kB) the nine passes stay in the core's cache: 4.7 -> 2.2 ms per layer.
    """
    for start in range(0, x.shape[0], rows):
        fn(x[start : start + rows])
    return x


def layer_norm_(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """:func:`refdecode.model.gpt2.layer_norm` with one new (N, E) array instead of five (``x`` is not modified).

    ``np.mean`` of float32 is a float32 pairwise sum divided by the count, which is what is written out
    here (without ``np.mean``'s Python wrapper: 50 calls per decoding step).
    """
    E = x.shape[-1]
    mean = np.add.reduce(x, axis=-1, keepdims=True)  # (N, 1)
    mean /= E
    y = x - mean  # (N, E): x - mu
    var = np.add.reduce(np.square(y), axis=-1, keepdims=True)  # (N, 1)
    var /= E
    y /= np.sqrt(var + eps)
    y *= weight
    y += bias
    return y


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """:func:`refdecode.model.gpt2.linear` (``x @ weight + bias``), the bias added in place; x (N, E_in) -> (N, E_out).

    Up to FEW_ROWS rows (decoding steps, verification passes) the product is taken the way measured fastest on
    this machine for this shape and row count (:func:`refdecode.model.fast.products.product`: one call, W^T in
    blocks, or the operands swapped, the rows padded or not); more rows (a prefill) are one ``x @ weight``.
    """
    if x.shape[0] <= FEW_ROWS:  # product may return a view: the bias goes into a new C-contiguous array
        return np.add(product(x, weight), bias, out=np.empty((x.shape[0], weight.shape[1]), np.float32))
    y = x @ weight  # (N, E_in) @ (E_in, E_out) -> (N, E_out)
    y += bias
    return y


# ----------------------------------------------------------------------------------------------------
# Attention by query blocks
# ----------------------------------------------------------------------------------------------------


def attend_causal_blocked(q: np.ndarray, k: np.ndarray, v: np.ndarray, layer: int, config: GPT2Config,
                          block_size: int = BLOCK_SIZE, out: np.ndarray | None = None) -> np.ndarray:
    r"""Causal attention without padding, scoring only the keys each block of queries may see.

    Query t (of T new ones, after S cached) sees keys 0 .. S + t. The block of queries [i0, i1) therefore
    needs keys [0, S + i1) only, and inside that range the queries past the diagonal are masked to
    ``finfo(float32).min`` exactly as in :func:`refdecode.model.gpt2.attend`:

    .. math:: \mathrm{out}_{[i_0, i_1)} = \mathrm{softmax}\big(\mathrm{mask}(q_{[i_0,i_1)}\,
              k_{[0,S+i_1)}^\top / \sqrt{D})\big)\, v_{[0, S+i_1)}

    For T = 512 and blocks of 128 this scores 62.5 % of the (T, S + T) matrix (blocks of 64: 56 %).

    Args:
        q: float32 (B, H, T, D). k, v: float32 (B, H, S + T, D), cached keys first.
        layer, config: for :func:`refdecode.model.gpt2.attention_scores` (scaling options).
        out: float32 (B, H, T, D) to write into (may be a transposed view), or None for a new array.

    Returns:
        float32 (B, H, T, D).

    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.standard_normal((1, 2, 5, 4), dtype=np.float32) for _ in range(3))
    >>> cfg = GPT2Config(n_embd=8, n_head=2)
    >>> plain = attend(attention_scores(q, k, 0, cfg), v, None)
    >>> bool(np.allclose(attend_causal_blocked(q, k, v, 0, cfg, block_size=2), plain, rtol=0, atol=1e-6))
    True
    """
    B, H, T, D = q.shape
    S = k.shape[2] - T
    scores = attention_scores
    if _scale_is_exact(D, config):  # fold 1/sqrt(D) into q: one pass over (T, D), not over (T, S + T)
        q, scores = q * np.float32(1.0 / math.sqrt(D)), _unscaled_scores
    out = np.empty((B, H, T, D), dtype=np.float32) if out is None else out
    for i0 in range(0, T, block_size):
        i1 = min(i0 + block_size, T)
        w = scores(q[:, :, i0:i1], k[:, :, : S + i1], layer, config)  # (B, H, i1-i0, S+i1)
        future = ~np.tri(i1 - i0, k=0, dtype=bool)  # (i1-i0, i1-i0): only the diagonal block has future keys
        np.copyto(w[..., S + i0 :], MASK_MIN, where=future)
        np.matmul(softmax_(w), v[:, :, : S + i1], out=out[:, :, i0:i1])  # (B, H, i1-i0, D)
    return out


def _scale_is_exact(D: int, config: GPT2Config) -> bool:
    """Whether (q / sqrt(D)) @ k^T equals (q @ k^T) / sqrt(D) bit for bit: plain scaling by a power of two
    (D = 64 -> 1/8), which only shifts exponents (barring float32 underflow, far below any real score)."""
    sqrt_d = math.sqrt(D)
    return (config.scale_attn_weights and not config.scale_attn_by_inverse_layer_idx
            and not config.reorder_and_upcast_attn and sqrt_d == int(sqrt_d) and int(sqrt_d) & (int(sqrt_d) - 1) == 0)


def _unscaled_scores(q: np.ndarray, k: np.ndarray, layer: int, config: GPT2Config) -> np.ndarray:
    """q @ k^T for an already scaled q; (B, H, T, D) x (B, H, S+T, D) -> (B, H, T, S+T)."""
    return q @ k.swapaxes(-1, -2)


# ----------------------------------------------------------------------------------------------------
# The forward pass
# ----------------------------------------------------------------------------------------------------


def mha(x: np.ndarray, c_attn: dict, c_proj: dict, *, shape: tuple[int, int], keep: int, layer: int,
        cache: KVCache, pad_bias: np.ndarray | None, config: GPT2Config) -> np.ndarray:
    """:func:`refdecode.model.gpt2.mha` for the last ``keep`` of the T queries; x (B*T, E) -> (B*keep, E).

    Keys and values of all T new tokens go into the cache; only the last ``keep`` queries are attended
    (keep = T except in the last layer, see :func:`gpt2_fast`).
    """
    B, T = shape
    E, H = x.shape[-1], config.n_head
    qkv = linear(x, **c_attn).reshape(B, T, 3, H, E // H).transpose(2, 0, 3, 1, 4)  # (3, B, H, T, D)
    k, v = cache.append(layer, qkv[1], qkv[2])  # (B, H, S+T, D) each
    q = qkv[0][:, :, T - keep :]  # (B, H, keep, D): the last keep queries, after S + T - keep keys
    if keep > 1 and pad_bias is None:  # heads written straight into (B, keep, H, D): merging them is free
        merged = np.empty((B, keep, H, E // H), dtype=np.float32)
        attend_causal_blocked(q, k, v, layer, config, block_size=BLOCK_SIZE, out=merged.transpose(0, 2, 1, 3))
        return linear(merged.reshape(B * keep, E), **c_proj)
    if pad_bias is None:  # one query, the newest token, sees every key: no mask at all
        out = softmax_(attention_scores(q, k, layer, config)) @ v  # (B, H, 1, D)
    else:
        out = attend(attention_scores(q, k, layer, config), v, pad_bias)  # padded: the plain path
    return linear(out.transpose(0, 2, 1, 3).reshape(B * keep, E), **c_proj)  # merge heads, (B*keep, E)


def ffn(x: np.ndarray, c_fc: dict, c_proj: dict, activation: str) -> np.ndarray:
    """:func:`refdecode.model.gpt2.ffn`, in place; (N, E) -> (N, n_inner) -> (N, E)."""
    if activation != "gelu_new":
        return linear(ACT2FN[activation](linear(x, **c_fc)), **c_proj)
    if x.shape[0] <= FEW_ROWS:  # decoding: a few rows, nothing to gain from chunks
        return linear(gelu_new_(linear(x, **c_fc)), **c_proj)

    def bias_and_gelu(rows: np.ndarray) -> None:  # + bias, then GELU, while these rows are in cache
        rows += c_fc["bias"]
        gelu_new_(rows)

    h = by_rows(bias_and_gelu, x @ c_fc["weight"])  # (N, E) @ (E, I) -> (N, I)
    return linear(h, **c_proj)


def gpt2_fast(input_ids: np.ndarray, position_ids: np.ndarray, params: dict[str, Any], config: GPT2Config,
              cache: KVCache, attention_mask: np.ndarray | None = None, logits_to_keep: int = 0) -> np.ndarray:
    """Same arguments and result as :func:`refdecode.model.gpt2.gpt2` (see there); appends to ``cache`` in place."""
    B, T = input_ids.shape
    eps = config.layer_norm_epsilon
    n = logits_to_keep if logits_to_keep > 0 else T
    x = params["wte"][input_ids] + params["wpe"][position_ids]  # (B, T, E), a new array we may overwrite
    x = x.reshape(B * T, -1)  # (B*T, E)
    pad_bias = None if attention_mask is None or attention_mask.all() else padding_bias(attention_mask)
    for i, p in enumerate(params["h"]):
        # The last layer's keys and values are cached for all T tokens, but its attention output and MLP
        # reach the logits only at the n returned positions: with logits_to_keep=1 (a prefill) the
        # last layer runs 1 row instead of T.
        keep = n if i == config.n_layer - 1 else T
        h = mha(layer_norm_(x, **p["ln_1"], eps=eps), **p["attn"], shape=(B, T), keep=keep, layer=i,
                cache=cache, pad_bias=pad_bias, config=config)  # (B*keep, E)
        if keep < T:
            x = x.reshape(B, T, -1)[:, T - keep :].reshape(B * keep, -1)  # (B*keep, E), a copy
        x += h
        x += ffn(layer_norm_(x, **p["ln_2"], eps=eps), **p["mlp"], activation=config.activation_function)
    cache.advance(T)
    x = layer_norm_(x, **params["ln_f"], eps=eps)  # (B*n, E)
    head = params.get("lm_head", params["wte"])  # (V, E), i.e. W^T of the head
    if 1 < B * n <= FEW_ROWS:  # a few rows: as measured fastest, maybe on a row-major copy of the head
        logits = product(x, head.T, other=lambda: head_rows(params).T)  # (B*n, E) @ (E, V)
        return np.ascontiguousarray(logits).reshape(B, n, -1)  # GEMMs: thread-count independent
    return lm_head(x, head).reshape(B, n, -1)  # (B*n, E) @ (E, V) -> (B, n, V), thread-count independent
