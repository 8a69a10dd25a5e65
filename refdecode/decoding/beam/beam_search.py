r"""Beam search and beam sample: keep the K best partial sequences per prompt (the 4.26 walkthrough sections 3 and 5).

Contract: ``beam_search(model, input_ids, beam_scorer, ...)`` and ``beam_sample(model, input_ids,
beam_scorer, logits_warper=..., rng=...)`` -> int64 (B*R, T_out) (or the output object), as
transformers 4.38.2 ``GenerationMixin.beam_search`` / ``beam_sample`` with the model first.
``input_ids`` holds B*K rows, each prompt repeated K times consecutively (``generate`` does this).
The :class:`~refdecode.decoding.beam.beam_scorer.BeamSearchScorer` owns the finished hypotheses; this module
computes scores and picks candidates.

Per step, for prompt b and beam k with running score :math:`s_{b,k}`:

.. math:: c_{b,k,v} = s_{b,k} + \mathrm{processors}\big(\log\mathrm{softmax}(\mathrm{logits}_{b,k})\big)_v

The processors see **log-probabilities** (so a repetition penalty always multiplies: log-probs are
negative); nothing is renormalised afterwards. ``scores`` records the processed log-probs of the
step (not :math:`c`).

- beam search: initial :math:`s` = 0 for beam 0 and -1e9 for the others (so the K identical
  prompt copies do not yield K identical beams); candidates are the top
  ``max(2, 1 + n_eos) * K`` of the K*V values :math:`c_{b,\cdot,\cdot}` ("in case half are eos").
  **Tie rule** (``torch.topk`` leaves it unspecified): equal values are ranked by lower flat index
  ``k*V + v`` first (a stable sort).
- beam sample: initial :math:`s` = 0 for every beam; the warpers act on the processed log-probs
  of the step (4.38.2 applies ``logits_warper`` *before* adding :math:`s`; 4.26, quoted in document
  000, applied it after), then 2K distinct candidates are drawn from
  :math:`\mathrm{softmax}_{k,v}(c_{b,k,v})` without replacement and sorted by :math:`c`,
  descending (ties: ``torch.sort``'s CPU order: draw order for 2K <= 16, libstdc++'s introsort order
  above, :mod:`refdecode.numerics.introsort`). Always 2K, whatever the number of eos ids.

The log-probabilities are torch's CPU ``log_softmax`` bit for bit (:mod:`refdecode.numerics`,
docs/last-bit.md), so candidates that tie in float32 tie here too. Beam sample draws from NumPy's
``softmax``, as sampling and assisted decoding do: a draw cannot repeat torch's random stream, so the last
bit of a probability decides nothing a test can see (docs/sampling.md, "Which softmax the draw uses").

Docs: docs/beam-search.md (with the scorer, length penalty and early stopping) and docs/beam-sample.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...generation_output import GenerateBeamDecoderOnlyOutput
from ...numerics import softmax, torch_log_softmax
from ...processors.logits_process import LogitsProcessorList
from ...numerics.introsort import torch_cpu_sort_order
from ...recorder import NO_TRACE, Recorder
from ..loop import check_no_nan, collect, decode_step, loop_defaults, model_capacity, prefill, step_records
from ..randomness import checked_draw, make_rng, multinomial
from .beam_scorer import BeamSearchScorer
from .bookkeeping import BeamRun, advance_beams, check_beam_rows, finish_beams, top_candidates

__all__ = ["beam_search", "beam_sample", "sample_candidates", "BeamSampler"]


class BeamSampler(NamedTuple):
    """What turns beam search into beam sample: the warpers, the draw and its random generator."""

    logits_warper: LogitsProcessorList
    draw: Callable[..., np.ndarray]
    rng: np.random.Generator


def beam_search(model: Any, input_ids: np.ndarray, beam_scorer: BeamSearchScorer, logits_processor: Any = None,
                stopping_criteria: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
                eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                output_logits: bool = False, return_dict_in_generate: bool = False,
                attention_mask: np.ndarray | None = None, *, sampler: BeamSampler | None = None,
                recorder: Recorder = NO_TRACE) -> np.ndarray | GenerateBeamDecoderOnlyOutput:
    """Beam search over ``input_ids`` int64 (B*K, T) (each prompt repeated K times); see the module docstring.

    With ``sampler`` (what :func:`beam_sample` passes) this is beam sample: every beam starts live, the
    warpers run after the processors, and 2K candidates are drawn instead of taken from the top. One loop
    for both, as transformers 5 has it: only steps 2 and 3 differ.

    >>> from refdecode.model.stand_ins import TableModel
    >>> model = TableModel(np.log(np.array([[.1, .5, .4], [.1, .1, .8], [.9, .05, .05]], dtype=np.float32)))
    >>> scorer = BeamSearchScorer(batch_size=1, num_beams=2, length_penalty=0.0)
    >>> beam_search(model, np.array([[0], [0]]), scorer, max_length=3, eos_token_id=0, pad_token_id=0)
    array([[0, 1, 2]])

    Greedy would take 0 -> 1 (p=.5) -> 2 (p=.8): here both paths 0->1->2 (.40) and 0->2->0 (eos,
    .36) are explored and the first wins.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    logits_warper = sampler.logits_warper if sampler is not None else LogitsProcessorList()
    check_beam_rows(input_ids, beam_scorer)
    batch, beams = beam_scorer.batch_size, beam_scorer.num_beams
    run = BeamRun(beam_scorer, pad_token_id, eos, input_ids.shape[1], criteria.max_length, return_dict_in_generate,
                  output_scores, recorder)
    n_candidates = max(2, 1 + len(eos or [])) * beams  # "in case half are eos"; beam sample draws 2K
    beam_scores = np.zeros((batch, beams), dtype=np.float32)  # (B, K)
    if sampler is None:
        beam_scores[:, 1:] = -1e9  # beam search: only beam 0 of each prompt is live at first
    scores, raw_logits = step_records(return_dict_in_generate, output_scores, output_logits)
    history = np.zeros((input_ids.shape[0], 0), dtype=np.int64) if scores is not None else None  # (B*K, steps)
    # 1) model call: the prompt once per distinct prompt, cache expanded to the K beams
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        recorder.step(input_ids)
        # 2) processors (then warpers, beam sample) on the log-probabilities of the step (B*K, V)
        next_token_scores = recorder.stage("log_softmax", torch_log_softmax(logits))  # torch's, bit for bit
        processed = logits_processor(input_ids, next_token_scores, recorder=recorder)
        processed = logits_warper(input_ids, processed, recorder=recorder)
        check_no_nan(processed, input_ids.shape[1], model, logits)
        scores, raw_logits = collect(scores, processed), collect(raw_logits, logits)
        # 3) selection among the K*V continuations of each prompt: the top n_candidates, or 2K drawn; (B, C) each
        total = processed.reshape(batch, beams, -1) + beam_scores[:, :, None]  # (B*K, V) -> (B, K, V)
        candidates = (top_candidates(total, n_candidates) if sampler is None
                      else sample_candidates(total, 2 * beams, sampler.draw, sampler.rng))
        # 4) bookkeeping: the scorer splits finished/running; reorder ids, cache and history
        input_ids, beam_scores, history = advance_beams(run, input_ids, candidates, history, cache)
        # 5) stopping: every prompt done, or a criterion fires
        if beam_scorer.is_done or np.all(criteria(input_ids, scores)):
            break
        logits, attention_mask = decode_step(model, input_ids[:, -1], attention_mask, cache)
    recorder.stopped(criteria, input_ids, all_done=beam_scorer.is_done)
    return finish_beams(run, input_ids, beam_scores, history, cache, (scores, raw_logits))


