"""The exercises at the end of each tutorial, and the checker that compares your function with refdecode.

Each tutorial ends with two or three exercises. An exercise has a name (``"llama_top_p"``), a stub in
the tutorial (a function whose body is ``raise NotImplementedError``: yours to write), a set of
cases built here (small hand-made ones first, the edges where implementations usually go wrong, then
random ones), and the refdecode function that gives the expected answers. Call::

    check("llama_top_p", my_top_p)

It runs every case and prints one line: all cases match, not attempted yet (your function still
raises ``NotImplementedError``), or the **first** case that differs, with its input and what differs
(never refdecode's answer: work it out by hand), and, when your answer is a typical mistake, what it did
("you dropped the token that crosses p"). A function that is refdecode's own, or that calls into refdecode
while it runs (a wrapper of ``llama_top_p_probs``, an ``is_done`` built on ``BeamHypotheses``), is refused:
the exercise is to write it. It returns True or False and never raises, so a tutorial runs top to bottom
whatever state your exercise is in. Your function may name its parameters as you like: the checker
calls it with keywords when the names match the exercise's, positionally (in the exercise's order)
otherwise. ``hint(name)`` prints the next of the exercise's staged hints (which ones you have seen is
kept in ``tutorials/.hints.json`` across runs; ``reset_hints()`` starts over). The levels (★ to ★★★),
rules, hints and typical mistakes are in ``_lab_guide.py``.

The solutions are in ``tutorials/solutions/`` (one file per tutorial). They are not part of the
rendered tutorials: try first, then compare. ``tests/docs/test_labs.py`` checks that every solution
passes and that typical wrong answers are caught.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from refdecode import (
    BeamHypotheses,
    BeamSearchScorer,
    GenerationConfig,
    HammingDiversityLogitsProcessor,
    KVCache,
    MinLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    beam_search,
    generate,
    greedy_search,
    llama_top_p_probs,
    log_softmax,
    softmax,
)
from refdecode.model.stand_ins import TableModel

from _lab_guide import GUIDES, stars

__all__ = ["EXERCISES", "check", "exercises_of", "hint"]

# A case: a label, the keyword arguments your function is called with, and the expected answer
# (a value, or a function ``validate(your_answer) -> None | "what is wrong"`` for open exercises).
Case = tuple[str, dict[str, Any], Any]


@dataclass(frozen=True)
class Exercise:
    name: str
    tutorial: int
    task: str                                   # one line: what to write
    cases: Callable[[], Iterator[Case]]
    compare: Callable[[Any, Any], str | None]   # (expected, yours) -> None if equal, else what differs


# ---- comparing answers ---------------------------------------------------------------------------


def same_scores(expected: Any, got: Any) -> str | None:
    """Float arrays: same shape, -inf (and +inf) at the same places, finite values within 1e-5."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"your shape {got.shape} is not the answer's"
    if not np.issubdtype(got.dtype, np.floating):
        return f"dtype {got.dtype}, expected a float array"
    inf_e, inf_g = np.isinf(expected), np.isinf(got)
    if not np.array_equal(inf_e, inf_g) or not np.array_equal(expected[inf_e], got[inf_g]):
        return "the infinite entries (the masked tokens) differ"
    if not np.allclose(got[~inf_g], expected[~inf_e], rtol=1e-5, atol=1e-6):
        return "values differ"
    return None


def same_ints(expected: Any, got: Any) -> str | None:
    """Integer answers (token ids, positions): exactly equal, same shape."""
    got_arr = np.asarray(got)
    if got_arr.shape != np.shape(expected):
        return f"your shape {got_arr.shape} is not the answer's"
    return None if np.array_equal(got_arr, expected) else "values differ"


def same_float(expected: Any, got: Any) -> str | None:
    """One number, relative tolerance 1e-6."""
    try:
        value = float(got)
    except (TypeError, ValueError):
        return f"not a number: {got!r}"
    return None if np.isclose(value, expected, rtol=1e-6, atol=1e-9) else "values differ"


def same_value(expected: Any, got: Any) -> str | None:
    """A bool or a string: equal."""
    return None if got == expected and type(got) is type(expected) else "values differ"


def validated(expected: Callable[[Any], str | None], got: Any) -> str | None:
    """Open exercises: the expected 'value' is a validator of your answer."""
    return expected(got)


def _rng(name: str) -> np.random.Generator:
    """The same random cases on every run, different per exercise."""
    return np.random.default_rng(sum(map(ord, name)))


def _scores(rng: np.random.Generator, rows: int, vocab: int) -> np.ndarray:
    """Random float32 (rows, vocab) logits, both signs."""
    return rng.normal(0.0, 2.0, size=(rows, vocab)).astype(np.float32)


