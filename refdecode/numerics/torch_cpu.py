r"""torch 2.x's CPU float32 softmax, log_softmax and cumsum along the last dimension, bit for bit.

A processor rule says "sort, softmax, cumsum, compare with p"; when the probabilities are round
numbers (0.3, 0.2, ...) the cumulative sum lands exactly on ``p`` in exact arithmetic, and the last
bit of float32 decides which side. NumPy's ``exp(x - max) / sum`` and torch's kernel disagree there,
so refdecode computes what torch computes. The kernel (ATen ``SoftMaxKernel.cpp``,
``_vec_softmax_lastdim`` and ``_vec_log_softmax_lastdim``, over ``Vectorized<float>`` of W lanes):

1. ``max = reduce_all(maximum, row)`` (order does not matter for max);
2. softmax: ``e = exp(x - max)`` with SLEEF's ``expf`` (:func:`~refdecode.numerics.sleef.sleef_expf`),
   ``sum = reduce_all(+, e)``, ``out = e * (1 / sum)`` (a float32 reciprocal, then a product);
   log_softmax: the same sum, ``out = (x - max) - log(sum)`` with SLEEF's ``logf``;
3. ``reduce_all(+, ·)`` (:func:`lane_sum`): a row shorter than W is summed left to right; a longer one
   is cut in W-wide vectors, lane ``l`` accumulates ``v[0][l] + v[1][l] + ...`` (the last, partial
   vector is padded with zeros), then the W lanes are folded in halves (lane ``l`` plus lane
   ``l + W/2``, then ``+ W/4``, ... the shuffle-and-add of ``vec_reduce_all``).

W is 16 with AVX-512 (torch's choice on a CPU that has it, ``torch.backends.cpu.get_cpu_capability()``)
and 8 with AVX2. Sources: ATen's ``SoftMaxKernel.cpp`` and the ``Vectorized<float>`` headers (``exp`` and
``log`` are SLEEF's ``u10`` functions), SLEEF's ``sleefsimdsp.c`` and ``df.h``; the order of the lane fold
is the one that gives torch's bits. Verified bit for bit against torch 2.13.0 and 2.14.1 under both
capabilities when the wing was written (docs/last-bit.md has the counts); the committed golden file
(tests/golden/softmax.npz) holds 2.13.0's bits. ``cumsum`` on the CPU accumulates
a float32 tensor in float64 (``acc_type<float>`` is ``double``) and rounds each prefix to float32:
:func:`torch_cumsum`.

Contract: float32 in, float32 out, same shape; rows may hold ``-inf``; a row that is all ``-inf``
gives NaN, as torch does. Docs: docs/last-bit.md.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .introsort import torch_order_at_cut
from .sleef import sleef_expf, sleef_logf

__all__ = ["LANES", "lane_sum", "torch_softmax", "torch_log_softmax", "torch_cumsum", "stable_sort",
           "scatter_with_torch_ties", "on_finite_support"]

_F32 = np.float32

#: Float32 lanes of ``Vectorized<float>`` per torch CPU capability (``ATEN_CPU_CAPABILITY``).
LANES = {"avx512": 16, "avx2": 8}
#: The capability torch picks on this project's reference machine (AVX-512), and so the one goldens were made on.
DEFAULT_CAPABILITY = "avx512"


def lane_sum(values: np.ndarray, lanes: int = 16) -> np.ndarray:
    """ATen's ``reduce_all(+)`` over the last axis of float32 (R, n): one float32 per row, (R,).

    >>> lane_sum(np.array([[1e8, 1.0, -1e8, 1.0]], dtype=np.float32), lanes=16)   # ((1e8 + 1) - 1e8) + 1
    array([1.], dtype=float32)
    """
    rows, n = values.shape
    if n < lanes:  # one partial vector: vec_reduce_all folds its lanes left to right
        total = values[:, 0].copy()
        for k in range(1, n):
            total += values[:, k]
        return total
    full = n // lanes  # whole vectors; the last, partial one is padded with zeros in the lanes past the row
    # per lane, in row order: NumPy reduces a non-contiguous axis by adding whole slices one after the other, so
    # lane l is v[0][l] + v[1][l] + ... left to right, as the kernel's vector accumulator. Several rows: vectors
    # first, (full, R, lanes), so that each addition takes R * lanes numbers at once (twice as fast for 4 rows).
    vectors = values[:, : full * lanes].reshape(rows, full, lanes)
    if rows > 1:
        acc = np.add.reduce(np.ascontiguousarray(vectors.transpose(1, 0, 2)), axis=0)
    else:
        acc = np.add.reduce(vectors, axis=1)
    if n > full * lanes:
        tail = np.zeros((rows, lanes), _F32)
        tail[:, : n - full * lanes] = values[:, full * lanes :]
        acc = acc + tail  # a lane past the row adds 0.0: no change
    width = lanes
    while width > 1:  # horizontal: lane l + lane l + width/2
        width //= 2
        acc = acc[:, :width] + acc[:, width : 2 * width]
    return acc[:, 0]


def _lanes(capability: str) -> int:
    if capability not in LANES:
        raise ValueError(f"`capability` has to be one of {sorted(LANES)}, but is {capability!r}")
    return LANES[capability]


def _rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != _F32:
        raise TypeError(f"`x` must be a float32 array, but has dtype {x.dtype}")
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"`x` needs a non-empty last axis, but has shape {x.shape}")
    return x.reshape(-1, x.shape[-1])


def _shifted_exp(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x - max, exp(x - max)) per row, float32 (R, V); NaN rows where the max is -inf, as torch gives."""
    with np.errstate(invalid="ignore"):
        shifted = rows - rows.max(axis=-1, keepdims=True)  # -inf - -inf = nan: an all -inf row
    if rows.min() > -np.inf:  # no removed token (one float32 reduction instead of a mask; NaN takes the mask)
        return shifted, sleef_expf(shifted)
    removed = shifted == -np.inf
    e = np.zeros_like(shifted)  # exp(-inf) = 0: the exp of a removed token costs nothing (after top-k, most)
    e[~removed] = sleef_expf(shifted[~removed])
    return shifted, e


