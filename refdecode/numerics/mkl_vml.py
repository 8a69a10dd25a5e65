r"""torch's elementwise float32 ``exp``, ``log`` and ``sqrt`` on the CPU, bit for bit: MKL's VML kernels, read
from the machine code and written out in vectorised NumPy.

Contract: float32 (...) in, float32 (...) out, elementwise. Nothing here imports torch.

**Which code runs.** torch's CPU ``exp_kernel`` / ``log_kernel`` / ``sqrt_kernel`` call MKL's
``vmsExp`` / ``vmsLn`` / ``vmsSqrt(n, in, out, VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE)``
(ATen ``cpu/vml.h``); MKL (2024.2, linked statically into ``libtorch_cpu.so`` of torch 2.13.0 and 2.14.1) picks a
kernel per CPU. On the project's reference machine, an AMD EPYC with AVX-512, it picks the generic ``EX``
kernels, ``mkl_vml_kernel_sExp_EXHAynn``, ``mkl_vml_kernel_sLn_EXHAynn`` and ``mkl_vml_kernel_sSqrt_EXHAynn``
(found with gdb; the same under ``MKL_ENABLE_INSTRUCTIONS=AVX2``): SSE code, four lanes, no FMA. Every
``mulps`` / ``addps`` / ``subps`` rounds once to float32, so NumPy's float32 ``*``, ``+`` and ``-``, in the kernel's
order, give its bits; the constants below are the kernels' own (hex float32 bit patterns). Each kernel sends
the inputs its vector code does not cover (zero, subnormal, negative, infinite, NaN, an ``exp`` argument
beyond :math:`\pm 87.34`, a ``sqrt`` argument within 4,095 ulp of the largest float32) to a scalar routine
(``vsexp_cout_rare``, ``vsln_cout_rare``, ``vssqrt_cout_rare``) that computes in float64 and rounds once to
float32; there float64 NumPy stands in (:func:`_rare`), equal on every such input.

- ``exp`` (:func:`torch_exp`): :math:`t = x \cdot 128/\ln 2 + 1.5 \cdot 2^{23}` (the integer
  :math:`k = \mathrm{rint}(128 x / \ln 2)` in the low bits), :math:`r = (x - k \cdot L_{hi}) - k \cdot L_{lo}`,
  :math:`p = r^2/2 + r`, :math:`e^x = 2^{\lfloor k/128 \rfloor} \cdot ((p \cdot T_j + T'_j) + T_j)` with
  :math:`j = k \bmod 128` and :math:`T_j + T'_j = 2^{j/128}` (``vsexp_data``, a float32 pair per entry).
- ``log`` (:func:`torch_log`): :math:`x = 2^k m` with :math:`m \in [2/3, 4/3)` (integer arithmetic on the bits),
  :math:`f = m - 1`, a degree-10 polynomial :math:`f + f^2 P(f)` by Horner, then
  :math:`k \cdot \ln2_{hi} + (k \cdot \ln2_{lo} + \ldots)`.
- ``sqrt`` (:func:`torch_sqrt`): the CPU's ``rsqrtps`` estimate :math:`y \approx 1/\sqrt{x}` (12 bits), then
  :math:`s = x y`, :math:`h = y/2`, :math:`e = 1/2 - s h`, :math:`s_1 = s e + s`, :math:`h_1 = h e + h`,
  :math:`\sqrt{x} \approx (x - s_1^2) h_1 + s_1`. Not correctly rounded (17.1% of the positive finite float32 inputs
  end one ulp off), and the bits depend on ``rsqrtps``, which the x86 manuals specify only to 12 bits: each CPU
  family has its own table. :data:`_RSQRTPS` is this AMD CPU's, measured (``tools/golden/verify_mkl_vml.py``):
  ``rsqrtps`` there depends on the exponent's parity and the top 12 mantissa bits only (8,192 values).

Verified against ``torch.sqrt`` / ``exp`` / ``log`` of torch 2.13.0 on this CPU on every one of the
:math:`2^{32}` float32 inputs, NaN bits included (``tools/golden/verify_mkl_vml.py verify``); torch 2.14.1 links
the same kernels, instruction for instruction, and gives the same bits (checked on every 16th block of inputs). Not reproduced: the kernels MKL picks on an Intel CPU
(``..._Z0HAynn`` on AVX-512, ``..._L9HAynn`` on AVX2; FMA code with ``vrsqrt14ps``), and another CPU's
``rsqrtps`` under ``sqrt``. Docs: docs/last-bit.md.
"""

from __future__ import annotations

import base64
import zlib
from decimal import Decimal, localcontext

import numpy as np

__all__ = ["torch_exp", "torch_log", "torch_sqrt", "rsqrtps"]

_F32 = np.float32
_U32 = np.uint32


def _hex(bits: int) -> np.float32:
    """The float32 with these bits (the kernels' constants, as the disassembly shows them)."""
    return np.array([bits], _U32).view(_F32)[0]


_NAN = _hex(0x7FC00000)  # the scalar routines' NaN for a negative argument (x86's own default NaN is negative)