# ---- tutorial 01: a language model as a table -----------------------------------------------------


def _random_table(rng: np.random.Generator, vocab: int) -> np.ndarray:
    """float32 (V, V) bigram probabilities, each row a distribution with distinct entries."""
    table = rng.dirichlet(np.ones(vocab), size=vocab).astype(np.float32)
    return table / table.sum(axis=1, keepdims=True)


def _table_logprob(table: np.ndarray, tokens: list[int]) -> float:
    """log P(tokens[1:] | tokens[0]) through refdecode: TableModel(log p) logits -> log_softmax."""
    with np.errstate(divide="ignore"):
        model = TableModel(np.log(table))
    logp = log_softmax(model(np.array([tokens], dtype=np.int64)).logits[0])        # (T, V)
    return float(sum(logp[t, tok] for t, tok in enumerate(tokens[1:])))


def _cases_sequence_probability() -> Iterator[Case]:
    toy = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.0, 0.0, 1.0]], dtype=np.float32)
    yield "toy, one step", dict(table=toy, tokens=[0, 1]), 0.6
    yield "toy, three steps", dict(table=toy, tokens=[0, 1, 0, 2]), 0.6 * 0.5 * 0.3
    yield "a zero-probability step", dict(table=toy, tokens=[2, 0]), 0.0
    rng = _rng("sequence_probability")
    for i in range(5):
        table = _random_table(rng, 6)
        tokens = rng.integers(0, 6, size=int(rng.integers(2, 7))).tolist()
        yield f"random {i}", dict(table=table, tokens=tokens), float(np.exp(_table_logprob(table, tokens)))


def _cases_greedy_path() -> Iterator[Case]:
    rng = _rng("greedy_path")
    toy = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.2, 0.1, 0.7]], dtype=np.float32)
    for i, (table, start, steps) in enumerate([(toy, 0, 1), (toy, 0, 4)] +
                                              [(_random_table(rng, 7), int(rng.integers(7)), 5) for _ in range(5)]):
        with np.errstate(divide="ignore"):
            model = TableModel(np.log(table))
        out = greedy_search(model, np.array([[start]], dtype=np.int64), max_length=1 + steps)
        yield f"case {i}", dict(table=table, start=start, steps=steps), out[0, 1:].tolist()


#: The three first words of the tutorial's tree, and the words they can continue with.
FIRST_WORDS = ("dog", "nice", "car")


def _exhaustive(tree: dict[str, dict[str, float]], start: str, n_words: int) -> list[tuple[float, tuple[str, ...]]]:
    """Every n-word continuation of ``start`` with its probability, most probable first."""
    def paths(word: str, n: int) -> Iterator[tuple[float, tuple[str, ...]]]:
        if n == 0:
            yield 1.0, ()
            return
        for nxt, p in tree.get(word, {}).items():
            for q, rest in paths(nxt, n - 1):
                yield p * q, (nxt, *rest)
    return sorted(paths(start, n_words), reverse=True)


def _check_tree(tree: Any) -> str | None:
    """Open exercise: a tree where 2 beams miss the best 2-word continuation and 3 beams find it."""
    import _common   # the tutorials' toy model helpers (tutorials/ is on the path when tutorials run)

    if not isinstance(tree, dict) or "The" not in tree:
        return "return a dict like TOY_TREE (word -> {next word: probability}) with an entry for 'The'"
    try:
        model = _common.toy_model(tree)
    except (ValueError, AssertionError, KeyError) as err:
        return f"not a valid tree: {err!r} (every row must be a distribution over TOY_VOCAB words)"
    ranked = _exhaustive(tree, "The", 2)
    if len(ranked) > 1 and np.isclose(ranked[0][0], ranked[1][0]):
        return f"two continuations tie for best ({ranked[0]}, {ranked[1]}): make the best unique"
    best = " ".join(("The", *ranked[0][1]))
    if ranked[0][1][0] == "car":
        return "the tutorial's example already starts with 'car': find one whose best starts with 'dog' or 'nice'"
    prompt = _common.toy_ids("The")
    found = {}
    for k in (2, 3):
        seq = beam_search(model, np.repeat(prompt, k, axis=0),
                          BeamSearchScorer(batch_size=1, num_beams=k, length_penalty=0.0), max_length=3)
        found[k] = _common.toy_text(seq[0])
    if found[2] == best:
        return (f"2 beams already find the best sequence {best!r} (p = {ranked[0][0]:.3f}): its first word must be "
                "one that 2 beams drop after step 1")
    if found[3] != best:
        return f"3 beams find {found[3]!r}, not the best {best!r}"
    return None


# ---- tutorial 02: tokens, the forward pass and the cache -----------------------------------------


