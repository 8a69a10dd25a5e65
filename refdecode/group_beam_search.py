r"""Diverse (group) beam search: G groups of K/G beams, later groups penalised for repeating earlier ones.

Contract: ``group_beam_search(model, input_ids, beam_scorer, ...)`` -> int64 (B*R, T_out) (or the
output object), as transformers 4.38.2 ``GenerationMixin.group_beam_search`` with the model first
(document 000, section 6; Vijayakumar et al. 2016, https://arxiv.org/abs/1610.02424).

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

from typing import Any

import numpy as np

from .beam_scorer import BeamSearchScorer
from .beam_search import _check_rows, beam_output, extend_beam_history, top_candidates_partitioned
from .greedy import check_no_nan, loop_defaults
from .model_steps import decode_step, model_capacity, prefill
from .numerics import log_softmax

__all__ = ["group_beam_search", "group_rows"]


def group_rows(batch_size: int, num_beams: int, group: int, group_size: int) -> np.ndarray:
    """Rows of group ``group`` in a [batch, beam] layout flattened to B*K: [batch, group_size] -> [batch*group_size].

    >>> group_rows(batch_size=2, num_beams=4, group=1, group_size=2)
    array([2, 3, 6, 7])
    """
    beams = np.arange(group * group_size, (group + 1) * group_size)            # (g,)
    return (np.arange(batch_size)[:, None] * num_beams + beams[None, :]).reshape(-1)  # (B, g) -> (B*g,)


def _group_step(group: int, logits: np.ndarray, input_ids: np.ndarray, beam_scores: np.ndarray,
                current_tokens: np.ndarray, reorder: np.ndarray, step_scores: np.ndarray, histories: list | None,
                logits_processor: Any, beam_scorer: BeamSearchScorer, n_candidates: int, pad_token_id: int | None,
                eos: list[int] | None, prompt_len: int) -> None:
    """One group's beam-search step, writing its rows of the step arrays **in place** (they belong to the loop).

    Reads ``logits`` (B*K, V) and ``input_ids`` (B*K, T) at the group's rows; updates ``input_ids``
    rows (reordered within the group), ``beam_scores`` (B, K) columns, ``current_tokens`` /
    ``reorder`` / ``step_scores`` rows and ``histories[group]`` (rows of the group, [B*g, steps]).
    """
    batch, beams, size = beam_scorer.batch_size, beam_scorer.num_beams, beam_scorer.group_size
    rows = group_rows(batch, beams, group, size)                   # (B*g,)
    group_ids = input_ids[rows]                                    # (B*g, T)
    # 2) processors on the group's log-probs, told which tokens earlier groups chose this step
    processed = logits_processor(group_ids, log_softmax(logits[rows]), current_tokens=current_tokens,
                                 beam_group_idx=group)
    check_no_nan(processed, input_ids.shape[1])
    step_scores[rows] = processed
    # 3) selection: top candidates among the group's g*V continuations of each prompt
    columns = slice(group * size, (group + 1) * size)
    total = processed.reshape(batch, size, -1) + beam_scores[:, columns, None]  # (B*g, V) -> (B, g, V)
    cand_scores, cand_beams, cand_tokens = top_candidates_partitioned(total, n_candidates)  # (B, C) each
    # 4) bookkeeping (beam_idx: rows of group_ids); the scorer gets the group-major history (quirk)
    flat_history = None if histories is None else [h for grp in histories for h in grp]
    step = beam_scorer.process(group_ids, cand_scores, cand_tokens, cand_beams, pad_token_id=pad_token_id,
                               eos_token_id=eos, beam_indices=flat_history, group_index=group,
                               decoder_prompt_len=prompt_len)
    beam_idx = step["next_beam_indices"]                                       # (B*g,)
    beam_scores[:, columns] = step["next_beam_scores"].reshape(batch, size)    # (B*g,) -> (B, g)
    if histories is not None:
        histories[group] = extend_beam_history(histories[group], beam_idx)
    input_ids[rows] = group_ids[beam_idx]
    current_tokens[rows] = step["next_beam_tokens"]
    reorder[rows] = rows[beam_idx]


def group_beam_search(model: Any, input_ids: np.ndarray, beam_scorer: BeamSearchScorer, logits_processor: Any = None,
                      stopping_criteria: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
                      eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                      output_logits: bool = False, return_dict_in_generate: bool = False,
                      attention_mask: np.ndarray | None = None) -> Any:
    """Group beam search over ``input_ids`` int64 (B*K, T) (each prompt repeated K times); see the module docstring.

    ``logits_processor`` should contain a HammingDiversityLogitsProcessor (``generate`` adds it
    from ``diversity_penalty``); without one the groups only differ by their initial scores.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    _check_rows(input_ids, beam_scorer)
    batch, beams, n_groups = beam_scorer.batch_size, beam_scorer.num_beams, beam_scorer.num_beam_groups
    size, prompt_len = beam_scorer.group_size, input_ids.shape[1]
    n_candidates = max(2, 1 + len(eos or [])) * size
    beam_scores = np.full((batch, beams), -1e9, dtype=np.float32)  # (B, K)
    beam_scores[:, ::size] = 0.0                                     # first beam of each group is live
    scores = () if (return_dict_in_generate and output_scores) else None
    raw_logits = () if (return_dict_in_generate and output_logits) else None
    histories = [np.zeros((batch * size, 0), dtype=np.int64) for _ in range(n_groups)] if scores is not None else None
    input_ids = input_ids.copy()  # rows are rewritten group by group below
    # 1) model call: the prompt once per distinct prompt
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        current_tokens = np.zeros(batch * beams, dtype=np.int64)   # (B*K,) tokens chosen this step
        reorder = np.zeros(batch * beams, dtype=np.int64)          # (B*K,) cache row each new row continues
        step_scores = np.zeros_like(logits)                        # (B*K, V) processed scores of all groups
        for group in range(n_groups):
            # 2) processors, 3) selection, 4) bookkeeping -- for one group (fills the arrays above)
            _group_step(group, logits, input_ids, beam_scores, current_tokens, reorder, step_scores, histories,
                        logits_processor, beam_scorer, n_candidates, pad_token_id, eos, prompt_len)
        scores = scores + (step_scores,) if scores is not None else None
        raw_logits = raw_logits + (logits,) if raw_logits is not None else None
        input_ids = np.concatenate([input_ids, current_tokens[:, None]], axis=1)  # (B*K, T+1)
        cache.reorder(reorder)
        # 5) stopping
        if beam_scorer.is_done or np.all(criteria(input_ids, scores)):
            break
        logits, attention_mask = decode_step(model, current_tokens, attention_mask, cache)
    final_history = None if histories is None else np.concatenate(histories, axis=0)  # group-major (quirk)
    final = beam_scorer.finalize(input_ids, beam_scores.reshape(-1), None, None, max_length=criteria.max_length,
                                 pad_token_id=pad_token_id, eos_token_id=eos, beam_indices=final_history,
                                 decoder_prompt_len=prompt_len)
    return beam_output(final, scores, raw_logits, cache, return_dict_in_generate, output_scores)
