r"""SLEEF's single-precision ``expf`` (u10) and ``logf`` (u1), bit for bit, in vectorised NumPy.

torch's CPU softmax and log_softmax call ``Vectorized<float>::exp()`` and ``::log()``, which are
SLEEF's ``Sleef_expf8_u10`` / ``Sleef_logf8_u10`` (AVX2) and ``Sleef_expf16_u10`` / ``Sleef_logf16_u10``
(AVX-512): ``xexpf`` and ``xlogf_u1`` of SLEEF's ``sleefsimdsp.c``, compiled with FMA. Neither is
correctly rounded (``expf`` is off by one ulp for about one input in ten, ``logf`` for about one in
five hundred), so a port that calls ``np.exp`` differs from torch in the last bit of some
probabilities. Here every SLEEF step is one float32 operation: NumPy's float32 ``+``, ``-``, ``*``
and ``/`` are IEEE operations, and :func:`fma32` rounds ``a * b + c`` once.

**FMA without FMA.** The product of two float32 numbers has at most 48 significant bits, so it
is exact in float64; ``a * b + c`` in float64 is then rounded once (to 53 bits) and again to 24
bits. That double rounding is wrong only when the float64 result lands exactly halfway between
two float32 numbers (its low 29 bits are ``1000...0``) while the exact sum was not halfway; in
that rare case the error of the float64 addition (Knuth's two-sum) says which way to go.

Contract: every function takes float32 arrays and returns float32 arrays of the same shape.
Docs: docs/last-bit.md.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["fma32", "sleef_expf", "sleef_logf"]

_F32 = np.float32
_LOW29 = np.int64((1 << 29) - 1)  # the float64 mantissa bits below float32's 24
_HALF29 = np.int64(1 << 28)  # ... and their pattern when the value is a float32 midpoint


def fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float32, as the ``vfmadd`` instructions do (float32 in, float32 out).

    >>> a = np.float32(1 + 2**-12)                # a * a = 1 + 2**-11 + 2**-24: 25 bits
    >>> float(fma32(a, a, np.float32(-1))) == 2**-11 + 2**-24, float(a * a - np.float32(1)) == 2**-11
    (True, True)
    """
    product = np.asarray(a, np.float64) * np.asarray(b, np.float64)  # exact: 24 + 24 bits
    return _round_sum(product, np.asarray(c, np.float64))


