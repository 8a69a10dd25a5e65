"""Tests for refdecode/processors/logits_warp.py: golden parity with transformers 4.38.2, the source documents'
top-p examples, the stated tie/threshold rules as Hypothesis properties, and argument validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import GOLDEN
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from refdecode.processors import logits_process, logits_warp
from refdecode.processors.logits_process import LogitsProcessorList
from refdecode.processors.logits_warp import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    llama_top_p_probs,
    rank_descending,
    shifted_top_p_warp,
    temperature_warp,
    top_k_warp,
    top_p_warp,
)
from refdecode.numerics import softmax
from refdecode.numerics.introsort import sort_keys, std_sort_literal

WARPERS = ("TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper")


def kept(scores: np.ndarray) -> list[int]:
    """Token ids of row 0 that are still finite."""
    return np.flatnonzero(np.isfinite(scores[0])).tolist()


def positive(probs: np.ndarray) -> list[int]:
    """Token ids of row 0 with nonzero probability."""
    return np.flatnonzero(probs[0] > 0).tolist()


# ----------------------------------------------------------------------------------------------
# Golden parity with transformers 4.38.2 (tests/golden/processors.npz)


def load_golden(only_warpers: bool):
    """Cases of tools/golden/make_processor_golden.py: warper-only chains here, the rest in test_logits_process.py."""
    data = np.load(GOLDEN / "processors.npz")
    meta = json.loads(str(data["meta"]))
    assert meta["format_version"] == 1, f"regenerate with: {meta['regenerate']}"
    cases = []
    for i, case in enumerate(meta["cases"]):
        if all(c in WARPERS for c, _ in case["chain"]) == only_warpers:
            arrays = {k.split("_", 1)[1]: data[k] for k in data.files if k.split("_", 1)[0] == str(i)}
            cases.append(pytest.param(case, arrays, id=f"{i}-{case['name']}"))
    return cases


def build_chain(case) -> LogitsProcessorList:
    """The case's chain with refdecode's classes of the same names and constructor kwargs."""
    classes = {**vars(logits_process), **vars(logits_warp)}
    return LogitsProcessorList([classes[name](**kwargs) for name, kwargs in case["chain"]])


def check_golden(case, arrays) -> None:
    kwargs = dict(case["call_kwargs"])
    if "current_tokens" in arrays:
        kwargs["current_tokens"] = arrays["current_tokens"]
    with np.errstate(invalid="ignore"):  # rows that are all -inf give NaN probabilities, as in torch
        got = build_chain(case)(arrays["input_ids"], arrays["scores"], **kwargs)
    want = arrays["expected"]
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want), err_msg=f"-inf positions differ: {case}")
    finite = np.isfinite(want)
    diff = np.abs(got[finite] - want[finite])
    assert np.allclose(got[finite], want[finite], rtol=1e-6, atol=1e-6), (
        f"max abs diff {diff.max():.3g}; got {got[finite][:5]}, want {want[finite][:5]}; {case}"
    )


@pytest.mark.parametrize("case, arrays", load_golden(only_warpers=True))
def test_golden_warpers(case, arrays):
    """Every warper chain of the golden file gives transformers' -inf positions exactly and its values to 1e-6."""
    check_golden(case, arrays)


def test_golden_file_is_small_and_versioned():
    meta = json.loads(str(np.load(GOLDEN / "processors.npz")["meta"]))
    assert meta["transformers"] == "4.38.2"
    assert "make_processor_golden.py" in meta["regenerate"]
    assert (GOLDEN / "processors.npz").stat().st_size < 1_000_000


# ----------------------------------------------------------------------------------------------
# The source documents' examples (001: Meta llama sample_top_p; 004: shifted mask)

SEED_001 = np.array([[0.1, 0.3, 0.4, 0.15, 0.05]], dtype=np.float32)  # p = 0.8
SEED_004 = np.array([[0.4, 0.2, 0.15, 0.15, 0.1]], dtype=np.float32)  # top_p = 0.8


