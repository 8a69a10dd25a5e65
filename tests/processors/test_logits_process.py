"""Tests for refdecode/processors/logits_process.py: golden parity with transformers 4.38.2, hand-sized cases,
Hypothesis properties of each rule, argument validation, and porting the 4.26 walkthrough's snippets."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import GOLDEN
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import refdecode
from refdecode.processors import logits_process, logits_warp
from refdecode.processors.logits_process import (
    HammingDiversityLogitsProcessor,
    LogitsProcessor,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    hamming_diversity_process,
    no_repeat_ngram_process,
    repetition_penalty_process,
)

WARPERS = ("TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper")


# ----------------------------------------------------------------------------------------------
# Golden parity with transformers 4.38.2 (tests/golden/processors.npz; warper-only chains are
# tested in test_logits_warp.py)


def load_golden_processor_cases():
    data = np.load(GOLDEN / "processors.npz")
    meta = json.loads(str(data["meta"]))
    assert meta["format_version"] == 1, f"regenerate with: {meta['regenerate']}"
    cases = []
    for i, case in enumerate(meta["cases"]):
        if not all(c in WARPERS for c, _ in case["chain"]):
            arrays = {k.split("_", 1)[1]: data[k] for k in data.files if k.split("_", 1)[0] == str(i)}
            cases.append(pytest.param(case, arrays, id=f"{i}-{case['name']}"))
    return cases


@pytest.mark.parametrize("case, arrays", load_golden_processor_cases())
def test_golden_processors(case, arrays):
    """-inf positions exactly as transformers, finite values within 1e-6."""
    classes = {**vars(logits_process), **vars(logits_warp)}
    chain = LogitsProcessorList([classes[name](**kwargs) for name, kwargs in case["chain"]])
    kwargs = dict(case["call_kwargs"])
    if "current_tokens" in arrays:
        kwargs["current_tokens"] = arrays["current_tokens"]
    got, want = chain(arrays["input_ids"], arrays["scores"], **kwargs), arrays["expected"]
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want), err_msg=f"-inf positions differ: {case}")
    finite = np.isfinite(want)
    diff = np.abs(got[finite] - want[finite])
    assert np.allclose(got[finite], want[finite], rtol=1e-6, atol=1e-6), (
        f"max abs diff {diff.max():.3g}; got {got[finite][:5]}, want {want[finite][:5]}; {case}"
    )


# ----------------------------------------------------------------------------------------------
# Hand-sized cases


def test_min_length_counts_the_prompt_and_is_strict():
    """min_length=4: with 3 tokens (prompt included) EOS is banned, with 4 it is allowed (strict <)."""
    p = MinLengthLogitsProcessor(4, eos_token_id=[0, 2])
    s = np.ones((2, 3), dtype=np.float32)
    assert p(np.zeros((2, 3), dtype=np.int64), s).tolist() == [[-np.inf, 1, -np.inf]] * 2
    assert p(np.zeros((2, 4), dtype=np.int64), s).tolist() == [[1, 1, 1]] * 2


def test_min_new_tokens_ignores_the_prompt():
    p = MinNewTokensLengthLogitsProcessor(prompt_length_to_skip=3, min_new_tokens=2, eos_token_id=1)
    s = np.zeros((1, 3), dtype=np.float32)
    assert np.isneginf(p(np.zeros((1, 4), dtype=np.int64), s)).tolist() == [[False, True, False]]  # 1 new
    assert np.isneginf(p(np.zeros((1, 5), dtype=np.int64), s)).tolist() == [[False, False, False]]  # 2 new


def test_repetition_penalty_counts_left_padding():
    """GPT-2 pads with eos: a left-padded row penalises the EOS logit (transformers 4.38.2 does; 5.x not)."""
    pad = eos = 0
    input_ids = np.array([[pad, pad, 5, 6], [4, 3, 5, 6]])
    s = np.full((2, 8), 2.0, dtype=np.float32)
    out = RepetitionPenaltyLogitsProcessor(2.0)(input_ids, s)
    assert out[0, eos] == 1.0 and out[1, eos] == 2.0
    assert out[0].tolist() == [1, 2, 2, 2, 2, 1, 1, 2]


def test_repetition_penalty_multiplies_negative_divides_positive_once():
    s = np.array([[-1.0, 0.0, 3.0, -np.inf]], dtype=np.float32)
    out = repetition_penalty_process(np.array([[0, 0, 0, 1, 2, 3, 2]]), s, 1.5)  # repeats penalised once
    assert out.tolist() == [[-1.5, 0.0, 2.0, -np.inf]]


def test_no_repeat_ngram_transformers_example():
    """From transformers' test: 2-gram would forbid 2nd and 3rd token (1,2) at 1st batch and 1st token
    (0) at 2nd batch; 3-gram would forbid no token at 1st batch and 1st token (0) at 2nd batch."""
    input_ids = np.array([[1, 1, 2, 1], [0, 1, 0, 1]])
    s = np.zeros((2, 3), dtype=np.float32)
    assert np.isinf(NoRepeatNGramLogitsProcessor(2)(input_ids, s)).tolist() == [[False, True, True], [True, False, False]]
    assert np.isinf(NoRepeatNGramLogitsProcessor(3)(input_ids, s)).tolist() == [[False, False, False], [True, False, False]]


def test_no_repeat_unigram_bans_every_seen_token_and_short_rows_ban_nothing():
    s = np.zeros((1, 5), dtype=np.float32)
    assert np.isinf(no_repeat_ngram_process(np.array([[3, 1, 3]]), s, 1)).tolist() == [[False, True, False, True, False]]
    assert not np.isinf(no_repeat_ngram_process(np.array([[3, 3]]), s, 4)).any()  # 2 + 1 < 4
    assert not np.isinf(no_repeat_ngram_process(np.zeros((1, 0), dtype=np.int64), s, 1)).any()


def test_hamming_penalises_earlier_groups_only():
    """B=2, K=4, G=2 (2 beams per group). Batch item 0's group 0 chose tokens 1 and 1, item 1's chose 2 and 0."""
    p = HammingDiversityLogitsProcessor(0.5, num_beams=4, num_beam_groups=2)
    current = np.array([1, 1, 9, 9, 2, 0, 9, 9])  # group-1 slots (9) are not yet filled: never read
    s = np.zeros((4, 10), dtype=np.float32)  # rows: (item 0, beam 2), (item 0, beam 3), (item 1, beam 2), ...
    out = p(None, s, current_tokens=current, beam_group_idx=1)
    assert out[0, 1] == out[1, 1] == -1.0 and out[2, 2] == out[2, 0] == out[3, 2] == -0.5
    assert np.count_nonzero(out) == 6
    np.testing.assert_array_equal(p(None, s, current_tokens=current, beam_group_idx=0), s)  # group 0 untouched


def test_list_forwards_kwargs_to_every_processor_in_order():
    """A processor with ``**kwargs`` gets every keyword argument; ours ignore what they do not use."""
    seen = []

    class Record(LogitsProcessor):
        def __init__(self, tag):
            self.tag = tag

        def __call__(self, input_ids, scores, **kwargs):
            seen.append((self.tag, sorted(kwargs)))
            return scores + 1.0

    chain = LogitsProcessorList(
        [Record("a"), HammingDiversityLogitsProcessor(1.0, 2, 2), RepetitionPenaltyLogitsProcessor(1.5), Record("b")]
    )
    s = np.zeros((1, 4), dtype=np.float32)
    out = chain(np.array([[3]]), s, current_tokens=np.array([2, 0]), beam_group_idx=1)
    assert seen == [("a", ["beam_group_idx", "current_tokens"]), ("b", ["beam_group_idx", "current_tokens"])]
    # 0 +1 (a) -1 at token 2 (hamming) /1.5 at token 3 (penalty) +1 (b)
    np.testing.assert_allclose(out, [[2.0, 2.0, 1.0, 1 + 1 / 1.5]], rtol=1e-6)
    assert isinstance(chain, list)


def test_list_passes_kwargs_only_to_processors_whose_signature_takes_them():
    """4.38.2 rule: a two-argument processor (ported from transformers) runs in group beam search; one
    naming ``beam_group_idx`` gets that one only; one missing a required extra is a ValueError."""
    seen = []

    def two_args(input_ids, scores):
        return scores + 1.0

    class GroupOnly:
        def __call__(self, input_ids, scores, beam_group_idx):
            seen.append(beam_group_idx)
            return scores

    chain = LogitsProcessorList([two_args, GroupOnly(), HammingDiversityLogitsProcessor(1.0, 2, 2)])
    out = chain(np.array([[3]]), np.zeros((1, 4), dtype=np.float32), current_tokens=np.array([2, 0]),
                beam_group_idx=1)
    assert seen == [1]
    np.testing.assert_array_equal(out, [[1.0, 1.0, 0.0, 1.0]])  # +1, then Hamming -1 at token 2
    with pytest.raises(ValueError, match=r"required parameters: \['input_ids', 'scores', 'beam_group_idx'\]"):
        LogitsProcessorList([GroupOnly()])(np.array([[3]]), np.zeros((1, 4), dtype=np.float32), current_tokens=0)


def test_two_argument_processor_runs_in_group_beam_search():
    """A custom processor ported from transformers code: ``__call__(input_ids, scores)`` in generate's group mode."""
    from refdecode import generate
    from refdecode.model.stand_ins import TableModel

    calls = []

    class Ban2:
        def __call__(self, input_ids, scores):
            calls.append(1)
            return np.where(np.arange(scores.shape[1]) == 2, np.float32(-np.inf), scores)

    model = TableModel(np.log(np.full((4, 4), 0.25, dtype=np.float32)) + np.eye(4, dtype=np.float32), noise=0.5)
    out = generate(model, np.array([[1]]), num_beams=4, num_beam_groups=2, diversity_penalty=1.0, max_length=5,
                   logits_processor=[Ban2()], pad_token_id=0)
    assert calls and 2 not in out[:, 1:]


