r"""``set_seed``: transformers' one-call seeding, for code ported from it.

Contract: refdecode's randomness comes through an explicit ``np.random.Generator`` (``rng=``) or
``seed=`` in the sampling loops; that stays the recommended way. ``set_seed(s)`` is for ported
code that calls ``transformers.set_seed(s)`` and then samples without a generator: it seeds
Python's ``random``, NumPy's legacy global state, and a **default generator** that sampling uses
when neither ``rng`` nor ``seed`` is given (before any ``set_seed``, that case draws from fresh OS
entropy, as ``np.random.default_rng()`` does). As with torch's global generator, consecutive calls
continue one stream: the same script gives the same outputs, but two calls in one script differ.

>>> import numpy as np
>>> set_seed(0); a = default_generator().random()
>>> set_seed(0); b = default_generator().random()
>>> a == b == np.random.default_rng(0).random()
True
"""

from __future__ import annotations

import random

import numpy as np

__all__ = ["set_seed", "default_generator"]

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