def _position_ids(mask: np.ndarray) -> np.ndarray:
    """refdecode's positions of a left-padded batch (what GPT2 uses when given no position_ids)."""
    from refdecode.model.gpt2 import default_position_ids
    return default_position_ids(mask, 0, mask.shape[0], mask.shape[1])


def _cases_position_ids() -> Iterator[Case]:
    hand = [np.array([[1, 1, 1]]), np.array([[0, 0, 1, 1], [1, 1, 1, 1]]), np.array([[0, 1, 1], [0, 0, 1]])]
    rng = _rng("position_ids")
    for _ in range(4):
        pads = rng.integers(0, 5, size=3)
        hand.append(np.array([[0] * p + [1] * (6 - p) for p in pads]))
    for i, mask in enumerate(hand):
        yield f"mask {mask.tolist()}" if i < 3 else f"random {i}", dict(attention_mask=mask), _position_ids(mask)


def _cases_reorder_rows() -> Iterator[Case]:
    rng = _rng("reorder_rows")
    for i, beam_idx in enumerate([[0, 1, 2, 3], [2, 1, 1, 0], [3, 3, 3, 3], [1, 0, 3, 2], [2, 0, 3, 1]]):
        keys = rng.normal(size=(4, 2, 3, 2)).astype(np.float32)                    # (N, H, S, D)
        cache = KVCache(n_layer=1, batch_size=4, n_head=2, head_dim=2, capacity=3)
        cache.append(0, keys, keys)
        cache.advance(3)
        cache.reorder(np.array(beam_idx))
        yield f"beam_idx {beam_idx}", dict(keys=keys.copy(), beam_idx=np.array(beam_idx)), cache.keys(0).copy()


def _rope(x: np.ndarray, position_ids: np.ndarray, theta: float) -> np.ndarray:
    """refdecode's RoPE (``rope_cos_sin`` + ``apply_rotary_pos_emb``) on x (B, H, T, D)."""
    from refdecode import LlamaConfig
    from refdecode.model.llama import apply_rotary_pos_emb, rope_cos_sin
    config = LlamaConfig(hidden_size=x.shape[-1], num_attention_heads=1, rope_theta=float(theta))   # D = E
    cos, sin = rope_cos_sin(np.asarray(position_ids, dtype=np.int64), config)
    return apply_rotary_pos_emb(x, x, cos, sin)[0]


def _cases_rope() -> Iterator[Case]:
    pair = np.array([[[[1.0, 0.0]] * 3]], dtype=np.float32)                         # (1, 1, 3, 2): D = 2
    yield "D = 2, x = (1, 0) at positions 0, 1, 2", dict(x=pair, position_ids=np.array([[0, 1, 2]]), theta=10000.0), None
    four = np.array([[[[1.0, 2.0, 3.0, 4.0]] * 2]], dtype=np.float32)               # (1, 1, 2, 4)
    yield "D = 4, x = (1, 2, 3, 4) at positions 0, 1", dict(x=four, position_ids=np.array([[0, 1]]), theta=10000.0), None
    rng = _rng("rope")
    for i, (B, H, T, D, theta) in enumerate([(1, 2, 5, 8, 10000.0), (2, 2, 4, 16, 500000.0), (2, 3, 6, 32, 10000.0)]):
        pads = rng.integers(0, 3, size=B)
        position_ids = np.array([[max(0, t - p) for t in range(T)] for p in pads], dtype=np.int64)
        x = rng.normal(size=(B, H, T, D)).astype(np.float32)
        yield f"random {i} (D = {D}, theta = {theta:g})", dict(x=x, position_ids=position_ids, theta=theta), None


# ---- tutorial 03: greedy and the logits processors -------------------------------------------------


def _cases_repetition_penalty() -> Iterator[Case]:
    ids = np.array([[1, 3, 3]])
    scores = np.array([[0.5, 2.0, -1.0, -4.0, 1.0]], dtype=np.float32)
    yield "positive and negative scores", dict(input_ids=ids, scores=scores, penalty=2.0), None
    yield "penalty < 1 (a reward)", dict(input_ids=ids, scores=scores, penalty=0.5), None
    rng = _rng("repetition_penalty")
    for i in range(5):
        yield f"random {i}", dict(input_ids=rng.integers(0, 12, size=(3, 6)), scores=_scores(rng, 3, 12),
                                  penalty=float(rng.uniform(0.5, 3.0))), None


