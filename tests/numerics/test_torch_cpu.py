"""torch's CPU float32 softmax / log_softmax / cumsum, bit for bit: refdecode/numerics/torch_cpu.py.

Golden: tests/golden/softmax.npz, made by tools/golden/make_softmax_golden.py from torch 2.13.0 under
both CPU capabilities (AVX2: 8 lanes; AVX-512: 16). No torch needed here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refdecode.numerics import (scatter_with_torch_ties, softmax, stable_sort, torch_cumsum, torch_log_softmax,
                                torch_softmax)
from refdecode.numerics.torch_cpu import LANES, lane_sum, on_finite_support
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
    values, indices = stable_sort(x)
    assert indices.tolist() == [list(range(17))]  # stable ...
    kept = ~scatter_with_torch_ties(np.arange(17) < 8, indices, x)  # ... until a cut splits the tie group
    assert np.flatnonzero(kept[0]).tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 9]
    assert indices.tolist() == [list(range(17))]  # not modified
    values, indices = stable_sort(np.array([[1.0, -np.inf, 3.0, -np.inf]], np.float32), descending=True)
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


# ----------------------------------------------------------------------------------------------
# on_finite_support: a rule on the finite entries only gives the whole rows' bits


def top_p_rule(scores, top_p, filter_value=-np.inf, min_tokens_to_keep=1):
    """transformers 4.38.2's TopPLogitsWarper from the wing's functions, on whole rows (no speed-up)."""
    sorted_logits, sorted_indices = stable_sort(scores, descending=False)
    remove = torch_cumsum(torch_softmax(sorted_logits)) <= np.float32(1.0 - top_p)
    remove[..., -min_tokens_to_keep:] = False
    return np.where(scatter_with_torch_ties(remove, sorted_indices, scores), np.float32(filter_value), scores)


def sparse_rows(rng: np.random.RandomState, batch: int, vocab: int, finite: int, ties: bool) -> np.ndarray:
    """(batch, vocab) float32 rows, ``finite`` scores each (at random ids, a different count per row), the rest -inf."""
    rows = np.full((batch, vocab), -np.inf, np.float32)
    for b in range(batch):
        n = rng.randint(1, finite + 1)
        values = rng.randn(n) * rng.choice([0.1, 1.0, 8.0])
        rows[b, rng.choice(vocab, n, replace=False)] = np.round(values * 2) / 2 if ties else values
    return rows


@pytest.mark.parametrize("seed", range(3))
def test_on_finite_support_gives_the_whole_rows_bits(seed):
    rng = np.random.RandomState(seed)
    for _ in range(30):
        vocab = int(rng.choice([40, 77, 300, 1000]))
        scores = sparse_rows(rng, rng.randint(1, 4), vocab, max(1, vocab // 5), ties=rng.rand() < 0.5)
        for top_p in (0.0, 0.25, 0.5, 0.9, 1.0):
            for m in (1, 3, 60):
                np.testing.assert_array_equal(fast(top_p_rule, scores, top_p, min_tokens_to_keep=m),
                                              top_p_rule(scores, top_p, min_tokens_to_keep=m))


def test_on_finite_support_on_textbook_and_gpt2_sized_rows():
    """Round probabilities (the cut exactly on p) at every lane phase, and GPT-2-sized rows with top-k's 50."""
    rng = np.random.RandomState(10)
    textbook = [[0.3, 0.2, 0.2, 0.2, 0.1], [0.6, 0.3, 0.1], [0.5, 0.25, 0.125, 0.125], [0.4, 0.2, 0.15, 0.15, 0.1]]
    for shift in range(16):
        for probs in textbook:
            scores = np.full((1, 2000 - shift), -np.inf, np.float32)
            scores[0, rng.choice(scores.shape[1], len(probs), replace=False)] = np.log(np.array(probs, np.float32))
            for top_p in (0.5, 0.75, 0.8, 0.9):
                np.testing.assert_array_equal(fast(top_p_rule, scores, top_p), top_p_rule(scores, top_p))
    scores = sparse_rows(rng, 3, 50257, 50, ties=False)
    np.testing.assert_array_equal(fast(top_p_rule, scores, 0.9), top_p_rule(scores, 0.9))


@pytest.mark.parametrize("cap", ["avx2", "avx512"])
def test_on_finite_support_keeps_every_bit_of_the_probabilities(cap):
    """The finite entries land in the same SIMD lanes, so the lane sums and each probability are the same bits
    (here the rule returns the log of torch's softmax of the ascending row, in token order)."""
    rng = np.random.RandomState(20)
    def rule(scores, filter_value=-np.inf):
        sorted_logits, sorted_indices = stable_sort(scores, descending=False)
        out = np.empty_like(scores)
        with np.errstate(divide="ignore"):
            np.put_along_axis(out, sorted_indices, np.log(torch_softmax(sorted_logits, cap)), axis=-1)
        return out

    for vocab in (997, 1000, 1001, 1013, 4099):
        scores = sparse_rows(rng, 3, vocab, 240, ties=False)
        np.testing.assert_array_equal(bits(on_finite_support(rule, scores)), bits(rule(scores)))


def test_on_finite_support_runs_the_whole_rows_where_it_must():
    """A tie split at the cut in a row over 16 entries (torch's introsort order of the full row), NaN / +inf
    rows, anything but a float32 (B, V) array: the whole rows run, and give the whole rows' answer."""
    calls = []

    def counted(scores):
        calls.append(np.shape(scores))
        return top_p_rule(scores, 0.5)

    split = np.full((1, 400), -np.inf, np.float32)
    split[0, 100:140] = 0.0  # 40 tied scores, top-p 0.5 keeps 20 of them: which ones is the full row's sort's
    np.testing.assert_array_equal(on_finite_support(counted, split), top_p_rule(split, 0.5))
    assert calls[0][1] < 400 and calls[-1] == (1, 400)
    nan, plus_inf = np.where(split == 0, np.float32(np.nan), split), np.where(np.arange(400) == 5, np.float32(np.inf), split)
    for scores in [nan, plus_inf]:
        calls.clear()
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(on_finite_support(counted, scores), top_p_rule(scores, 0.5))
        assert calls == [scores.shape]
    for scores in [split.astype(np.float64), split[0], split.tolist()]:  # the rule's own door check answers
        assert on_finite_support(lambda given: given, scores) is scores


def test_the_top_p_warper_runs_the_rule_on_the_finite_support_only_with_an_infinite_filter_value(monkeypatch):
    """A finite filter_value: a removed entry is not -inf, so which -inf ones the rule keeps shows; whole rows run."""
    from refdecode.processors import logits_warp

    shapes = []
    rule = logits_warp.top_p_warp
    def counted(scores, *args):
        shapes.append(scores.shape)
        return rule(scores, *args)

    monkeypatch.setattr(logits_warp, "top_p_warp", counted)
    scores = sparse_rows(np.random.RandomState(3), 2, 1000, 20, ties=False)
    ids = np.zeros((2, 1), np.int64)
    np.testing.assert_array_equal(logits_warp.TopPLogitsWarper(0.9)(ids, scores), top_p_rule(scores, 0.9))
    np.testing.assert_array_equal(logits_warp.TopPLogitsWarper(0.9, filter_value=-1e9)(ids, scores),
                                  top_p_rule(scores, 0.9, filter_value=-1e9))
    assert shapes[0][1] < 1000 and shapes[-1] == (2, 1000)


def fast(rule, scores, *args, **kwargs):
    """``rule(scores, *args, **kwargs)`` through on_finite_support."""
    return on_finite_support(lambda rows: rule(rows, *args, **kwargs), scores)
