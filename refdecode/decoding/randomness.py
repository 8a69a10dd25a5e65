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

__all__ = ["multinomial", "checked_draw"]


def multinomial(probs: np.ndarray, num_samples: int, replacement: bool = False,
                rng: np.random.Generator | None = None) -> np.ndarray:
    r"""Draw ``num_samples`` indices per row of ``probs`` (N, V), like ``torch.multinomial``.

    Args:
        probs: float (N, V) or (V,), non-negative, finite, each row with a positive sum (it need not
            sum to 1: rows are normalised here, as torch does).
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
    p = np.array(probs, dtype=np.float64, ndmin=2)  # (N, V) float64
    if p.ndim != 2:
        raise ValueError(f"`probs` has to be 1-D or 2-D (N, V), but has shape {np.shape(probs)}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError("`probs` contains NaN, inf or a negative value (NaN scores while sampling?): "
                         f"row sums {p.sum(axis=1).tolist()}")
    # Speed-up, exact: a zero entry adds exactly 0.0 to a cumulative sum and is never the first index whose
    # sum exceeds the target, so each row is drawn from its non-zero entries only, mapped back through
    # their ids (after top-k, 50 of GPT-2's 50257: 381 -> 127 us per row). The uniforms are the same.
    ids = [np.flatnonzero(row) for row in p]  # per row, ascending ids with p > 0
    weights = [row[i] for row, i in zip(p, ids)]  # (n_r,) float64 each, a copy: drawn entries are zeroed
    n_nonzero = [i.size for i in ids]
    if min(n_nonzero) == 0:
        raise ValueError("`probs` has a row with no probability mass (every token filtered?)")
    if not replacement and min(n_nonzero) < num_samples:
        raise ValueError(f"`num_samples` ({num_samples}) is larger than the number of non-zero "
                         f"probabilities {n_nonzero} (replacement=False)")
    out = np.empty((p.shape[0], num_samples), dtype=np.int64)
    for s in range(num_samples):
        cdf = [np.cumsum(w) for w in weights]                          # (n_r,) each
        target = rng.random(p.shape[0]) * np.array([c[-1] for c in cdf])  # (N,) u * total mass
        for r, (c, w) in enumerate(zip(cdf, weights)):
            j = int(np.count_nonzero(c <= target[r]))                   # first j with cdf_j > target
            j = min(j, int(np.flatnonzero(w)[-1]))                      # u*total rounded up to total
            out[r, s] = ids[r][j]
            if not replacement:
                weights[r][j] = 0.0
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