def _cases_no_repeat_ngram() -> Iterator[Case]:
    hand = [([1, 2, 3, 1, 2], 2), ([1, 2, 3, 1, 2], 3), ([5], 2), ([4, 4, 4], 2), ([1, 2, 1, 3, 1], 2),
            ([1, 2, 3], 4)]
    rng = _rng("no_repeat_ngram_banned")
    hand += [(rng.integers(0, 4, size=10).tolist(), int(rng.integers(1, 4))) for _ in range(5)]
    for row, n in hand:
        vocab = max(row) + 2
        out = NoRepeatNGramLogitsProcessor(n)(np.array([row]), np.zeros((1, vocab), dtype=np.float32))
        yield f"row {row}, n={n}", dict(row=list(row), n=n), sorted(np.flatnonzero(np.isinf(out[0])).tolist())


def _cases_min_length() -> Iterator[Case]:
    rng = _rng("min_length")
    for length, min_length in [(3, 5), (4, 5), (5, 5), (6, 5), (1, 1)]:
        ids = rng.integers(0, 6, size=(2, length))
        yield f"length {length}, min_length {min_length}", dict(
            input_ids=ids, scores=_scores(rng, 2, 6), min_length=min_length, eos_token_id=5), None


# ---- tutorial 04: temperature, top-k, top-p ---------------------------------------------------------


def _cases_temperature() -> Iterator[Case]:
    rng = _rng("temperature_softmax")
    yield "hand", dict(logits=np.array([[1.0, 2.0, 3.0]], dtype=np.float32), temperature=0.5), None
    yield "-inf stays 0", dict(logits=np.array([[1.0, -np.inf, 0.0]], dtype=np.float32), temperature=2.0), None
    for i, t in enumerate([0.3, 0.7, 1.0, 1.5, 5.0]):
        yield f"random, T={t}", dict(logits=_scores(rng, 2, 9), temperature=t), None


def _cases_top_k() -> Iterator[Case]:
    yield "ties at the k-th score are all kept", dict(
        scores=np.array([[1.0, 3.0, 2.0, 2.0, 0.0]], dtype=np.float32), top_k=2), None
    yield "k larger than the vocabulary", dict(scores=np.array([[1.0, 0.0]], dtype=np.float32), top_k=5), None
    yield "-inf already present", dict(scores=np.array([[-np.inf, 1.0, 0.5, -np.inf]], dtype=np.float32),
                                       top_k=3), None
    rng = _rng("top_k_filter")
    for i in range(5):
        yield f"random {i}", dict(scores=_scores(rng, 3, 10), top_k=int(rng.integers(1, 8))), None


def _cases_llama_top_p() -> Iterator[Case]:
    # the top-p article's example (section 3.2: [0.1, 0.3, 0.4, 0.15, 0.05], p = 0.8), a tie at the cut,
    # a row where the mass of the top tokens equals p exactly, random rows
    yield "the top-p article's example", dict(probs=np.array([[0.1, 0.3, 0.4, 0.15, 0.05]], dtype=np.float32), p=0.8), None
    yield "a tie at the cut: the lower token id is kept", dict(
        probs=np.array([[0.05, 0.1, 0.6, 0.15, 0.1]], dtype=np.float32), p=0.8), None
    yield "mass exactly p", dict(probs=np.array([[0.5, 0.25, 0.125, 0.0625, 0.0625]], dtype=np.float32),
                                 p=0.75), None
    yield "p = 1 keeps everything", dict(probs=np.array([[0.7, 0.2, 0.1]], dtype=np.float32), p=1.0), None
    rng = _rng("llama_top_p")
    for i in range(5):
        probs = rng.dirichlet(np.ones(8), size=2).astype(np.float32)
        yield f"random {i}", dict(probs=probs / probs.sum(axis=1, keepdims=True), p=float(rng.uniform(0.1, 0.95))), None


# ---- tutorial 05: beam search's pool of finished hypotheses ------------------------------------------


def _cases_hypothesis_score() -> Iterator[Case]:
    for sum_logprobs, length, alpha in [(-3.0, 3, 1.0), (-3.0, 3, 0.0), (-3.0, 3, 2.0), (-3.0, 4, -1.0),
                                        (-0.5, 1, 1.0), (-7.25, 5, 0.6)]:
        hyps = BeamHypotheses(num_beams=1, length_penalty=alpha, early_stopping=False)
        hyps.add(np.zeros(9, dtype=np.int64), sum_logprobs, generated_len=length)
        yield f"sum {sum_logprobs}, length {length}, alpha {alpha}", dict(
            sum_logprobs=sum_logprobs, generated_len=length, length_penalty=alpha), hyps.beams[0][0]


