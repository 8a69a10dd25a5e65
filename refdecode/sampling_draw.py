r"""The one place where refdecode draws random numbers: ``multinomial``, like ``torch.multinomial``.

Contract: probabilities (N, V) in, token indices (N, num_samples) int64 out. Randomness comes only
from the ``np.random.Generator`` passed in (``sample`` and ``beam_sample`` build it from ``seed=``
or take ``rng=``), so the same seed gives the same tokens. The decode loops take a ``draw=``
argument defaulting to this function; a test can pass a replacement that replays the tokens
transformers drew, which is how the sampling golden files are compared (torch's and NumPy's
random streams are different, so the draws themselves cannot match: see
``../shared/notes`` point 21, "RNG is not portable").

Inverse-CDF sampling, one uniform per draw:

.. math:: i = \min\{ j : \textstyle\sum_{l \le j} p_l > u \cdot \sum_l p_l \},\quad u \sim U[0, 1)

Without replacement (what beam sample asks for: 2K distinct candidates), a drawn index has its
probability set to zero and the row is renormalised before the next draw; this is sequential
sampling without replacement, the same distribution ``torch.multinomial(replacement=False)``
samples from. How a port uses ``draw=`` to compare against refdecode: docs/golden-reference.md.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["multinomial", "multinomial_sparse", "checked_draw"]


def multinomial(probs: np.ndarray, num_samples: int, replacement: bool = False,
                rng: np.random.Generator | None = None) -> np.ndarray:
    r"""Draw ``num_samples`` indices per row of ``probs`` (N, V), like ``torch.multinomial``.

    Args:
        probs: float (N, V), non-negative, finite, each row with a positive sum (it need not sum
            to 1: rows are normalised here, as torch does).
        num_samples: draws per row; without replacement at most the number of non-zero entries.
        replacement: draw with replacement (independent draws) or without (distinct indices).
        rng: the ``np.random.Generator`` every uniform comes from (required).

    Returns:
        int64 (N, num_samples), in draw order.

    Raises:
        ValueError: NaN/inf/negative probabilities, an all-zero row, or not enough non-zero
            entries for a draw without replacement (torch raises RuntimeError for these).

    >>> rng = np.random.default_rng(0)
    >>> multinomial(np.array([[0.0, 1.0, 0.0]], dtype=np.float32), 1, rng=rng)
    array([[1]])
    >>> sorted(multinomial(np.array([[0.2, 0.0, 0.8]]), 2, replacement=False, rng=rng)[0].tolist())
    [0, 2]
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` has to be a numpy.random.Generator, but is {type(rng).__name__}")
    p = np.array(probs, dtype=np.float64, ndmin=2)  # (N, V) float64 copy: we zero drawn entries
    if p.ndim != 2:
        raise ValueError(f"`probs` has to be 1-D or 2-D (N, V), but has shape {np.shape(probs)}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("`probs` contains NaN, inf or a negative value (NaN scores while sampling?): "
                         f"row sums {p.sum(axis=1).tolist()}")
    if np.any(p.sum(axis=1) <= 0):
        raise ValueError("`probs` has a row with no probability mass (every token filtered?)")
    if not replacement and np.any(np.count_nonzero(p, axis=1) < num_samples):
        raise ValueError(f"`num_samples` ({num_samples}) is larger than the number of non-zero "
                         f"probabilities {np.count_nonzero(p, axis=1).tolist()} (replacement=False)")
    rows = np.arange(p.shape[0])
    out = np.empty((p.shape[0], num_samples), dtype=np.int64)
    for s in range(num_samples):
        cdf = np.cumsum(p, axis=1)                                  # (N, V)
        target = rng.random(p.shape[0]) * cdf[:, -1]                # (N,) u * total mass
        idx = np.sum(cdf <= target[:, None], axis=1)                # first j with cdf_j > target
        last_nonzero = p.shape[1] - 1 - np.argmax(p[:, ::-1] > 0, axis=1)
        idx = np.minimum(idx, last_nonzero)                         # u*total rounded up to total
        out[:, s] = idx
        if not replacement:
            p[rows, idx] = 0.0
    return out


def multinomial_sparse(probs: np.ndarray, num_samples: int, replacement: bool = False,
                       rng: np.random.Generator | None = None) -> np.ndarray:
    """:func:`multinomial` working on each row's non-zero entries only: the same indices for the same ``rng``.

    After top-k, 50 of GPT-2's 50257 probabilities are non-zero, and :func:`multinomial` takes a float64
    cumulative sum over all of them for every draw. The zeros change nothing in that sum (a cumulative
    sum adds them one at a time, exactly), and the first index whose cumulative sum exceeds the target
    is always a non-zero entry, so the sum over the non-zero entries, mapped back through their indices,
    gives the same index; the uniforms are drawn exactly as there, one ``rng.random(N)`` per draw.
    Checks and errors are those of :func:`multinomial`, which it falls back to for anything unusual.
    (One GPT-2-sized row after top-k=50: 381 -> 127 us; tests/test_fast_paths.py checks equality.)

    >>> p = np.array([[0.0, 0.2, 0.0, 0.8]], dtype=np.float32)
    >>> bool(np.array_equal(multinomial_sparse(p, 2, rng=np.random.default_rng(3)),
    ...                     multinomial(p, 2, rng=np.random.default_rng(3))))
    True
    """
    p32 = np.asarray(probs)
    if (not isinstance(rng, np.random.Generator) or p32.ndim != 2 or p32.dtype.kind != "f"
            or not np.isfinite(p32).all() or (p32 < 0).any()):
        return multinomial(probs, num_samples, replacement, rng)  # raises the right error
    nonzero = [np.flatnonzero(row) for row in p32]  # per row, ascending token ids with p > 0
    if any(ids.size == 0 or (not replacement and ids.size < num_samples) for ids in nonzero):
        return multinomial(probs, num_samples, replacement, rng)
    p = [row[ids].astype(np.float64) for row, ids in zip(p32, nonzero)]  # (n_r,) float64 each
    out = np.empty((p32.shape[0], num_samples), dtype=np.int64)
    for s in range(num_samples):
        cdf = [np.cumsum(pr) for pr in p]  # (n_r,) each
        target = rng.random(p32.shape[0]) * np.array([c[-1] for c in cdf])  # (N,) u * total mass
        for r, (c, pr, ids) in enumerate(zip(cdf, p, nonzero)):
            j = min(int(np.count_nonzero(c <= target[r])), int(np.flatnonzero(pr)[-1]))  # clamp as there
            out[r, s] = ids[j]
            if not replacement:
                pr[j] = 0.0
    return out


def checked_draw(draw: Callable[..., np.ndarray], probs: np.ndarray, num_samples: int, replacement: bool,
                 rng: np.random.Generator) -> np.ndarray:
    """Call a ``draw`` hook and check its answer: int64 (N, num_samples) indices into the V columns of ``probs``.

    A hook (a port's own sampler, a replay of transformers' tokens) that returns the wrong shape, floats or
    an index outside the vocabulary made the decode loop fail with an IndexError far from the cause; here it
    is a ValueError naming ``draw``.

    >>> checked_draw(lambda p, n, r, g: np.zeros((1, 2)), np.ones((1, 3)), 1, False, None)
    Traceback (most recent call last):
    ...
    ValueError: `draw` must return integer indices of shape (1, 1) (rows of probs, num_samples), got a float64 array of shape (1, 2)
    """
    if not callable(draw):
        raise TypeError(f"`draw` must be a callable (probs, num_samples, replacement, rng) -> indices, got "
                        f"{type(draw).__name__}")
    out = np.asarray(draw(probs, num_samples, replacement, rng))
    rows, vocab = probs.shape
    if out.shape != (rows, num_samples) or out.dtype.kind not in "iu":
        raise ValueError(f"`draw` must return integer indices of shape ({rows}, {num_samples}) (rows of probs, "
                         f"num_samples), got a {out.dtype} array of shape {out.shape}")
    if out.size and (out.min() < 0 or out.max() >= vocab):
        raise ValueError(f"`draw` must return indices in [0, {vocab}) (columns of probs), got values from "
                         f"{out.min()} to {out.max()}")
    return out.astype(np.int64, copy=False)
