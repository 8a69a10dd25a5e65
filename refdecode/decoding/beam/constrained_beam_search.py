r"""Constrained beam search: beam search whose every output contains the given phrases.

Contract: ``constrained_beam_search(model, input_ids, constrained_beam_scorer, ...)`` -> int64
(B*R, T_out) or the output object, as transformers 4.38.2 ``GenerationMixin.constrained_beam_search``
with the model first; ``input_ids`` holds B*K rows (each prompt repeated K times consecutively).
``generate(..., force_words_ids=...)`` or ``generate(..., constraints=[...])`` runs it.

The loop is beam search's (:mod:`refdecode.decoding.beam.beam_search`): processors on the log-probabilities,
running scores added, the top ``max(2, 1 + n_eos) * K`` candidates of the K*V. The difference is in
the scorer (:class:`~refdecode.decoding.beam.constrained_beam_scorer.ConstrainedBeamSearchScorer`): it also gets
every token's accumulated score, ``scores_for_all_vocab`` (B*K, V), so it can propose the tokens
that advance a constraint even when they are not among the candidates, and it keeps beams at every
level of constraint progress ("banks").

Docs: docs/constrained-beam-search.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...recorder import NO_TRACE, Recorder
from ..loop import check_no_nan, collect, decode_step, loop_defaults, model_capacity, prefill, step_records
from .bookkeeping import BeamRun, check_beam_rows, finish_beams, follow_beams, top_candidates
from .constrained_beam_scorer import ConstrainedBeamSearchScorer
from ...generation_output import GenerateBeamDecoderOnlyOutput
from ...numerics import torch_log_softmax

__all__ = ["constrained_beam_search"]


def constrained_beam_search(model: Any, input_ids: np.ndarray, constrained_beam_scorer: ConstrainedBeamSearchScorer,
                            logits_processor: Any = None, stopping_criteria: Any = None,
                            max_length: int | None = None, pad_token_id: int | None = None,
                            eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                            output_logits: bool = False, return_dict_in_generate: bool = False,
                            attention_mask: np.ndarray | None = None,
                            recorder: Recorder = NO_TRACE) -> np.ndarray | GenerateBeamDecoderOnlyOutput:
    """Constrained beam search over ``input_ids`` int64 (B*K, T); see the module docstring.

    >>> from refdecode.model.stand_ins import TableModel
    >>> from refdecode.decoding.beam.constraints import PhrasalConstraint
    >>> p = np.array([[.1, .5, .3, .1], [.1, .1, .7, .1], [.5, .1, .3, .1], [.4, .2, .2, .2]], dtype=np.float32)
    >>> model = TableModel(np.log(p))
    >>> scorer = ConstrainedBeamSearchScorer(batch_size=1, num_beams=2, constraints=[PhrasalConstraint([3])])
    >>> constrained_beam_search(model, np.array([[0], [0]]), scorer, max_length=4, eos_token_id=0, pad_token_id=0)
    array([[0, 1, 2, 3]])

    Plain beam search returns ``0 1 2 0`` (eos after "1 2": log(.5 * .7 * .5) / 3 = -0.58). With token 3
    forced, the candidates that contain it are ``0 1 2 3`` (log(.5 * .7 * .1) / 3 = -1.12), ``0 1 3``
    + eos (log(.5 * .1 * .4) / 3 = -1.30) and ``0 3`` + eos (log(.1 * .4) / 2 = -1.61): the first wins.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    scorer = constrained_beam_scorer
    check_beam_rows(input_ids, scorer)
    batch, beams, prompt_len = scorer.batch_size, scorer.num_beams, input_ids.shape[1]
    run = BeamRun(scorer, pad_token_id, eos, prompt_len, criteria.max_length, return_dict_in_generate, output_scores,
                  recorder)
    n_candidates = max(2, 1 + len(eos or [])) * beams
    beam_scores = np.zeros((batch, beams), dtype=np.float32)  # (B, K)
    beam_scores[:, 1:] = -1e9                                # only beam 0 of each prompt is live at first
    scores, raw_logits = step_records(return_dict_in_generate, output_scores, output_logits)
    history = np.zeros((input_ids.shape[0], 0), dtype=np.int64) if scores is not None else None  # (B*K, steps)
    # 1) model call: the prompt once per distinct prompt, cache expanded to the K beams
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        recorder.step(input_ids)
        # 2) processors on the log-probabilities, plus the running scores: every token's total (B*K, V)
        next_token_scores = recorder.stage("log_softmax", torch_log_softmax(logits))  # torch's, bit for bit
        processed = logits_processor(input_ids, next_token_scores, recorder=recorder)
        check_no_nan(processed, input_ids.shape[1], model, logits)
        all_vocab = recorder.stage("scores_for_all_vocab", processed + beam_scores.reshape(-1, 1))  # (B*K, V)
        scores, raw_logits = collect(scores, all_vocab), collect(raw_logits, logits)  # 4.38.2 records the totals
        # 3) selection: top candidates, then the scorer adds forced ones and keeps K by banks
        cand_scores, cand_beams, cand_tokens = top_candidates(all_vocab.reshape(batch, beams, -1), n_candidates)
        step = scorer.process(input_ids, cand_scores, cand_tokens, cand_beams, all_vocab, pad_token_id=pad_token_id,
                              eos_token_id=eos, beam_indices=history, decoder_prompt_len=prompt_len)
        recorder.beam_step(scorer, step, cand_scores, cand_beams, cand_tokens, input_ids, eos, prompt_len)
        # 4) bookkeeping: reorder ids, cache and history
        input_ids, beam_scores, history = follow_beams(step, input_ids, history, cache, batch)
        # 5) stopping: every prompt done, or a criterion fires
        if scorer.is_done or np.all(criteria(input_ids, scores)):  # one bool, or one per row (4.39 style)
            break
        logits, attention_mask = decode_step(model, input_ids[:, -1], attention_mask, cache)
    recorder.stopped(criteria, input_ids, all_done=scorer.is_done)
    return finish_beams(run, input_ids, beam_scores, history, cache, (scores, raw_logits))
