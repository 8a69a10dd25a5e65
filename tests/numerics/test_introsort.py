"""torch's CPU sort order on ties, reproduced: refdecode/numerics/introsort.py.

Golden: tests/golden/torch_sort.npz, made by tools/golden/make_torch_sort_golden.py from torch 2.13.0 and
transformers 4.38.2 (the command to regenerate is in the file's ``meta``). It holds torch.sort's indices on
tied rows of 17..50,257 entries and the tokens 4.38.2's TopPLogitsWarper / TypicalLogitsWarper keep where
the cut falls inside a tie group.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from conftest import GOLDEN
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from refdecode.numerics import torch_cpu
from refdecode.processors.logits_warp import TopPLogitsWarper
from refdecode.numerics.introsort import (
    std_partial_sort_literal,
    std_pop_heap,
    std_push_heap,
    sort_keys,
    std_sort_literal,
    torch_cpu_reorder,
    torch_cpu_sort_order,
    torch_cpu_tie_order,
    torch_order_at_cut,
)
from refdecode.processors.truncation_warpers import TypicalLogitsWarper

with np.load(GOLDEN / "torch_sort.npz") as _z:
    ARRAYS = {k: _z[k] for k in _z.files}
META = json.loads(str(ARRAYS["meta"]))
WARPERS = {"TopPLogitsWarper": TopPLogitsWarper, "TypicalLogitsWarper": TypicalLogitsWarper}


def sha(indices: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(indices, dtype="<i8").tobytes()).hexdigest()


def golden_order(case: dict, name: str) -> np.ndarray | str:
    key = f"sort_{case['id']}_{name}"
    return ARRAYS[key].astype(np.int64) if key in ARRAYS else case[f"{name}_sha256"]


def test_golden_meta():
    assert META["format_version"] == 1
    assert META["torch"].startswith("2.13.0") and META["transformers"] == "4.38.2"
    assert "make_torch_sort_golden.py" in META["regenerate"]
    widths = [c["shape"][-1] for c in META["sort"]]
    assert min(widths) == 17 and max(widths) == 50257
    assert min(c["shape"][-1] for c in META["warp"]) == 17 and max(c["shape"][-1] for c in META["warp"]) == 50257


@pytest.mark.parametrize("case", META["sort"], ids=lambda c: f"{c['id']}-{c['family']}-{c['shape'][-1]}")
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_sort_order_equals_torch(case, descending):
    values = ARRAYS[f"sort_{case['id']}_values"]
    expected = golden_order(case, "desc" if descending else "asc")
    ours = torch_cpu_sort_order(values, descending)
    assert ours.shape == values.shape and ours.dtype == np.int64
    if isinstance(expected, str):
        assert sha(ours) == expected
    else:
        np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("case", [c for c in META["sort"] if c["shape"][-1] <= 1000],
                         ids=lambda c: f"{c['id']}-{c['family']}-{c['shape'][-1]}")
def test_literal_algorithm_equals_torch(case):
    """The line-by-line transliteration of libstdc++'s std::sort gives torch's order too (rows up to 1000)."""
    values = ARRAYS[f"sort_{case['id']}_values"]
    for descending, name in ((False, "asc"), (True, "desc")):
        expected = golden_order(case, name).reshape(-1, values.shape[-1])
        for row, want in zip(values.reshape(-1, values.shape[-1]), expected):
            assert std_sort_literal(sort_keys(row, descending).tolist()) == want.tolist()


def test_golden_orders_are_not_stable():
    """The golden rows are tie cases a stable sort gets wrong: the study would be empty otherwise."""
    unstable = 0
    for case in META["sort"]:
        values = ARRAYS[f"sort_{case['id']}_values"]
        expected = golden_order(case, "asc")
        stable = np.argsort(sort_keys(values), axis=-1, kind="stable")
        unstable += (sha(stable) != expected) if isinstance(expected, str) else not np.array_equal(stable, expected)
    assert unstable >= 0.9 * len(META["sort"])


def check_warp_case(case: dict) -> None:
    scores = ARRAYS[f"warp_{case['id']}_scores"]
    kept = np.unpackbits(ARRAYS[f"warp_{case['id']}_kept"], axis=-1, count=scores.shape[-1]).astype(bool)
    out = WARPERS[case["class"]](**case["kwargs"])(np.zeros((scores.shape[0], 1), np.int64), scores)
    np.testing.assert_array_equal(out, np.where(kept, scores, np.float32(-np.inf)))


@pytest.mark.parametrize("case", META["warp"],
                         ids=lambda c: f"{c['id']}-{c['class'][:4]}-{c['family']}-{c['shape'][-1]}")
def test_warper_keeps_the_tied_tokens_transformers_keeps(case):
    check_warp_case(case)


def test_warper_goldens_need_torch_order(monkeypatch):
    """With the stable order refdecode used before (torch_order_at_cut switched off), the
    permutation-sensitive cases fail: the golden cases test the tie order, not only the values."""
    sensitive = [c for c in META["warp"] if c["permutation_sensitive"]]
    assert len(sensitive) >= 20
    assert {c["class"] for c in sensitive} == set(WARPERS)
    monkeypatch.setattr(torch_cpu, "torch_order_at_cut", lambda *a, **k: None)  # scatter_with_torch_ties's tie repair
    failed = 0
    for case in sensitive:
        try:
            check_warp_case(case)
        except AssertionError:
            failed += 1
    assert failed >= 0.8 * len(sensitive)


def test_issue_example_top_p_zeros_17():
    """top-p 0.5 on zeros((1, 17)): transformers 4.38.2 keeps ids 0-7 and 9."""
    out = TopPLogitsWarper(0.5)(None, np.zeros((1, 17), np.float32))
    np.testing.assert_array_equal(np.flatnonzero(np.isfinite(out[0])), [0, 1, 2, 3, 4, 5, 6, 7, 9])


# ----------------------------------------------------------------------------------------------
# The fast path against the literal algorithm, on rows no golden file holds


tied_rows = st.integers(1, 300).flatmap(lambda n: hnp.arrays(
    np.float32, n, elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.0, np.inf, -np.inf, np.nan])))


@given(tied_rows, st.booleans())
def test_fast_equals_literal(row, descending):
    expected = std_sort_literal(sort_keys(row, descending).tolist())
    assert torch_cpu_sort_order(row, descending).tolist() == expected


@given(st.integers(17, 400), st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_tie_order_and_reorder_agree_with_full_order(n, values, seed, descending):
    rng = np.random.default_rng(seed)
    row = rng.integers(0, values, n).astype(np.float32)
    full = torch_cpu_sort_order(row, descending)
    stable = np.argsort(sort_keys(row, descending), kind="stable")
    for v in np.unique(row):
        members = np.flatnonzero(row == v)
        np.testing.assert_array_equal(torch_cpu_tie_order(row, members, descending), full[np.isin(full, members)])
    np.testing.assert_array_equal(torch_cpu_reorder(row, stable, np.arange(n), descending), full)
    cut = int(rng.integers(1, n))
    order = stable.copy()
    torch_order_at_cut(row, order, cut, descending)
    assert set(order[:cut].tolist()) == set(full[:cut].tolist())


def test_stable_up_to_16_entries():
    """libstdc++'s introsort leaves rows of at most 16 entries to its (stable) insertion sort."""
    for n in range(1, 17):
        np.testing.assert_array_equal(torch_cpu_sort_order(np.zeros(n, np.float32)), np.arange(n))
    assert torch_cpu_sort_order(np.zeros(17, np.float32)).tolist() != list(range(17))