def _cases_is_done() -> Iterator[Case]:
    grid = itertools.product([True, False, "never"], [1.0, 0.0, -1.0, 2.0], [(-1.0, -3.0), (-1.0, -1.5), (-1.0, -4.5),
                                                                                 (-10.0, -3.0)])
    for early_stopping, alpha, (worst, best) in grid:
        kwargs = dict(worst_score=worst, best_sum_logprobs=best, cur_len=6, length_penalty=alpha,
                      early_stopping=early_stopping, max_length=10, decoder_prompt_len=3)
        hyps = BeamHypotheses(num_beams=1, length_penalty=alpha, early_stopping=early_stopping, max_length=10)
        hyps.add(np.zeros(4, dtype=np.int64), worst, generated_len=1)     # score = worst / 1**alpha = worst
        assert hyps.worst_score == worst
        yield (f"early_stopping={early_stopping!r}, alpha={alpha}, worst={worst}, best={best}", kwargs,
               hyps.is_done(best, cur_len=6, decoder_prompt_len=3))


# ---- tutorial 06: diverse beams ------------------------------------------------------------------


def _cases_hamming() -> Iterator[Case]:
    rng = _rng("hamming_penalty")
    yield "hand", dict(scores=np.array([[1.0, 2.0, 3.0, 4.0]], dtype=np.float32),
                       previous_tokens=np.array([3, 3, 1]), diversity_penalty=0.5), None
    yield "first group: nothing before it", dict(scores=np.array([[1.0, 2.0]], dtype=np.float32),
                                                  previous_tokens=np.array([], dtype=np.int64),
                                                  diversity_penalty=1.0), None
    for i in range(5):
        yield f"random {i}", dict(scores=_scores(rng, 2, 8), previous_tokens=rng.integers(0, 8, size=4),
                                  diversity_penalty=float(rng.uniform(0.1, 3.0))), None


def _hamming_reference(scores: np.ndarray, previous_tokens: np.ndarray, diversity_penalty: float) -> np.ndarray:
    """refdecode's HammingDiversityLogitsProcessor for one prompt: ``scores`` are the rows of group
    g = len(previous_tokens) // group size, ``previous_tokens`` what groups 0..g-1 chose this step."""
    group_size = scores.shape[0]
    previous = np.asarray(previous_tokens, dtype=np.int64)
    group = len(previous) // group_size
    n_groups = max(group + 1, 2)                                  # the processor needs >= 2 groups
    current = np.zeros(group_size * n_groups, dtype=np.int64)     # (K,): the tokens chosen this step
    current[: len(previous)] = previous
    processor = HammingDiversityLogitsProcessor(diversity_penalty, num_beams=group_size * n_groups,
                                                num_beam_groups=n_groups)
    return processor(None, scores, current_tokens=current, beam_group_idx=group)


def _cases_hamming_whole() -> Iterator[Case]:
    for label, kwargs, _ in _cases_hamming():
        yield label, kwargs, _hamming_reference(**kwargs)


def _cases_top_candidates() -> Iterator[Case]:
    from refdecode.decoding.beam.bookkeeping import top_candidates
    total = np.array([[[-1.0, -3.0, -2.5], [-1.2, -0.5, -4.0]]], dtype=np.float32)
    yield "both beams contribute", dict(total=total, n=4), tuple(a.tolist() for a in top_candidates(total, 4))
    first = np.array([[[-1.0, -2.0, -3.0], [-1e9, -1e9, -1e9]]], dtype=np.float32)
    yield "step 1: every candidate from beam 0", dict(total=first, n=4), tuple(a.tolist() for a in top_candidates(first, 4))
    ties = np.array([[[-1.0, -1.0], [-1.0, -2.0]]], dtype=np.float32)
    yield "ties: lower beam*V + token first", dict(total=ties, n=3), tuple(a.tolist() for a in top_candidates(ties, 3))
    rng = _rng("top_candidates")
    for i in range(4):
        t = rng.normal(size=(2, 3, 7)).astype(np.float32)
        yield f"random {i}", dict(total=t, n=6), tuple(a.tolist() for a in top_candidates(t, 6))


def _same_candidates(expected: Any, got: Any) -> str | None:
    try:
        scores, beams, tokens = (np.asarray(a) for a in got)
    except (TypeError, ValueError):
        return "return a tuple (scores, beams, tokens)"
    for name, e, g in zip(("scores", "beams", "tokens"), expected, (scores, beams, tokens)):
        if g.shape != np.shape(e) or not np.allclose(g, e):
            return f"{name} differ"
    return None


# ---- tutorial 07: generate() ---------------------------------------------------------------------------


def _cases_generation_mode() -> Iterator[Case]:
    from refdecode.dispatch import generation_mode
    for kwargs in [{}, {"do_sample": True}, {"num_beams": 4}, {"num_beams": 4, "do_sample": True},
                   {"num_beams": 4, "num_beam_groups": 2, "diversity_penalty": 1.0}, {"num_beams": 1, "top_k": 5},
                   {"num_beams": 2, "num_beam_groups": 2, "diversity_penalty": 0.5}]:
        yield f"{kwargs}", dict(config=dict(kwargs)), generation_mode(GenerationConfig(**kwargs))


