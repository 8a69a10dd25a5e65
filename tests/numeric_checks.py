"""Numerical comparisons the tests share: relative error, a chi-square test of sampled counts, and the comparison of
results regenerated on the machine at hand with committed ones.

Which results are CPU-independent: token ids, beam indices, lengths, flags and the numerics wing's kernels
(refdecode/numerics/, bit for bit by construction). Which are not: every float that went through a BLAS product
(logits, scores). OpenBLAS picks its kernel by CPU (AVX2 or AVX-512) and each kernel sums in its own order, so a
float32 score regenerated on another CPU can differ in its last bits. Such floats are compared with the conformance
suite's tolerance, never bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from refdecode.reference.conformance.compare import TOLERANCE

def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want|."""
    return float(np.abs(got - want).max() / np.abs(want).max())


CHI2_CRIT = {1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515, 11: 31.264}


def chi_square(counts: np.ndarray, expected: np.ndarray) -> float:
    return float(((counts - expected) ** 2 / expected).sum())


def assert_same_up_to_blas(got: Any, want: Any, where: str = "") -> None:
    """``got == want`` for JSON-like data regenerated on this machine (``want`` committed, maybe on another CPU):
    the structure, keys, strings, ints, bools and integer arrays exactly; floats and float arrays within the suite's
    tolerance, ``|g - w| <= TOLERANCE * max(1, max|w|)`` over each array (docs/conformance.md).

    An array is JSON ``{"array": [...], "dtype": "float32"}`` (the course's and the suite's encoding) or a list of
    floats; a float array's non-finite entries must match exactly.
    """
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{where}: keys {sorted(got)} != {sorted(want)}"
        if str(want.get("dtype", "")).startswith("float") and "array" in want:
            assert got["dtype"] == want["dtype"], f"{where}: dtype {got['dtype']} != {want['dtype']}"
            _assert_close(np.asarray(got["array"], dtype=np.float64), np.asarray(want["array"], dtype=np.float64), where)
            return
        for key in want:
            assert_same_up_to_blas(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_up_to_blas(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert isinstance(got, float), f"{where}: {got!r} is not a float"
        _assert_close(np.array([got]), np.array([want]), where)
    else:  # ints, bools, strings, None: exact
        assert type(got) is type(want) and got == want, f"{where}: {got!r} != {want!r}"


def _assert_close(got: np.ndarray, want: np.ndarray, where: str) -> None:
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite) and np.array_equal(got[~finite], want[~finite]), \
        f"{where}: non-finite entries differ"
    if finite.any():
        scale = max(1.0, float(np.abs(want[finite]).max()))
        err = float(np.abs(got[finite] - want[finite]).max())
        assert err <= TOLERANCE * scale, f"{where}: |got - want| = {err:.3g} > {TOLERANCE:g} x {scale:.3g}"