def test_seed_001_llama_code_keeps_three_tokens_not_two():
    """The top-p article's step 4 writes mask [F,F,T,T,T] (2 tokens, renormalised 0.5714/0.4286), but its
    own code `probs_sum - probs_sort > p` gives [F,F,F,T,T]: tokens 2, 1, 3 (mass 0.85 >= 0.8)."""
    out = llama_top_p_probs(SEED_001, 0.8)
    assert positive(out) == [1, 2, 3]
    np.testing.assert_allclose(out[0, [2, 1, 3]], np.array([0.4, 0.3, 0.15]) / 0.85, rtol=1e-6)
    assert not np.allclose(out[0, [2, 1]], [0.5714, 0.4286], atol=1e-3)  # the prose's numbers


def test_seed_001_all_variants_agree():
    """transformers' top-p and the shifted mask keep the same three tokens on the top-p article's example."""
    logits = np.log(SEED_001)
    assert kept(top_p_warp(logits, 0.8)) == [1, 2, 3]
    assert kept(shifted_top_p_warp(logits, 0.8)) == [1, 2, 3]
    assert kept(TopPLogitsWarper(0.8)(None, logits)) == [1, 2, 3]


def test_seed_004_code_keeps_four_tokens_not_three():
    """The sampling note's prose stops at cumulative 0.75 and keeps [0.4, 0.2, 0.15]; its code (cumsum > p,
    shifted right) keeps the crossing token too: four tokens, mass 0.9. transformers and llama agree."""
    logits = np.log(SEED_004)
    assert kept(shifted_top_p_warp(logits, 0.8)) == [0, 1, 2, 3]
    assert kept(top_p_warp(logits, 0.8)) == [0, 1, 2, 3]
    assert positive(llama_top_p_probs(SEED_004, 0.8)) == [0, 1, 2, 3]


def test_mass_exactly_p_transformers_drops_llama_keeps():
    """With dyadic probabilities the prefix {0, 1} has mass exactly 0.75 = p: transformers stops there
    (removes cumsum <= 1 - p), llama and the shifted mask keep one more token (mass before <= p)."""
    probs = np.array([[0.5, 0.25, 0.125, 0.0625, 0.0625]], dtype=np.float32)
    assert kept(top_p_warp(np.log(probs), 0.75)) == [0, 1]
    assert positive(llama_top_p_probs(probs, 0.75)) == [0, 1, 2]
    assert kept(shifted_top_p_warp(np.log(probs), 0.75)) == [0, 1, 2]


# ----------------------------------------------------------------------------------------------
# Hand-sized cases


def test_top_k_keeps_ties_and_caps_at_vocab():
    s = np.array([[1.0, 3.0, 2.0, 2.0, 0.0], [0.0, -np.inf, -np.inf, 5.0, 1.0]], dtype=np.float32)
    # row 0: the 2nd largest (2.0) is tied, three survive; row 1: 2nd largest is 1.0
    assert np.isfinite(top_k_warp(s, 2)).tolist() == [[False, True, True, True, False], [False, False, False, True, True]]
    np.testing.assert_array_equal(TopKLogitsWarper(top_k=100)(None, s), s)  # k > V keeps everything
    assert TopKLogitsWarper(1, min_tokens_to_keep=3).top_k == 3
    out = TopKLogitsWarper(1, filter_value=-7.0)(None, s)
    assert out[0].tolist() == [-7.0, 3.0, -7.0, -7.0, -7.0]


def test_top_p_zero_keeps_the_greedy_token_and_one_keeps_nonzero_mass():
    """top_p=0 keeps min_tokens_to_keep tokens; on a tie for the max the HIGHER id is kept, not argmax's
    (torch's stable ascending sort puts it last: transformers 4.38.2 keeps token 2 here too).
    top_p=1 removes only zero-probability tokens (exp underflow counts: e^-200 is 0 in float32)."""
    s = np.array([[1.0, 4.0, 4.0, 0.0]], dtype=np.float32)
    assert kept(top_p_warp(s, 0.0)) == [2] != [int(np.argmax(s))]
    assert kept(top_p_warp(s, 0.0, min_tokens_to_keep=3)) == [0, 1, 2]
    s = np.array([[0.0, -200.0, -np.inf, 1.0]], dtype=np.float32)
    assert kept(top_p_warp(s, 1.0)) == [0, 3]
    assert kept(top_p_warp(s, 1.0, min_tokens_to_keep=4)) == [0, 1, 3]  # -inf stays -inf