def _cases_stop_on_token() -> Iterator[Case]:
    probs = np.array([[0.1, 0.5, 0.4, 0.0], [0.1, 0.1, 0.3, 0.5], [0.6, 0.1, 0.1, 0.2], [0.3, 0.3, 0.2, 0.2]],
                     dtype=np.float32)
    with np.errstate(divide="ignore"):
        table = np.log(probs)
    for start, token in [(1, 3), (0, 2), (2, 0), (3, 1), (1, 0)]:
        expected = generate(TableModel(table, eos_token_id=token), np.array([[start]]), max_new_tokens=8)

        def validate(criterion: Any, start: int = start, expected: np.ndarray = expected) -> str | None:
            got = generate(TableModel(table), np.array([[start]]), max_new_tokens=8, stopping_criteria=[criterion])
            if np.array_equal(got, expected):
                return None
            why = ("it stopped before the token was generated: look at the last token, input_ids[:, -1]"
                   if got.shape[1] < expected.shape[1] else
                   "it did not stop at the token: return True once input_ids[:, -1] == token_id")
            return f"{why} (generate with your criterion gives {got.shape[1]} tokens)"
        yield f"start {start}, stop at {token}", dict(token_id=token), validate


def _stop_on_token_compare(expected: Any, got: Any) -> str | None:
    return expected(got)


# ---- the list ----------------------------------------------------------------------------------------


def _processor_cases(make: Callable[..., Any], cases: Callable[[], Iterator[Case]]) -> Callable[[], Iterator[Case]]:
    """Cases whose expected answer is ``make(**kwargs)``: refdecode's own processor on the same input."""
    def with_expected() -> Iterator[Case]:
        for label, kwargs, _ in cases():
            yield label, kwargs, make(**kwargs)
    return with_expected


def _copy_args(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


EXERCISES: dict[str, Exercise] = {e.name: e for e in [
    Exercise("sequence_probability", 1, "P(tokens[1:] | tokens[0]) under a bigram probability table",
             _cases_sequence_probability, same_float),
    Exercise("greedy_path", 1, "the tokens greedy search appends to [start] in `steps` steps",
             _cases_greedy_path, same_ints),
    Exercise("beams_miss_the_best", 1, "a tree where 2 beams miss the best 2-word continuation and 3 find it",
             lambda: iter([("your tree", {}, _check_tree)]), validated),
    Exercise("position_ids", 2, "the position ids of a left-padded batch (pads at 1)",
             _cases_position_ids, same_ints),
    Exercise("reorder_rows", 2, "the cache rows after a beam step: row i <- old row beam_idx[i]",
             _cases_reorder_rows, same_scores),
    Exercise("rope", 2, "RoPE on (B, H, T, D) queries, transformers' rotate_half layout",
             _processor_cases(_rope, _cases_rope), same_scores),
    Exercise("repetition_penalty", 3, "the repetition penalty (divide positive scores, multiply negative ones)",
             _processor_cases(lambda input_ids, scores, penalty:
                              RepetitionPenaltyLogitsProcessor(penalty)(input_ids, scores), _cases_repetition_penalty),
             same_scores),
    Exercise("no_repeat_ngram_banned", 3, "the tokens NoRepeatNGram bans after `row` (sorted list)",
             _cases_no_repeat_ngram, same_ints),
    Exercise("min_length", 3, "MinLength: eos gets -inf while the sequence is shorter than min_length",
             _processor_cases(lambda input_ids, scores, min_length, eos_token_id:
                              MinLengthLogitsProcessor(min_length, eos_token_id)(input_ids, scores), _cases_min_length),
             same_scores),
    Exercise("temperature_softmax", 4, "softmax(logits / T)",
             _processor_cases(lambda logits, temperature:
                              softmax(TemperatureLogitsWarper(temperature)(None, logits)), _cases_temperature),
             same_scores),
    Exercise("top_k_filter", 4, "top-k: -inf for every score below the k-th largest",
             _processor_cases(lambda scores, top_k: TopKLogitsWarper(top_k)(None, scores), _cases_top_k), same_scores),
    Exercise("llama_top_p", 4, "llama's sample_top_p filter (the top-p article), renormalised",
             _processor_cases(lambda probs, p: llama_top_p_probs(probs, p), _cases_llama_top_p), same_scores),
    Exercise("hypothesis_score", 5, "a finished hypothesis' score: sum_logprobs / generated_len ** length_penalty",
             _cases_hypothesis_score, same_float),
    Exercise("is_done", 5, "BeamHypotheses.is_done for a full pool, in every early_stopping mode",
             _cases_is_done, same_value),
    Exercise("hamming_penalty", 6, "subtract diversity_penalty x (times each token was chosen by earlier groups)",
             _cases_hamming_whole, same_scores),
    Exercise("top_candidates", 6, "the n best (score, beam, token) over all K*V candidates of each prompt",
             _cases_top_candidates, _same_candidates),
    Exercise("generation_mode", 7, "the loop generate() runs for a dict of GenerationConfig fields",
             _cases_generation_mode, same_value),
    Exercise("stop_on_token", 7, "a StoppingCriteria subclass that stops once the last token is `token_id`",
             _cases_stop_on_token, _stop_on_token_compare),
]}


def exercises_of(tutorial: int) -> list[Exercise]:
    """The exercises at the end of tutorial ``tutorial`` (1-7), in order."""
    return [e for e in EXERCISES.values() if e.tutorial == tutorial]


def _short(value: Any) -> str:
    text = np.array2string(value, precision=4, threshold=20) if isinstance(value, np.ndarray) else repr(value)
    return text if len(text) < 300 else text[:300] + " ..."


class _Signature(TypeError):
    """Your function's parameters fit the exercise's neither by name nor by number."""


def call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call ``fn`` with the case's arguments: by keyword when its parameter names allow it, else positionally
    in the exercise's order (``def llama_top_p(x, threshold)`` works as well as ``(probs, p)``)."""
    args = _copy_args(kwargs)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):      # a builtin or C function: try keywords
        return fn(**args)
    try:
        signature.bind(**args)
    except TypeError:
        try:
            signature.bind(*args.values())
        except TypeError:
            raise _Signature(f"your function takes {signature}; the exercise passes ({', '.join(args)})") from None
        return fn(*args.values())
    return fn(**args)


