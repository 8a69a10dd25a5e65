r"""The weight products of a decoding step, x (N, E_in) @ W (E_in, E_out) for N = 1..FEW_ROWS, chosen by measurement.

Contract: :func:`product` returns ``x @ W`` (float32 (N, E_out), possibly a view) to float32 rounding, for a W stored
row-major ("C") or column-major ("F"); :func:`storage_order` says in which of the two orders a matrix of a given
shape is multiplied fastest by one row on this machine. Both choices are measured once per process
(:func:`calibrate_order`, :func:`calibrate_rows`) and kept in :data:`PLANS`; the forward pass
(:mod:`refdecode.model.fast.forward`) and the loader (:mod:`refdecode.model.fast.layout`) only ask.

Why measure. The fastest NumPy call for a few rows is a property of OpenBLAS's kernels on the CPU at hand, not of
the math (benchmarks/README.md, "Few-row products by CPU"):

- AVX-512 (OpenBLAS's SkylakeX kernels) has a "small matrix" kernel, used when M * N * K <= 100**3, that reads
  the operands as they are: W^T in blocks under that bound (:func:`few_rows_product`) costs ~1.4x one row for 4 rows,
  one call ~2x (its GEMM packs a copy of W first). One row streams the column-major W fastest.
- AVX2 (the Haswell kernels, which AMD Zen runs too) has no such kernel: the blocks cost ~5 single rows for 11
  rows. One call ``x @ W`` on the row-major W is fastest there for 1 to 16 rows, and 11 rows padded with zero
  rows to 12 (whole 4-column panels of its micro-kernel) cost ~0.7x the 11 rows.

The candidates (:data:`FORMS`, each with the rows padded to a multiple of 1 or 4) all compute the same sums, in the
kernel's grouping; plain ``x @ W`` is always one of them, so the choice is never slower than it as measured.
A calibration times each candidate on scratch matrices of the model's shapes that together exceed the last-level
cache (:func:`scratch_views`), so they come from memory as a model's weights do, with the calling thread's CPU time
(a shared machine disturbs it less than wall time), best of :data:`REPEATS`; matrices under
:data:`MIN_CALIBRATED_BYTES` are not measured. A candidate that raises (a kernel
that behaves differently, an odd build) is left out; plain ``x @ W`` remains. The choice can differ between
runs where two candidates are within the noise: the logits then differ in their last bits, like any change of kernel.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

__all__ = ["FEW_ROWS", "FORMS", "PLANS", "SMALL_GEMM_MNK", "product", "few_rows_product", "storage_order",
           "calibrate_order", "calibrate_rows", "row_bucket", "CALIBRATION_ROWS", "scratch_views", "order_of", "padded",
           "MIN_CALIBRATED_BYTES"]

#: Up to this many rows a product goes through :func:`product` (decoding steps, verification passes); more rows
#: (a prefill) are one ``x @ W``.
FEW_ROWS = 16

#: OpenBLAS multiplies a GEMM with M * N * K <= 100**3 by its "small matrix" kernel where it has one (x86-64 with
#: AVX-512: interface/gemm.c, kernel/x86_64/sgemm_small_kernel_permit_skylakex.c), which reads the operands as they
#: are. :func:`few_rows_product` keeps each block under this bound, with a margin: 4 rows x 256 outputs x 768 inputs.
SMALL_GEMM_MNK = 786_432

#: Timed passes per candidate in a calibration (the best one counts).
REPEATS = 2

#: The row count each bucket of :func:`row_bucket` is timed with: not a multiple of 4, so that padding is measured
#: where it applies (11: prompt lookup's verification pass of 10 drafts).
CALIBRATION_ROWS = {1: 1, 4: 3, FEW_ROWS: 11}

#: Matrices smaller than this (bytes) are not calibrated: they stay in the core's cache, where the calls differ by
#: microseconds, and plain ``x @ W`` on the row-major W is taken (small test models load and run without measuring).
MIN_CALIBRATED_BYTES = 1 << 20

#: The measured choices of this process: ``("order", E_in, E_out) -> "C" | "F"`` and
#: ``(E_in, E_out, order, bucket, other) -> (form, pad, use_other)``.
PLANS: dict[tuple, object] = {}


# ----------------------------------------------------------------------------------------------------
# The candidates: ways of asking NumPy for x @ W
# ----------------------------------------------------------------------------------------------------


def few_rows_product(x: np.ndarray, wt: np.ndarray) -> np.ndarray:
    """``x @ wt.T`` for a few rows x (N, E_in) and a row-major W^T ``wt`` (E_out, E_in), as a (N, E_out) view.

    W^T goes in blocks of output rows with N * rows * E_in <= SMALL_GEMM_MNK, each ``block @ x^T`` one OpenBLAS
    call under its small-matrix bound: on AVX-512 the block is read once, straight from memory, for all N rows
    (one thread, 124M-shaped weights: 4 rows ~1.2x one row in blocks, ~2x as one call). Without that kernel
    (AVX2) each block is a packed GEMM of its own, and the calibration leaves this form out.
    """
    N, E_in = x.shape
    step = max(8, SMALL_GEMM_MNK // (N * E_in))  # W^T rows per block: 256 for 4 rows of 768
    xt = np.ascontiguousarray(x.T)  # (E_in, N)
    out = np.empty((wt.shape[0], N), dtype=np.float32)  # (E_out, N)
    for start in range(0, wt.shape[0], step):
        np.matmul(wt[start : start + step], xt, out=out[start : start + step])  # (rows, E_in) @ (E_in, N)
    return out.T


def _matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ W``: (N, E_in) @ (E_in, E_out) -> (N, E_out), as NumPy passes it to OpenBLAS."""
    return x @ w


