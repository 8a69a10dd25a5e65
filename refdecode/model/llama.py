r"""The Llama family's forward pass in NumPy (llama, mistral, qwen2): token ids (+ mask, positions, cache) -> logits.

Contract: that of :mod:`refdecode.model.gpt2`, which this module sits beside: in come int64 token ids ``(B, T)``,
an optional 0/1 attention mask ``(B, S + T)``, int64 position ids ``(B, T)`` and a
:class:`~refdecode.model.kv_cache.KVCache` holding S tokens of ``num_key_value_heads`` heads; out come float32
logits ``(B, T, V)`` and the cache with the T new tokens appended. Nothing here reads files
(:mod:`refdecode.model.checkpoint`) or chooses tokens (the decoding modules).

The arithmetic is transformers 4.38.2's ``models/llama/modeling_llama.py`` (``LlamaForCausalLM``, eval mode;
``mistral`` and ``qwen2`` differ only in their biases and window, :mod:`refdecode.model.llama_config`), as pure
functions whose parameters carry the checkpoint's names (``embed_tokens``, ``input_layernorm``, ``q_proj``, ...).
What changes from GPT-2, step by step::

    x = embed_tokens[input_ids]                       # (B, T, E)   no position table: positions enter
                                                      #             attention as a rotation (RoPE)
    x = x + attn(rms_norm(x))     for each layer      # RMSNorm instead of LayerNorm; q, k rotated by
                                                      #   their position; k, v with fewer heads (GQA)
    x = x + swiglu_mlp(rms_norm(x))                   # down(silu(gate(x)) * up(x)) instead of c_proj(gelu(c_fc(x)))
    logits = rms_norm(x) @ lm_head.T                  # (B, T, V)   lm_head = embed_tokens when tied

Shapes: B batch, T new tokens, S cached, E hidden_size, H query heads, KV key/value heads, D = E / H,
F intermediate_size, V vocab. Everything is float32: constants are Python floats or ``np.float32``.

Docs: docs/gpt2.md (loading a Llama checkpoint), docs/parity.md (what refdecode refuses).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .gpt2 import MASK_MIN, lm_head
from .kv_cache import KVCache
from .llama_config import LlamaConfig
from ..numerics import silu, softmax

__all__ = [
    "rms_norm", "linear", "rotate_half", "rope_inv_freq", "llama3_inv_freq", "rope_cos_sin", "apply_rotary_pos_emb",
    "swiglu_mlp", "repeat_kv", "attention_bias", "attention", "decoder_layer", "llama",
]


# ----------------------------------------------------------------------------------------------------
# The layers
# ----------------------------------------------------------------------------------------------------


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    r"""RMSNorm over the last axis (``LlamaRMSNorm``): no mean subtracted, no bias.

    .. math:: y = w \cdot \frac{x}{\sqrt{\mathrm{mean}(x^2) + \epsilon}}

    x float32 (..., E), weight (E,) -> (..., E).

    >>> rms_norm(np.array([[3.0, 4.0]], dtype=np.float32), np.ones(2, np.float32), 0.0)   # rms = sqrt(12.5)
    array([[0.84852815, 1.1313709 ]], dtype=float32)
    """
    variance = np.square(x).mean(axis=-1, keepdims=True)  # (..., 1)
    return weight * (x * (1.0 / np.sqrt(variance + eps)))  # torch: x * rsqrt(variance + eps), then * weight


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """``torch.nn.Linear``: ``x @ weight.T (+ bias)``; weights stored output-major, as in the checkpoint.

    x float32 (N, in), weight (out, in), bias (out,) or absent -> (N, out). (GPT-2's ``Conv1D`` stores them
    input-major: :func:`refdecode.model.gpt2.linear`.)
    """
    y = x @ weight.T  # (N, in) @ (in, out) -> (N, out)
    return y if bias is None else y + bias


def swiglu_mlp(x: np.ndarray, gate_proj: dict, up_proj: dict, down_proj: dict) -> np.ndarray:
    r"""The SwiGLU feed-forward network (``LlamaMLP``): :math:`W_{down}(\mathrm{silu}(W_{gate} x) \odot W_{up} x)`.

    x float32 (N, E) -> two (N, F) -> (N, E). No biases. (Shazeer 2020, "GLU Variants Improve Transformer".)
    """
    return linear(silu(linear(x, **gate_proj)) * linear(x, **up_proj), **down_proj)


# ----------------------------------------------------------------------------------------------------
# Rotary position embedding (RoPE)
# ----------------------------------------------------------------------------------------------------


def rope_inv_freq(config: LlamaConfig, seq_len: int) -> np.ndarray:
    r"""RoPE's frequencies :math:`\theta_i = 1 / \mathrm{base}^{2i/D}`, i = 0 .. D/2 - 1: float32 (D/2,).

    ``dynamic`` scaling (``LlamaDynamicNTKScalingRotaryEmbedding``, 4.38.2) enlarges the base once the sequence
    (``seq_len``: the largest position id of the call + 1) is longer than ``max_position_embeddings`` = M:

    .. math:: \mathrm{base}' = \mathrm{base} \cdot \left(\frac{f \cdot \mathrm{seq\_len}}{M} - (f - 1)\right)^{D/(D-2)}

    computed in float32 as torch does it (seq_len is a tensor there). ``llama3`` is :func:`llama3_inv_freq`.
    """
    D = config.head_dim
    exponents = np.arange(0, D, 2, dtype=np.int64).astype(np.float32) / np.float32(D)  # (D/2,)
    base = np.float32(config.rope_theta)
    scaling = config.rope_scaling
    if scaling is not None and scaling["type"] == "dynamic" and seq_len > config.max_position_embeddings:
        f = np.float32(scaling["factor"])
        ratio = f * np.float32(seq_len) / np.float32(config.max_position_embeddings) - np.float32(scaling["factor"] - 1)
        base = base * ratio ** np.float32(D / (D - 2))
    inv_freq = np.float32(1.0) / base ** exponents  # (D/2,)
    if scaling is not None and scaling["type"] == "llama3":
        inv_freq = llama3_inv_freq(inv_freq, scaling)
    return inv_freq


def llama3_inv_freq(inv_freq: np.ndarray, scaling: dict[str, Any]) -> np.ndarray:
    r"""Llama 3.1's frequency scaling (transformers 4.43.0 ``_compute_llama3_parameters``): float32 (D/2,) -> same.

    With wavelength :math:`\lambda = 2\pi/\theta`, old context C (``original_max_position_embeddings``), factor f
    and the low/high frequency factors l, h: long waves (:math:`\lambda > C/l`) are slowed by f, short ones
    (:math:`\lambda < C/h`) kept, and those between blended with :math:`s = (C/\lambda - l)/(h - l)`:
    :math:`(1 - s)\,\theta/f + s\,\theta`. Elementwise in float32, as 4.43.0's loop over 0-d tensors.
    """
    f, low, high = (np.float32(scaling[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
    context = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = context / scaling["low_freq_factor"], context / scaling["high_freq_factor"]
    wavelen = np.float32(2 * math.pi) / inv_freq  # (D/2,)
    smooth = (np.float32(context) / wavelen - low) / (high - low)
    blended = (np.float32(1.0) - smooth) * inv_freq / f + smooth * inv_freq
    return np.where(wavelen < high_wavelen, inv_freq,
                    np.where(wavelen > low_wavelen, inv_freq / f, blended)).astype(np.float32)


def rope_cos_sin(position_ids: np.ndarray, config: LlamaConfig) -> tuple[np.ndarray, np.ndarray]:
    r"""cos and sin of the rotation angles :math:`p \cdot \theta_i` for the given positions (``LlamaRotaryEmbedding``).

    position_ids int64 (B, T) -> cos, sin float32 (B, T, D), the D/2 angles written twice
    (``cat((freqs, freqs))``, the layout :func:`rotate_half` pairs with). ``linear`` scaling divides the
    positions by the factor; ``dynamic`` recomputes the frequencies from the largest position of the whole
    batch in this call (:func:`rope_inv_freq`), so on a cached step past ``max_position_embeddings`` the new
    token is rotated with a larger base than the keys already in the cache were, exactly as 4.38.2 does.

    >>> cfg = LlamaConfig(hidden_size=4, num_attention_heads=1)              # D = 4: theta = 1, 1/100
    >>> cos, sin = rope_cos_sin(np.array([[0, 1]]), cfg)
    >>> cos[0, 1].round(4).tolist(), sin[0, 1].round(4).tolist()
    ([0.5403, 1.0, 0.5403, 1.0], [0.8415, 0.01, 0.8415, 0.01])
    """
    seq_len = int(position_ids.max()) + 1 if position_ids.size else 0
    inv_freq = rope_inv_freq(config, seq_len)  # (D/2,)
    positions = position_ids.astype(np.float32)  # (B, T)
    if config.rope_scaling is not None and config.rope_scaling["type"] == "linear":
        positions = positions / np.float32(config.rope_scaling["factor"])
    freqs = positions[..., None] * inv_freq  # (B, T, 1) * (D/2,) -> (B, T, D/2)
    emb = np.concatenate([freqs, freqs], axis=-1)  # (B, T, D)
    return np.cos(emb), np.sin(emb)


def rotate_half(x: np.ndarray) -> np.ndarray:
    """``[x1, x2] -> [-x2, x1]`` on the last axis (halves, not interleaved pairs: transformers' layout).

    Dimension i is paired with i + D/2 (the original RoPE pairs 2i with 2i + 1; Hugging Face's conversion
    permutes the q/k weights so the two agree).

    >>> rotate_half(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)).tolist()
    [-3.0, -4.0, 1.0, 2.0]
    """
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rotary_pos_emb(q: np.ndarray, k: np.ndarray, cos: np.ndarray,
                         sin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Rotate queries and keys by their positions: :math:`x' = x \cos + \mathrm{rotate\_half}(x) \sin`.

    q float32 (B, H, T, D), k (B, KV, T, D), cos/sin (B, T, D) -> q', k' of the same shapes. Then
    :math:`q'_m \cdot k'_n` depends on the positions only through m - n.
    """
    cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, D): the same rotation for every head
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


