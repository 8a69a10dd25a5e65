r"""GPT-2 forward pass in NumPy: token ids (+ mask, positions, cache) -> next-token logits.

Contract: in come int64 token ids ``(B, T)``, an optional attention mask ``(B, S + T)`` covering the S
cached tokens and the T new ones, optional position ids ``(B, T)`` and a :class:`~refdecode.model.kv_cache.KVCache`
holding S tokens; out come float32 logits ``(B, T, V)`` and the same cache with the T new tokens appended.
This module knows nothing about text (:mod:`refdecode.text.tokenizer`), files (:mod:`refdecode.model.checkpoint`)
or how a next token is chosen (the decoding modules).

The arithmetic is that of transformers 4.38.2 ``models/gpt2/modeling_gpt2.py`` (``GPT2LMHeadModel``, eager
attention, eval mode), written as picoGPT-style pure functions whose parameters carry the checkpoint's
names (``wte``, ``ln_1``, ``c_attn``, ``c_proj``, ...), so loading is a dict walk::

    x   = wte[input_ids] + wpe[position_ids]                       # (B, T, E)
    x   = x + mha(ln_1(x))             for each of the L blocks    # causal self-attention, KV cache
    x   = x + ffn(ln_2(x))                                         # E -> n_inner -> E
    logits = ln_f(x) @ wte.T                                       # (B, T, V), LM head tied to wte

Everything is float32: constants are Python floats or ``np.float32`` (NumPy 2 promotes
``float32_array / np.float64(8.0)`` to float64), and nothing here is computed in float64.

This is the forward pass to read, and the one :class:`refdecode.model.modeling.GPT2` runs unless it is made with
``forward="fast"``: :mod:`refdecode.model.fast` has the same contract with fewer passes over memory, and imports
this module, never the reverse. Docs: docs/gpt2.md.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .config import GPT2Config
from .kv_cache import KVCache
from ..numerics import ACT2FN, softmax

__all__ = [
    "layer_norm", "linear", "lm_head", "ffn", "attention_scores", "attend", "mha", "block", "gpt2",
    "default_position_ids", "padding_bias", "MASK_MIN",
]

#: torch.finfo(torch.float32).min, the value transformers writes into masked attention scores.
MASK_MIN = np.float32(np.finfo(np.float32).min)


# ----------------------------------------------------------------------------------------------------
# The layers: pure functions, one per module of modeling_gpt2.py
# ----------------------------------------------------------------------------------------------------


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    r"""LayerNorm over the last axis (``torch.nn.LayerNorm``, biased variance).

    .. math:: y = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} \cdot w + b,\quad
              \mu = \mathrm{mean}(x),\ \sigma^2 = \mathrm{mean}((x - \mu)^2)

    >>> layer_norm(np.array([[1.0, 3.0]], dtype=np.float32), np.ones(2, np.float32), np.zeros(2, np.float32), 1e-5)
    array([[-0.999995,  0.999995]], dtype=float32)
    """
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)  # (..., 1)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """A linear layer, transformers' ``Conv1D`` (weights stored input-major): ``x @ weight + bias``.

    x float32 (N, E_in), weight (E_in, E_out), bias (E_out,) -> (N, E_out). Callers flatten batch and
    sequence into N so each layer is one 2-D matrix product.
    """
    return x @ weight + bias  # (N, E_in) @ (E_in, E_out) -> (N, E_out)


def ffn(x: np.ndarray, c_fc: dict, c_proj: dict, act: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The feed-forward network, transformers' GPT2MLP: ``c_proj(act(c_fc(x)))``.

    x float32 (N, E) -> (N, n_inner) -> (N, E).
    """
    return linear(act(linear(x, **c_fc)), **c_proj)