def _round_sum(product: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 nearest to ``product + c`` (float64 arrays, ``product`` exact), rounded once."""
    total = product + c  # rounded to float64
    out = total.astype(_F32)
    halfway = (total.view(np.int64) & _LOW29) == _HALF29  # on a float32 midpoint: the rounding is a coin toss
    if halfway.any():
        spent = total - product  # two-sum: the exact error of the float64 addition
        error = (product - (total - spent)) + (c - spent)
        nudge = halfway & (error != 0) & np.isfinite(total)  # not a true tie: round toward the exact value
        if nudge.any():
            toward = np.where(error > 0, np.inf, -np.inf)
            out = np.where(nudge, np.nextafter(total, toward).astype(_F32), out)
    return out


_R_LN2 = _F32(1.442695040888963407359924681001892137426645954152985934135449406931)
_L2U, _L2L = _F32(0.693145751953125), _F32(1.428606765330187045e-06)
_EXP_POLY = [_F32(c) for c in (0.000198527617612853646278381, 0.00139304355252534151077271,
                               0.00833336077630519866943359, 0.0416664853692054748535156,
                               0.166666671633720397949219, 0.5)]


def sleef_expf(d: np.ndarray) -> np.ndarray:
    r"""SLEEF's ``xexpf`` (``Sleef_expf*_u10``): :math:`e^d` in float32, within 1 ulp, torch's CPU ``exp`` in softmax.

    :math:`d = q \ln 2 + s` with :math:`q = \mathrm{rint}(d / \ln 2)` (the reduction in two FMAs, ln 2 split
    in a high and a low part), :math:`e^s \approx 1 + s + s^2 P(s)` with a degree-5 polynomial in FMAs,
    then scaled by :math:`2^q` in two steps; 0 below -104, ``inf`` above 100.

    >>> sleef_expf(np.array([0.0, -1.0, -np.inf], dtype=np.float32))
    array([1.        , 0.36787945, 0.        ], dtype=float32)
    """
    d = np.asarray(d, _F32)
    out = np.empty(d.shape, _F32)
    flat, flat_out = d.reshape(-1), out.reshape(-1)
    size = min(flat.size, _CHUNK)
    work = _ExpWork(*(np.empty(size, t) for t in _ExpWork.DTYPES))
    for start in range(0, flat.size, _CHUNK):  # chunks that stay in the cache: ~8x faster than whole rows
        chunk = flat[start : start + _CHUNK]
        _expf_chunk(chunk, _ExpWork(*(w[: chunk.size] for w in work)), flat_out[start : start + _CHUNK])
    return out


_CHUNK = 16384


class _ExpWork(NamedTuple):
    """One chunk's buffers, allocated once per call (fresh 128 kB arrays cost page faults every chunk)."""

    s: np.ndarray  # float64, and so on: DTYPES
    u: np.ndarray
    t: np.ndarray
    total: np.ndarray
    q32: np.ndarray
    s32: np.ndarray
    u32: np.ndarray
    bits: np.ndarray
    halfway: np.ndarray

    DTYPES = (np.float64,) * 4 + (np.float32,) * 3 + (np.int64, np.bool_)


def _horner_magic(coefficient: np.float32, exponent: int) -> tuple[float, float]:
    """(c + M, M) for one polynomial step whose result lies in the float32 binade [2^exponent, 2^(exponent+1)).

    ``M = 1.5 * 2^(exponent + 29)``: float64 numbers in M's binade are spaced 2^(exponent - 23) apart, the float32
    spacing of the result's binade, so ``(u * s + (c + M)) - M`` rounds ``u * s + c`` ONCE, to float32, ties to
    even (M / spacing is even): the FMA, with no double rounding. ``c + M`` is exact (c is on that grid)."""
    magic = 1.5 * 2.0 ** (exponent + 29)
    return float(coefficient) + magic, magic


#: Each polynomial step's (c + M, M): the binade of u_k = fma(u_{k-1}, s, c_k) is the same for every |s| <= 0.35
#: (after the reduction |s| <= ln 2 / 2 + 5e-6), checked at both ends of that range in tests/numerics/test_sleef.py.
_HORNER = [_horner_magic(c, e) for c, e in zip(_EXP_POLY[1:5], (-10, -7, -5, -3))]
_LN2_SPLIT = np.float64(float(_L2U) + float(_L2L))  # exact: 43 bits (np.float64: products with it stay float64)
#: The fifth step, 0.5 + u4 * s, lies below 0.5 (binade -2) for s < 0 and in [0.5, 1) (binade -1) otherwise:
#: its M is 1.5 * 2^28 with the exponent lowered by s's sign bit.
_HALF_MAGIC_BITS = np.float64(_horner_magic(_EXP_POLY[5], -1)[1]).view(np.uint64)


def _fma_update(u: np.ndarray, a: np.ndarray, c, work: tuple[np.ndarray, np.ndarray, np.ndarray],
                out: np.ndarray | None = None) -> None:
    """``u = fma32(u, a, c)`` in place, or into the float32 ``out``: ``u`` float32, or float64 holding float32 values
    (the hot loop's); ``a``, ``c`` float64 holding float32 values; ``work``'s float64 buffer is not ``u`` or ``a``."""
    total, bits, halfway = work
    out = u if out is None else out
    np.multiply(u, a, out=total)  # exact (a float32 u is widened on the fly)
    np.add(total, c, out=total)  # rounded to float64
    np.bitwise_and(total.view(np.int64), _LOW29, out=bits)
    np.equal(bits, _HALF29, out=halfway)
    if halfway.any():  # rare: those lanes again, with the error of the float64 addition
        product = u[halfway].astype(np.float64) * a[halfway]
        out[halfway] = _round_sum(product, np.broadcast_to(c, u.shape)[halfway])
        halfway = ~halfway
        np.copyto(out, total, casting="unsafe", where=halfway)
    else:
        np.copyto(out, total, casting="unsafe")  # round to float32


def _expf_chunk(d: np.ndarray, w: _ExpWork, out: np.ndarray) -> None:
    """``out = sleef_expf(d)`` for one chunk, in ``w``'s buffers (float64 ones hold float32 values where named so)."""
    with np.errstate(invalid="ignore", over="ignore"):
        extreme = d.size and not (d.min() >= -104.0 and d.max() <= 100.0)  # also NaN
        clamped = np.clip(d, _F32(-105.0), _F32(101.0)) if extreme else d  # keeps q finite (-inf, inf)
        q32 = np.rint(np.multiply(clamped, _R_LN2, out=w.q32), out=w.q32)  # float32 product, rint ties to even
        s, u, t = w.s, w.u, w.t
        # fma32(q, -L2U, d), then fma32(q, -L2L, s): L2U has 16 bits and |q| <= 152, so d - q * L2U is exact in
        # float64 and a float32 (Cody-Waite's split); L2U + L2L has 43 bits, q times it 51, and d - q (L2U + L2L)
        # is a multiple of 2^-43 below 1 (or d itself, q = 0): exact in float64, so the two FMAs round once, here.
        np.subtract(clamped, np.multiply(q32, _LN2_SPLIT, out=s), out=s)
        np.copyto(w.s32, s, casting="unsafe")
        np.copyto(s, w.s32)
        # the polynomial, each FMA rounded once to float32 by a magic constant (_horner_magic); products are exact
        np.multiply(s, float(_EXP_POLY[0]), out=u)
        for plus, magic in _HORNER:
            u += plus
            u -= magic
            u *= s
        magic = w.bits.view(np.uint64)  # 1.5 * 2^28, or 1.5 * 2^27 where s is negative (its sign bit)
        np.subtract(_HALF_MAGIC_BITS, np.left_shift(np.right_shift(s.view(np.uint64), 63, out=magic), 52, out=magic),
                    out=magic)
        np.add(magic.view(np.float64), 0.5, out=t)
        u += t
        u -= magic.view(np.float64)
        # fma32(s * s, u, s): its result spans many binades, so the general rounding with the midpoint check
        np.copyto(t, np.multiply(w.s32, w.s32, out=out))
        _fma_update(u, t, s, (w.total, w.bits, w.halfway), out=w.u32)
        # 1 + u, then SLEEF's two scalings by 2^(q >> 1) and 2^(q - (q >> 1)): both exact unless the
        # result is subnormal or overflows, where the second one rounds once, as ldexp does.
        np.add(w.u32, _F32(1.0), out=w.u32)
        np.ldexp(w.u32, q32.astype(np.int32), out=out)
        if extreme:
            out[d < -104] = 0.0
            out[d > 100] = np.inf


def _two_sum_float(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SLEEF's ``dfadd2_vf2_vf_vf``: ``x + y`` as a float32 pair (sum, error), any magnitudes."""
    s = x + y
    v = s - x
    return s, (x - (s - v)) + (y - v)


_LN2_HI, _LN2_LO = _F32(0.69314718246459960938), _F32(-1.904654323148236017e-09)
_LOG_POLY = [_F32(c) for c in (0.3027294874, 0.3996108174, 0.6666694880)]


def sleef_logf(d: np.ndarray) -> np.ndarray:
    r"""SLEEF's ``xlogf_u1`` (``Sleef_logf*_u10``): :math:`\ln d` in float32 for normal ``d > 0``, torch's CPU ``log``.

    :math:`d = 2^e m` with :math:`m \in [0.75, 1.5)`; :math:`x = (m - 1) / (m + 1)` in double-float
    (pairs of float32); :math:`\ln d = e \ln 2 + 2x + x^3 T(x^2)`, summed in double-float and rounded
    once. Zero, negative, subnormal and non-finite inputs are not handled (softmax's sums are >= 1).

    >>> sleef_logf(np.array([1.0, 2.0, 10.0], dtype=np.float32))
    array([0.       , 0.6931472, 2.3025851], dtype=float32)
    """
    d = np.asarray(d, _F32)
    e = (np.frexp(d * (_F32(1.0) / _F32(0.75)))[1] - 1).astype(np.int32)  # ilogb of d / 0.75
    m = np.ldexp(d, -e).astype(_F32)  # exact: [0.75, 1.5)
    ef = e.astype(_F32)
    s_hi = ef * _LN2_HI  # dfmul_vf2_vf2_vf: e * (ln 2 as a pair)
    s_lo = fma32(_LN2_LO, ef, fma32(_LN2_HI, ef, -s_hi))
    n_hi, n_lo = _two_sum_float(_F32(-1.0), m)
    d_hi, d_lo = _two_sum_float(_F32(1.0), m)
    t = _F32(1.0) / d_hi  # dfdiv_vf2_vf2_vf2, the FMA variant
    x_hi = n_hi * t
    u = fma32(t, n_hi, -x_hi)
    v = fma32(-d_lo, t, fma32(-d_hi, t, _F32(1.0)))
    x_lo = fma32(x_hi, v, fma32(n_lo, t, u))
    x2 = x_hi * x_hi
    poly = fma32(np.full_like(x2, _LOG_POLY[0]), x2, _LOG_POLY[1])
    poly = fma32(poly, x2, _LOG_POLY[2])
    y_hi, y_lo = x_hi * _F32(2.0), x_lo * _F32(2.0)  # dfscale by 2: exact
    r_hi = s_hi + y_hi  # dfadd_vf2_vf2_vf2
    r_lo = (((s_hi - r_hi) + y_hi) + s_lo) + y_lo
    tail = (x2 * x_hi) * poly
    f_hi = r_hi + tail  # dfadd_vf2_vf2_vf
    f_lo = ((r_hi - f_hi) + tail) + r_lo
    return (f_hi + f_lo).astype(_F32)
