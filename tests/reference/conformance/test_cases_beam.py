"""refdecode.reference.conformance.cases_beam: the BeamHypotheses and BeamSearchScorer cases hold what their summaries
say, checked on the built cases with the rules written out here (not with refdecode's scorer)."""

from __future__ import annotations

import pytest

import numpy as np

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.registry import REGISTRY


def _built(name: str) -> list:
    case_type = REGISTRY[name]
    return [(case, case_type.run(case.input)) for case in case_type.build()]


def test_every_hypotheses_state_holds_at_most_num_beams_scores_computed_by_the_stated_formula():
    """score = sum_logprobs / generated_len ** length_penalty (double); worst_score = 1e9 when the pool is empty, else
    the smallest score held; the pool never holds more than num_beams."""
    for case, out in _built("beam_hypotheses"):
        inp, adds = case.input, {}
        for call, state in zip(inp["calls"], out["states"]):
            if call["op"] == "add":
                score = call["sum_logprobs"] / call["generated_len"] ** inp["length_penalty"]
                adds.setdefault(tuple(int(t) for t in call["hyp"]), []).append(score)
            held = [b["score"] for b in state["beams"]]
            assert len(held) <= inp["num_beams"], case.note
            assert all(b["score"] in adds[tuple(b["hyp"])] for b in state["beams"]), case.note
            assert state["worst_score"] == (min(held) if held else 1e9), case.note


def test_the_is_done_cases_cover_every_early_stopping_mode_and_both_answers():
    seen = {(case.input["early_stopping"], state["done"]) for case, out in _built("beam_hypotheses")
            for call, state in zip(case.input["calls"], out["states"]) if call["op"] == "is_done"}
    assert seen >= {(mode, done) for mode in (True, False, "never") for done in (True, False)}


@pytest.mark.slow
def test_scorer_cases_are_recorded_from_real_searches():
    """Each process call ranks its candidates best first; finalize ends a case and returns num_beam_hyps_to_keep
    sequences per prompt, each starting with its prompt's rows."""
    cases = _built("beam_scorer")
    assert len(cases) >= 20
    for case, out in cases:
        calls = case.input["calls"]
        assert calls[-1]["op"] == "finalize" and all(c["op"] == "process" for c in calls[:-1]), case.note
        for call in calls[:-1]:
            scores = np.asarray(call["next_scores"])
            assert (np.diff(scores, axis=1) <= 0).all(), case.note
        final, prompt_rows = out["results"][-1], np.asarray(calls[0]["input_ids"])
        keep, g = case.input["num_beam_hyps_to_keep"], case.input["num_beams"] // case.input["num_beam_groups"]
        sequences = np.asarray(final["sequences"])
        assert sequences.shape[0] == case.input["batch_size"] * keep
        width = prompt_rows.shape[1]
        for b in range(case.input["batch_size"]):
            assert (sequences[b * keep:(b + 1) * keep, :width] == prompt_rows[b * g]).all(), case.note