def padding_bias(attention_mask: np.ndarray) -> np.ndarray:
    """The additive mask transformers builds from a 0/1 mask: ``(1 - mask) * finfo(float32).min``.

    (B, S + T) -> float32 (B, 1, 1, S + T): 0 where a token may be attended to, MASK_MIN at padding.

    >>> padding_bias(np.array([[0, 1]]))[0, 0, 0].tolist()
    [-3.4028234663852886e+38, -0.0]
    """
    return ((1.0 - attention_mask.astype(np.float32)) * MASK_MIN)[:, None, None, :]


def attention_scores(q: np.ndarray, k: np.ndarray, layer: int, config: GPT2Config) -> np.ndarray:
    r"""Scaled attention scores :math:`q k^\top / \sqrt{D}`, as ``GPT2Attention._attn`` computes them.

    q float32 (B, H, T, D), k float32 (B, H, S + T, D) -> float32 (B, H, T, S + T). The divisions are
    done one after the other in float32, like transformers (``/ sqrt(D)`` as a float32 scalar, then
    ``/ (layer + 1)`` with ``scale_attn_by_inverse_layer_idx``); with ``reorder_and_upcast_attn`` the
    product is instead multiplied by one factor, as ``torch.baddbmm(..., alpha=...)`` does there.
    """
    D = q.shape[-1]
    w = q @ k.swapaxes(-1, -2)  # (B, H, T, D) @ (B, H, D, S+T) -> (B, H, T, S+T)
    if config.reorder_and_upcast_attn:  # GPT2Attention._upcast_and_reordered_attn
        alpha = 1.0
        if config.scale_attn_weights:
            alpha /= float(D) ** 0.5
        if config.scale_attn_by_inverse_layer_idx:
            alpha /= float(layer + 1)
        return w * np.float32(alpha)
    if config.scale_attn_weights:
        w = w / np.float32(D**0.5)
    if config.scale_attn_by_inverse_layer_idx:
        w = w / float(layer + 1)
    return w


def attend(w: np.ndarray, v: np.ndarray, pad_bias: np.ndarray | None) -> np.ndarray:
    r"""Causal masking, softmax and the weighted sum of values, exactly as ``GPT2Attention._attn``.

    .. math:: \mathrm{softmax}(w \text{ with future keys} := m,\ + p)\, v,
              \qquad m = \mathrm{finfo(float32).min}

    where ``p`` is :func:`padding_bias` (0 or m). The T new queries are the last T of the S + T keys,
    so query t may see keys 0 .. S + t. Masking follows transformers to the bit: future scores are
    *replaced* by m, then the padding bias is *added*; a padded query (left padding) therefore sees
    m + m = -inf at padded future keys and m (the same finite value) everywhere else, giving a
    uniform distribution instead of NaN. Its output is garbage that no real token ever reads.

    Args:
        w: float32 (B, H, T, S + T), from :func:`attention_scores`.
        v: float32 (B, H, S + T, D).
        pad_bias: float32 (B, 1, 1, S + T) or None (no padding).

    Returns:
        float32 (B, H, T, D).

    >>> w = np.zeros((1, 1, 2, 2), dtype=np.float32)                 # two new tokens, equal scores
    >>> v = np.array([[[[1.0], [3.0]]]], dtype=np.float32)            # (B=1, H=1, S+T=2, D=1)
    >>> attend(w, v, None).ravel().tolist()                          # token 0 sees only itself
    [1.0, 2.0]
    """
    return attention_probs(w, pad_bias) @ v  # (B, H, T, S+T) @ (B, H, S+T, D) -> (B, H, T, D)


def attention_probs(w: np.ndarray, pad_bias: np.ndarray | None) -> np.ndarray:
    """The attention weights of :func:`attend`: masked scores float32 (B, H, T, S + T) -> softmax, same shape.

    These are what transformers returns as ``attentions`` (``output_attentions=True``).
    """
    T, S_T = w.shape[2], w.shape[3]
    if T > 1:  # a single new token may attend to every key, so decoding steps skip the causal mask
        causal = np.tri(T, S_T, k=S_T - T, dtype=bool)  # (T, S+T): query t sees keys <= S + t
        w = np.where(causal, w, MASK_MIN)
    if pad_bias is not None:
        with np.errstate(over="ignore"):  # m + m overflows to -inf, as in torch
            w = w + pad_bias  # (B, H, T, S+T) + (B, 1, 1, S+T)
    return softmax(w, axis=-1)


