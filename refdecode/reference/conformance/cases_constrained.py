r"""Constrained beam search: the constraint state machines token by token, and whole decodes on the toy model.

Contract: registers ``constraint_states`` (a ``ConstraintListState`` built from ``force_words_ids``,
fed the case's tokens one at a time: after each token its ``add`` result, bank, ``advance()`` and
``completed``) and ``constrained_beam_search`` (``generate(force_words_ids=...)`` on the toy model of
``toy_model.py``, so any language can run it). An entry of ``force_words_ids`` that is a list of
ints is a phrase (its tokens consecutively, in order); a list of lists of ints is a disjunctive
constraint (any one of the phrases). Expected values come from refdecode's port of transformers
4.38.2, golden-checked by tests/golden/decode_constrained.npz.

The quirks a port has to keep (refdecode/decoding/beam/constraints.py states them; they are the summary's
rules): a phrase that breaks off loses the breaking token (it is not tried as the start of any
constraint); the in-progress constraint alone is fed while one is in progress; ``bank`` =
complete * M + (M - remaining of the in-progress one), M the longest constraint's length; feeding
tokens after ``completed`` changes nothing and answers ``[true, false]``; in the beam search a
disjunctive constraint's stateful copy shares its progress list with the original.

No decode case returns a fallback hypothesis (a beam that misses a constraint, kept when fewer than
``num_return_sequences`` beams fulfil them all): transformers 4.38.2 crashes there when it records
scores, so the expected ``beam_indices`` would be refdecode's alone.

Margins of the decodes (per step, per prompt): the smallest gap between the scores of a superset
of the step's candidates (the top ``2K`` and every constraint token of every beam), over the scale.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

import refdecode as rd
from refdecode.decoding.beam.constraints import constraints_from_config

from .cases_decode import BEAM_OUTPUT, CONFIG, MIN_MARGIN, TOY, compare_decode_case, describe, model_for, row_gap
from .cases_decode import DecisionRecorder, smallest, toy_prompt, decode, full_config, quiet_generate
from .kinds import ANY, BOOL, I64, INT, ListOf, Nullable, Obj, obj
from .registry import Case, CaseType, register

FORCE_WORDS = ListOf(ANY)  # [[t, ...] (a phrase) or [[t, ...], [t, ...]] (one of these phrases), ...]


def _constraint_tokens(force_words_ids: list) -> list[int]:
    """Every token id that appears in force_words_ids."""
    flat: set[int] = set()
    for entry in force_words_ids:
        for item in entry:
            flat.update(item if isinstance(item, list) else [item])
    return sorted(flat)


def _random_force_words(rng: np.random.Generator, alphabet: int) -> list:
    """1-2 entries: a phrase of 1-3 tokens, or a disjunctive list of 2-3 phrases of 1-2 tokens."""
    entries: list = []
    for _ in range(int(rng.integers(1, 3))):
        if rng.random() < 0.6:
            entries.append([int(t) for t in rng.integers(0, alphabet, int(rng.integers(1, 4)))])
        else:
            phrases = {tuple(int(t) for t in rng.integers(0, alphabet, int(rng.integers(1, 3)))) for _ in range(3)}
            phrases = {p for p in phrases if not any(q != p and q[: len(p)] == p for q in phrases)}  # no prefixes
            entries.append([list(p) for p in sorted(phrases)] if len(phrases) > 1 else list(next(iter(phrases))))
    return entries


# ----------------------------------------------------------------------------------------------
# constraint_states


def _run_states(inp: dict) -> dict:
    state = rd.ConstraintListState(constraints_from_config(None, inp["force_words_ids"]))
    added, banks, advances, completed = [], [], [], []
    for token in inp["tokens"]:
        complete, stepped = state.add(int(token))
        added.append([bool(complete), bool(stepped)])
        banks.append(int(state.get_bank()))
        advance = state.advance()
        advances.append(None if advance is None else [int(t) for t in advance])
        completed.append(bool(state.completed))
    return {"added": added, "bank": banks, "advance": advances, "completed": completed}


def _build_states() -> list[Case]:
    rng, cases = np.random.default_rng(171), []
    for i in range(40):
        alphabet = int(rng.choice([3, 4, 6]))
        words = _random_force_words(rng, alphabet)
        tokens = [int(t) for t in rng.integers(0, alphabet + 1, int(rng.integers(4, 13)))]
        if i % 4 == 0:  # a repeated first token: "a a b" against [a, b] loses the second a's chance (quirk 1)
            tokens = [t for token in tokens for t in ([token, token] if rng.random() < 0.3 else [token])]
        cases.append(Case(f"{len(words)} constraint(s), {len(tokens)} tokens", {"force_words_ids": words,
                                                                             "tokens": tokens}))
    return cases


register(CaseType(
    name="constraint_states", groups=("constrained",),
    summary="ConstraintListState of transformers 4.38.2 fed one token at a time: after each token, add's "
            "[complete, stepped], get_bank(), advance() (null when nothing advances) and completed. While a "
            "constraint is in progress only it is fed; a token that breaks a phrase resets it to pending and is "
            "lost (not tried as the start of any constraint); pending constraints are tried in order, the first "
            "that the token advances takes it; bank = complete * M + (M - remaining of the in-progress one), M "
            "the longest constraint; after completed every token answers [true, false].",
    inputs=obj(force_words_ids=FORCE_WORDS, tokens=ListOf(INT)),
    outputs=obj(added=ListOf(ListOf(BOOL)), bank=ListOf(INT), advance=ListOf(Nullable(ListOf(INT))),
                completed=ListOf(BOOL)),
    build=_build_states, run=_run_states))


# ----------------------------------------------------------------------------------------------
# constrained_beam_search


def _run_constrained(inp: dict) -> tuple[dict, list]:
    config = dict(inp["config"])
    model = model_for(inp["model"], config)
    forced = _constraint_tokens(config["force_words_ids"])
    recorder = DecisionRecorder()
    out = quiet_generate(model, inp, config, trace=recorder)
    k, steps = config["num_beams"], []
    for (_, next_scores, done), all_vocab in zip(recorder.beam, recorder.totals):
        gaps = []
        for b in range(next_scores.shape[0]):
            values = np.concatenate([next_scores[b], all_vocab[b * k:(b + 1) * k, forced].ravel()])
            values = values[values > -1e8]  # beams not yet live (-1e9) are never chosen
            gaps.append(None if done[b] else row_gap(np.sort(values)[::-1]))
        steps.append(gaps)
    output = {"sequences": out.sequences, "scores": [np.asarray(s) for s in out.scores],
              "sequences_scores": out.sequences_scores, "beam_indices": out.beam_indices}
    return output, steps


def _fallback_returned(output: dict) -> bool:
    """Is a fallback hypothesis (a beam missing a constraint, added without beam indices) among the returned?
    transformers 4.38.2 crashes there with output_scores (``len(None)``), so no case goes there."""
    indices = output["beam_indices"]
    return indices is None or bool((indices[:, 0] == -1).any())


def _build_constrained(count: int, seed: int) -> Iterator[Case]:
    rng, made = np.random.default_rng(seed), 0
    while made < count:
        vocab, buckets = int(rng.integers(6, 13)), int(rng.integers(4, 17))
        eos = [int(rng.integers(0, vocab))]
        beams = int(rng.integers(2, 6))
        config = full_config(
            max_new_tokens=int(rng.integers(2, 8)), eos_token_id=eos, num_beams=beams,
            num_return_sequences=int(rng.integers(1, beams + 1)),
            length_penalty=float(rng.choice([-1.0, 0.0, 1.0, 2.0])),
            early_stopping=[True, False, "never"][int(rng.integers(0, 3))],
            repetition_penalty=float(rng.choice([1.0, 1.0, 1.3])), no_repeat_ngram_size=int(rng.choice([0, 0, 2])))
        config["force_words_ids"] = _random_force_words(rng, vocab)
        bigram = (rng.standard_normal((vocab, vocab)) * 2.0).astype(np.float32)
        bigram[:, eos] += np.float32(1.0)
        model = {"kind": "toy", "bigram": bigram, "mix": rng.standard_normal((buckets, vocab)).astype(np.float32)}
        ids, mask = toy_prompt(rng, vocab, config["pad_token_id"])
        inp = {"model": model, "input_ids": ids, "attention_mask": mask, "config": config}
        try:
            output, margins = decode(inp, _run_constrained)
        except ValueError:
            continue
        if _fallback_returned(output):
            continue
        if smallest(margins) > MIN_MARGIN:
            made += 1
            yield Case(describe(config, ids, mask) + f", force_words_ids={config['force_words_ids']}", inp)


_CASES = 40  # _build_constrained draws until it has made this many

register(CaseType(
    name="constrained_beam_search", groups=("decode", "toy", "beam", "constrained"),
    summary="constrained beam search (force_words_ids): as beam search, then per prompt the top 2K candidates plus, "
            "for every beam whose constraints are not all complete, each token its ConstraintListState would advance "
            "(sequences not already proposed); each candidate's bank is that of its whole sequence replayed from the "
            "start; sort by 100 * bank + score (float32, descending, stable), number the candidates within each run "
            "of equal banks of that order (0, 1, ...) and keep the K with the smallest numbers (stable): the best of "
            "every bank first; finalize prefers hypotheses that fulfil every constraint",
    inputs=obj(model=TOY, input_ids=I64(2), attention_mask=I64(2),
               config=Obj(CONFIG.fields + (("force_words_ids", FORCE_WORDS),))),
    outputs=BEAM_OUTPUT, build=functools.partial(_build_constrained, _CASES, 306), count=lambda: _CASES,
    tie_rule="candidates with equal scores: the lower flat index beam * V + token first, then the proposed "
             "constraint tokens in beam order; within a bank a stable sort by score (descending)",
    run=lambda inp: decode(inp, _run_constrained)[0], margins=lambda inp, out: decode(inp, _run_constrained)[1],
    compare=compare_decode_case))
