"""SLEEF's expf / logf and the exact float32 FMA: refdecode/numerics/sleef.py.

The bits of torch's softmax (tests/numerics/test_torch_cpu.py) are the golden check of the two functions;
here: the FMA against exact rational arithmetic, and the functions' accuracy and special values.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from refdecode.numerics.sleef import fma32, sleef_expf, sleef_logf


def round32(q: Fraction) -> np.float32:
    """The float32 nearest to the rational ``q`` (ties to even), by integer arithmetic: no float rounding."""
    if q == 0:
        return np.float32(0.0)
    sign, q = (-1 if q < 0 else 1), abs(q)
    e = math.floor(math.log2(q.numerator) - math.log2(q.denominator)) - 23
    while q / Fraction(2) ** e >= 2**24:
        e += 1
    while q / Fraction(2) ** e < 2**23:
        e -= 1
    m = q / Fraction(2) ** e
    n, rest = divmod(m.numerator, m.denominator)
    if 2 * rest > m.denominator or (2 * rest == m.denominator and n % 2):
        n += 1
    return np.float32(sign * float(Fraction(n) * Fraction(2) ** e))


def test_fma32_rounds_once_on_random_operands():
    rng = np.random.RandomState(0)
    a, b, c = (rng.randn(3, 3000) * rng.choice([1e-6, 1.0, 1e3], size=(3, 3000))).astype(np.float32)
    b[:1000] = np.float32(1.0) / a[:1000]  # products next to 1, sums that cancel
    c[:1000] = -np.float32(1.0)
    got = fma32(a, b, c)
    want = [round32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))) for x, y, z in zip(a, b, c)]
    assert got.dtype == np.float32 and np.array_equal(got, np.array(want, np.float32))


def test_fma32_double_rounding_case():
    """a * b + c = 1 + 2^-23 + 2^-24 - 2^-60: float64 rounds it onto the float32 midpoint 1 + 3 * 2^-24,
    whose tie goes to 1 + 2^-22; the exact value is below the midpoint, so once-rounded it is 1 + 2^-23."""
    a, b = np.float32(2**-12 * (1 + 2**-18)), np.float32(2**-12 * (1 - 2**-18))
    c = np.float32(1 + 2**-23)
    naive = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    assert naive == np.float32(1 + 2**-22)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    assert fma32(a, b, c) == np.float32(1 + 2**-23) == round32(exact)


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.abs(got.astype(np.float64) - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)


def test_expf_within_one_ulp_and_not_numpy():
    x = np.random.RandomState(1).uniform(-103, 88, 200_000).astype(np.float32)
    got = sleef_expf(x)
    assert got.dtype == np.float32 and ulps(got, np.exp(x.astype(np.float64))).max() <= 1.0
    assert 0.01 < np.mean(got != np.exp(x.astype(np.float64)).astype(np.float32)) < 0.3  # not correctly rounded


def test_expf_special_values():
    x = np.array([0.0, -np.inf, -104.5, 100.5, np.inf, -0.0], np.float32)
    assert sleef_expf(x).tolist() == [1.0, 0.0, 0.0, np.inf, np.inf, 1.0]


def test_logf_within_one_ulp_and_exact_at_powers_of_two():
    d = np.random.RandomState(2).uniform(1.0, 60000.0, 200_000).astype(np.float32)
    got = sleef_logf(d)
    assert got.dtype == np.float32 and ulps(got, np.log(d.astype(np.float64))).max() <= 1.0
    assert sleef_logf(np.array([1.0], np.float32))[0] == 0.0
    assert sleef_logf(np.array([2.0**10], np.float32))[0] == np.float32(10 * math.log(2))


def test_the_exp_hot_loop_takes_the_double_rounding_case_too():
    """The in-place FMA of the exp's polynomial loop, on the case above mixed with ordinary lanes."""
    from refdecode.numerics.sleef import _fma_update

    u = np.array([2**-12 * (1 + 2**-18), 0.5, 0.25], np.float32)
    a = np.array([2**-12 * (1 - 2**-18), 3.0, 0.5])
    c = np.array([1 + 2**-23, 0.125, 1.0])
    work = (np.empty(3), np.empty(3, np.int64), np.empty(3, bool))
    _fma_update(u, a, c, work)
    assert u.tolist() == [np.float32(1 + 2**-23), 1.625, 1.125]


