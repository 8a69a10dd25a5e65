r"""Beam search and beam sample: keep the K best partial sequences per prompt (document 000 sections 3 and 5).

Contract: ``beam_search(model, input_ids, beam_scorer, ...)`` and ``beam_sample(model, input_ids,
beam_scorer, logits_warper=..., rng=...)`` -> int64 (B*R, T_out) (or the output object), as
transformers 4.38.2 ``GenerationMixin.beam_search`` / ``beam_sample`` with the model first.
``input_ids`` holds B*K rows, each prompt repeated K times consecutively (``generate`` does this).
The :class:`~refdecode.beam_scorer.BeamSearchScorer` owns the finished hypotheses; this module
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
  descending (ties: draw order, a stable sort; ``torch.sort`` is not stable). Always 2K, whatever
  the number of eos ids.

Docs: docs/beam-search.md (with the scorer, length penalty and early stopping) and docs/beam-sample.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import sampling_draw
from .beam_scorer import BeamSearchScorer
from .generation_output import GenerateBeamDecoderOnlyOutput
from .greedy import check_no_nan, loop_defaults
from .logits_process import LogitsProcessorList
from .model_steps import decode_step, model_capacity, prefill
from .numerics import log_softmax, softmax
from .sampling import make_rng

__all__ = ["beam_search", "beam_sample", "top_candidates", "top_candidates_partitioned", "extend_beam_history",
           "beam_output"]


# ---- bookkeeping helpers shared with group_beam_search.py


def top_candidates(total: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[batch, beam, vocab] scores -> the n best per batch row: scores, beam, token, each [batch, n].

    Ranked by score, descending; equal scores by lower flat index ``beam*V + token`` first.

    >>> total = np.array([[[-1.0, -3.0], [-1.0, -0.5]]], dtype=np.float32)   # (1, K=2, V=2)
    >>> top_candidates(total, 3)
    (array([[-0.5, -1. , -1. ]], dtype=float32), array([[1, 0, 1]]), array([[1, 0, 0]]))
    """
    batch, beams, vocab = total.shape
    flat = total.reshape(batch, beams * vocab)                          # (B, K, V) -> (B, K*V)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :n]             # (B, n) flat indices
    return np.take_along_axis(flat, order, axis=1), order // vocab, order % vocab