def mha(x: np.ndarray, c_attn: dict, c_proj: dict, *, shape: tuple[int, int], layer: int,
        cache: KVCache, pad_bias: np.ndarray | None, config: GPT2Config,
        attentions: list | None = None) -> np.ndarray:
    """Multi-head causal self-attention, transformers' GPT2Attention: fused qkv projection, heads, cache append,
    attention, output projection.

    x float32 (B*T, E) -> (B*T, E); ``shape`` is (B, T). The T new keys/values of this layer are written
    into ``cache`` at position S (``cache.length``); the caller advances the cache after the last layer.
    ``attentions``, if a list, receives this layer's attention weights (B, H, T, S+T).
    """
    B, T = shape
    E, H = x.shape[-1], config.n_head
    qkv = linear(x, **c_attn)  # (B*T, E) -> (B*T, 3E), one matmul for q, k and v
    qkv = qkv.reshape(B, T, 3, H, E // H).transpose(2, 0, 3, 1, 4)  # -> (3, B, H, T, D)
    k, v = cache.append(layer, qkv[1], qkv[2])  # -> (B, H, S+T, D) each, views of the cache
    probs = attention_probs(attention_scores(qkv[0], k, layer, config), pad_bias)  # (B, H, T, S+T)
    if attentions is not None:  # output_attentions=True
        attentions.append(probs)
    out = probs @ v  # (B, H, T, S+T) @ (B, H, S+T, D) -> (B, H, T, D)
    out = out.transpose(0, 2, 1, 3).reshape(B * T, E)  # merge heads: (B, H, T, D) -> (B*T, E)
    return linear(out, **c_proj)  # (B*T, E)


def block(x: np.ndarray, ln_1: dict, attn: dict, ln_2: dict, mlp: dict, *, layer: int, shape: tuple[int, int],
          cache: KVCache, pad_bias: np.ndarray | None, config: GPT2Config, attentions: list | None = None,
          ) -> np.ndarray:
    """GPT2Block (pre-LayerNorm residual block); x float32 (B*T, E) -> (B*T, E).

    The parameters carry the checkpoint's names (``attn``, ``mlp``); the functions they feed are
    :func:`mha` and :func:`ffn`, as in picoGPT, so the names never clash.
    """
    eps = config.layer_norm_epsilon
    x = x + mha(layer_norm(x, **ln_1, eps=eps), **attn, shape=shape, layer=layer, cache=cache,
                pad_bias=pad_bias, config=config, attentions=attentions)
    return x + ffn(layer_norm(x, **ln_2, eps=eps), **mlp, act=ACT2FN[config.activation_function])


def default_position_ids(attention_mask: np.ndarray | None, past_length: int, batch_size: int,
                         seq_len: int) -> np.ndarray:
    """Position ids of the T new tokens when the caller gives none, as transformers' generation does.

    With a mask (``GPT2LMHeadModel.prepare_inputs_for_generation``): ``cumsum(mask) - 1``, padded positions
    set to 1, last T columns, so a left-padded row starts its real tokens at position 0. Without a mask
    (``GPT2Model.forward``): ``arange(S, S + T)`` for every row.

    >>> default_position_ids(np.array([[0, 0, 1, 1], [1, 1, 1, 1]]), 0, 2, 4).tolist()
    [[1, 1, 0, 1], [0, 1, 2, 3]]
    >>> default_position_ids(None, 3, 1, 2).tolist()
    [[3, 4]]
    """
    if attention_mask is None:
        return np.broadcast_to(np.arange(past_length, past_length + seq_len, dtype=np.int64), (batch_size, seq_len))
    mask = attention_mask.astype(np.int64)
    pos = np.cumsum(mask, axis=-1) - 1  # (B, S+T)
    pos[mask == 0] = 1
    return pos[:, -seq_len:]  # (B, T)


def gpt2(input_ids: np.ndarray, position_ids: np.ndarray, params: dict[str, Any], config: GPT2Config,
         cache: KVCache, attention_mask: np.ndarray | None = None, logits_to_keep: int = 0,
         hidden_states: list | None = None, attentions: list | None = None) -> np.ndarray:
    """GPT2LMHeadModel forward on already-validated inputs; appends to ``cache`` in place.

    Args:
        input_ids: int64 (B, T). position_ids: int64 (B, T).
        params: nested dict from :func:`refdecode.model.checkpoint.load_params`.
        cache: KVCache with S tokens and B rows; holds S + T afterwards.
        attention_mask: 0/1 (B, S + T) or None (attend to everything).
        logits_to_keep: 0 for all T positions, n for the last n only (prefill needs one).
        hidden_states: a list to receive transformers' ``hidden_states`` (``output_hidden_states=True``):
            the input of every block, then the last block's output after ``ln_f``, each float32 (B, T, E)
            (n_layer + 1 arrays; all T positions, whatever ``logits_to_keep``), or None.
        attentions: a list to receive every layer's attention weights float32 (B, H, T, S + T), or None.

    Returns:
        logits float32 (B, T, V) (or (B, n, V)).
    """
    B, T = input_ids.shape
    x = params["wte"][input_ids] + params["wpe"][position_ids]  # (B, T, E)
    x = x.reshape(B * T, -1)  # (B*T, E): every layer works on one 2-D matrix
    pad_bias = None if attention_mask is None or attention_mask.all() else padding_bias(attention_mask)
    for i, layer_params in enumerate(params["h"]):
        if hidden_states is not None:  # output_hidden_states=True: each block's input
            hidden_states.append(x.reshape(B, T, -1))
        x = block(x, **layer_params, layer=i, shape=(B, T), cache=cache, pad_bias=pad_bias, config=config,
                  attentions=attentions)
    cache.advance(T)
    if hidden_states is not None:  # ... and the last one after ln_f, at every position (GPT2Model's last entry)
        hidden_states.append(layer_norm(x, **params["ln_f"], eps=config.layer_norm_epsilon).reshape(B, T, -1))
    n = logits_to_keep if logits_to_keep > 0 else T
    x = x.reshape(B, T, -1)[:, T - n :].reshape(B * n, -1)  # (B*n, E): only the positions we return
    x = layer_norm(x, **params["ln_f"], eps=config.layer_norm_epsilon)
    head = params.get("lm_head", params["wte"])  # tied: the LM head is wte
    return lm_head(x, head).reshape(B, n, -1)  # (B*n, E) @ (E, V) -> (B, n, V)


def lm_head(x: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Logits ``x @ head.T``: x float32 (N, E), head (V, E) -> (N, V), the same bits for any OpenBLAS thread count.

    Why not just ``x @ head.T``: for one row OpenBLAS runs a matrix-vector product that it splits between
    threads, and the V % 64 columns past the last full block of its kernel are summed in an order that
    depends on the split: with GPT-2's V = 50257 the logit of token 50256 (``<|endoftext|>``, the eos!)
    changed in its last bit between ``OPENBLAS_NUM_THREADS=1`` and ``2`` (benchmarks/determinism.py). Taking
    the first V - V % 64 columns and the tail in two calls gives, for one row, exactly the one-thread bits of
    the single product whatever the thread count; with several rows OpenBLAS's GEMM is already
    thread-independent and the single product is kept. Docs: docs/golden-reference.md (same seed, same output).
    """
    V = head.shape[0]
    main = V - V % 64
    if x.shape[0] != 1 or main in (0, V):
        return x @ head.T  # (N, E) @ (E, V) -> (N, V)
    out = np.empty((1, V), dtype=np.float32)
    np.matmul(x, head[:main].T, out=out[:, :main])  # (1, E) @ (E, V - V % 64)
    np.matmul(x, head[main:].T, out=out[:, main:])  # (1, E) @ (E, V % 64)
    return out
