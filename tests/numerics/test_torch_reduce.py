"""torch's CPU sum / nansum bit for bit, and logsumexp / Categorical entropy on it: refdecode/numerics/torch_reduce.py.

Golden: tests/golden/torch_reduce.npz, made by tools/golden/make_torch_reduce_golden.py from torch 2.13.0 (AVX-512
machine, one thread). No torch needed here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refdecode.numerics import (categorical_entropy, torch_exp, torch_log, torch_logsumexp, torch_nansum, torch_sqrt,
                                torch_sum)
from refdecode.numerics.torch_cpu import lane_sum

with np.load(Path(__file__).resolve().parents[1] / "golden" / "torch_reduce.npz") as _golden:
    DATA, META = dict(_golden.items()), json.loads(str(_golden["meta"]))
SUM_LENGTHS = META["sum_lengths"]


def bits(a: np.ndarray) -> np.ndarray:
    """float32 bit patterns (no NaN in these outputs)."""
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def test_golden_is_torch_2_13_on_avx512():
    assert META["torch"].startswith("2.13.0") and META["transformers"] == "4.38.2"
    assert META["cpu_capability"] == "AVX512" and "make_torch_reduce_golden.py" in META["regenerate"]
    assert max(SUM_LENGTHS) > 8 * 4 * 256   # past the second level of the cascade (256 items of 4 vectors of 8)


def test_sum_is_bit_for_bit_on_every_golden_row():
    for n in SUM_LENGTHS:
        x, want = DATA[f"sum_rows_{n}"], DATA[f"sum_{n}"]
        got = torch_sum(x)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_array_equal(bits(got), bits(want), err_msg=f"length {n}")


def test_nansum_is_bit_for_bit_and_reads_nan_as_zero():
    for n in SUM_LENGTHS:
        if f"nansum_rows_{n}" in DATA:
            x = DATA[f"nansum_rows_{n}"]
            assert np.isnan(x).any() or n < 5
            np.testing.assert_array_equal(bits(torch_nansum(x)), bits(DATA[f"nansum_{n}"]), err_msg=f"length {n}")


def test_the_order_of_the_sum_matters_on_the_golden_rows():
    """NumPy's pairwise sum, a left-to-right sum and softmax's 16-lane ``reduce_all`` each miss some rows: the
    golden rows test the order, and torch's sum kernel is the 8-lane (AVX2) one even on an AVX-512 CPU."""
    misses = {"numpy": 0, "sequential": 0, "16 lanes": 0}
    for n in range(8, 41):
        x, want = DATA[f"sum_rows_{n}"], DATA[f"sum_{n}"]
        misses["numpy"] += int((x.sum(axis=-1) != want).sum())
        misses["sequential"] += int((np.cumsum(x, axis=-1, dtype=np.float32)[:, -1] != want).sum())
        misses["16 lanes"] += int((lane_sum(x, lanes=16) != want).sum())
    assert min(misses.values()) >= 20, misses


def test_sum_checks_its_input():
    with pytest.raises(TypeError, match="float32"):
        torch_sum(np.ones((2, 3)))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(torch_sum(x), x.sum(-1))            # small integers: exact in any order


def test_logsumexp_and_entropy_are_torchs_on_every_row():
    """Bit for bit on every golden row, also where torch's elementwise exp and log (MKL's VML) do not give the
    correctly rounded values (``unary_rounded`` False): the wing computes MKL's bits (numerics/mkl_vml.py)."""
    rows = not_rounded = 0
    for n in range(1, 41):
        x, flag = DATA[f"lse_rows_{n}"], DATA[f"unary_rounded_{n}"]
        lse, h = torch_logsumexp(x), categorical_entropy(x)
        assert lse.dtype == h.dtype == np.float32 and h.shape == (len(x),)
        np.testing.assert_array_equal(bits(lse), bits(DATA[f"logsumexp_{n}"]), err_msg=f"length {n}")
        np.testing.assert_array_equal(bits(h), bits(DATA[f"entropy_{n}"]), err_msg=f"length {n}")
        rows, not_rounded = rows + len(x), not_rounded + int((~flag).sum())
    assert 20 <= not_rounded <= 0.25 * rows, (not_rounded, rows)  # rows a correctly rounded exp / log would miss


def test_entropy_is_not_the_log_softmax_one():
    """Categorical normalises with ``x - logsumexp(x)``, not log_softmax's ``(x - max) - log(sum)``: the entropy
    computed from log_softmax misses torch's bits on some golden rows, this one on none of the exact ones."""
    from refdecode.numerics import torch_log_softmax, torch_softmax
    misses = 0
    for n in range(2, 41):
        x, flag = DATA[f"lse_rows_{n}"], DATA[f"unary_rounded_{n}"]
        logp = np.maximum(torch_log_softmax(x), np.finfo(np.float32).min)
        other = -torch_sum(logp * torch_softmax(logp))
        misses += int((other[flag] != DATA[f"entropy_{n}"][flag]).sum())
    assert misses >= 5


def test_the_elementwise_ops_are_torchs_mkl():
    """torch.exp / torch.sqrt are MKL's vsExp / vsSqrt: the correctly rounded value on 99% / about 83% of these
    inputs, not on all; torch_exp / torch_sqrt give torch's bits on every one."""
    for name, ours, rounded, share in (("exp", torch_exp, np.exp, 0.98), ("sqrt", torch_sqrt, np.sqrt, 0.75)):
        x, want = DATA[f"{name}_x"], DATA[name]
        got = ours(x)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(bits(got), bits(want), err_msg=name)
        assert share <= np.mean(rounded(x.astype(np.float64)).astype(np.float32) == want) < 0.995, name
    assert torch_log(np.array([1.0, 4.0], np.float32)).tolist() == [0.0, float(np.float32(1.3862943611198906))]  # ln 4
