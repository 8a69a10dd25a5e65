"""Numerical comparisons the tests share: relative error, and a chi-square test of sampled counts."""

from __future__ import annotations

import numpy as np

def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want|."""
    return float(np.abs(got - want).max() / np.abs(want).max())


CHI2_CRIT = {1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515, 11: 31.264}


def chi_square(counts: np.ndarray, expected: np.ndarray) -> float:
    return float(((counts - expected) ** 2 / expected).sum())
