r"""torch 2.x's CPU float32 ``sum`` over the last dimension bit for bit, and what is built on it: ``logsumexp``
and ``Categorical(logits=x).entropy()`` (eta sampling's entropy).

Contract: float32 (..., V) in, float32 (...) out (the last axis reduced). Nothing here imports torch.

**sum** (ATen ``SumKernel.cpp``, ``cascade_sum``, one thread): a row of ``n`` entries is summed

- if ``n < W`` (``scalar_inner_sum``): as a (n/4, 4) array: four column accumulators
  :math:`c_k = x_k + x_{4+k} + \dots` (:func:`_cascade`), the tail ``x[4 (n // 4):]`` added to
  :math:`c_0`, then :math:`((c_0 + c_1) + c_2) + c_3`;
- else (``vectorized_inner_sum``): the same over whole ``W``-lane vectors (lane by lane), then, starting
  from 0, the scalar tail past the last whole vector, then the ``W`` lanes in order.

``W`` is 8 under both capabilities (:data:`SUM_LANES`). :func:`_cascade` is ``multi_row_sum``'s cascade: items
are added in blocks of 16 (``2**level_power``), the block sums into a second accumulator flushed every 16
blocks, and so on over four levels. Above ``at::internal::GRAIN_SIZE`` (32,768) entries in ONE output (a batch of one GPT-2 row)
and several threads, torch splits the row across threads (``two_pass_reduction``): not reproduced.

**logsumexp** (ATen ``logsumexp_out_impl``): ``m = amax(x)`` (0 where it is infinite),
``log(sum(exp(x - m))) + m``. **entropy** (``torch/distributions/categorical.py``): ``logits = x - logsumexp(x)``,
``probs = softmax(logits)``, ``-(max(logits, float32 min) * probs).sum(-1)``.

**The elementwise exp, log and sqrt** are torch's unary kernels, which on torch's CPU build call MKL's VML
(``vmsExp``, ``vmsLn``, ``vmsSqrt``): their bits are neither SLEEF's, glibc's nor NumPy's (``torch.sqrt`` is not
correctly rounded on about one float32 input in six). ``torch_exp``, ``torch_log`` and ``torch_sqrt`` of
``mkl_vml.py`` give them bit for bit (it writes out the kernels MKL runs on the reference CPU). So
:func:`torch_sum`, :func:`torch_logsumexp` and :func:`categorical_entropy` are exact. Docs: docs/last-bit.md.
"""

from __future__ import annotations

import numpy as np

from .mkl_vml import torch_exp, torch_log
from .torch_cpu import DEFAULT_CAPABILITY, torch_softmax

__all__ = ["SUM_LANES", "torch_sum", "torch_nansum", "torch_logsumexp", "categorical_entropy"]

_F32 = np.float32
#: ``Vectorized<float>`` lanes of the sum kernel under either capability: ATen registers ``sum_stub`` without its
#: AVX-512 build ("these kernels are slower with AVX512 than with AVX2", ``SumKernel.cpp``), so torch sums with
#: the AVX2 kernel even where its softmax uses 16 lanes (measured: 8 lanes give torch's bits, 16 do not).
SUM_LANES = 8
_ILP = 4  # row_sum's ilp_factor: four accumulators
_LEVELS = 4  # multi_row_sum's num_levels


# ----------------------------------------------------------------------------------------------
# the cascade sum


def _sequential(items: np.ndarray) -> np.ndarray:
    """Left-to-right float32 sum over axis 1 from 0: (R, n, ...) -> (R, ...) (``cumsum`` is sequential)."""
    if items.shape[1] == 0:
        return np.zeros((items.shape[0],) + items.shape[2:], _F32)
    return np.cumsum(items, axis=1, dtype=_F32)[:, -1]


