"""refdecode.numerics.mkl_vml: torch's elementwise exp / log / sqrt (MKL's VML kernels) bit for bit.

The golden file (tools/golden/verify_mkl_vml.py golden, torch 2.13.0 on the reference AMD CPU) holds, per op,
about 3,000 float32 inputs and torch's results: 1,500 that torch does not round correctly, 1,500 that it does,
and the special values. The same tool checks every one of the 2**32 float32 inputs (not run by the tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refdecode.numerics.mkl_vml import torch_exp, torch_log, torch_sqrt, rsqrtps

GOLDEN = np.load(Path(__file__).resolve().parents[1] / "golden" / "mkl_vml.npz")
OPS = {"sqrt": (torch_sqrt, np.sqrt), "exp": (torch_exp, np.exp), "log": (torch_log, np.log)}


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def test_golden_is_torch_2_13():
    meta = json.loads(str(GOLDEN["meta"]))
    assert meta["torch"].startswith("2.13.0") and "verify_mkl_vml.py golden" in meta["regenerate"]


@pytest.mark.parametrize("op", OPS)
def test_torchs_bits_on_every_golden_input(op):
    """Equal bits, NaN's included, on inputs where torch rounds correctly and on inputs where it does not."""
    ours, rounded = OPS[op]
    x, want = GOLDEN[f"{op}/x"], GOLDEN[f"{op}/torch"]
    got = ours(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_array_equal(bits(got), bits(want))
    with np.errstate(all="ignore"):
        off = (rounded(x.astype(np.float64)).astype(np.float32) != want) & ~np.isnan(want)
    assert off.sum() >= 1000, off.sum()  # a correctly rounded stand-in misses these


@pytest.mark.parametrize("op", OPS)
def test_shape_and_scalars(op):
    """Elementwise over any shape; a 0-d input (``torch.sqrt(eps)`` of a scalar tensor) gives a 0-d result."""
    ours, _ = OPS[op]
    x = GOLDEN[f"{op}/x"][:24].reshape(2, 3, 4)
    np.testing.assert_array_equal(bits(ours(x)), bits(GOLDEN[f"{op}/torch"][:24].reshape(2, 3, 4)))
    assert ours(np.float32(0.5)).shape == ()


def test_special_values():
    """The kernels' scalar routines: IEEE's answers, and a positive quiet NaN for a negative argument."""
    x = np.array([0.0, -0.0, np.inf, -np.inf, -1.0], np.float32)
    assert bits(torch_sqrt(x)).tolist() == [0, 0x80000000, 0x7F800000, 0x7FC00000, 0x7FC00000]
    assert bits(torch_log(x)).tolist() == [0xFF800000, 0xFF800000, 0x7F800000, 0x7FC00000, 0x7FC00000]
    assert torch_exp(np.array([-np.inf, np.inf, 89.0, -104.0], np.float32)).tolist() == [0.0, np.inf, np.inf, 0.0]


def test_rsqrtps_is_a_12_bit_estimate():
    """The CPU's estimate is within 1.5 * 2**-12 of 1/sqrt(x) (the x86 bound) and exact under x -> 4x."""
    x = np.random.default_rng(0).uniform(0.5, 2.0, 10_000).astype(np.float32)
    y = rsqrtps(x).astype(np.float64)
    assert np.abs(y * np.sqrt(x.astype(np.float64)) - 1).max() <= 1.5 * 2.0**-12
    np.testing.assert_array_equal(rsqrtps(x * np.float32(4.0)), rsqrtps(x) * np.float32(0.5))
    assert not (bits(rsqrtps(x)) & 0x7FF).any()  # 12 significant bits
