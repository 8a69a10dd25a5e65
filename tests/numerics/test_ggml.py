"""ggml's fp16-table GELU (llama.cpp): the table's values are fp16, the ends are 0 and x, float32 out."""

from __future__ import annotations

import math

import numpy as np

from refdecode.numerics import ggml_gelu_fp16


def _gelu_tanh_fp16(x: float) -> float:
    """fp16 of the tanh GELU of fp16(x), in float64 with the math module (not the code under test)."""
    h = float(np.float16(x))
    g = 0.5 * h * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h ** 3)))
    return float(np.float16(g))


def test_values_are_the_fp16_table_and_the_ends():
    xs = np.array([-12.0, -10.0, -3.3, -0.7, -1e-3, 0.0, 0.1234567, 1.0, 2.5, 9.99, 10.0, 17.25], dtype=np.float32)
    got = ggml_gelu_fp16(xs)
    assert got.dtype == np.float32 and got.shape == xs.shape
    assert got[0] == 0 and got[1] == 0 and got[-2] == np.float32(10.0) and got[-1] == np.float32(17.25)
    for x, y in zip(xs[2:-2], got[2:-2]):
        assert y == np.float32(_gelu_tanh_fp16(float(x))), x
        assert float(np.float16(y)) == float(y)          # an fp16 value


def test_it_moves_the_activation_by_fp16_rounding_only():
    x = np.linspace(-9.5, 9.5, 20_001, dtype=np.float32)
    x64 = x.astype(np.float64)
    exact = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    err = np.abs(ggml_gelu_fp16(x) - exact)
    # fp16 of the input (relative 2**-11 through a slope <= 1.13) and of the output (2**-11 relative)
    assert (err <= np.abs(exact) * 2.0 ** -10 * 1.2 + 2e-7 + np.abs(x) * 2.0 ** -11 * 1.13).all()
    assert err.max() > 1e-4                              # and it does move it: not float32's GELU