# ---- refusing refdecode's own answer ---------------------------------------------------------------------

REFDECODE_DIR = Path(inspect.getfile(generate)).resolve().parent
#: Exercises whose answer is meant to be used with refdecode (a criterion subclass, a tree for its beam search).
USES_REFDECODE = {"stop_on_token", "beams_miss_the_best"}


def refdecode_origin(fn: Any) -> str | None:
    """``"refdecode/..."`` if ``fn`` (a function, a class, a partial, a bound method) is refdecode's own, else None."""
    inner = getattr(fn, "func", getattr(fn, "__func__", fn))
    if str(getattr(inner, "__module__", "") or "").split(".")[0] == "refdecode":
        return f"{inner.__module__}.{getattr(inner, '__qualname__', type(inner).__name__)}"
    code = getattr(inner, "__code__", None)
    if code is not None and Path(code.co_filename).resolve().is_relative_to(REFDECODE_DIR):
        return f"code in {Path(code.co_filename).name}"
    return None


@functools.lru_cache(maxsize=None)
def _in_refdecode(filename: str) -> str | None:
    """``"refdecode/x/y.py"`` if ``filename`` is a file of the refdecode package, else None."""
    path = Path(filename)
    if not path.is_absolute() or not path.resolve().is_relative_to(REFDECODE_DIR):
        return None
    return path.resolve().relative_to(REFDECODE_DIR.parent).as_posix()


def watched_call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> tuple[Any, str | None]:
    """``call(fn, kwargs)``, and the first refdecode function it reached (Python-level calls, watched with
    ``sys.setprofile``), as ``"name (refdecode/path.py)"``, or None."""
    reached: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and not reached:
            where = _in_refdecode(frame.f_code.co_filename)
            if where:
                name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)   # 3.11+: Class.method
                reached.append(f"{name} ({where})")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        got = call(fn, kwargs)
    finally:
        sys.setprofile(previous)
    return got, (reached[0] if reached else None)


def _agrees(name: str, mimic: Callable[..., Any], kwargs: dict[str, Any], got: Any) -> bool:
    """Does the mistake ``mimic`` give your answer ``got`` on this case?"""
    compare = EXERCISES[name].compare
    try:
        with np.errstate(all="ignore"):
            theirs = mimic(**_copy_args(kwargs))
        return compare(np.asarray(theirs) if compare is same_scores else theirs, got) is None
    except Exception:   # noqa: BLE001 -- a mimic that does not apply to this case is no diagnosis
        return False


