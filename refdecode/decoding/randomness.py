r"""Where refdecode's random numbers come from: the generator, the multinomial draw, the acceptance uniforms.

Contract: every random number of refdecode is drawn here, from an explicit ``np.random.Generator``:
:func:`make_rng` gives a loop its generator (``rng=``, or ``seed=``, or the default generator of
:func:`set_seed`); :func:`multinomial` draws token indices like ``torch.multinomial`` (probabilities (N, V)
in, indices (N, num_samples) int64 out); :func:`uniform` draws the acceptance uniforms of speculative
sampling (:mod:`refdecode.decoding.assisted_decoding`). The loops take ``draw=`` (default
:func:`multinomial`) and assisted decoding ``uniform=``, so that a test can replay the tokens transformers
drew: torch's and NumPy's random streams differ, so the draws themselves cannot match (docs/golden-reference.md,
"what cannot be compared").

Inverse-CDF sampling, one uniform per draw:

.. math:: i = \min\{ j : \textstyle\sum_{l \le j} p_l > u \cdot \sum_l p_l \},\quad u \sim U[0, 1)

Without replacement (what beam sample asks for: 2K distinct candidates), a drawn index has its
probability set to zero and the row is renormalised before the next draw; this is sequential
sampling without replacement, the same distribution ``torch.multinomial(replacement=False)``
samples from. How a port uses ``draw=`` to compare against refdecode: docs/golden-reference.md.

``set_seed(s)`` is transformers' one-call seeding, for ported code that calls ``transformers.set_seed(s)``
and then samples without a generator: it seeds Python's ``random``, NumPy's legacy global state, and a
**default generator** that sampling uses when neither ``rng`` nor ``seed`` is given (before any
``set_seed``, that case draws from fresh OS entropy, as ``np.random.default_rng()`` does). As with torch's
global generator, consecutive calls continue one stream: the same script gives the same outputs, but two
calls in one script differ.

>>> set_seed(0); a = default_generator().random()
>>> set_seed(0); b = default_generator().random()
>>> a == b == np.random.default_rng(0).random()
True
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from ..validation import check_integer

__all__ = ["set_seed", "default_generator", "make_rng", "multinomial", "checked_draw", "uniform"]


# ---- the generator


_generator: np.random.Generator | None = None


def set_seed(seed: int) -> None:
    """Seed ``random``, ``np.random`` and refdecode's default generator with ``seed`` (a non-negative int)."""
    global _generator
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer, but is {seed!r}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    _generator = np.random.default_rng(int(seed))


def default_generator() -> np.random.Generator:
    """The generator sampling uses without ``rng``/``seed``: the one ``set_seed`` made, else a fresh one."""
    return _generator if _generator is not None else np.random.default_rng()


def make_rng(rng: np.random.Generator | None = None, seed: int | None = None) -> np.random.Generator:
    """The generator to draw from: ``rng`` if given, else ``np.random.default_rng(seed)``; with neither, the
    default generator of :func:`refdecode.decoding.randomness.set_seed` (fresh entropy if it was never called)."""
    if rng is not None and seed is not None:
        raise ValueError("pass either `rng` or `seed`, not both")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` has to be a numpy.random.Generator, but is {type(rng).__name__}")
    if rng is not None:
        return rng
    if seed is not None:
        return np.random.default_rng(check_integer("seed", seed, minimum=0))
    return default_generator()  # set_seed's, else fresh


# ---- the draws


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


def uniform(n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniforms in [0, 1), float64 (n,): the acceptance draws of :func:`speculative_sampling`."""
    return rng.random(n)
