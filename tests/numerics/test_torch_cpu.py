"""torch's CPU float32 softmax / log_softmax / cumsum, bit for bit: refdecode/numerics/torch_cpu.py.

Golden: tests/golden/softmax.npz, made by tools/golden/make_softmax_golden.py from torch 2.13.0 under
both CPU capabilities (AVX2: 8 lanes; AVX-512: 16). No torch needed here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refdecode.numerics import softmax, torch_cumsum, torch_log_softmax, torch_scatter, torch_softmax, torch_sort
from refdecode.numerics.torch_cpu import LANES, lane_sum
from refdecode.processors.logits_warp import top_p_warp
from refdecode.processors.truncation_warpers import typical_warp

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
with np.load(GOLDEN / "softmax.npz") as _z:
    DATA = {k: _z[k] for k in _z.files}
META = json.loads(str(DATA["meta"]))
CAPS = META["capabilities"]


def bits(a: np.ndarray) -> np.ndarray:
    """The float32 bit patterns, NaN folded to one pattern (torch and NumPy may set different NaN payloads)."""
    a = np.where(np.isnan(a), np.float32(np.nan), a)
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def test_golden_is_torch_2_13_on_both_capabilities():
    assert META["torch"].startswith("2.13.0") and META["transformers"] == "4.38.2"
    assert set(CAPS) == {"avx2", "avx512"} and "make_softmax_golden.py" in META["regenerate"]


@pytest.mark.parametrize("cap", ["avx2", "avx512"])
@pytest.mark.parametrize("kind", ["softmax", "log_softmax"])
def test_bit_for_bit_on_every_golden_row(kind, cap):
    fn = torch_softmax if kind == "softmax" else torch_log_softmax
    rows = same = 0
    for n in range(1, 41):
        x, want = DATA[f"rows_{n}"], DATA[f"{kind}_{cap}_{n}"]
        with np.errstate(invalid="ignore"):
            got = fn(x, cap)
        assert got.dtype == np.float32 and got.shape == x.shape
        same += int(np.all(bits(got) == bits(want), axis=-1).sum())
        rows += len(x)
    assert (same, rows) == (rows, 800)


def test_the_golden_rows_separate_torch_from_numpy():
    """The golden rows are ones where the last bit is at stake: NumPy's softmax misses many of them."""
    rows = [DATA[f"rows_{n}"] for n in range(2, 41)]
    wants = [DATA[f"softmax_avx512_{n}"] for n in range(2, 41)]
    with np.errstate(invalid="ignore"):
        misses = sum(int((~np.all(bits(softmax(x)) == bits(w), axis=-1)).sum()) for x, w in zip(rows, wants))
    assert misses > 100