def top_candidates_partitioned(total: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`top_candidates` without sorting all K*V scores: the same result, bit for bit, tie rule included.

    :func:`beam_search` and :func:`~refdecode.group_beam_search.group_beam_search` call this one; tests/test_fast_paths.py checks it against :func:`top_candidates`.
    A full stable argsort of the K*V = 4 * 50257 scores of GPT-2 costs ~16 ms per step; this costs ~1 ms:

    1. ``np.partition`` finds the n-th best score ``kth`` of each row (linear time);
    2. the pool is every index whose score is ``>= kth``, in ascending flat index (at least n of them,
       more only if scores tie with ``kth``);
    3. a stable sort of the pool by score, descending, keeps ascending index among equal scores.

    The n best of a full stable sort all score ``>= kth``, so they are all in the pool, in the same
    relative order; a stable sort of that sub-sequence therefore starts with the same n.

    >>> total = np.array([[[-1.0, -3.0], [-1.0, -0.5]]], dtype=np.float32)   # (1, K=2, V=2)
    >>> top_candidates_partitioned(total, 3)
    (array([[-0.5, -1. , -1. ]], dtype=float32), array([[1, 0, 1]]), array([[1, 0, 0]]))
    """
    batch, beams, vocab = total.shape
    n = min(n, beams * vocab)                                           # as [:, :n] of a full sort would
    flat = total.reshape(batch, beams * vocab)                          # (B, K, V) -> (B, K*V)
    kth = -np.partition(-flat, n - 1, axis=1)[:, n - 1]                 # (B,) the n-th best score
    order = np.empty((batch, n), dtype=np.int64)                        # (B, n) flat indices
    for b in range(batch):  # a few prompts; the pool differs in size per row
        pool = np.flatnonzero(flat[b] >= kth[b])                        # ascending flat index
        order[b] = pool[np.argsort(-flat[b, pool], kind="stable")[:n]]
    return np.take_along_axis(flat, order, axis=1), order // vocab, order % vocab


def extend_beam_history(history: np.ndarray | None, beam_idx: np.ndarray) -> np.ndarray | None:
    """[rows, steps] beam-index history -> [rows, steps + 1]: row i continues old row beam_idx[i].

    transformers: ``beam_indices = tuple(beam_indices[beam_idx[i]] + (beam_idx[i],) ...)``.

    >>> extend_beam_history(np.array([[0], [0]]), np.array([1, 0]))
    array([[0, 1],
           [0, 0]])
    """
    if history is None:
        return None
    return np.concatenate([history[beam_idx], beam_idx[:, None]], axis=1)


def beam_output(final: dict, scores: tuple | None, raw_logits: tuple | None, cache: Any,
                return_dict_in_generate: bool, output_scores: bool) -> np.ndarray | GenerateBeamDecoderOnlyOutput:
    """``BeamSearchScorer.finalize`` result -> sequences, or the output object (scores only if asked)."""
    if not return_dict_in_generate:
        return final["sequences"]
    return GenerateBeamDecoderOnlyOutput(
        sequences=final["sequences"], sequences_scores=final["sequence_scores"] if output_scores else None,
        scores=scores, logits=raw_logits, beam_indices=final["beam_indices"], past_key_values=cache)


def _check_rows(input_ids: np.ndarray, beam_scorer: BeamSearchScorer) -> None:
    if input_ids.shape[0] != beam_scorer.batch_size * beam_scorer.num_beams:
        raise ValueError(f"Batch dimension of `input_ids` should be "
                         f"{beam_scorer.batch_size * beam_scorer.num_beams}, but is {input_ids.shape[0]}.")


# ---- the loops


def beam_search(model: Any, input_ids: np.ndarray, beam_scorer: BeamSearchScorer, logits_processor: Any = None,
                stopping_criteria: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
                eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                output_logits: bool = False, return_dict_in_generate: bool = False,
                attention_mask: np.ndarray | None = None) -> np.ndarray | GenerateBeamDecoderOnlyOutput:
    """Beam search over ``input_ids`` int64 (B*K, T) (each prompt repeated K times); see the module docstring.

    >>> from refdecode.testing import TableModel
    >>> model = TableModel(np.log(np.array([[.1, .5, .4], [.1, .1, .8], [.9, .05, .05]], dtype=np.float32)))
    >>> scorer = BeamSearchScorer(batch_size=1, num_beams=2, length_penalty=0.0)
    >>> beam_search(model, np.array([[0], [0]]), scorer, max_length=3, eos_token_id=0, pad_token_id=0)
    array([[0, 1, 2]])

    Greedy would take 0 -> 1 (p=.5) -> 2 (p=.8): here both paths 0->1->2 (.40) and 0->2->0 (eos,
    .36) are explored and the first wins.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    _check_rows(input_ids, beam_scorer)
    batch, beams, prompt_len = beam_scorer.batch_size, beam_scorer.num_beams, input_ids.shape[1]
    n_candidates = max(2, 1 + len(eos or [])) * beams
    beam_scores = np.zeros((batch, beams), dtype=np.float32)  # (B, K)
    beam_scores[:, 1:] = -1e9                                # only beam 0 of each prompt is live at first
    scores = () if (return_dict_in_generate and output_scores) else None
    raw_logits = () if (return_dict_in_generate and output_logits) else None
    history = np.zeros((input_ids.shape[0], 0), dtype=np.int64) if scores is not None else None  # (B*K, steps)
    # 1) model call: the prompt once per distinct prompt, cache expanded to the K beams
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        # 2) processors on the log-probabilities (B*K, V)
        processed = logits_processor(input_ids, log_softmax(logits))
        check_no_nan(processed, input_ids.shape[1])
        scores = scores + (processed,) if scores is not None else None
        raw_logits = raw_logits + (logits,) if raw_logits is not None else None
        # 3) selection: top candidates among the K*V continuations of each prompt
        total = processed.reshape(batch, beams, -1) + beam_scores[:, :, None]  # (B*K, V) -> (B, K, V)
        cand_scores, cand_beams, cand_tokens = top_candidates_partitioned(total, n_candidates)  # (B, C) each
        # 4) bookkeeping: the scorer splits finished/running; reorder ids, cache and history
        step = beam_scorer.process(input_ids, cand_scores, cand_tokens, cand_beams, pad_token_id=pad_token_id,
                                   eos_token_id=eos, beam_indices=history, decoder_prompt_len=prompt_len)
        beam_scores = step["next_beam_scores"].reshape(batch, beams)  # (B*K,) -> (B, K)
        beam_idx, next_tokens = step["next_beam_indices"], step["next_beam_tokens"]  # (B*K,) each
        input_ids = np.concatenate([input_ids[beam_idx], next_tokens[:, None]], axis=1)  # (B*K, T+1)
        cache.reorder(beam_idx)
        history = extend_beam_history(history, beam_idx)
        # 5) stopping: every prompt done, or a criterion fires
        if beam_scorer.is_done or np.all(criteria(input_ids, scores)):
            break
        logits, attention_mask = decode_step(model, next_tokens, attention_mask, cache)
    final = beam_scorer.finalize(input_ids, beam_scores.reshape(-1), None, None, max_length=criteria.max_length,
                                 pad_token_id=pad_token_id, eos_token_id=eos, beam_indices=history,
                                 decoder_prompt_len=prompt_len)
    return beam_output(final, scores, raw_logits, cache, return_dict_in_generate, output_scores)


def sample_candidates(total: np.ndarray, n: int, draw: Callable[..., np.ndarray],
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[batch, beam, vocab] scores -> n drawn candidates per row, sorted: scores, beam, token [batch, n].

    Draws n distinct flat indices from softmax over the K*V values of each row, then sorts them
    by score, descending (stable: equal scores keep draw order).
    """
    batch, beams, vocab = total.shape
    flat = total.reshape(batch, beams * vocab)                          # (B, K, V) -> (B, K*V)
    drawn = sampling_draw.checked_draw(draw, softmax(flat), n, False, rng)  # (B, n) flat indices
    drawn_scores = np.take_along_axis(flat, drawn, axis=1)              # (B, n)
    order = np.argsort(-drawn_scores, axis=1, kind="stable")            # (B, n)
    drawn = np.take_along_axis(drawn, order, axis=1)
    return np.take_along_axis(drawn_scores, order, axis=1), drawn // vocab, drawn % vocab


def beam_sample(model: Any, input_ids: np.ndarray, beam_scorer: BeamSearchScorer, logits_processor: Any = None,
                stopping_criteria: Any = None, logits_warper: Any = None, max_length: int | None = None,
                pad_token_id: int | None = None, eos_token_id: int | list[int] | None = None,
                output_scores: bool = False, output_logits: bool = False, return_dict_in_generate: bool = False,
                attention_mask: np.ndarray | None = None, rng: np.random.Generator | None = None,
                seed: int | None = None,
                draw: Callable[..., np.ndarray] | None = None) -> np.ndarray | GenerateBeamDecoderOnlyOutput:
    """Beam sample over ``input_ids`` int64 (B*K, T); see the module docstring. ``scores`` holds the warped
    per-step scores. ``draw``/``rng``/``seed`` as in :func:`refdecode.sampling.sample`."""
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    logits_warper = LogitsProcessorList(logits_warper if logits_warper is not None else [])
    rng, draw = make_rng(rng, seed), draw if draw is not None else sampling_draw.multinomial_sparse
    _check_rows(input_ids, beam_scorer)
    batch, beams, prompt_len = beam_scorer.batch_size, beam_scorer.num_beams, input_ids.shape[1]
    beam_scores = np.zeros((batch, beams), dtype=np.float32)  # (B, K): all beams start live
    scores = () if (return_dict_in_generate and output_scores) else None
    raw_logits = () if (return_dict_in_generate and output_logits) else None
    history = np.zeros((input_ids.shape[0], 0), dtype=np.int64) if scores is not None else None
    # 1) model call: the prompt once per distinct prompt
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        # 2) processors, then warpers, on the log-probabilities of the step (B*K, V)
        processed = logits_warper(input_ids, logits_processor(input_ids, log_softmax(logits)))
        check_no_nan(processed, input_ids.shape[1])
        scores = scores + (processed,) if scores is not None else None
        raw_logits = raw_logits + (logits,) if raw_logits is not None else None
        # 3) selection: draw 2K candidates from softmax of the accumulated scores, sort them
        total = processed.reshape(batch, beams, -1) + beam_scores[:, :, None]  # (B, K, V)
        cand_scores, cand_beams, cand_tokens = sample_candidates(total, 2 * beams, draw, rng)  # (B, 2K)
        # 4) bookkeeping, as in beam search
        step = beam_scorer.process(input_ids, cand_scores, cand_tokens, cand_beams, pad_token_id=pad_token_id,
                                   eos_token_id=eos, beam_indices=history, decoder_prompt_len=prompt_len)
        beam_scores = step["next_beam_scores"].reshape(batch, beams)
        beam_idx, next_tokens = step["next_beam_indices"], step["next_beam_tokens"]
        input_ids = np.concatenate([input_ids[beam_idx], next_tokens[:, None]], axis=1)  # (B*K, T+1)
        cache.reorder(beam_idx)
        history = extend_beam_history(history, beam_idx)
        # 5) stopping
        if beam_scorer.is_done or np.all(criteria(input_ids, scores)):
            break
        logits, attention_mask = decode_step(model, next_tokens, attention_mask, cache)
    final = beam_scorer.finalize(input_ids, beam_scores.reshape(-1), None, None, max_length=criteria.max_length,
                                 pad_token_id=pad_token_id, eos_token_id=eos, beam_indices=history,
                                 decoder_prompt_len=prompt_len)
    return beam_output(final, scores, raw_logits, cache, return_dict_in_generate, output_scores)