def test_heapsort_fallback_is_reproduced():
    """The adversary rows of the golden reach the depth limit 2*floor(log2 n); the literal and fast paths
    both go through the heapsort there and give torch's order (checked above); here: the depth limit is hit."""
    adversary = [c for c in META["sort"] if c["family"] == "heapsort_adversary"]
    assert len(adversary) == 3
    from refdecode.numerics import introsort as torch_sort

    calls = []
    original = torch_sort._heapsort_py
    try:
        torch_sort._heapsort_py = lambda a, first, last: (calls.append(last - first), original(a, first, last))
        for c in adversary:
            values = ARRAYS[f"sort_{c['id']}_values"]
            np.testing.assert_array_equal(torch_cpu_sort_order(values), golden_order(c, "asc"))
    finally:
        torch_sort._heapsort_py = original
    assert len(calls) == 3 and min(calls) > 16


@pytest.mark.parametrize("bad, error", [
    (np.zeros(20, np.float64), TypeError), ([0.0] * 20, TypeError), (np.zeros(20, np.int64), TypeError),
    (np.zeros((2, 2, 20), np.float32), ValueError)])
def test_bad_values(bad, error):
    with pytest.raises(error, match="values"):
        torch_cpu_sort_order(bad)


def test_bad_members():
    row = np.zeros(20, np.float32)
    row[3] = 1.0
    with pytest.raises(ValueError, match=r"`members` have to tie"):
        torch_cpu_tie_order(row, [2, 3])
    with pytest.raises(ValueError, match=r"`members` has to be a 1-D array of ids in \[0, 20\)"):
        torch_cpu_tie_order(row, [0, 20])
    with pytest.raises(ValueError, match="`row` has to be 1-D"):
        torch_cpu_tie_order(np.zeros((1, 20), np.float32), [0, 1])
    with pytest.raises(ValueError, match=r"`positions`"):
        torch_cpu_reorder(row, np.arange(20), [-1, 2])