def _transposed(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``(W^T @ x^T)^T``: OpenBLAS sees the operands swapped (another packing, another kernel); a (N, E_out) view."""
    return (w.T @ np.ascontiguousarray(x.T)).T  # (E_out, E_in) @ (E_in, N) -> (E_out, N) -> (N, E_out)


def _blocks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`few_rows_product` on a column-major W (W^T row-major); (N, E_in) -> (N, E_out)."""
    return few_rows_product(x, w.T)


#: name -> function (x (N, E_in), W (E_in, E_out)) -> (N, E_out); "blocks" needs a column-major W.
FORMS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "matmul": _matmul, "transposed": _transposed, "blocks": _blocks}


def order_of(w: np.ndarray) -> str | None:
    """ "C" for a row-major W, "F" for a column-major one, None for any other strides (then plain ``x @ W``)."""
    return "C" if w.flags.c_contiguous else "F" if w.flags.f_contiguous else None


def padded(x: np.ndarray, pad: int) -> np.ndarray:
    """x (N, E) with zero rows appended up to a multiple of ``pad`` rows; x itself when N already is one."""
    extra = -x.shape[0] % pad
    return x if extra == 0 else np.concatenate([x, np.zeros((extra, x.shape[1]), dtype=x.dtype)])


# ----------------------------------------------------------------------------------------------------
# The product the forward pass calls
# ----------------------------------------------------------------------------------------------------


def row_bucket(rows: int) -> int:
    """The row counts that share a calibration: 1 (greedy), 2-4 (beams), 5-16 (verification passes) -> 1, 4, 16."""
    if not 1 <= rows <= FEW_ROWS:
        raise ValueError(f"`rows` has to be in [1, {FEW_ROWS}], but is {rows}")
    return 1 if rows == 1 else 4 if rows <= 4 else FEW_ROWS