def torch_softmax(x: np.ndarray, capability: str = DEFAULT_CAPABILITY) -> np.ndarray:
    """``torch.softmax(x, dim=-1)`` of torch 2.x on the CPU, bit for bit: float32 (..., V) -> float32 (..., V).

    The textbook row [0.1, 0.2, 0.2, 0.2, 0.3] (sorted ascending, as top-p sees it): torch's 0.1 is one ulp
    above float32(0.1), NumPy's is float32(0.1) itself, so top-p 0.9 (threshold float32(1 - 0.9)) keeps
    token 0 with torch and drops it with NumPy:

    >>> x = np.log(np.array([[0.1, 0.2, 0.2, 0.2, 0.3]], dtype=np.float32))
    >>> float(torch_softmax(x)[0, 0]), float(np.exp(x[0, 0] - x.max()) / np.exp(x - x.max()).sum())
    (0.10000000894069672, 0.10000000149011612)
    """
    rows = _rows(x)
    _, e = _shifted_exp(rows)
    total = lane_sum(e, _lanes(capability))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (e * (_F32(1.0) / total)[:, None]).reshape(np.shape(x))


def torch_log_softmax(x: np.ndarray, capability: str = DEFAULT_CAPABILITY) -> np.ndarray:
    """``torch.log_softmax(x, dim=-1)`` of torch 2.x on the CPU, bit for bit: float32 (..., V) -> float32 (..., V).

    >>> torch_log_softmax(np.array([0.0, 0.0, -np.inf], dtype=np.float32))
    array([-0.6931472, -0.6931472,       -inf], dtype=float32)
    """
    rows = _rows(x)
    shifted, e = _shifted_exp(rows)
    total = lane_sum(e, _lanes(capability))
    with np.errstate(invalid="ignore"):
        log_total = np.where(total >= 1, sleef_logf(np.where(total >= 1, total, _F32(1))), _F32(np.nan))
        return (shifted - log_total[:, None]).reshape(np.shape(x))


