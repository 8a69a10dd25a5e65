"""refdecode.recorder: the interface every loop calls; the default recorder watches nothing and changes nothing.

A logging recorder checks that each kind of loop calls the hooks the interface documents, in its order,
so that a new observer (a trace, the conformance margins) can rely on them.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MODELS

from refdecode import GPT2, generate
from refdecode.recorder import NO_TRACE, Recorder
from refdecode.model.stand_ins import TableModel


class Log(Recorder):
    """Records the name of every hook called (stages with their names)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self, mode, input_ids, config=None):
        self.calls.append(f"start {mode}")

    def step(self, input_ids, group=None, rows=None):
        self.calls.append("step" if group is None else f"step group {group}")

    def stage(self, name, scores):
        self.calls.append(f"stage {name}")
        return scores

    def ranked(self, tokens, scores):
        self.calls.append("ranked")

    def selected(self, tokens, unfinished=None):
        self.calls.append("selected")

    def beam_step(self, scorer, out, cand_scores, cand_beams, cand_tokens, input_ids, eos, prompt_len):
        self.calls.append("beam_step")

    def stopped(self, criteria, input_ids, all_done=False):
        self.calls.append("stopped")

    def final(self, sequences, sequence_scores=None, beam_indices=None):
        self.calls.append("final")


def _model() -> TableModel:
    return TableModel(np.random.default_rng(3).standard_normal((7, 7)).astype(np.float32), eos_token_id=6)


def test_the_default_recorder_hands_scores_back_untouched():
    scores = np.array([[0.5, -np.inf]], dtype=np.float32)
    assert NO_TRACE.stage("logits", scores) is scores
    assert all(getattr(NO_TRACE, hook)(*args) is None for hook, args in [
        ("start", ("greedy_search", scores)), ("step", (scores,)), ("ranked", (scores, scores)),
        ("selected", (scores,)), ("stopped", ([], scores)), ("final", (scores,))])


@pytest.mark.parametrize("settings, per_step", [
    (dict(repetition_penalty=1.5), ["step", "stage logits", "stage RepetitionPenaltyLogitsProcessor", "selected"]),
    (dict(do_sample=True, top_k=3, seed=0), ["step", "stage logits", "stage TopKLogitsWarper", "selected"]),
    (dict(num_beams=2), ["step", "stage log_softmax", "beam_step"]),
    (dict(num_beams=2, force_words_ids=[[5]]), ["step", "stage log_softmax", "stage scores_for_all_vocab",
                                                "beam_step"]),
    (dict(num_beams=4, num_beam_groups=2, diversity_penalty=1.0),
     ["step group 0", "stage log_softmax", "stage HammingDiversityLogitsProcessor", "beam_step",
      "step group 1", "stage log_softmax", "stage HammingDiversityLogitsProcessor", "beam_step"]),
])
def test_every_loop_calls_the_hooks_in_the_documented_order(settings, per_step):
    log = Log()
    out = generate(_model(), np.array([[1, 2]]), max_new_tokens=3, trace=log, **settings)
    steps = len(log.calls[1:-2]) // len(per_step)
    assert log.calls[0].startswith("start ") and log.calls[-2:] == ["stopped", "final"]
    assert steps >= 1 and log.calls[1:-2] == per_step * steps
    assert steps <= out.shape[1] - 2


def test_contrastive_search_ranks_before_it_selects():
    log = Log()
    generate(GPT2.from_pretrained(MODELS / "gpt2-tiny"), np.array([[15496, 11]]), max_new_tokens=2, penalty_alpha=0.5,
             top_k=3, trace=log)
    assert log.calls == ["start contrastive_search"] + ["step", "stage logits", "ranked", "selected"] * 2 + [
        "stopped", "final"]
