r"""Beam searches with exact ties, where the tie rules decide the output.

Contract: registers ``beam_search_ties``, beam search on the toy model (the request and output of
``beam_search``) built so that two tokens are **twins**: equal columns of ``bigram`` and ``mix`` (equal
logits wherever they stand) and equal rows of ``bigram`` with a one-row ``mix`` (equal continuations after
them). Sequences that differ only by a twin then have bit-equal scores, so the candidates tie (the rule:
the lower flat index ``beam * V + token`` first) and so do the finished hypotheses (``finalize``: among
equal scores the later inserted wins, transformers' stable ``sorted`` then ``pop()``). Only decodes whose
output changes when ``finalize`` breaks ties the other way are kept (checked with the ``finalize_order``
plant), so each case tests the rule; a port that reverses it fails them, where the random decodes of
``beam_search`` (drawn away from ties) let it pass.

Margins: 0 at the exact ties (the stated rules decide), else the usual gaps; no other gap below 1e-3.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .cases_decode import (BEAM_OUTPUT, MIN_MARGIN, TOY, TIE_RULE, decode_inputs, compare_decode_case, decode, describe,
                           full_config, toy_prompt)
from .plants import planted
from .registry import Case, CaseType, register

__all__: list[str] = []


def _twin_model(rng: np.random.Generator, vocab: int, eos: list[int]) -> tuple[dict, tuple[int, int]]:
    """Toy tables where two non-eos tokens a < b are interchangeable: equal columns and equal rows."""
    a, b = sorted(int(t) for t in rng.choice([t for t in range(vocab) if t not in eos], 2, replace=False))
    bigram = (rng.standard_normal((vocab, vocab)) * 1.5).astype(np.float32)
    bigram[:, eos] += np.float32(1.5)                      # eos often among the candidates: hypotheses finish
    bigram[:, a] += np.float32(1.0)                        # the twins often among the best
    bigram[:, b] = bigram[:, a]
    bigram[b] = bigram[a]
    mix = rng.standard_normal((1, vocab)).astype(np.float32)
    mix[:, b] = mix[:, a]
    return {"kind": "toy", "bigram": bigram, "mix": mix}, (a, b)


def _positive_margins_clear(margins: list) -> bool:
    values = [m for step in margins for m in step if m is not None and m > 0]
    return not values or min(values) > MIN_MARGIN


def _build(count: int, seed: int) -> Iterator[Case]:
    rng, made = np.random.default_rng(seed), 0
    while made < count:
        vocab = int(rng.integers(5, 10))
        eos = [int(rng.integers(0, vocab))]
        beams = int(rng.integers(2, 5))
        config = full_config(max_new_tokens=int(rng.integers(2, 6)), eos_token_id=eos, num_beams=beams,
                             num_return_sequences=int(rng.integers(1, beams + 1)),
                             length_penalty=float(rng.choice([-1.0, 0.0, 1.0, 2.0])),
                             early_stopping=[True, False, "never"][int(rng.integers(0, 3))])
        model, twins = _twin_model(rng, vocab, eos)
        ids, mask = toy_prompt(rng, vocab, config["pad_token_id"])
        inp = {"model": model, "input_ids": ids, "attention_mask": mask, "config": config}
        try:
            output, margins = decode(inp)
        except ValueError:
            continue
        if not _positive_margins_clear(margins):
            continue
        with planted("finalize_order"):
            reversed_rule, _ = decode(dict(inp))          # a new dict: decode caches by the input object
        if all(np.array_equal(output[k], reversed_rule[k]) for k in ("sequences", "sequences_scores")):
            continue                                       # the finalize tie does not decide anything here
        made += 1
        yield Case(describe(config, ids, mask) + f", twin tokens {twins[0]} and {twins[1]} (exact ties)", inp)


_CASES = 30  # _build draws until it has made this many

register(CaseType(
    name="beam_search_ties", groups=("decode", "toy", "beam"),
    summary="beam search on the toy model (as beam_search) with two interchangeable tokens, so candidates and "
            "finished hypotheses tie exactly; every case's output depends on finalize's tie rule",
    inputs=decode_inputs(TOY, False), outputs=BEAM_OUTPUT, tie_rule=TIE_RULE,
    build=lambda: _build(_CASES, 311), run=lambda inp: decode(inp)[0], margins=lambda inp, out: decode(inp)[1],
    compare=compare_decode_case, count=lambda: _CASES))