def torch_cumsum(probs: np.ndarray) -> np.ndarray:
    """``torch.cumsum(probs, dim=-1)`` on the CPU: a float64 running sum, each prefix rounded to float32.

    >>> torch_cumsum(np.array([0.1, 0.2, 0.7], dtype=np.float32))
    array([0.1, 0.3, 1. ], dtype=float32)
    """
    probs = np.asarray(probs)
    # Speed-up, exact: a run of zeros at the start of every row (the removed tokens that top-p's ascending sort
    # puts first: 50,207 of GPT-2's 50,257 after top-k) sums to 0.0, so only the rest is accumulated.
    nonzero = probs != 0
    start = int(np.argmax(nonzero.any(axis=tuple(range(probs.ndim - 1))))) if probs.size else 0
    out = np.zeros(probs.shape, _F32)
    out[..., start:] = np.cumsum(probs[..., start:], axis=-1, dtype=np.float64)
    return out


def stable_sort(x: np.ndarray, descending: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``torch.sort(x, dim=-1, descending=descending)`` for float32 (B, V) with ties in id order: (values, indices).

    torch's own order for rows of up to 16 entries (its CPU sort is then stable). Above 16, torch's introsort
    orders tied entries differently; computing that order for every tie group of a row costs several times
    the sort (every -inf after top-k is one group), and a rule only sees it where a mask splits a tie group. So
    this sort is paired with :func:`scatter_with_torch_ties`, which puts the tie group at each split in
    torch's order on the way back to token order. A rule that reads the sorted indices in any other way
    needs :func:`~refdecode.numerics.introsort.torch_cpu_sort_order`.

    >>> stable_sort(np.array([[2.0, -np.inf, 1.0]], dtype=np.float32))
    (array([[-inf,   1.,   2.]], dtype=float32), array([[1, 2, 0]]))
    """
    keys = -x if descending else x  # negation is exact and keeps ties; -(-inf) sorts last, NaN last either way
    indices = np.empty(x.shape, np.int64)
    values = np.empty_like(x)
    for b, row in enumerate(x):
        # Speed-up: argsort only the finite entries (after top-k, 50 of GPT-2's 50,257); the rest, all -inf
        # here, go first (ascending) or last (descending) in id order, as a stable sort puts them. NaN or +inf
        # in the row: sort the whole row.
        finite = np.isfinite(row)
        ids = np.flatnonzero(finite)
        rest = row.size - ids.size
        if rest and np.count_nonzero(row == -np.inf) != rest:
            indices[b] = np.argsort(keys[b], kind="stable")
        else:
            ordered = ids[np.argsort(keys[b, ids], kind="stable")]
            removed = np.flatnonzero(~finite)
            indices[b] = np.concatenate([ordered, removed] if descending else [removed, ordered])
        values[b] = x[b, indices[b]]
    return values, indices


def scatter_with_torch_ties(sorted_mask: np.ndarray, sorted_indices: np.ndarray, x: np.ndarray,
                            descending: bool = False) -> np.ndarray:
    """``sorted_mask.scatter(1, sorted_indices, sorted_mask)`` with torch's sort order where the mask splits a tie
    group: a mask in sorted order back to token order, bool (B, V).

    ``sorted_indices``: from :func:`stable_sort` of ``x`` (with the same ``descending``). Where the mask
    flips inside a tie group, which tied ids fall on each side is torch's CPU sort's choice (rows over 16
    entries): the group is put in that order first
    (:func:`~refdecode.numerics.introsort.torch_order_at_cut`). ``sorted_indices`` is not modified.

    >>> x = np.zeros((1, 17), dtype=np.float32)
    >>> values, indices = stable_sort(x)
    >>> np.flatnonzero(~scatter_with_torch_ties(np.arange(17) < 8, indices, x))   # 4.38.2's top-p 0.5 keeps these
    array([0, 1, 2, 3, 4, 5, 6, 7, 9])
    """
    sorted_mask = np.broadcast_to(sorted_mask, sorted_indices.shape)
    indices = sorted_indices.copy()
    for b in range(indices.shape[0]):
        for cut in np.flatnonzero(sorted_mask[b, 1:] != sorted_mask[b, :-1]).tolist():
            torch_order_at_cut(x[b], indices[b], cut + 1, descending)
    out = np.empty(indices.shape, bool)
    np.put_along_axis(out, indices, sorted_mask, axis=-1)
    return out


_PHASE = 16  # both lane widths divide it


def on_finite_support(rule: Callable[[np.ndarray], np.ndarray], scores: np.ndarray) -> np.ndarray:
    """``rule(scores)``, computed on the rows' finite entries only: a speed-up that gives the same bits.

    After top-k (on by default when sampling) 50 of GPT-2's 50,257 scores are finite; a rule that sorts,
    softmaxes and cumsums whole rows (top-p) spends its time on the ``-inf`` ones. This runs ``rule`` instead on
    rows of L entries, ``-inf`` first, then the row's finite entries in id order, with L = V modulo 16, and
    spreads the result back (``-inf`` elsewhere). ``rule`` maps float32 (B, V) scores to new ones; it gives the
    same bits on the finite entries when:

    - it is built, as top-p is, from an ascending :func:`stable_sort`, :func:`torch_softmax`, :func:`torch_cumsum`,
      comparisons, masks at positions counted from the end of the sorted row, and :func:`scatter_with_torch_ties`:
      the ``-inf`` entries sort first, so the finite ones end the row at the same positions modulo 16, in the
      same SIMD lanes of :func:`lane_sum` (its result would not change with a shift anyway: the lanes rotate
      and the halving fold adds the same pairs), and the ``-inf`` ones have exp 0, which adds exactly 0 to the
      lane sums and to the cumulative sums;
    - it removes a token by setting it to ``-inf`` (the CALLER checks that: a warper whose ``filter_value`` is
      ``-inf``): a ``-inf`` entry comes out ``-inf`` whether the rule keeps or removes it, so which ones it
      keeps (``min_tokens_to_keep`` above the finite count) does not matter;
    - no tie group among the finite entries is split into kept and removed (checked on the result): torch's
      order of such a group is the full row's (:func:`scatter_with_torch_ties`); otherwise the full rows run.

    Rows with NaN or ``+inf``, or more than a quarter finite, run whole too, and so does anything but a float32
    (B, V) array (the rule's own checks then speak). Tested against the whole rows on random, tied, textbook and
    GPT-2-sized rows (tests/numerics/test_torch_cpu.py).
    """
    support = _finite_support(scores)
    if support is None:
        return rule(scores)
    rows, ids, columns, starts, compact = support
    result = rule(compact)[rows, columns]
    kept = result != -np.inf  # the finite entries the rule keeps
    values = scores[rows, ids]
    for b in range(scores.shape[0]):
        row_values, row_kept = values[starts[b] : starts[b + 1]], kept[starts[b] : starts[b + 1]]
        if _shared(row_values[row_kept], row_values[~row_kept]):  # a tie group split at a cut
            return rule(scores)
    out = np.full(scores.shape, -np.inf, _F32)
    out[rows, ids] = result
    return out


def _shared(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the 1-D arrays ``a`` and ``b`` have a value in common."""
    if a.size * b.size <= 1 << 16:  # a few dozen entries after top-k: one comparison table
        return bool((a[:, None] == b[None, :]).any())
    return bool(np.isin(a, b).any())


def _finite_support(scores: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """(row, id, compact column) of every finite entry, where each row's entries start, and the compact rows;
    None where the whole rows must run."""
    if not isinstance(scores, np.ndarray) or scores.dtype != _F32 or scores.ndim != 2:
        return None
    batch, vocab = scores.shape
    if scores.size == 0 or not np.isfinite(scores.max(axis=-1)).all():  # NaN, +inf or an all -inf row
        return None
    flat = np.flatnonzero(scores != -np.inf)  # row by row, ids ascending
    rows = flat // vocab
    counts = np.bincount(rows, minlength=batch)
    width = int(counts.max()) + _PHASE
    width += (vocab - width) % _PHASE  # = vocab modulo 16
    if 4 * int(counts.max()) > vocab or width >= vocab:
        return None
    starts = np.concatenate([[0], np.cumsum(counts)])
    columns = width - counts[rows] + (np.arange(rows.size) - starts[rows])  # the finite entries end the row
    compact = np.full((batch, width), -np.inf, _F32)
    compact[rows, columns] = scores.reshape(-1)[flat]
    return rows, flat - rows * vocab, columns, starts, compact