def product(x: np.ndarray, w: np.ndarray, other: Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """``x @ w`` for 1..FEW_ROWS rows by the way measured fastest here; x (N, E_in), w (E_in, E_out) -> (N, E_out).

    ``other``: where a copy of W in the other storage order may be made and kept (the tied LM head), a function
    returning it; the calibration then also times the candidates on that order.
    """
    order = order_of(w)
    if order is None or not 1 <= x.shape[0] <= FEW_ROWS:
        return x @ w
    form, pad, use_other = calibrate_rows(w.shape, order, row_bucket(x.shape[0]), other is not None)
    if use_other:
        w = other()
    return FORMS[form](padded(x, pad), w)[: x.shape[0]]


def storage_order(shape: tuple[int, int]) -> str:
    """The order ("C" row-major, "F" column-major) in which W (E_in, E_out) is multiplied fastest by one row."""
    return calibrate_order(shape)


# ----------------------------------------------------------------------------------------------------
# Calibration
# ----------------------------------------------------------------------------------------------------


def scratch_views(shape: tuple[int, int], order: str, buffer: np.ndarray) -> list[np.ndarray]:
    """Matrices of ``shape`` (E_in, E_out) in ``order``, laid one after the other in ``buffer``; a matrix larger
    than the buffer is cut to the columns that fit (the LM head): per output, the same work."""
    E_in, E_out = shape
    E_out = min(E_out, buffer.size // E_in)
    n = E_in * E_out
    views = []
    for start in range(0, buffer.size - n + 1, n):
        flat = buffer[start : start + n]
        views.append(flat.reshape(E_in, E_out) if order == "C" else flat.reshape(E_out, E_in).T)
    return views


def _scratch() -> np.ndarray:
    """Float32 scratch memory, twice the last-level cache (at least 64 MiB), written once so its pages exist."""
    try:
        llc = os.sysconf("SC_LEVEL3_CACHE_SIZE")
    except (ValueError, OSError):
        llc = 0
    buffer = np.empty(max(64 << 20, 2 * llc) // 4, dtype=np.float32)
    buffer.fill(0.01)
    return buffer


def _fastest(candidates: list[tuple], run: Callable[[tuple], None]) -> tuple:
    """The candidate with the least CPU time of ``run(candidate)``, best of REPEATS rounds; raising ones dropped."""
    best = {c: float("inf") for c in candidates}
    for _ in range(REPEATS):
        for c in list(best):
            t0 = time.thread_time()
            try:
                run(c)
            except Exception:  # noqa: BLE001 -- a candidate that fails here is simply not chosen
                del best[c]
                continue
            best[c] = min(best[c], time.thread_time() - t0)
    return min(best, key=best.get)


def calibrate_order(shape: tuple[int, int]) -> str:
    """Measure (once per process) which order multiplies one row by W (E_in, E_out) fastest; also plans 1 row."""
    key = ("order", *shape)
    if key not in PLANS and 4 * shape[0] * shape[1] < MIN_CALIBRATED_BYTES:
        PLANS[key] = "C"
    if key not in PLANS:
        buffer = _scratch()
        views = {o: scratch_views(shape, o, buffer) for o in ("C", "F")}
        x = np.full((1, shape[0]), 0.5, dtype=np.float32)
        order, form = _fastest([(o, f) for o in ("C", "F") for f in ("matmul", "transposed")],
                               lambda c: [FORMS[c[1]](x, w) for w in views[c[0]]])
        PLANS[key] = order
        PLANS.setdefault((*shape, order, 1, False), (form, 1, False))
    return PLANS[key]


def calibrate_rows(shape: tuple[int, int], order: str, bucket: int, other: bool) -> tuple[str, int, bool]:
    """Measure (once per process) the fastest (form, pad, use_other) for ``bucket`` rows by W in ``order``.

    Timed with :data:`CALIBRATION_ROWS` rows (1, 3, 11), so that padding to a multiple of 4 is measured where it
    applies; plain ``x @ W`` (form "matmul", no padding, this order) is always a candidate. GPT-2 124M's five shapes
    on the 2-core AMD EPYC: ~0.4 s of CPU for the orders at load, ~1 s for each few-row bucket on its first step.
    """
    key = (*shape, order, bucket, other)
    if key not in PLANS and 4 * shape[0] * shape[1] < MIN_CALIBRATED_BYTES:
        PLANS[key] = ("matmul", 1, False)
    if key not in PLANS:
        buffer = _scratch()
        flip = {"C": "F", "F": "C"}[order]
        views = {False: scratch_views(shape, order, buffer), True: scratch_views(shape, flip, buffer)}
        rows = CALIBRATION_ROWS[bucket]
        x = np.full((rows, shape[0]), 0.5, dtype=np.float32)
        candidates = [(f, p, u) for u in ((False, True) if other else (False,)) for f in FORMS
                      for p in ((1, 4) if rows > 1 else (1,))
                      if f != "blocks" or (order if not u else flip) == "F"]
        PLANS[key] = _fastest(candidates, lambda c: [FORMS[c[0]](padded(x, c[1]), w) for w in views[c[2]]])
    return PLANS[key]