# ----------------------------------------------------------------------------------------------
# The warpers' rules written over the literal algorithm's full order (no golden: min-p is transformers
# 4.41, not the pinned 4.38.2; typical on random tied rows)

from refdecode.numerics import log_softmax, softmax  # noqa: E402
from refdecode.processors.truncation_warpers import min_p_warp, typical_warp  # noqa: E402

tie_scores = st.tuples(st.integers(1, 3), st.integers(17, 120), st.integers(1, 5), st.integers(0, 2**32 - 1)).map(
    lambda t: np.random.default_rng(t[3]).integers(-2, 3, (t[0], t[1])).astype(np.float32) * np.float32(0.5 * t[2]))


def literal_order(row: np.ndarray, descending: bool = False) -> np.ndarray:
    return np.array(std_sort_literal(sort_keys(row, descending).tolist()), dtype=np.int64)


@given(tie_scores, st.sampled_from([0.05, 0.2, 0.5, 0.9]), st.integers(1, 30))
def test_min_p_keeps_the_m_best_in_torch_order(scores, min_p, m):
    """transformers 4.41's MinPLogitsWarper: ``argsort(scores, descending=True)[:m]`` is never removed."""
    probs = softmax(scores)
    remove = probs < np.float32(min_p) * probs.max(axis=-1, keepdims=True)
    for b in range(scores.shape[0]):
        remove[b, literal_order(scores[b], descending=True)[:m]] = False
    np.testing.assert_array_equal(min_p_warp(scores, min_p, min_tokens_to_keep=m),
                                  np.where(remove, np.float32(-np.inf), scores))


@given(tie_scores, st.sampled_from([0.01, 0.2, 0.5, 0.95]), st.integers(1, 40))
def test_typical_keeps_the_first_m_in_torch_order(scores, mass, m):
    """transformers 4.38.2's TypicalLogitsWarper, its sort replaced by the literal std::sort."""
    logp = log_softmax(scores)
    with np.errstate(invalid="ignore"):
        entropy = -np.nansum(logp * np.exp(logp), axis=-1, keepdims=True)
    distance = np.abs(-logp - entropy)
    want = scores.copy()
    for b in range(scores.shape[0]):
        order = literal_order(distance[b])
        d = distance[b, order]
        cumulative = np.cumsum(softmax(scores[b, order][None])[0], dtype=np.float64).astype(np.float32)
        last = min(int((cumulative < np.float32(mass)).sum()), scores.shape[1] - 1)
        remove = d > d[last]
        remove[:m] = False
        want[b, order[remove]] = -np.inf
    np.testing.assert_array_equal(typical_warp(scores, mass, min_tokens_to_keep=m), want)


# ----------------------------------------------------------------------------------------------
# The two sorts in the beam loops: beam sample's 2K drawn candidates and the constrained scorer's banks


from refdecode.decoding.beam.beam_search import sample_candidates  # noqa: E402
from refdecode.decoding.beam.constrained_beam_scorer import bank_round_robin  # noqa: E402


