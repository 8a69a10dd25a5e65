r"""Plain NumPy float32 numerics shared by the model and the search code: softmax, log_softmax, activations.

Contract: every function takes a float32 array and returns a float32 array of the same shape;
nothing here promotes to float64 (NumPy 2 turns ``float32_array * np.float64(x)`` into float64,
so constants are Python floats, which NumPy treats as "weak" and keeps the array's dtype).
Rows may contain ``-inf`` (tokens a processor removed); a row that is entirely ``-inf`` has no
distribution and gives NaN, as ``torch.softmax`` does.

Docs: docs/sampling.md.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["softmax", "log_softmax", "gelu_new", "gelu", "relu", "silu", "ACT2FN"]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    r"""Numerically stable softmax along ``axis``.

    .. math:: \mathrm{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},\quad m = \max_j x_j

    Subtracting the row maximum ``m`` changes nothing mathematically and keeps ``exp`` from
    overflowing; ``-inf`` entries become exactly 0.

    >>> softmax(np.array([[1.0, 1.0, -np.inf]], dtype=np.float32))
    array([[0.5, 0.5, 0. ]], dtype=float32)
    """
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    r"""Numerically stable log-softmax along ``axis`` (what beam search accumulates).

    .. math:: \log\mathrm{softmax}(x)_i = (x_i - m) - \log \sum_j e^{x_j - m}

    Computed like ``torch.log_softmax``: shift by the row maximum, then subtract the log of the
    sum, so ``-inf`` entries stay ``-inf`` and the largest entry never overflows.

    >>> log_softmax(np.array([[0.0, 0.0, -np.inf]], dtype=np.float32))
    array([[-0.6931472, -0.6931472,       -inf]], dtype=float32)
    """
    m = np.max(x, axis=axis, keepdims=True)
    shifted = x - m
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def gelu_new(x: np.ndarray) -> np.ndarray:
    r"""GPT-2's tanh approximation of GELU (transformers' ``NewGELUActivation``, "gelu_new").

    .. math:: \tfrac12 x \left(1 + \tanh\!\left(\sqrt{2/\pi}\,(x + 0.044715\,x^3)\right)\right)

    ``x * x * x`` rather than ``x**3``: NumPy's float power is ~20x slower and this runs on every
    MLP activation of every step.
    """
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7, below float32's).

    NumPy has no erf and the package may not depend on SciPy.
    """
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-z * z))


def gelu(x: np.ndarray) -> np.ndarray:
    r"""Exact GELU (transformers' ``GELUActivation``, "gelu"): :math:`\tfrac12 x (1 + \mathrm{erf}(x/\sqrt2))`."""
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(x.dtype)


def relu(x: np.ndarray) -> np.ndarray:
    """ReLU: max(x, 0)."""
    return np.maximum(x, 0.0).astype(x.dtype, copy=False)


def silu(x: np.ndarray) -> np.ndarray:
    r"""SiLU (swish), the gate of Llama's MLP (``torch.nn.functional.silu``): :math:`x \cdot \sigma(x) = x / (1 + e^{-x})`.

    >>> silu(np.array([0.0, 1.0], dtype=np.float32))
    array([0.       , 0.7310586], dtype=float32)
    """
    with np.errstate(over="ignore"):  # e^{-x} overflows to inf for x < -88: x / inf = -0.0, as torch
        return x / (1.0 + np.exp(-x))


#: The activations a GPT-2 ``config.json`` may name, as in transformers' ``ACT2FN``.
ACT2FN = {"gelu_new": gelu_new, "gelu": gelu, "relu": relu}
