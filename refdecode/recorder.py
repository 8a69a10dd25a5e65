r"""The recorder interface: how a decode loop lets an observer see each step, without knowing who watches.

Contract: every decode loop takes ``recorder=`` (default :data:`NO_TRACE`) and calls it at fixed points of
each step; the base class :class:`Recorder` does nothing (``stage`` hands its scores back), so a loop with
nobody watching runs the same arithmetic plus a few empty calls per step and never asks "am I traced". What
watches lives elsewhere: :class:`refdecode.reference.trace.TraceRecorder` writes step traces
(docs/traces.md), and the conformance builders record each decision's margin. This module sits on the
ground floor so that the loops depend on the interface, never on the tooling that implements it.

Per step a loop calls :meth:`Recorder.step`, then :meth:`Recorder.stage` after each score stage (the raw
logits, log-softmax, each processor and warper: :class:`~refdecode.processors.logits_process.LogitsProcessorList`
calls it itself), then, by kind of loop,

- greedy, sample, contrastive search: :meth:`Recorder.selected` (the appended tokens and the rows still
  running); contrastive search first :meth:`Recorder.ranked` (its k candidates per row and their scores);
- beam search, beam sample, group beam search, constrained beam search: :meth:`Recorder.beam_step`
  after the scorer's ``process``;

and after the loop :meth:`Recorder.stopped` and :meth:`Recorder.final`. ``generate`` opens with
:meth:`Recorder.start`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Recorder", "NO_TRACE"]


class Recorder:
    """The recorder interface, doing nothing: every decode loop's default (nobody watching)."""

    def start(self, mode: str, input_ids: np.ndarray, config: Any = None) -> None:
        """``generate`` announces the decoding mode, the prompts (B, T) and the GenerationConfig."""

    def step(self, input_ids: np.ndarray, group: int | None = None, rows: np.ndarray | None = None) -> None:
        """A step begins for ``input_ids`` (N, T) (group beam search: one group, its ``rows`` of the batch)."""

    def stage(self, name: str, scores: np.ndarray) -> np.ndarray:
        """Scores (N, V) after the stage ``name`` (a processor's class name, ``logits``, ``log_softmax``,
        ``scores_for_all_vocab``); returns them unchanged."""
        return scores

    def ranked(self, tokens: np.ndarray, scores: np.ndarray) -> None:
        """Contrastive search: each row's k candidate tokens (N, k), most probable first, and the score it
        ranks them by (N, k) float32; the loop then keeps each row's best (the first among equal scores)."""

    def selected(self, tokens: np.ndarray, unfinished: np.ndarray | None = None) -> None:
        """Greedy / sample / contrastive: the tokens (N,) appended, and which rows are still unfinished (N,)
        after them (eos and the stopping criteria applied)."""

    def beam_step(self, scorer: Any, out: dict, cand_scores: np.ndarray, cand_beams: np.ndarray,
                  cand_tokens: np.ndarray, input_ids: np.ndarray, eos: list[int] | None, prompt_len: int) -> None:
        """Beam modes, after ``scorer.process``: candidates (B, C), hypotheses added, selection, ``is_done``."""

    def stopped(self, criteria: Any, input_ids: np.ndarray, all_done: bool = False) -> None:
        """After the loop: what stopped it (beam modes: ``all_done`` = every prompt done; else which criteria
        fire on the final ``input_ids``; if none, every row emitted eos)."""

    def final(self, sequences: np.ndarray, sequence_scores: np.ndarray | None = None,
              beam_indices: np.ndarray | None = None) -> None:
        """The loop's result: sequences (B*R, T_out), and for beam modes the scores and beam indices."""


#: The recorder every loop uses unless given another: nobody watching.
NO_TRACE = Recorder()