def test_rank_descending_breaks_ties_toward_lower_id():
    s = np.array([[2.0, 5.0, 2.0, -np.inf, 5.0]], dtype=np.float32)
    assert rank_descending(s).tolist() == [[1, 4, 0, 2, 3]]


def test_temperature_divides():
    s = np.array([[2.0, -1.0, -np.inf]], dtype=np.float32)
    out = TemperatureLogitsWarper(0.5)(None, s)
    assert out.dtype == np.float32 and out.tolist() == [[4.0, -2.0, -np.inf]]


# ----------------------------------------------------------------------------------------------
# Validation: transformers' argument errors, each a ValueError naming the argument and the value


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: TopPLogitsWarper(1.5), r"`top_p`.*\[0, 1\].*1\.5"),
        (lambda: TopPLogitsWarper(-0.1), r"`top_p`.*\[0, 1\].*-0\.1"),
        (lambda: TopPLogitsWarper(float("nan")), r"`top_p`.*nan"),
        (lambda: TopPLogitsWarper(0.5, min_tokens_to_keep=0), r"`min_tokens_to_keep`.*>= 1.*0"),
        (lambda: TopPLogitsWarper(0.5, min_tokens_to_keep=1.5), r"`min_tokens_to_keep`.*1\.5"),
        (lambda: TopKLogitsWarper(0), r"`top_k`.*strictly positive.*0"),
        (lambda: TopKLogitsWarper(-3), r"`top_k`.*-3"),
        (lambda: TopKLogitsWarper(2.0), r"`top_k`.*integer.*2\.0"),
        (lambda: TopKLogitsWarper(2, min_tokens_to_keep=-1), r"`min_tokens_to_keep`.*-1"),
        (lambda: TemperatureLogitsWarper(0.0), r"`temperature`.*> 0.*0\.0.*do_sample=False"),
        (lambda: TemperatureLogitsWarper(-1.0), r"`temperature`.*> 0.*-1\.0"),
        (lambda: TemperatureLogitsWarper(2), r"`temperature`.*float.*2"),  # int refused, as in transformers
    ],
)
def test_validation(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_top_p_accepts_both_ends_although_transformers_message_says_open_interval():
    """transformers' message reads "> 0 and < 1" but its check accepts 0 and 1; so do we (and say [0, 1])."""
    TopPLogitsWarper(0.0)
    TopPLogitsWarper(1.0)
    TopPLogitsWarper(1)  # transformers converts with float()


def test_scores_must_be_float32_2d():
    with pytest.raises(TypeError, match="`scores`.*float32.*float64"):
        top_k_warp(np.zeros((1, 3)), 1)
    with pytest.raises(ValueError, match="`scores`.*shape"):
        top_p_warp(np.zeros(3, dtype=np.float32), 0.5)


# ----------------------------------------------------------------------------------------------
# Hypothesis properties

finite_f32 = st.floats(-30, 30, width=32, allow_subnormal=False)
score_el = st.one_of(finite_f32, finite_f32, finite_f32, st.just(-np.inf), st.integers(-2, 2).map(float))


@st.composite
def score_rows(draw, min_vocab=1, max_vocab=24):
    """float32 (B, V) with ties, -inf entries and at least one finite entry per row."""
    batch = draw(st.integers(1, 3))
    vocab = draw(st.integers(min_vocab, max_vocab))
    s = draw(hnp.arrays(np.float32, (batch, vocab), elements=score_el))
    cols = draw(hnp.arrays(np.int64, (batch,), elements=st.integers(0, vocab - 1)))
    s[np.arange(batch), cols] = draw(finite_f32)
    return s


@st.composite
def warper_chains(draw):
    """A random sub-chain of generate's temperature -> top-k -> top-p with one min_tokens_to_keep."""
    m = draw(st.integers(1, 4))
    chain = []
    if draw(st.booleans()):
        chain.append(TemperatureLogitsWarper(draw(st.floats(0.05, 20.0))))
    if draw(st.booleans()):
        chain.append(TopKLogitsWarper(draw(st.integers(1, 30)), min_tokens_to_keep=m))
    if draw(st.booleans()):
        chain.append(TopPLogitsWarper(draw(st.floats(0.0, 1.0)), min_tokens_to_keep=m))
    return LogitsProcessorList(chain), m


@given(score_rows(), warper_chains())
def test_any_warper_chain_leaves_a_distribution(scores, chain_and_m):
    """softmax after any chain sums to 1 (1e-6), >= min(min_tokens_to_keep, #finite) stay finite, a token
    with the maximum score stays finite (not necessarily argmax's: on a tied maximum top-p keeps the highest
    id, as torch's stable ascending sort), and the input is not mutated."""
    chain, m = chain_and_m
    before = scores.copy()
    out = chain(None, scores)
    np.testing.assert_array_equal(scores, before)
    assert out.dtype == np.float32
    probs = softmax(out)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    finite_in, finite_out = np.isfinite(scores).sum(-1), np.isfinite(out).sum(-1)
    assert (finite_out >= np.minimum(m, finite_in)).all()
    top = scores == np.max(scores, axis=-1, keepdims=True)
    assert (np.isfinite(out) & top).any(axis=-1).all()


@given(score_rows(), st.integers(1, 30), st.integers(0, 30))
def test_top_k_keeps_exactly_the_scores_at_least_the_kth(scores, top_k, m):
    """Kept = {v : s_v >= k-th largest}, k = min(max(top_k, m), V): every tie with the k-th survives."""
    out = top_k_warp(scores, top_k, min_tokens_to_keep=m)
    np.testing.assert_array_equal(TopKLogitsWarper(top_k, min_tokens_to_keep=m)(None, scores), out)
    k = min(max(top_k, m), scores.shape[1])
    kth = np.sort(scores, -1)[:, ::-1][:, k - 1 : k]
    keep = scores >= kth
    np.testing.assert_array_equal(out[keep], scores[keep])
    assert np.isneginf(out[~keep]).all()
    assert (keep.sum(-1) >= k).all()


def reference_top_p_keep(row: np.ndarray, top_p: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The stated rule, in float64: rank by the reverse of torch's CPU ascending sort (libstdc++'s
    std::sort, transliterated line by line in ``std_sort_literal``; for rows up to 16 that is (score desc,
    id desc), a stable sort reversed); keep a token iff the mass of the tokens ranked before it is < top_p,
    or it is among the first m. Returns (keep mask, mass_before)."""
    probs = softmax(row[None])[0].astype(np.float64)
    order = std_sort_literal(sort_keys(row).tolist())[::-1]
    if len(row) <= 16:
        assert order == sorted(range(len(row)), key=lambda v: (-row[v], -v))
    mass_before = np.concatenate([[0.0], np.cumsum(probs[order])[:-1]])
    keep = np.zeros(len(row), dtype=bool)
    for rank, v in enumerate(order):
        keep[v] = mass_before[rank] < top_p or rank < m
    return keep, mass_before[m:]


@given(score_rows(), st.floats(0.0, 0.999), st.integers(1, 4))
def test_top_p_keeps_smallest_most_probable_set_reaching_p(scores, top_p, m):
    """transformers' top-p = the smallest set of most probable tokens whose mass reaches top_p (the
    crossing token is kept; mass before == p drops), at least m tokens, ties ranked by higher id
    first (so on a tie at the cut the lower ids are dropped, as transformers 4.38.2 on torch's CPU). Inputs whose prefix mass lies within 1e-5 of p are skipped: float32 decides those."""
    out = TopPLogitsWarper(top_p, min_tokens_to_keep=m)(None, scores)
    for row, row_out in zip(scores, out):
        keep, mass_before = reference_top_p_keep(row, top_p, m)
        assume(np.all(np.abs(mass_before - top_p) > 1e-5))
        np.testing.assert_array_equal(np.isfinite(row_out), keep & np.isfinite(row))
        np.testing.assert_array_equal(row_out[keep], row[keep])


@given(score_rows(), st.floats(0.0, 0.999))
def test_top_p_variants_agree_away_from_the_boundary(scores, top_p):
    """transformers, llama (001) and the shifted mask (004) keep the same tokens unless some prefix
    mass is within 1e-5 of p (they differ exactly there: mass before == p).

    Also assumed: scores that differ give probabilities that differ. llama's rule ranks by
    *probability* and the other two by *score*; ``[0, 6.1e-36]`` has two different scores but
    softmax gives exactly [0.5, 0.5], so at top_p=0 llama keeps token 0 (lower id) and
    transformers keeps token 1 (higher score). Found by the ``thorough`` profile.

    And no tie straddles the cut: there transformers (ascending sort) drops the lower ids and the
    other two (descending sort) keep them."""
    want = np.isfinite(top_p_warp(scores, top_p))
    for row, row_want in zip(scores, want):
        _, mass_before = reference_top_p_keep(row, top_p, 1)
        assume(np.all(np.abs(mass_before - top_p) > 1e-5))
        finite = row[np.isfinite(row)]
        assume(len(np.unique(softmax(finite[None])[0])) == len(np.unique(finite)))
        assume(not set(row[row_want].tolist()) & set(row[np.isfinite(row) & ~row_want].tolist()))
    np.testing.assert_array_equal(np.isfinite(shifted_top_p_warp(scores, top_p)), want)
    np.testing.assert_array_equal(llama_top_p_probs(softmax(scores), top_p) > 0, want)


@given(score_rows(min_vocab=2), st.floats(0.01, 100.0))
def test_temperature_keeps_order(scores, temperature):
    """s_i < s_j implies s_i/T <= s_j/T (division is monotone; rounding can only create ties)."""
    out = temperature_warp(scores, temperature)
    for b in range(scores.shape[0]):
        less = scores[b][:, None] < scores[b][None, :]
        assert (out[b][:, None] <= out[b][None, :])[less].all()


@given(hnp.arrays(np.float32, (2, 8), elements=st.floats(-5, 5, width=32), unique=True))
def test_temperature_limits(scores):
    """T -> 0: all mass on the argmax; T -> inf: uniform. (Distinct scores at least 1e-3 apart.)"""
    gaps = np.diff(np.sort(scores, -1), axis=-1)
    assume(gaps.min() > 1e-3)
    cold = softmax(temperature_warp(scores, 1e-5))
    np.testing.assert_allclose(cold[np.arange(2), np.argmax(scores, -1)], 1.0, atol=1e-6)
    hot = softmax(temperature_warp(scores, 1e7))
    np.testing.assert_allclose(hot, 1.0 / 8, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# Ties at the top-p cut: transformers 4.38.2's own answers, tests/golden/processors_more.npz


def _top_p_tie_cases():
    from processor_golden import standalone_cases
    return [c for c in standalone_cases("processors_more.npz", {"TopPLogitsWarper"})
            if c.values[0]["name"].startswith("top_p_ties")]


@pytest.mark.parametrize("case, arrays", _top_p_tie_cases())
def test_golden_top_p_ties_follow_torchs_stable_ascending_sort(case, arrays):
    """Uniform rows of 2..16 entries and integer-valued rows with ties straddling the cut: the tokens
    transformers 4.38.2 keeps (torch 2.13 CPU: a stable ascending sort, lower ids dropped first)."""
    from processor_golden import check_standalone
    check_standalone(case, arrays)


def test_issue_13_example_top_p_ties():
    """TopPLogitsWarper(0.5) on [[0, 0, 0, 0]] keeps {2, 3} in transformers 4.38.2; refdecode used to keep {0, 1}."""
    out = TopPLogitsWarper(0.5)(None, np.zeros((1, 4), dtype=np.float32))
    assert kept(out) == [2, 3]
    assert len(_top_p_tie_cases()) >= 38


def test_top_k_top_p_filtering_is_top_k_then_top_p_and_warns_as_4382():
    """4.38.2's deprecated helper; top-p also runs at its default 1.0 (it drops -inf / zero
    probabilities only), and it warns with DeprecationWarning."""
    from refdecode import TopKLogitsWarper, TopPLogitsWarper, top_k_top_p_filtering

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 12)).astype(np.float32)
    with pytest.warns(DeprecationWarning, match="top_k_top_p_filtering"):
        out = top_k_top_p_filtering(logits, top_k=5, top_p=0.6, min_tokens_to_keep=2)
    want = TopPLogitsWarper(0.6, min_tokens_to_keep=2)(None, TopKLogitsWarper(5, min_tokens_to_keep=2)(None, logits))
    assert np.array_equal(out, want) and out.dtype == np.float32
    with pytest.warns(DeprecationWarning):
        assert np.array_equal(top_k_top_p_filtering(logits), logits)                 # top_p 1.0: nothing finite dropped
