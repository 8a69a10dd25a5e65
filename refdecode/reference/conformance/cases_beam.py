r"""Beam bookkeeping cases: ``BeamHypotheses`` call sequences and ``BeamSearchScorer`` process/finalize steps.

Contract: registers ``beam_hypotheses`` (a list of ``add`` / ``is_done`` calls on one
``refdecode.BeamHypotheses``, the expected state after each: the kept hypotheses in insertion
order and ``worst_score``, or the ``is_done`` answer) and ``beam_scorer`` (the ``process`` calls
and the final ``finalize`` call of one ``refdecode.BeamSearchScorer``, recorded from real beam
searches on the toy model, with every output). Covers every ``early_stopping`` mode, negative,
zero and positive ``length_penalty``, ``decoder_prompt_len``, equal scores (the tie rules), eos
among the candidates, the pad step of prompts already done, several eos ids, and group beam search.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

import refdecode as rd

from .cases_decode import build_toy_cases, run_decode
from .kinds import BOOL, F32, FLOAT, I64, INT, Enum, ListOf, Nullable, obj
from .registry import Case, CaseType, register

EARLY_STOPPING = Enum((True, False, "never"))

# ----------------------------------------------------------------------------------------------
# BeamHypotheses


HYP_CALL = obj(optional=("hyp", "sum_logprobs", "generated_len", "beam_indices", "best_sum_logprobs", "cur_len",
                         "decoder_prompt_len"),
               op=Enum(("add", "is_done")), hyp=I64(1), sum_logprobs=FLOAT, generated_len=INT,
               beam_indices=Nullable(I64(1)), best_sum_logprobs=FLOAT, cur_len=INT, decoder_prompt_len=INT)
HYP = obj(score=FLOAT, hyp=I64(1), beam_indices=Nullable(I64(1)))
HYP_STATE = obj(optional=("done",), beams=ListOf(HYP), worst_score=FLOAT, done=BOOL)


def _run_hypotheses(inp: dict) -> dict:
    hyps = rd.BeamHypotheses(inp["num_beams"], inp["length_penalty"], inp["early_stopping"], inp["max_length"])
    states = []
    for call in inp["calls"]:
        state: dict[str, Any] = {}
        if call["op"] == "add":
            indices = call["beam_indices"]
            hyps.add(np.asarray(call["hyp"]), call["sum_logprobs"],
                     beam_indices=None if indices is None else tuple(int(i) for i in indices),
                     generated_len=call["generated_len"])
        else:
            state["done"] = hyps.is_done(call["best_sum_logprobs"], call["cur_len"], call["decoder_prompt_len"])
        state["beams"] = [{"score": float(s), "hyp": np.asarray(h, dtype=np.int64),
                           "beam_indices": None if b is None else np.asarray(b, dtype=np.int64)}
                          for s, h, b in hyps.beams]
        state["worst_score"] = float(hyps.worst_score)
        states.append(state)
    return {"states": states}


def _build_hypotheses() -> list[Case]:
    rng, cases = np.random.default_rng(401), []
    modes = [True, False, "never"]
    for i in range(120):
        num_beams, prompt = int(rng.integers(1, 5)), int(rng.integers(0, 5))
        penalty = float(rng.choice([-1.5, -0.5, 0.0, 0.0, 0.5, 1.0, 2.0]))
        early = modes[i % 3]
        max_length = prompt + int(rng.integers(4, 12))
        with_indices = bool(rng.integers(0, 2))
        calls, used = [], []
        for _ in range(int(rng.integers(2, 12))):
            if rng.random() < 0.6:
                gen = int(rng.integers(1, max_length - prompt + 1))
                if used and rng.random() < 0.2:  # the same score again: the earliest inserted is dropped first
                    total = used[int(rng.integers(0, len(used)))]
                else:
                    total = float(np.float32(-rng.random() * 8.0 - 0.01))
                used.append(total)
                calls.append({"op": "add", "hyp": rng.integers(0, 50, prompt + gen - 1).astype(np.int64),
                              "sum_logprobs": total, "generated_len": gen,
                              "beam_indices": rng.integers(0, 8, gen).astype(np.int64) if with_indices else None})
            else:
                calls.append({"op": "is_done", "best_sum_logprobs": float(np.float32(-rng.random() * 8.0)),
                              "cur_len": prompt + int(rng.integers(1, max_length - prompt + 1)),
                              "decoder_prompt_len": prompt})
        cases.append(Case(f"early_stopping={early}, length_penalty={penalty}, decoder_prompt_len={prompt}",
                          {"num_beams": num_beams, "length_penalty": penalty, "early_stopping": early,
                           "max_length": max_length, "calls": calls}))
    for penalty in (0.5, 1.0, 2.0):  # "never" with length_penalty > 0: the bound uses max_length, not cur_len
        for gen in (1, 3, 6):
            calls = [{"op": "add", "hyp": np.array([7, 8, 9], dtype=np.int64), "sum_logprobs": -2.0,
                      "generated_len": 2, "beam_indices": None}]
            calls += [{"op": "is_done", "best_sum_logprobs": -2.5, "cur_len": 2 + g, "decoder_prompt_len": 2}
                      for g in (gen, gen + 1)]
            for early in modes:
                cases.append(Case(f"is_done at generated length {gen}: early_stopping={early} with "
                                  f"length_penalty={penalty} (never: max_length bounds the best attainable)",
                                  {"num_beams": 1, "length_penalty": penalty, "early_stopping": early,
                                   "max_length": 12, "calls": calls}))
    for early in modes:  # worst_score equal to the best attainable: done (>=)
        calls = [{"op": "add", "hyp": np.array([3, 4], dtype=np.int64), "sum_logprobs": -2.0, "generated_len": 2,
                  "beam_indices": None},
                 {"op": "is_done", "best_sum_logprobs": -2.0, "cur_len": 3, "decoder_prompt_len": 1}]
        cases.append(Case(f"worst score equals the best attainable (done: >=), early_stopping={early}",
                          {"num_beams": 1, "length_penalty": 0.0, "early_stopping": early, "max_length": 6,
                           "calls": calls}))
    return cases


register(CaseType(
    name="beam_hypotheses", groups=("beam", "beam_bookkeeping"),
    summary="BeamHypotheses: add(hyp, sum_logprobs, beam_indices, generated_len) keeps the num_beams best by "
            "sum_logprobs / generated_len ** length_penalty; is_done(best_sum_logprobs, cur_len, "
            "decoder_prompt_len) per early_stopping (True, False = the heuristic, 'never' = the max_length bound)",
    tie_rule="add: among equal scores the earliest inserted is dropped first; is_done: done when worst_score >= "
             "the best attainable score",
    inputs=obj(num_beams=INT, length_penalty=FLOAT, early_stopping=EARLY_STOPPING, max_length=INT,
               calls=ListOf(HYP_CALL)),
    outputs=obj(states=ListOf(HYP_STATE)), build=_build_hypotheses, run=_run_hypotheses))


# ----------------------------------------------------------------------------------------------
# BeamSearchScorer


SCORER_CALL = obj(
    optional=("next_scores", "next_tokens", "next_indices", "group_index", "final_beam_scores", "max_length"),
    op=Enum(("process", "finalize")), input_ids=I64(2), next_scores=F32(2), next_tokens=I64(2),
    next_indices=I64(2), pad_token_id=INT, eos_token_id=ListOf(INT), beam_indices=Nullable(I64(2)),
    group_index=INT, decoder_prompt_len=INT, final_beam_scores=F32(1), max_length=Nullable(INT))
SCORER_RESULT = obj(
    optional=("next_beam_scores", "next_beam_tokens", "next_beam_indices", "done", "sequences", "sequence_scores",
              "beam_indices"),
    next_beam_scores=F32(1), next_beam_tokens=I64(1), next_beam_indices=I64(1), done=ListOf(ListOf(BOOL)),
    sequences=I64(2), sequence_scores=F32(1), beam_indices=Nullable(I64(2)))
_SCORER_ARGS = ("batch_size", "num_beams", "length_penalty", "do_early_stopping", "num_beam_hyps_to_keep",
                "num_beam_groups", "max_length")


def _history(value: Any) -> Any:
    return None if value is None else np.asarray(value, dtype=np.int64)


def _run_scorer(inp: dict) -> dict:
    scorer = rd.BeamSearchScorer(**{k: inp[k] for k in _SCORER_ARGS})
    results = []
    for call in inp["calls"]:
        common = dict(pad_token_id=call["pad_token_id"], eos_token_id=call["eos_token_id"],
                      beam_indices=_history(call["beam_indices"]), decoder_prompt_len=call["decoder_prompt_len"])
        if call["op"] == "process":
            out = scorer.process(call["input_ids"], call["next_scores"], call["next_tokens"], call["next_indices"],
                                 group_index=call["group_index"], **common)
            results.append({**out, "done": scorer.done.tolist()})
        else:
            out = scorer.finalize(call["input_ids"], call["final_beam_scores"], max_length=call["max_length"],
                                  **common)
            results.append(out)
    return {"results": results}


def _recorded_history(scorer: Any, beam_indices: Any) -> np.ndarray | None:
    """The history handed to the scorer; None for group beam search (its group-major quirk is the decode's business)."""
    return None if beam_indices is None or scorer.num_beam_groups > 1 else np.array(beam_indices, dtype=np.int64)


@contextlib.contextmanager
def _recording_scorer(record: dict):
    """While active, the constructor arguments and every process/finalize call of BeamSearchScorer land in ``record``."""
    init, process, finalize = rd.BeamSearchScorer.__init__, rd.BeamSearchScorer.process, rd.BeamSearchScorer.finalize

    def rec_init(self, batch_size, num_beams, length_penalty=1.0, do_early_stopping=False, num_beam_hyps_to_keep=1,
                 num_beam_groups=1, max_length=None):
        record.update(batch_size=batch_size, num_beams=num_beams, length_penalty=float(length_penalty),
                      do_early_stopping=do_early_stopping, num_beam_hyps_to_keep=num_beam_hyps_to_keep,
                      num_beam_groups=num_beam_groups, max_length=max_length, calls=[])
        init(self, batch_size, num_beams, length_penalty, do_early_stopping, num_beam_hyps_to_keep, num_beam_groups,
             max_length)

    def rec_process(self, input_ids, next_scores, next_tokens, next_indices, pad_token_id=None, eos_token_id=None,
                    beam_indices=None, group_index=0, decoder_prompt_len=0):
        record["calls"].append({"op": "process", "input_ids": np.array(input_ids), "next_scores": np.array(next_scores),
                                "next_tokens": np.array(next_tokens), "next_indices": np.array(next_indices),
                                "pad_token_id": pad_token_id, "eos_token_id": list(eos_token_id),
                                "beam_indices": _recorded_history(self, beam_indices),
                                "group_index": group_index, "decoder_prompt_len": decoder_prompt_len})
        return process(self, input_ids, next_scores, next_tokens, next_indices, pad_token_id, eos_token_id,
                       beam_indices, group_index, decoder_prompt_len)

    def rec_finalize(self, input_ids, final_beam_scores, final_beam_tokens=None, final_beam_indices=None,
                     max_length=None, pad_token_id=None, eos_token_id=None, beam_indices=None, decoder_prompt_len=0):
        record["calls"].append({"op": "finalize", "input_ids": np.array(input_ids),
                                "final_beam_scores": np.array(final_beam_scores), "max_length": max_length,
                                "pad_token_id": pad_token_id, "eos_token_id": list(eos_token_id),
                                "beam_indices": _recorded_history(self, beam_indices),
                                "decoder_prompt_len": decoder_prompt_len})
        return finalize(self, input_ids, final_beam_scores, max_length=max_length, pad_token_id=pad_token_id,
                        eos_token_id=eos_token_id, beam_indices=beam_indices, decoder_prompt_len=decoder_prompt_len)

    rd.BeamSearchScorer.__init__, rd.BeamSearchScorer.process, rd.BeamSearchScorer.finalize = (
        rec_init, rec_process, rec_finalize)
    try:
        yield
    finally:
        rd.BeamSearchScorer.__init__, rd.BeamSearchScorer.process, rd.BeamSearchScorer.finalize = (
            init, process, finalize)


def _build_scorer() -> Iterator[Case]:
    for mode, count, seed in [("beam_search", 50, 411), ("group_beam_search", 20, 412)]:
        for decode_case in build_toy_cases(mode, count, seed):
            record: dict = {}
            with _recording_scorer(record):
                run_decode(decode_case.input)  # uncached: the recording must see the calls
            yield Case(f"{mode} on the toy model: {decode_case.note}", record)


register(CaseType(
    name="beam_scorer", groups=("beam", "beam_bookkeeping"),
    summary="BeamSearchScorer: the process() calls of a beam search (ranked candidates -> running beams, finished "
            "hypotheses, done flags) and the final finalize() call (best hypotheses, padded with eos/pad)",
    tie_rule="finalize: among equal hypothesis scores the later-inserted wins; a done prompt emits pad_token_id "
             "with score 0 continuing row 0 (the 4.38 pad step)",
    inputs=obj(batch_size=INT, num_beams=INT, length_penalty=FLOAT, do_early_stopping=EARLY_STOPPING,
               num_beam_hyps_to_keep=INT, num_beam_groups=INT, max_length=Nullable(INT), calls=ListOf(SCORER_CALL)),
    outputs=obj(results=ListOf(SCORER_RESULT)), build=_build_scorer, run=_run_scorer))