def diagnose(name: str, fn: Callable[..., Any], cases: list[Case], failing: int) -> str | None:
    """The typical mistake (``_lab_guide.GUIDES[name].mistakes``) your answer makes, or None.

    A mistake your function reproduces on every case wins; else the first one it reproduces on the failing case
    (two mistakes can give the same wrong answer on one case and differ on others)."""
    label, kwargs, expected = cases[failing]
    got = call(fn, kwargs)
    yours = []
    for _, case_kwargs, _ in cases:
        try:
            yours.append(call(fn, case_kwargs))
        except Exception:   # noqa: BLE001
            yours.append(None)
    on_this_case = None
    for mistake in GUIDES[name].mistakes:
        if mistake.test is not None:
            if on_this_case is None and mistake.test(expected, got):
                on_this_case = mistake.message
            continue
        if not _agrees(name, mistake.mimic, kwargs, got):
            continue
        if all(_agrees(name, mistake.mimic, k, y) for (_, k, _), y in zip(cases, yours)):
            return mistake.message
        on_this_case = on_this_case or mistake.message
    return on_this_case


# Which hints you have seen, per exercise, kept across runs of the tutorials (a script run or a kernel restart
# starts where you stopped). The file is git-ignored; reset_hints() or deleting it starts over.
HINTS_FILE = Path(__file__).resolve().parent / ".hints.json"


def _hint_stages() -> dict[str, int]:
    """exercise name -> the highest hint stage shown so far, from HINTS_FILE ({} if absent or unreadable)."""
    try:
        data = json.loads(HINTS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}


def hint(name: str, stage: int | None = None) -> str:
    """Print (and return) hint ``stage`` (1 = a nudge, the last nearly the answer) of exercise ``name``;
    without ``stage``, the next hint not shown yet, counted across runs (HINTS_FILE)."""
    hints = GUIDES[name].hints
    shown = _hint_stages()
    if stage is None:
        stage = min(shown.get(name, 0) + 1, len(hints))
    if not 1 <= stage <= len(hints):
        raise ValueError(f"`stage` has to be an int in [1, {len(hints)}] for {name!r}, but is {stage}")
    shown[name] = max(shown.get(name, 0), stage)
    try:
        HINTS_FILE.write_text(json.dumps(shown, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        kept = ""
    except OSError:   # a read-only checkout: the hint is shown, the stage is not remembered
        kept = f"; could not write {HINTS_FILE.name}, so pass the stage: hint({name!r}, {stage + 1})"
    more = (f"next: hint({name!r}) again" if shown[name] < len(hints) else "that was the last hint")
    text = f"hint {stage}/{len(hints)} for {name}: {hints[stage - 1]}"
    print(f"{text}\n      ({more}; hint({name!r}, 1) rereads one; reset_hints() starts over{kept})")
    return text


def reset_hints(name: str | None = None) -> None:
    """Forget the hints shown for ``name`` (or for every exercise): the next hint() starts at 1 again."""
    shown = {} if name is None else {k: v for k, v in _hint_stages().items() if k != name}
    try:
        HINTS_FILE.write_text(json.dumps(shown, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError:
        pass


def run(name: str, fn: Callable[..., Any]) -> tuple[bool, str]:
    """(all cases match, the report) for exercise ``name`` and your function ``fn``."""
    exercise = EXERCISES[name]
    title = f"{name} {stars(GUIDES[name].level)}"
    stuck = f'\n      stuck? hint("{name}") ({len(GUIDES[name].hints)} staged hints)'
    origin = refdecode_origin(fn)
    if origin:
        return False, f"[x] {title}: refused: that is refdecode's own {origin}; the exercise is to write it yourself"
    cases = list(exercise.cases())
    for i, (label, kwargs, expected) in enumerate(cases):
        try:
            got, reached = watched_call(fn, kwargs) if name not in USES_REFDECODE else (call(fn, kwargs), None)
            if reached:
                return False, (f"[x] {title}: refused: your function calls refdecode's {reached}; the exercise is "
                               "to write it yourself (numpy only)")
            problem = exercise.compare(expected, got)   # open exercises run your object here
        except NotImplementedError:
            return False, f"[ ] {title}: not attempted yet ({exercise.task})"
        except _Signature as err:
            return False, f"[x] {title}: {err}"
        except Exception as err:   # noqa: BLE001 -- a student's bug is a report, not a crash
            return False, f"[x] {title}: case {i + 1}/{len(cases)} ({label}) raised {type(err).__name__}: {err}{stuck}"
        if problem:   # the input and what differs; never the expected answer
            args = ", ".join(f"{k}={_short(v)}" for k, v in kwargs.items())
            why = None if callable(expected) else diagnose(name, fn, cases, i)
            why_line = f"\n      why      {why}" if why else stuck
            return False, (f"[x] {title}: case {i + 1}/{len(cases)} ({label}): {problem}\n      input    {args}"
                           f"{why_line}")
    return True, f"[v] {title}: all {len(cases)} cases match refdecode"


def check(name: str, fn: Callable[..., Any]) -> bool:
    """Run exercise ``name`` on your function, print the report, return whether every case matched."""
    ok, report = run(name, fn)
    print(report)
    return ok