def round_robin_438(banks: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    """ConstrainedBeamSearchScorer.step_sentence_constraint (4.38.2, beam_search.py lines 781-799), with
    ``zipped.sort(descending=True)`` replaced by the literal std::sort."""
    zipped = (banks * 100).astype(np.float32) + scores
    indices = np.array(std_sort_literal(sort_keys(zipped, descending=True).tolist()))
    sorted_banks = banks[indices]
    counter, cur_bank, increments = -1, sorted_banks[0], []
    for bank in sorted_banks:
        if bank == cur_bank:
            counter += 1
        else:
            counter, cur_bank = 0, bank
        increments.append(counter)
    return indices[np.argsort(increments, kind="mergesort")][:n]


@given(st.integers(1, 60), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_bank_round_robin_orders_ties_as_torch(c, n_banks, seed):
    rng = np.random.default_rng(seed)
    banks = rng.integers(0, n_banks, c)
    scores = (rng.integers(-3, 1, c) * 0.5).astype(np.float32)  # few values: ties within a bank
    n = max(1, c // 2)
    np.testing.assert_array_equal(bank_round_robin(banks, scores, n), round_robin_438(banks, scores, n))


def test_bank_round_robin_is_not_a_stable_sort_over_16():
    banks = np.zeros(20, dtype=np.int64)
    scores = np.zeros(20, dtype=np.float32)
    assert bank_round_robin(banks, scores, 5).tolist() == round_robin_438(banks, scores, 5).tolist() != list(range(5))


@pytest.mark.parametrize("beams", [2, 8, 9, 12])
def test_beam_sample_candidates_sorted_as_torch(beams):
    """4.38.2 (utils.py line 3463): ``torch.sort(next_token_scores, descending=True, dim=1)`` on the 2K draws."""
    rng = np.random.default_rng(beams)
    vocab, n = 7, 2 * beams
    total = (rng.integers(-2, 1, (2, beams, vocab)) * 0.25).astype(np.float32)  # (B, K, V) with many ties
    drawn = np.stack([rng.permutation(beams * vocab)[:n] for _ in range(2)])
    scores, beam, token = sample_candidates(total, n, lambda p, k, r, g: drawn, None)
    flat = total.reshape(2, -1)
    for b in range(2):
        drawn_scores = flat[b, drawn[b]]
        order = std_sort_literal(sort_keys(drawn_scores, descending=True).tolist())
        np.testing.assert_array_equal(beam[b] * vocab + token[b], drawn[b, order])
        np.testing.assert_array_equal(scores[b], drawn_scores[order])


def test_partial_sort_leaves_the_rest_as_heap_select_does():
    """std::partial_sort(first, first + 2, last) on keys 5, 4, 3, 2, 1 (by hand, bits/stl_algo.h __heap_select):
    heap {5, 4}; 3 evicts 5 to position 2; 2 evicts 4 to position 3; 1 evicts 3 to position 4; sorted: 1, 2."""
    assert std_partial_sort_literal([5.0, 4.0, 3.0, 2.0, 1.0], 2) == [4, 3, 0, 1, 2]
    # an equal key does not enter (``comp(*i, *first)`` is strict): 1 stays, 0 evicts the heap's 1
    assert std_partial_sort_literal([1.0, 1.0, 0.0], 1) == [2, 1, 0]
    # keys 1.0, 1.1, 1.5, 1.6 | 1.2, 1.3, 4, 5: 1.2 evicts 1.6, 1.3 evicts 1.5 (the rest unsorted: 1.6 before 1.5)
    keys = [1.0, 1.1, 1.5, 1.6, 1.2, 1.3, 4.0, 5.0]
    assert std_partial_sort_literal(keys, 4) == [0, 1, 4, 5, 3, 2, 6, 7]


def test_push_pop_heap_keep_the_largest_key_on_top():
    heap: list = []
    for key, name in [(2.0, "a"), (5.0, "b"), (1.0, "c"), (5.0, "d")]:
        std_push_heap(heap, (key, name))
    # push_heap moves a new entry up only past STRICTLY smaller parents: "d" (5.0) stays below "b" (5.0)
    assert heap[0] == (5.0, "b")
    assert [std_pop_heap(heap)[1] for _ in range(4)] == ["b", "d", "a", "c"]