def _golden_script():
    """tools/golden/make_softmax_golden.py, whose top level needs only NumPy (torch is imported by its worker)."""
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "tools" / "golden" / "make_softmax_golden.py"
    spec = importlib.util.spec_from_file_location("make_softmax_golden", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


long_rows = _golden_script().long_rows  # the GPT-2-like rows the golden file digests, rebuilt from their seeds


@pytest.mark.parametrize("cap", ["avx2", "avx512"])
def test_bit_for_bit_on_gpt2_sized_rows(cap):
    import hashlib

    def digest(a):
        return hashlib.sha256(np.ascontiguousarray(a, np.float32).view(np.uint32).astype("<u4").tobytes()).hexdigest()

    for seed in META["long_seeds"]:
        x = long_rows(seed)
        want = META["long"][cap][str(seed)]
        assert digest(torch_softmax(x, cap)) == want["softmax"]
        assert digest(torch_log_softmax(x, cap)) == want["log_softmax"]


def test_lane_sum_orders():
    """Short rows add left to right; long ones per lane, then lane l + lane l + W/2, ... (values chosen so
    that the orders give different float32 sums)."""
    x = np.array([[1e8, 1.0, -1e8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]], dtype=np.float32)
    assert lane_sum(x, 16)[0] == np.float32(6.0)  # ((1e8 + 1) - 1e8) = 0, then six 1s
    # 8 lanes: lane 0 = 1e8 + 1.0 (the 9th entry) = 1e8; lanes 1..7 = 1, -1e8, 1, 1, 1, 1, 1;
    # fold: (l0 + l4) + (l2 + l6) ... gives 1e8 + 1 - 1e8 + ... in that grouping
    lanes = [np.float32(1e8) + np.float32(1.0), 1.0, -1e8, 1.0, 1.0, 1.0, 1.0, 1.0]
    a = [np.float32(lanes[i]) + np.float32(lanes[i + 4]) for i in range(4)]
    b = [a[0] + a[2], a[1] + a[3]]
    assert lane_sum(x, 8)[0] == b[0] + b[1]
    assert set(LANES.values()) == {8, 16}


@pytest.mark.parametrize("cap", ["avx2", "avx512"])
def test_neg_inf_in_front_changes_no_bit_once_the_row_is_a_vector_long(cap):
    """What the sorting rules rely on: a -inf entry adds exp = 0 to its lane, and shifting a row by k
    entries only relabels the lanes cyclically, which the halving fold does not see (lane l always meets
    lane l + W/2, then l + W/4, ...). So -inf entries in front change nothing -- unless they lengthen a row
    shorter than W into the vector path, which sums in another order."""
    rng = np.random.RandomState(0)
    width = LANES[cap]
    pad = lambda x, k: np.concatenate([np.full((len(x), k), -np.inf, np.float32), x], axis=1)
    long, short = (rng.randn(20, 40) * 3).astype(np.float32), (rng.randn(200, width - 1) * 3).astype(np.float32)
    for k in (1, 3, width // 2, width, 2 * width + 5):
        assert np.array_equal(bits(torch_softmax(pad(long, k), cap)[:, k:]), bits(torch_softmax(long, cap)))
    assert not np.array_equal(bits(torch_softmax(pad(short, 1), cap)[:, 1:]), bits(torch_softmax(short, cap)))


def test_all_neg_inf_row_is_nan_and_dtypes_are_checked():
    with np.errstate(invalid="ignore"):
        assert np.isnan(torch_softmax(np.full((1, 3), -np.inf, np.float32))).all()
        assert np.isnan(torch_log_softmax(np.full((1, 20), -np.inf, np.float32))).all()
    with pytest.raises(TypeError, match="float32"):
        torch_softmax(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="non-empty"):
        torch_log_softmax(np.zeros((1, 0), np.float32))


def test_cumsum_accumulates_in_float64():
    p = np.full((1, 30), np.float32(0.1))
    got = torch_cumsum(p)
    assert got.dtype == np.float32
    assert got[0, -1] == np.float32(30 * np.float64(np.float32(0.1)))  # float64 running sum, one rounding
    assert got[0, -1] != np.cumsum(p, axis=-1, dtype=np.float32)[0, -1]  # a float32 accumulator drifts


def test_sort_and_scatter_follow_torch_on_ties():
    x = np.zeros((1, 17), np.float32)
    values, indices = torch_sort(x)
    assert indices.tolist() == [list(range(17))]  # stable ...
    kept = ~torch_scatter(np.arange(17) < 8, indices, x)  # ... until a cut splits the tie group
    assert np.flatnonzero(kept[0]).tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 9]
    assert indices.tolist() == [list(range(17))]  # not modified
    values, indices = torch_sort(np.array([[1.0, -np.inf, 3.0, -np.inf]], np.float32), descending=True)
    assert indices.tolist() == [[2, 0, 1, 3]] and values[0, :2].tolist() == [3.0, 1.0]


@pytest.mark.parametrize("i", range(4))
def test_worked_rows_of_the_docs_keep_what_transformers_keeps(i):
    case = META["warp"][i]
    scores, kept = DATA[f"warp_{i}_scores"], DATA[f"warp_{i}_kept"]
    warp = top_p_warp if case["class"] == "TopPLogitsWarper" else typical_warp
    assert np.array_equal(warp(scores, case["arg"]) == scores, kept), case


def test_an_unknown_capability_is_refused():
    with pytest.raises(ValueError, match="`capability` has to be one of \\['avx2', 'avx512'\\]"):
        torch_softmax(np.zeros((1, 3), np.float32), "neon")
