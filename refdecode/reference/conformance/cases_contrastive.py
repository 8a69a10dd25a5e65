r"""Contrastive search: the ranking step any language can implement, and whole decodes on the tiny GPT-2s.

Contract: registers ``contrastive_ranking`` (context hidden states (N, S, E), candidate hidden
states (N, k, E), the candidates' probabilities (N, k) and ``penalty_alpha`` -> each row's selected
candidate and the float32 scores, :func:`refdecode.decoding.contrastive_search.rank_candidates`) and
``gpt2_contrastive_search`` (``generate(penalty_alpha=, top_k=)`` on the tiny checkpoints of
``tests/golden/models`` with the prompts and settings of tests/golden/decode_contrastive.npz, made
by transformers 4.38.2; the toy model has no hidden states, so no toy cases).

Margins: per row (ranking) or per step and row (decodes), the gap between the best and the
second-best contrastive score, over the row's scale; ``None`` for finished rows.
"""

from __future__ import annotations

import numpy as np


from ...decoding.contrastive_search import contrastive_scores, rank_candidates
from .cases_decode import (CONFIG, GPT2_MODEL, OUTPUT, DecisionRecorder, compare_decode_case, decode, golden_cases,
                           model_for, quiet_generate, row_gap)
from .kinds import F32, FLOAT, I64, Obj, obj
from .registry import Case, CaseType, register

_RULE = ("score = (1 - penalty_alpha) * p - penalty_alpha * max_j cos(h_candidate, h_context_j), cosines of "
         "vectors each divided by its L2 norm, float32")


def _ranking(inp: dict) -> tuple[np.ndarray, np.ndarray]:
    alpha = float(inp["penalty_alpha"])
    scores = contrastive_scores(inp["context"], inp["candidates"], inp["probs"], alpha)  # (N, k)
    return rank_candidates(inp["context"], inp["candidates"], inp["probs"], alpha), scores


def _run_ranking(inp: dict) -> dict:
    selected, scores = _ranking(inp)
    return {"selected": selected.astype(np.int64), "scores": scores.astype(np.float32)}


def _ranking_margins(inp: dict, out: dict) -> list:
    return [row_gap(np.sort(row)[::-1][:2]) for row in _ranking(inp)[1]]


def _build_ranking() -> list[Case]:
    rng, cases = np.random.default_rng(181), []
    while len(cases) < 40:
        i = len(cases)
        n, s, k, e = int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.integers(2, 7)), int(rng.integers(2, 9))
        context = rng.standard_normal((n, s, e)).astype(np.float32)
        candidates = rng.standard_normal((n, k, e)).astype(np.float32)
        if i % 3 == 0:  # a candidate repeating a context state (penalty 1), scaled: cosine ignores length
            candidates[:, 0] = context[:, -1] * np.float32(2.5)
        probs = np.sort(rng.dirichlet(np.ones(k) * 0.7, n).astype(np.float32), axis=-1)[:, ::-1].copy()
        note = "random states" + (", candidate 0 repeats the last context state" if i % 3 == 0 else "")
        if i % 8 == 5:  # two identical candidates with equal probabilities: an exact tie, the first wins
            candidates[:, 1], probs[:, 1] = candidates[:, 0], probs[:, 0]
            note += ", candidates 0 and 1 identical (tie)"
        inp = {"context": context, "candidates": candidates, "probs": probs,
               "penalty_alpha": float(rng.choice([0.0, 0.2, 0.5, 0.6, 0.9, 1.0]))}
        margins = [m for m in _ranking_margins(inp, {}) if m is not None]
        if i % 8 != 5 and margins and min(margins) <= 1e-3:
            continue
        cases.append(Case(note, inp))
    return cases


register(CaseType(
    name="contrastive_ranking", groups=("contrastive",),
    summary="contrastive search's ranking (transformers' _ranking_fast): " + _RULE + "; selected = argmax of each "
            "row's scores. context (N, S, E) holds every earlier position's last hidden state (after ln_f), "
            "candidates (N, k, E) the k candidates', probs (N, k) their softmax probabilities, most probable first.",
    inputs=obj(context=F32(3), candidates=F32(3), probs=F32(2), penalty_alpha=FLOAT),
    outputs=obj(selected=I64(1), scores=F32(2)), build=_build_ranking, run=_run_ranking, margins=_ranking_margins,
    tie_rule="equal contrastive scores: the first (most probable) candidate"))


# ----------------------------------------------------------------------------------------------
# gpt2_contrastive_search


def _run_contrastive(inp: dict) -> tuple[dict, list]:
    config = dict(inp["config"])
    model = model_for(inp["model"], config)
    recorder = DecisionRecorder()
    out = quiet_generate(model, inp, config, trace=recorder)
    gaps = [[row_gap(np.sort(row)[::-1][:2]) for row in scores] for scores in recorder.rankings]
    output = {"sequences": out.sequences, "scores": [np.asarray(s) for s in out.scores]}
    generated, eos = out.sequences[:, inp["input_ids"].shape[1]:], config["eos_token_id"]
    margins = [[None if np.isin(generated[r, :t], eos).any() else m for r, m in enumerate(step)]
               for t, step in enumerate(gaps)]
    return output, margins


def _build_gpt2_contrastive() -> list[Case]:
    cases = golden_cases("decode_contrastive.npz", ("contrastive",), False)
    for case in cases:
        for name in ("output_hidden_states", "output_attentions"):
            case.input["config"].pop(name, None)
    return cases


register(CaseType(
    name="gpt2_contrastive_search", groups=("decode", "gpt2", "contrastive"),
    summary="contrastive search (penalty_alpha > 0, top_k > 1): processors on the raw logits, softmax, the top_k "
            "most probable tokens (equal probabilities: lower id first) each run through the model for its last "
            "hidden state; " + _RULE + " over every earlier position, prompt and padding included; the best "
            "candidate is appended and its cache and hidden state kept; finished rows get pad_token_id",
    inputs=obj(model=GPT2_MODEL, input_ids=I64(2), attention_mask=I64(2),
               config=Obj(CONFIG.fields + (("penalty_alpha", FLOAT),))),
    outputs=OUTPUT, build=_build_gpt2_contrastive, tie_rule="equal contrastive scores: the first (most probable) "
                                                             "candidate",
    run=lambda inp: decode(inp, _run_contrastive)[0], margins=lambda inp, out: decode(inp, _run_contrastive)[1],
    compare=compare_decode_case))