def _cascade(items: np.ndarray) -> np.ndarray:
    """``multi_row_sum``'s accumulators over axis 1 of float32 (R, size, ...) -> (R, ...).

    Level 0 sums blocks of ``step`` items, level 1 sums ``step`` block sums, level 2 ``step`` of those; level 3
    sums the rest. Leftover items go to level 0; at the end ``((acc0 + acc1) + acc2) + acc3``."""
    size = items.shape[1]
    level_power = max(4, (int(size - 1).bit_length() if size > 1 else 0) // _LEVELS)  # CeilLog2(size) / 4
    step = 1 << level_power
    whole = size // step * step
    partial = [_sequential(items[:, whole:])]  # acc0: the items past the last whole block
    sums = items[:, :whole]
    for level in range(1, _LEVELS):  # what level-1 flushes into `level`: sums of `step` of its items
        sums = _sequential(sums.reshape((sums.shape[0], -1, step) + sums.shape[2:]).swapaxes(1, 2))
        flushed = sums.shape[1] // step * step if level < _LEVELS - 1 else 0  # the top level never flushes
        partial.append(_sequential(sums[:, flushed:]))  # acc[level]: what it holds at the end
        sums = sums[:, :flushed]
    total = partial[0]
    for acc in partial[1:]:
        total = total + acc
    return total


def _row_sum(items: np.ndarray) -> np.ndarray:
    """``row_sum``: float32 (R, size, ...) -> (R, ...): four interleaved cascades, the tail onto the first."""
    size_ilp = items.shape[1] // _ILP
    grouped = items[:, : size_ilp * _ILP].reshape((items.shape[0], size_ilp, _ILP) + items.shape[2:])
    columns = _cascade(grouped)  # (R, 4, ...)
    first = columns[:, 0]
    for k in range(size_ilp * _ILP, items.shape[1]):
        first = first + items[:, k]
    for k in range(1, _ILP):
        first = first + columns[:, k]
    return first


def torch_sum(x: np.ndarray) -> np.ndarray:
    """``x.sum(-1)`` of torch 2.x on the CPU (one thread), bit for bit: float32 (..., V) -> float32 (...).

    torch runs its 8-lane (AVX2) sum kernel under either capability, so there is no ``capability`` to choose.

    Four columns ``[1e8, 1, -1e8, 1]``, the tail ``1`` onto the first (lost in 1e8), then
    ``((1e8 + 1) - 1e8) + 1 = 1``; left to right gives 2:

    >>> x = np.array([[1e8, 1.0, -1e8, 1.0, 1.0]], dtype=np.float32)
    >>> torch_sum(x), np.cumsum(x, axis=-1, dtype=np.float32)[:, -1]
    (array([1.], dtype=float32), array([2.], dtype=float32))
    """
    x = np.asarray(x)
    if x.dtype != _F32:
        raise TypeError(f"`x` must be a float32 array, but has dtype {x.dtype}")
    lanes = SUM_LANES
    rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    n = rows.shape[1]
    if n < lanes:
        out = _row_sum(rows)
    else:
        vectors = n // lanes
        lanes_acc = _row_sum(rows[:, : vectors * lanes].reshape(len(rows), vectors, lanes))  # (R, W)
        out = np.zeros(len(rows), _F32)
        for k in range(vectors * lanes, n):  # the scalar tail first, then the lanes in order
            out = out + rows[:, k]
        for lane in range(lanes):
            out = out + lanes_acc[:, lane]
    return out.reshape(x.shape[:-1])


def torch_nansum(x: np.ndarray) -> np.ndarray:
    """``x.nansum(-1)`` on the CPU, bit for bit: the same cascade as :func:`torch_sum`, NaN read as 0.

    >>> torch_nansum(np.array([[0.5, np.nan, 0.25]], dtype=np.float32))
    array([0.75], dtype=float32)
    """
    x = np.asarray(x)
    return torch_sum(np.where(np.isnan(x), _F32(0), x))


# ----------------------------------------------------------------------------------------------
# logsumexp and the entropy of Categorical


def torch_logsumexp(x: np.ndarray) -> np.ndarray:
    """``x.logsumexp(-1)``: ``log(sum(exp(x - m))) + m``, ``m`` the row max (0 if infinite); float32 (..., V) -> (...).

    >>> torch_logsumexp(np.log(np.array([[0.5, 0.25, 0.25]], dtype=np.float32)) + np.float32(3.0))
    array([3.], dtype=float32)
    """
    x = np.asarray(x)
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.abs(m) == np.inf, _F32(0), m)  # masked_fill_(maxes.abs() == INFINITY, 0)
    total = torch_sum(torch_exp(x - m))
    return torch_log(total) + m[..., 0]


def categorical_entropy(x: np.ndarray, capability: str = DEFAULT_CAPABILITY) -> np.ndarray:
    """``torch.distributions.Categorical(logits=x).entropy()``: float32 (..., V) -> float32 (...).

    ``logits = x - logsumexp(x)`` (not log_softmax: another rounding), ``probs = softmax(logits)``, then
    ``-(clamp(logits, min=float32 min) * probs).sum(-1)``: a ``-inf`` token adds ``float32 min * 0 = 0``.

    >>> categorical_entropy(np.array([[0.0, 0.0, -np.inf]], dtype=np.float32))   # ln 2
    array([0.6931472], dtype=float32)
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        logits = np.asarray(x) - torch_logsumexp(x)[..., None]
    probs = torch_softmax(logits, capability)
    p_log_p = np.maximum(logits, np.finfo(_F32).min) * probs
    return -torch_sum(p_log_p)