# ----------------------------------------------------------------------------------------------------
# Attention with grouped key/value heads
# ----------------------------------------------------------------------------------------------------


def repeat_kv(x: np.ndarray, n_rep: int) -> np.ndarray:
    """Each key/value head repeated for the ``n_rep`` query heads that share it (transformers' ``repeat_kv``).

    (B, KV, S, D) -> (B, KV * n_rep, S, D), as ``repeat_interleave(dim=1)``: query head h reads kv head h // n_rep.

    >>> repeat_kv(np.arange(2.0).reshape(1, 2, 1, 1), 2).ravel().tolist()
    [0.0, 0.0, 1.0, 1.0]
    """
    return x if n_rep == 1 else np.repeat(x, n_rep, axis=1)


def attention_bias(attention_mask: np.ndarray | None, batch_size: int, past_length: int,
                   seq_len: int) -> np.ndarray | None:
    """The additive mask of 4.38.2's ``LlamaModel._update_causal_mask``: (B, 1, T, S + T) float32, or None.

    0 where query t (at cache slot S + t) may see key j: j <= S + t and the mask is 1 at j; MASK_MIN
    elsewhere (future keys and padding alike; unlike GPT-2 no -inf arises). A single new token with no
    padding needs no mask (None).

    >>> attention_bias(np.array([[0, 1, 1]]), 1, 0, 3)[0, 0] < 0
    array([[ True,  True,  True],
           [ True, False,  True],
           [ True, False, False]])
    """
    if seq_len == 1 and (attention_mask is None or attention_mask.all()):
        return None
    allowed = np.tri(seq_len, past_length + seq_len, k=past_length, dtype=bool)[None]  # (1, T, S+T): causal
    if attention_mask is not None:
        allowed = allowed & (attention_mask[:, None, :] != 0)  # (B, T, S+T): and not padding
    bias = np.where(allowed, np.float32(0.0), MASK_MIN)  # (B or 1, T, S+T)
    return np.broadcast_to(bias[:, None], (batch_size, 1, seq_len, past_length + seq_len))