def sample_candidates(total: np.ndarray, n: int, draw: Callable[..., np.ndarray],
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[batch, beam, vocab] scores -> n drawn candidates per row, sorted: scores, beam, token [batch, n].

    Draws n distinct flat indices from softmax over the K*V values of each row, then sorts them
    by score, descending, in ``torch.sort``'s CPU order (equal scores keep draw order up to 16 draws).
    """
    batch, beams, vocab = total.shape
    flat = total.reshape(batch, beams * vocab)                          # (B, K, V) -> (B, K*V)
    drawn = checked_draw(draw, softmax(flat), n, False, rng)            # (B, n) flat indices
    drawn_scores = np.take_along_axis(flat, drawn, axis=1)              # (B, n)
    order = torch_cpu_sort_order(drawn_scores, descending=True)         # (B, n) torch's order on ties
    drawn = np.take_along_axis(drawn, order, axis=1)
    return np.take_along_axis(drawn_scores, order, axis=1), drawn // vocab, drawn % vocab


def beam_sample(model: Any, input_ids: np.ndarray, beam_scorer: BeamSearchScorer, logits_processor: Any = None,
                stopping_criteria: Any = None, logits_warper: Any = None, max_length: int | None = None,
                pad_token_id: int | None = None, eos_token_id: int | list[int] | None = None,
                output_scores: bool = False, output_logits: bool = False, return_dict_in_generate: bool = False,
                attention_mask: np.ndarray | None = None, rng: np.random.Generator | None = None,
                seed: int | None = None, draw: Callable[..., np.ndarray] | None = None,
                recorder: Recorder = NO_TRACE) -> np.ndarray | GenerateBeamDecoderOnlyOutput:
    """Beam sample over ``input_ids`` int64 (B*K, T); see the module docstring. ``scores`` holds the warped
    per-step scores. ``draw``/``rng``/``seed`` as in :func:`refdecode.decoding.sampling.sample`. The loop is
    :func:`beam_search`'s, with a :class:`BeamSampler`."""
    sampler = BeamSampler(LogitsProcessorList(logits_warper if logits_warper is not None else []),
                          draw if draw is not None else multinomial, make_rng(rng, seed))
    return beam_search(model, input_ids, beam_scorer, logits_processor, stopping_criteria, max_length, pad_token_id,
                       eos_token_id, output_scores, output_logits, return_dict_in_generate, attention_mask,
                       sampler=sampler, recorder=recorder)