def sleef_expf_by_steps(d: np.ndarray) -> np.ndarray:
    """SLEEF's xexpf written step by step with :func:`fma32` (the reference the chunked loop must equal)."""
    from refdecode.numerics.sleef import _EXP_POLY, _L2L, _L2U, _R_LN2

    with np.errstate(invalid="ignore", over="ignore"):
        clamped = np.clip(d, np.float32(-105.0), np.float32(101.0))
        q = np.rint(clamped * _R_LN2)
        s = fma32(q, np.float32(-_L2L), fma32(q, np.float32(-_L2U), clamped))
        u = np.full_like(s, _EXP_POLY[0])
        for c in _EXP_POLY[1:]:
            u = fma32(u, s, np.full_like(s, c))
        u = np.float32(1.0) + fma32(s * s, u, s)
        out = np.ldexp(u, q.astype(np.int32))
    out[d < -104] = 0.0
    out[d > 100] = np.inf
    return out


def test_expf_equals_its_steps_written_with_fma32():
    """The hot loop rounds the FMAs with magic constants and skips what is exact; the bits are the same."""
    rng = np.random.RandomState(3)
    ln2 = np.float32(np.log(2.0))
    ends = (np.arange(-150, 150)[:, None] * ln2 + ln2 / 2 + np.arange(-300, 300)[None] * 1e-6).ravel()  # |s| at its max
    d = np.concatenate([rng.uniform(-110, 110, 300_000), -rng.exponential(3.0, 300_000), ends,
                        rng.randn(100_000) * 10.0 ** rng.uniform(-40, 0, 100_000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, -104.0, 100.0, 1e-45, -1e-45]]).astype(np.float32)
    got, want = sleef_expf(d), sleef_expf_by_steps(d)
    assert got.dtype == np.float32 and np.array_equal(got.view(np.int32), want.view(np.int32))


def test_each_polynomial_step_stays_in_the_binade_its_magic_constant_assumes():
    """u_k = fma(u_{k-1}, s, c_k) increases with s; at both ends of |s| <= 0.35 (and on a grid between) each
    step's result lies in the binade of _HORNER. The fifth, 0.5 + u4 * s, is below 0.5 for s < 0 (rounded on
    that binade's grid it may reach 0.5 itself, which both grids hold) and in [0.5, 1) otherwise."""
    from refdecode.numerics.sleef import _EXP_POLY

    s = np.concatenate([np.linspace(-0.35, 0.35, 100_001), [-0.35, 0.35, -1e-30, 1e-30, 0.0]]).astype(np.float32)
    u = np.full_like(s, _EXP_POLY[0])
    for c, exponent in zip(_EXP_POLY[1:5], (-10, -7, -5, -3)):
        u = fma32(u, s, np.full_like(s, c))
        assert np.all(np.frexp(u)[1] - 1 == exponent)
    u = fma32(u, s, np.full_like(s, _EXP_POLY[5]))
    assert np.all(np.where(s < 0, (0.25 <= u) & (u <= 0.5), (0.5 <= u) & (u < 1.0)))


def test_the_two_reduction_constants_add_exactly_in_float64():
    """The reduction subtracts q * (L2U + L2L) at once: their sum, and its product with any |q| <= 152, are exact."""
    from refdecode.numerics.sleef import _L2L, _L2U, _LN2_SPLIT

    assert Fraction(float(_LN2_SPLIT)) == Fraction(float(_L2U)) + Fraction(float(_L2L))
    for q in range(-152, 153):
        assert Fraction(q * float(_LN2_SPLIT)) == q * Fraction(float(_LN2_SPLIT))


def test_the_exp_hot_loop_fma_from_float64_values_into_a_float32_out():
    """The same double-rounding case with u held in float64 (as the exp's loop holds it), the result into ``out``."""
    from refdecode.numerics.sleef import _fma_update

    u = np.array([2**-12 * (1 + 2**-18), 0.5, 0.25])
    a = np.array([2**-12 * (1 - 2**-18), 3.0, 0.5])
    c = np.array([1 + 2**-23, 0.125, 1.0])
    out = np.empty(3, np.float32)
    _fma_update(u, a, c, (np.empty(3), np.empty(3, np.int64), np.empty(3, bool)), out=out)
    assert out.tolist() == [np.float32(1 + 2**-23), 1.625, 1.125] and u[1] == 0.5  # u itself is left alone