def attention(x: np.ndarray, q_proj: dict, k_proj: dict, v_proj: dict, o_proj: dict, *, shape: tuple[int, int],
              layer: int, cache: KVCache, rope: tuple[np.ndarray, np.ndarray], bias: np.ndarray | None,
              config: LlamaConfig, attentions: list | None = None) -> np.ndarray:
    r"""Self-attention (``LlamaAttention``, eager): project, rotate, cache, :math:`\mathrm{softmax}(qk^\top/\sqrt{D} + m)\,v`.

    x float32 (B*T, E) -> (B*T, E); ``shape`` is (B, T). The cache holds the *rotated* keys of KV heads
    (GQA: H / KV times fewer than GPT-2 would); they are repeated to H heads only for the product.
    ``attentions``, if a list, receives this layer's weights (B, H, T, S + T).
    """
    B, T = shape
    H, KV, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    q = linear(x, **q_proj).reshape(B, T, H, D).transpose(0, 2, 1, 3)  # (B*T, E) -> (B, H, T, D)
    k = linear(x, **k_proj).reshape(B, T, KV, D).transpose(0, 2, 1, 3)  # (B*T, E) -> (B, KV, T, D)
    v = linear(x, **v_proj).reshape(B, T, KV, D).transpose(0, 2, 1, 3)  # (B, KV, T, D)
    q, k = apply_rotary_pos_emb(q, k, *rope)
    k, v = cache.append(layer, k, v)  # -> (B, KV, S+T, D) each, views of the cache
    k, v = repeat_kv(k, config.n_rep), repeat_kv(v, config.n_rep)  # -> (B, H, S+T, D)
    w = q @ k.swapaxes(-1, -2) / np.float32(math.sqrt(D))  # (B, H, T, D) @ (B, H, D, S+T) -> (B, H, T, S+T)
    probs = softmax(w if bias is None else w + bias, axis=-1)  # (B, H, T, S+T)
    if attentions is not None:  # output_attentions=True
        attentions.append(probs)
    out = (probs @ v).transpose(0, 2, 1, 3).reshape(B * T, H * D)  # (B, H, T, D) -> (B*T, E)
    return linear(out, **o_proj)  # (B*T, E)