def test_hamming_without_its_kwargs_is_a_clear_error():
    with pytest.raises(ValueError, match="current_tokens.*beam_group_idx"):
        LogitsProcessorList([HammingDiversityLogitsProcessor(1.0, 2, 2)])(None, np.zeros((1, 3), dtype=np.float32))


# ----------------------------------------------------------------------------------------------
# The 4.26 walkthrough's snippets port by changing the import and torch -> numpy


def run_ported(snippet: str, **namespace):
    """exec a transformers snippet with only the import line changed."""
    ported = snippet.replace("from transformers import", "from refdecode.processors.logits_process import")
    ported = ported.replace("from transformers.generation.logits_warp import", "from refdecode.processors.logits_warp import")
    exec(ported, namespace)  # noqa: S102 - the snippet is a literal in this file
    return namespace


def test_seed_000_greedy_snippet_ports():
    """The 4.26 walkthrough, greedy quick-start: MinLength(10, eos) + RepetitionPenalty(1.2) on a 5-token prompt."""
    snippet = (
        "from transformers import LogitsProcessorList, MinLengthLogitsProcessor, RepetitionPenaltyLogitsProcessor\n"
        "logits_processor = LogitsProcessorList([MinLengthLogitsProcessor(10, eos_token_id=eos_token_id),"
        "RepetitionPenaltyLogitsProcessor(1.2),])\n"
        "next_tokens_scores = logits_processor(input_ids, next_token_logits)\n"
        "next_tokens = np.argmax(next_tokens_scores, axis=-1)\n"  # was torch.argmax(..., dim=-1)
    )
    rng = np.random.default_rng(0)
    input_ids = np.array([[1026, 1244, 307, 1744, 284]])  # "It might be possible to"
    logits = rng.normal(size=(1, 50257)).astype(np.float32)
    logits[0, 50256] = 100.0  # EOS would win without MinLength
    ns = run_ported(snippet, np=np, eos_token_id=50256, input_ids=input_ids, next_token_logits=logits)
    assert np.isneginf(ns["next_tokens_scores"][0, 50256]) and ns["next_tokens"][0] != 50256
    np.testing.assert_allclose(ns["next_tokens_scores"][0, 284], logits[0, 284] / 1.2 if logits[0, 284] >= 0 else logits[0, 284] * 1.2)


