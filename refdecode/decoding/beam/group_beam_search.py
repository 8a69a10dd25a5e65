r"""Diverse (group) beam search: G groups of K/G beams, later groups penalised for repeating earlier ones.

Contract: ``group_beam_search(model, input_ids, beam_scorer, ...)`` -> int64 (B*R, T_out) (or the
output object), as transformers 4.38.2 ``GenerationMixin.group_beam_search`` with the model first
(the 4.26 walkthrough (docs/references.md), section 6; Vijayakumar et al. 2016, https://arxiv.org/abs/1610.02424).

Each step runs one model call for all B*K rows, then the groups **in turn**: group g takes its
rows (beams g*K/G .. (g+1)*K/G - 1 of every prompt), applies log_softmax and the processors with
``current_tokens`` (tokens chosen *this step* by the earlier groups, zeros elsewhere) and
``beam_group_idx=g`` -- the Hamming diversity processor subtracts
``diversity_penalty x (how often earlier groups chose the token this step)`` -- and then does
one beam-search step of its own with ``max(2, 1 + n_eos) * K/G`` candidates (same tie rule as
beam_search.py). Each (prompt, group) has its own finished hypotheses; ``finalize`` pools the
groups of a prompt. Initial running scores: -1e9 except the first beam of each group (0).

transformers quirk reproduced (beam indices, only visible with ``output_scores=True``): the loop
keeps the history per group but hands the scorer the **group-major** concatenation of all
groups, while the scorer indexes it as if it were one group (``process``: row ``b*K/G + j``, so
an eos hypothesis of group g > 0 gets the history of group 0's row, already extended this step)
or prompt-major (``finalize``: row ``b*K + g*K/G + j``, which is another row when B > 1 and
G > 1). The recorded indices are rows *within the group* (``b*K/G + j``), not rows of the batch.
Sequences and scores are not affected.

Docs: docs/group-beam-search.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...numerics import torch_log_softmax
from ...recorder import NO_TRACE, Recorder
from ..loop import check_no_nan, collect, decode_step, loop_defaults, model_capacity, prefill, step_records
from .beam_scorer import BeamSearchScorer
from .bookkeeping import BeamRun, check_beam_rows, extend_beam_history, finish_beams, top_candidates

__all__ = ["group_beam_search", "group_rows", "group_step", "GroupStep"]


def group_rows(batch_size: int, num_beams: int, group: int, group_size: int) -> np.ndarray:
    """Rows of group ``group`` in a [batch, beam] layout flattened to B*K: [batch, group_size] -> [batch*group_size].

    >>> group_rows(batch_size=2, num_beams=4, group=1, group_size=2)
    array([2, 3, 6, 7])
    """
    beams = np.arange(group * group_size, (group + 1) * group_size)            # (g,)
    return (np.arange(batch_size)[:, None] * num_beams + beams[None, :]).reshape(-1)  # (B, g) -> (B*g,)


class GroupStep(NamedTuple):
    """What one group's step computed; the loop writes it into its step arrays (g = group size).

    rows: (B*g,) the group's rows of the batch. processed: float32 (B*g, V) its processed log-probs.
    beam_idx: (B*g,) which of the group's rows each new beam continues. tokens: (B*g,) the tokens chosen.
    beam_scores: float32 (B, g) the running scores. history: (B*g, steps + 1) beam indices, or None.
    """

    rows: np.ndarray
    processed: np.ndarray
    beam_idx: np.ndarray
    tokens: np.ndarray
    beam_scores: np.ndarray
    history: np.ndarray | None


def group_step(run: BeamRun, group: int, logits: np.ndarray, input_ids: np.ndarray, beam_scores: np.ndarray,
               current_tokens: np.ndarray, histories: list | None, logits_processor: Any,
               n_candidates: int) -> GroupStep:
    """One group's beam-search step: processors, selection and the scorer's bookkeeping, for the group's rows.

    Reads ``logits`` (B*K, V), ``input_ids`` (B*K, T), ``beam_scores`` (B, K) and ``current_tokens`` (B*K,)
    (tokens the earlier groups chose this step) at the group's rows; changes none of its arguments.
    """
    beam_scorer, recorder = run.scorer, run.recorder
    batch, beams, size = beam_scorer.batch_size, beam_scorer.num_beams, beam_scorer.group_size
    rows = group_rows(batch, beams, group, size)                   # (B*g,)
    group_ids = input_ids[rows]                                    # (B*g, T)
    recorder.step(group_ids, group=group, rows=rows)
    # 2) processors on the group's log-probs, told which tokens earlier groups chose this step
    processed = logits_processor(group_ids, recorder.stage("log_softmax", torch_log_softmax(logits[rows])),
                                 current_tokens=current_tokens, beam_group_idx=group, recorder=recorder)
    check_no_nan(processed, input_ids.shape[1], logits=logits[rows])
    # 3) selection: top candidates among the group's g*V continuations of each prompt, (B, C) each
    columns = slice(group * size, (group + 1) * size)
    cand_scores, cand_beams, cand_tokens = top_candidates(
        processed.reshape(batch, size, -1) + beam_scores[:, columns, None], n_candidates)  # (B, g, V)
    # 4) bookkeeping (beam_idx: rows of group_ids); the scorer gets the group-major history (quirk)
    flat_history = None if histories is None else [h for grp in histories for h in grp]
    step = beam_scorer.process(group_ids, cand_scores, cand_tokens, cand_beams, pad_token_id=run.pad_token_id,
                               eos_token_id=run.eos, beam_indices=flat_history, group_index=group,
                               decoder_prompt_len=run.prompt_len)
    recorder.beam_step(beam_scorer, step, cand_scores, cand_beams, cand_tokens, group_ids, run.eos, run.prompt_len)
    beam_idx = step["next_beam_indices"]                                       # (B*g,)
    history = None if histories is None else extend_beam_history(histories[group], beam_idx)
    return GroupStep(rows, processed, beam_idx, step["next_beam_tokens"],
                     step["next_beam_scores"].reshape(batch, size), history)


def group_beam_search(model: Any, input_ids: np.ndarray, beam_scorer: BeamSearchScorer, logits_processor: Any = None,
                      stopping_criteria: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
                      eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                      output_logits: bool = False, return_dict_in_generate: bool = False,
                      attention_mask: np.ndarray | None = None, recorder: Recorder = NO_TRACE) -> Any:
    """Group beam search over ``input_ids`` int64 (B*K, T) (each prompt repeated K times); see the module docstring.

    ``logits_processor`` should contain a HammingDiversityLogitsProcessor (``generate`` adds it
    from ``diversity_penalty``); without one the groups only differ by their initial scores.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    check_beam_rows(input_ids, beam_scorer)
    batch, beams, n_groups = beam_scorer.batch_size, beam_scorer.num_beams, beam_scorer.num_beam_groups
    size = beam_scorer.group_size
    run = BeamRun(beam_scorer, pad_token_id, eos, input_ids.shape[1], criteria.max_length, return_dict_in_generate,
                  output_scores, recorder)
    n_candidates = max(2, 1 + len(eos or [])) * size
    beam_scores = np.full((batch, beams), -1e9, dtype=np.float32)  # (B, K)
    beam_scores[:, ::size] = 0.0                                     # first beam of each group is live
    scores, raw_logits = step_records(return_dict_in_generate, output_scores, output_logits)
    histories = [np.zeros((batch * size, 0), dtype=np.int64) for _ in range(n_groups)] if scores is not None else None
    # 1) model call: the prompt once per distinct prompt
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        next_ids = input_ids.copy()                                # (B*K, T) rows reordered group by group
        current_tokens = np.zeros(batch * beams, dtype=np.int64)   # (B*K,) tokens chosen this step
        reorder = np.zeros(batch * beams, dtype=np.int64)          # (B*K,) cache row each new row continues
        step_scores = np.zeros_like(logits)                        # (B*K, V) processed scores of all groups
        for group in range(n_groups):
            # 2) processors, 3) selection, 4) bookkeeping -- for one group, then the loop writes its rows
            step = group_step(run, group, logits, input_ids, beam_scores, current_tokens, histories, logits_processor,
                              n_candidates)
            rows, continued = step.rows, step.rows[step.beam_idx]  # (B*g,) each: the group's rows, their sources
            next_ids[rows], reorder[rows], current_tokens[rows] = input_ids[continued], continued, step.tokens
            step_scores[rows], beam_scores[:, group * size : (group + 1) * size] = step.processed, step.beam_scores
            if histories is not None:
                histories[group] = step.history
        scores, raw_logits = collect(scores, step_scores), collect(raw_logits, logits)
        input_ids = np.concatenate([next_ids, current_tokens[:, None]], axis=1)  # (B*K, T+1)
        cache.reorder(reorder)
        # 5) stopping
        if beam_scorer.is_done or np.all(criteria(input_ids, scores)):
            break
        logits, attention_mask = decode_step(model, current_tokens, attention_mask, cache)
    recorder.stopped(criteria, input_ids, all_done=beam_scorer.is_done)
    final_history = None if histories is None else np.concatenate(histories, axis=0)  # group-major (quirk)
    return finish_beams(run, input_ids, beam_scores, final_history, cache, (scores, raw_logits))