def decoder_layer(x: np.ndarray, input_layernorm: dict, self_attn: dict, post_attention_layernorm: dict, mlp: dict,
                  *, layer: int, shape: tuple[int, int], cache: KVCache, rope: tuple[np.ndarray, np.ndarray],
                  bias: np.ndarray | None, config: LlamaConfig, attentions: list | None = None) -> np.ndarray:
    """``LlamaDecoderLayer`` (pre-norm residual block); x float32 (B*T, E) -> (B*T, E)."""
    eps = config.rms_norm_eps
    x = x + attention(rms_norm(x, **input_layernorm, eps=eps), **self_attn, shape=shape, layer=layer, cache=cache,
                      rope=rope, bias=bias, config=config, attentions=attentions)
    return x + swiglu_mlp(rms_norm(x, **post_attention_layernorm, eps=eps), **mlp)


def llama(input_ids: np.ndarray, position_ids: np.ndarray, params: dict[str, Any], config: LlamaConfig,
          cache: KVCache, attention_mask: np.ndarray | None = None, logits_to_keep: int = 0,
          hidden_states: list | None = None, attentions: list | None = None) -> np.ndarray:
    """``LlamaForCausalLM`` forward on already-validated inputs; appends to ``cache`` in place.

    The calling convention of :func:`refdecode.model.gpt2.gpt2`:

    Args:
        input_ids: int64 (B, T). position_ids: int64 (B, T) (they only set the RoPE angles).
        params: nested dict from :func:`refdecode.model.llama_checkpoint.load_llama_params`.
        cache: KVCache of num_key_value_heads heads with S tokens and B rows; holds S + T afterwards.
        attention_mask: 0/1 (B, S + T) or None (attend to every earlier token).
        logits_to_keep: 0 for all T positions, n for the last n only.
        hidden_states: a list to receive every layer's input, then the last layer's output after the final
            norm, each float32 (B, T, E) (transformers' ``hidden_states``), or None.
        attentions: a list to receive every layer's attention weights float32 (B, H, T, S + T), or None.

    Returns:
        logits float32 (B, T, V) (or (B, n, V)).
    """
    B, T = input_ids.shape
    x = params["embed_tokens"][input_ids].reshape(B * T, -1)  # (B, T) -> (B*T, E)
    rope = rope_cos_sin(position_ids, config)  # (B, T, D) twice, shared by every layer
    bias = attention_bias(attention_mask, B, cache.length, T)  # (B, 1, T, S+T) or None
    for i, layer_params in enumerate(params["layers"]):
        if hidden_states is not None:  # output_hidden_states=True: each layer's input
            hidden_states.append(x.reshape(B, T, -1))
        x = decoder_layer(x, **layer_params, layer=i, shape=(B, T), cache=cache, rope=rope, bias=bias,
                          config=config, attentions=attentions)
    cache.advance(T)
    x = rms_norm(x, **params["norm"], eps=config.rms_norm_eps)  # (B*T, E)
    if hidden_states is not None:  # ... and the last one after the final norm
        hidden_states.append(x.reshape(B, T, -1))
    n = logits_to_keep if logits_to_keep > 0 else T
    x = x.reshape(B, T, -1)[:, T - n:].reshape(B * n, -1)  # (B*n, E): only the positions we return
    head = params.get("lm_head", params["embed_tokens"])  # tied: the LM head is embed_tokens
    return lm_head(x, head).reshape(B, n, -1)  # (B*n, E) @ (E, V) -> (B, n, V)