def test_seed_000_sample_and_group_beam_snippets_port():
    """The 4.26 walkthrough, sample (TopK(50), TopP(0.9) after MinLength(15)) and group beam search
    (HammingDiversity(5.5, num_beams=6, num_beam_groups=3) called with current_tokens, beam_group_idx)."""
    snippet = (
        "from transformers import LogitsProcessorList, MinLengthLogitsProcessor, HammingDiversityLogitsProcessor\n"
        "from transformers.generation.logits_warp import TopKLogitsWarper, TopPLogitsWarper\n"
        "logits_processor = LogitsProcessorList([MinLengthLogitsProcessor(15, eos_token_id=eos_token_id),])\n"
        "logits_warper = LogitsProcessorList([TopKLogitsWarper(50),TopPLogitsWarper(0.9)])\n"
        "next_token_scores = logits_processor(input_ids, next_token_logits)\n"
        "next_token_scores = logits_warper(input_ids, next_token_scores)\n"
        "group_processor = LogitsProcessorList([HammingDiversityLogitsProcessor(5.5, num_beams=6, num_beam_groups=3), ])\n"
        # was torch.zeros(batch_size * num_beams, dtype=input_ids.dtype, device=device)
        "current_tokens = np.zeros(batch_size * num_beams, dtype=input_ids.dtype)\n"
        "current_tokens[:2] = [7, 7]\n"
        "group_scores = group_processor(group_input_ids, group_logprobs, current_tokens=current_tokens, beam_group_idx=1)\n"
    )
    rng = np.random.default_rng(1)
    ns = run_ported(
        snippet, np=np, eos_token_id=50256, batch_size=1, num_beams=6,
        input_ids=np.array([[8888, 318, 257, 4950, 1110, 11, 290]]),
        next_token_logits=rng.normal(size=(1, 50257)).astype(np.float32),
        group_input_ids=np.zeros((2, 1), dtype=np.int64),
        group_logprobs=np.full((2, 50257), -10.0, dtype=np.float32),
    )
    assert 1 <= np.isfinite(ns["next_token_scores"]).sum() <= 50
    assert (ns["group_scores"][:, 7] == -10.0 - 2 * 5.5).all()