def _rare(x: np.ndarray, out: np.ndarray, covered: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
    """The scalar routine's float64 result, rounded once to float32, where the vector code does not cover ``x``
    (a NaN argument comes back quieted, as ``x * x`` leaves it; a negative one for ``log`` / ``sqrt`` as ``_NAN``)."""
    if covered.all():
        return out
    with np.errstate(all="ignore"):
        wide = ufunc(x.astype(np.float64)).astype(_F32)
    wide = np.where((x < 0) & np.isnan(wide), _NAN, wide)
    return np.where(covered, out, wide)


# ----------------------------------------------------------------------------------------------
# exp: mkl_vml_kernel_sExp_EXHAynn


_EXP_SCALE, _EXP_SHIFT = _hex(0x4338AA3B), _hex(0x4B400000)  # 128 / ln 2; 1.5 * 2**23
_EXP_LN2_HI, _EXP_LN2_LO = _hex(0xBBB18000), _hex(0x35DE8083)  # -(ln 2 / 128) in two parts


def _exp_table() -> tuple[np.ndarray, np.ndarray]:
    """``vsexp_data + 0x300``: float32 pairs (T_j, T'_j), j = 0..127, T_j the float32 nearest 2 ** (j / 128) and
    T'_j the float32 nearest the rest (computed with 60 decimal digits: float64 misses six of the 128 T'_j;
    checked against the kernel's bytes, and every entry by the exhaustive check)."""
    with localcontext() as context:  # not the caller's decimal context
        context.prec = 60
        exact = [Decimal(2) ** (Decimal(j) / 128) for j in range(128)]
        hi = np.array([float(v) for v in exact]).astype(_F32)
        lo = np.array([float(v - Decimal(float(h))) for v, h in zip(exact, hi)]).astype(_F32)
    return hi, lo


_EXP_HI, _EXP_LO = _exp_table()
_EXP_LIMIT = 0x42AEAC4F  # |x| above 87.3365 (bits & 0x7ffffff0 compared): the scalar routine


def torch_exp(x: np.ndarray) -> np.ndarray:
    """``torch.exp`` of float32 on the CPU (``vmsExp``, MKL's ``EX`` kernel), bit for bit.

    Correctly rounded on about 99% of inputs, else one ulp off:

    >>> x = np.array([0.0, -1.0, -1.4, -np.inf], dtype=np.float32)
    >>> torch_exp(x)
    array([1.        , 0.36787945, 0.24659696, 0.        ], dtype=float32)
    >>> np.exp(x.astype(np.float64)).astype(np.float32)              # correctly rounded
    array([1.        , 0.36787945, 0.24659698, 0.        ], dtype=float32)
    """
    x = np.asarray(x, _F32)
    covered = (x.view(_U32) & _U32(0x7FFFFFF0)) <= _EXP_LIMIT
    xs = np.where(covered, x, _F32(0))
    t = xs * _EXP_SCALE + _EXP_SHIFT  # the integer k = rint(128 x / ln 2) in t's low mantissa bits
    k = t - _EXP_SHIFT
    bits = t.view(_U32)
    j = bits & _U32(127)
    r = k * _EXP_LN2_HI + xs
    r = k * _EXP_LN2_LO + r
    p = r * r * _F32(0.5) + r
    y = p * _EXP_HI[j] + _EXP_LO[j] + _EXP_HI[j]  # 2 ** (j / 128) * e ** r
    scale = (((bits << _U32(16)) + _U32(0x3F800000)) & _U32(0x7F800000)).view(_F32)  # 2 ** (k // 128)
    return _rare(x, y * scale, covered, np.exp)


# ----------------------------------------------------------------------------------------------
# log: mkl_vml_kernel_sLn_EXHAynn


_LOG_POLY = [_hex(b) for b in (0xBE0402C8, 0x3E0F335D, 0xBDF9889E, 0x3E0F6B8C, 0xBE2ACEE6,
                               0x3E4CE814, 0xBE7FFF78, 0x3EAAAA83, 0xBF000000)]  # highest degree first; -1/2 last
_LOG_LN2_HI, _LOG_LN2_LO = _hex(0x3F317200), _hex(0x35BFBE8E)
_TWO_THIRDS = 0x3F2AAAAB  # the bits of float32(2/3)


def torch_log(x: np.ndarray) -> np.ndarray:
    """``torch.log`` of float32 on the CPU (``vmsLn``, MKL's ``EX`` kernel), bit for bit.

    >>> torch_log(np.array([1.0, 1.5, 0.0, -1.0], dtype=np.float32))
    array([0.        , 0.40546513,       -inf,        nan], dtype=float32)
    >>> np.float32(np.log(1.5))                                        # correctly rounded
    np.float32(0.4054651)
    """
    x = np.asarray(x, _F32)
    bits = x.view(np.int32)
    covered = (bits >= 0x00800000) & (bits <= 0x7F7FFFFF)  # positive, normal, finite
    t = np.where(covered, bits, _TWO_THIRDS) - np.int32(_TWO_THIRDS)
    k = (t >> 23).astype(_F32)  # x = 2**k * m
    m = ((t & 0x7FFFFF) + _TWO_THIRDS).view(_F32)  # m in [2/3, 4/3)
    f = m - _F32(1)
    p = f * _LOG_POLY[0] + _LOG_POLY[1]
    for c in _LOG_POLY[2:]:
        p = p * f + c
    p = p * f * f + f  # log(1 + f)
    y = k * _LOG_LN2_HI + (k * _LOG_LN2_LO + p)
    return _rare(x, y, covered, np.log)


# ----------------------------------------------------------------------------------------------
# sqrt: mkl_vml_kernel_sSqrt_EXHAynn and the CPU's rsqrtps


#: ``rsqrtps`` of this CPU (AMD EPYC, Zen 4) on x in [0.5, 1) (row 0) and [1, 2) (row 1), indexed by the top 12
#: mantissa bits; its result has 12 significant bits, so a table entry is ``bits >> 11`` of the result. Stored as
#: each row's first entry and its 4,095 steps down (0, 1 or 2), zlib-compressed; written by
#: ``tools/golden/verify_mkl_vml.py table``, which measures the instruction on every float32.
_RSQRTPS_FIRST = (0x7F6A0, 0x7EFFF)
_RSQRTPS_STEPS = (
    "eNrdmOEOwiAMhK99/4c20RmhwGrX0lVlhh33tRhC/HEEovahc82KD7L1o+B+sPrHav+61mzkrRqb61f+e2KhSdFWvq4+htCkaAT7"
    "2TxApQeC+cHvTkCeyPP/w+V7+ej6QbdL8lIkaCTXn/DN/VifW7SfzY/18iL89wyMF799NA0jb61Hcj8U6+flzf0Ce/+ilh42743k"
    "+mg+u1+0P/LH++Kr+dl8tfrq+6m/5/V5z6xocvLk5L0aE79d4xP2G//uGXYfn3cMmhV/t0YwP/e7k+k0K/5ujWBe+mwM5Tgk1MvT"
    "0PghAuzn3T4216vzNBS9rhHMR/sT3hQZcvFIE1ZepmGKRjHfzeO/xtU4V57HKknz8tm+yjtjTLopNo3S1tAYMaHz5X7RvEwBaZIK"
    "Zvp38MYSl87eT9exCXO1flr9AwBeD/8=")


def _rsqrtps_table() -> np.ndarray:
    """(2, 4096) uint32: ``rsqrtps``'s result bits on [0.5, 1) and [1, 2), from the stored steps."""
    steps = np.frombuffer(zlib.decompress(base64.b64decode(_RSQRTPS_STEPS)), np.uint8).reshape(2, 4095)
    codes = np.asarray(_RSQRTPS_FIRST, np.int64)[:, None] - np.concatenate(
        [np.zeros((2, 1), np.int64), np.cumsum(steps, axis=1, dtype=np.int64)], axis=1)
    return (codes << 11).astype(_U32)


_RSQRTPS = _rsqrtps_table()


def rsqrtps(x: np.ndarray) -> np.ndarray:
    """The ``rsqrtps`` estimate of :math:`1/\\sqrt{x}` on this CPU, for positive normal float32 ``x``.

    :math:`x = 2^{2n} u`, :math:`u \\in [0.5, 2)`: the table's entry for ``u``, times :math:`2^{-n}`.
    """
    bits = np.asarray(x, _F32).view(_U32)
    exponent = (bits >> _U32(23)).astype(np.int64)
    odd = exponent & 1  # odd: u in [1, 2) (row 1); even: u in [0.5, 1)
    half_power = (exponent - 126 - odd) // 2  # n
    entry = _RSQRTPS[odd, (bits >> _U32(11)) & _U32(0xFFF)].astype(np.int64)
    return (entry - (half_power << 23)).astype(_U32).view(_F32)


def torch_sqrt(x: np.ndarray) -> np.ndarray:
    """``torch.sqrt`` of float32 on the CPU (``vmsSqrt``, MKL's ``EX`` kernel on this CPU), bit for bit.

    One Newton step on ``rsqrtps``'s estimate, then a correction; on 0.2 it lands one ulp above the correctly
    rounded root:

    >>> torch_sqrt(np.array([0.2, 4.0, 0.0, -1.0], dtype=np.float32))
    array([0.44721362, 2.        , 0.        ,        nan], dtype=float32)
    >>> np.sqrt(np.float32(0.2))                                       # correctly rounded
    np.float32(0.4472136)
    """
    x = np.asarray(x, _F32)
    bits = x.view(_U32)
    covered = (bits >= _U32(0x00800000)) & (bits <= _U32(0x7F7FF000))  # positive normal, s1 * s1 finite
    xs = np.where(covered, x, _F32(1))
    y = rsqrtps(xs)
    s = xs * y
    h = y * _F32(0.5)
    e = _F32(0.5) - s * h
    s1 = s * e + s  # sqrt(x), about 23 bits
    h1 = h * e + h  # 1 / (2 sqrt(x))
    root = (xs - s1 * s1) * h1 + s1
    out = _rare(x, root, covered, np.sqrt)
    return np.where(x == 0, x, out)  # sqrt(-0) = -0