@pytest.mark.skipif(not hasattr(refdecode, "LogitsProcessorList"), reason="re-exports from refdecode/__init__.py pending")
def test_package_reexports_transformers_names():
    """`from refdecode import TopPLogitsWarper` (and every class name) works."""
    for name in ["LogitsProcessorList", "MinLengthLogitsProcessor", "MinNewTokensLengthLogitsProcessor",
                 "RepetitionPenaltyLogitsProcessor", "NoRepeatNGramLogitsProcessor",
                 "HammingDiversityLogitsProcessor", "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper"]:
        assert hasattr(refdecode, name), name


# ----------------------------------------------------------------------------------------------
# Validation: transformers' argument errors, each a ValueError naming the argument and the value


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: MinLengthLogitsProcessor(-1, 0), r"`min_length`.*non-negative.*-1"),
        (lambda: MinLengthLogitsProcessor(2.0, 0), r"`min_length`.*integer.*2\.0"),
        (lambda: MinLengthLogitsProcessor(2, -5), r"`eos_token_id`.*non-negative.*-5"),
        (lambda: MinLengthLogitsProcessor(2, [1, "x"]), r"`eos_token_id`.*\[1, 'x'\]"),
        (lambda: MinNewTokensLengthLogitsProcessor(-1, 1, 0), r"`prompt_length_to_skip`.*non-negative.*-1"),
        (lambda: MinNewTokensLengthLogitsProcessor(0, -2, 0), r"`min_new_tokens`.*non-negative.*-2"),
        (lambda: RepetitionPenaltyLogitsProcessor(0.0), r"`penalty`.*strictly positive.*0\.0"),
        (lambda: RepetitionPenaltyLogitsProcessor(-1.2), r"`penalty`.*> 0.*-1\.2"),
        (lambda: RepetitionPenaltyLogitsProcessor(2), r"`penalty`.*float.*2"),  # int refused, as in transformers
        (lambda: NoRepeatNGramLogitsProcessor(0), r"`ngram_size`.*strictly positive.*0"),
        (lambda: NoRepeatNGramLogitsProcessor(-1), r"`ngram_size`.*-1"),
        (lambda: NoRepeatNGramLogitsProcessor(2.0), r"`ngram_size`.*integer.*2\.0"),
        (lambda: HammingDiversityLogitsProcessor(0.0, 4, 2), r"`diversity_penalty`.*larger than 0.*0\.0"),
        (lambda: HammingDiversityLogitsProcessor(1, 4, 2), r"`diversity_penalty`.*float.*1"),
        (lambda: HammingDiversityLogitsProcessor(1.0, 1, 2), r"`num_beams`.*larger than 1.*1"),
        (lambda: HammingDiversityLogitsProcessor(1.0, 4, 1), r"`num_beam_groups`.*larger than 1.*1"),
        (lambda: HammingDiversityLogitsProcessor(1.0, 4, 5), r"`num_beam_groups`.*`num_beams` = 4.*5"),
    ],
)
def test_constructor_validation(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_call_validation_is_valueerror_not_indexerror():
    s = np.zeros((1, 4), dtype=np.float32)
    with pytest.raises(ValueError, match=r"`eos_token_id`.*\[0, 3\].*7"):
        MinLengthLogitsProcessor(5, 7)(np.zeros((1, 2), dtype=np.int64), s)
    with pytest.raises(ValueError, match=r"`input_ids`.*\[0, 3\].*9"):
        RepetitionPenaltyLogitsProcessor(1.2)(np.array([[1, 9]]), s)
    with pytest.raises(ValueError, match=r"`input_ids`.*batch.*1.*\(2, 2\)"):
        NoRepeatNGramLogitsProcessor(2)(np.zeros((2, 2), dtype=np.int64), s)
    with pytest.raises(ValueError, match=r"`beam_group_idx`.*\[0, 1\].*2"):
        HammingDiversityLogitsProcessor(1.0, 4, 2)(None, s, current_tokens=np.zeros(4, dtype=np.int64), beam_group_idx=2)
    with pytest.raises(ValueError, match=r"`scores`.*2 rows.*1"):
        HammingDiversityLogitsProcessor(1.0, 4, 2)(None, s, current_tokens=np.zeros(4, dtype=np.int64), beam_group_idx=1)
    with pytest.raises(TypeError, match=r"`scores`.*float32.*float64"):
        RepetitionPenaltyLogitsProcessor(1.2)(np.array([[1]]), np.zeros((1, 4)))


# ----------------------------------------------------------------------------------------------
# Hypothesis properties

score_el = st.one_of(st.floats(-20, 20, width=32), st.integers(-2, 2).map(float), st.just(-np.inf))


@st.composite
def ids_and_scores(draw, max_len=12, alphabet=None):
    """input_ids int64 (B, T) over a small alphabet (repetitive) and scores float32 (B, V)."""
    batch, vocab = draw(st.integers(1, 3)), draw(st.integers(2, 10))
    length = draw(st.integers(0, max_len))
    high = min(alphabet or vocab, vocab) - 1
    input_ids = draw(hnp.arrays(np.int64, (batch, length), elements=st.integers(0, high)))
    scores = draw(hnp.arrays(np.float32, (batch, vocab), elements=score_el))
    return input_ids, scores


@given(ids_and_scores(), st.floats(0.05, 20.0))
def test_repetition_penalty_touches_only_seen_tokens_and_moves_them_the_right_way(data, penalty):
    """Only tokens in input_ids change; penalty > 1 never raises a score (strictly lowers nonzero finite
    ones), penalty < 1 never lowers one."""
    input_ids, scores = data
    out = repetition_penalty_process(input_ids, scores, penalty)
    for b in range(scores.shape[0]):
        seen = np.isin(np.arange(scores.shape[1]), input_ids[b])
        np.testing.assert_array_equal(out[b, ~seen], scores[b, ~seen])
        moved = seen & np.isfinite(scores[b]) & (scores[b] != 0)
        if penalty > 1:
            assert (out[b, seen] <= scores[b, seen]).all() and (out[b, moved] < scores[b, moved]).all()
        elif penalty < 1:
            assert (out[b, seen] >= scores[b, seen]).all()


def banned_brute_force(row: list[int], n: int, vocab: int) -> set[int]:
    """Tokens t such that (last n-1 tokens of row) + (t,) is an n-gram already in the row."""
    grams = {tuple(row[i : i + n]) for i in range(len(row) - n + 1)}
    tail = tuple(row[len(row) - n + 1 :]) if n > 1 else ()
    if len(row) < n - 1:
        return set()
    return {t for t in range(vocab) if tail + (t,) in grams}


@given(ids_and_scores(alphabet=3), st.integers(1, 4))
def test_no_repeat_ngram_bans_exactly_the_completing_tokens(data, n):
    input_ids, scores = data
    scores = np.nan_to_num(scores, neginf=0.0)  # all finite, so every -inf in the output is a ban
    out = NoRepeatNGramLogitsProcessor(n)(input_ids, scores)
    for b, row in enumerate(input_ids.tolist()):
        assert set(np.flatnonzero(np.isneginf(out[b]))) == banned_brute_force(row, n, scores.shape[1])
        keep = np.isfinite(out[b])
        np.testing.assert_array_equal(out[b, keep], scores[b, keep])


@given(ids_and_scores(), st.integers(0, 15), st.lists(st.integers(0, 1), min_size=1, max_size=3))
def test_min_length_bans_every_eos_exactly_while_short(data, min_length, eos):
    input_ids, scores = data
    out = MinLengthLogitsProcessor(min_length, eos)(input_ids, scores)
    others = np.setdiff1d(np.arange(scores.shape[1]), eos)
    np.testing.assert_array_equal(out[:, others], scores[:, others])
    if input_ids.shape[1] < min_length:
        assert np.isneginf(out[:, eos]).all()
    else:
        np.testing.assert_array_equal(out, scores)


@given(ids_and_scores(), st.integers(0, 12), st.integers(0, 6), st.integers(0, 1))
def test_min_new_tokens_bans_eos_exactly_while_few_new(data, skip, min_new, eos):
    input_ids, scores = data
    out = MinNewTokensLengthLogitsProcessor(skip, min_new, eos)(input_ids, scores)
    if input_ids.shape[1] - skip < min_new:
        assert np.isneginf(out[:, eos]).all()
        out[:, eos] = scores[:, eos]
    np.testing.assert_array_equal(out, scores)


@st.composite
def hamming_cases(draw):
    groups = draw(st.integers(2, 4))
    num_beams = draw(st.integers(groups, 8))
    group_idx = draw(st.integers(0, groups - 1))
    sub = num_beams // groups
    group_size = min(group_idx * sub + sub, num_beams) - group_idx * sub
    batch, vocab = draw(st.integers(1, 3)), draw(st.integers(2, 8))
    current = draw(hnp.arrays(np.int64, (batch * num_beams,), elements=st.integers(0, vocab - 1)))
    scores = draw(hnp.arrays(np.float32, (batch * group_size, vocab), elements=st.floats(-20, 0, width=32)))
    penalty = draw(st.floats(0.01, 10.0))
    return scores, current, group_idx, penalty, num_beams, groups


@given(hamming_cases())
def test_hamming_subtracts_penalty_times_count_of_earlier_groups(case):
    scores, current, g, penalty, num_beams, groups = case
    out = HammingDiversityLogitsProcessor(penalty, num_beams, groups)(None, scores, current_tokens=current, beam_group_idx=g)
    start = g * (num_beams // groups)
    group_size = scores.shape[0] // (len(current) // num_beams)
    for row in range(scores.shape[0]):
        b = row // group_size
        earlier = current[b * num_beams : b * num_beams + start]
        counts = np.bincount(earlier, minlength=scores.shape[1]).astype(np.float32)
        np.testing.assert_allclose(out[row], scores[row] - np.float32(penalty) * counts, rtol=1e-6, atol=1e-6)
    if g == 0:
        np.testing.assert_array_equal(out, scores)


def all_processors(ngram_size: int) -> list:
    """One of each processor and warper, with arguments that change something."""
    return [
        MinLengthLogitsProcessor(20, [0, 1]),
        MinNewTokensLengthLogitsProcessor(0, 20, 1),
        RepetitionPenaltyLogitsProcessor(1.3),
        NoRepeatNGramLogitsProcessor(ngram_size),
        logits_warp.TemperatureLogitsWarper(0.7),
        logits_warp.TopKLogitsWarper(2),
        logits_warp.TopPLogitsWarper(0.5, min_tokens_to_keep=2),
    ]


@given(ids_and_scores(), st.integers(1, 3))
def test_no_processor_mutates_its_inputs_or_returns_them(data, ngram_size):
    """transformers 4.38.2 wrote into `scores`; ours must return a new float32 array and leave inputs alone."""
    input_ids, scores = data
    ids_before, scores_before = input_ids.copy(), scores.copy()
    for processor in all_processors(ngram_size):
        with np.errstate(invalid="ignore"):
            out = processor(input_ids, scores)
        np.testing.assert_array_equal(scores, scores_before, err_msg=repr(processor))
        np.testing.assert_array_equal(input_ids, ids_before, err_msg=repr(processor))
        assert out.dtype == np.float32 and not np.shares_memory(out, scores), repr(processor)
    rows, current = scores[:1].repeat(2, 0), np.zeros(4, dtype=np.int64)  # B=1, K=4, G=2: 2 rows per group
    rows_before = rows.copy()
    for g in (0, 1):
        out = hamming_diversity_process(rows, current, g, 1.0, 4, 2)
        np.testing.assert_array_equal(rows, rows_before)
        assert not np.shares_memory(out, rows)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_other_float_dtypes_are_refused_with_the_reason_and_the_fix(dtype):
    """transformers keeps a float64/float16 dtype; refdecode refuses it and says why (float32 is what is exact)."""
    with pytest.raises(TypeError, match=r"float32 only.*cast with `scores.astype\(np.float32\)`"):
        RepetitionPenaltyLogitsProcessor(1.5)(np.array([[1]]), np.zeros((1, 4), dtype=dtype))
