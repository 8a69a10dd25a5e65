r"""Beam bookkeeping: candidates, the scorer's step, the rows that follow the beams, the final hypotheses.

Contract: what every beam loop (:mod:`~refdecode.decoding.beam.beam_search`,
:mod:`~refdecode.decoding.beam.group_beam_search`, :mod:`~refdecode.decoding.beam.constrained_beam_search`)
does around its scorer, and nothing the other loops need: only the beam loops import this module. Rows are
laid out ``[batch, beam]`` flattened to B*K (prompt b's beams are rows b*K .. b*K + K - 1).

- :func:`top_candidates`: [batch, beam, vocab] totals -> the n best per prompt, ties by lower flat index;
- :func:`advance_beams`: the scorer's ``process`` (finished vs running), then :func:`follow_beams`: the ids,
  the KV cache and the beam-index history follow the running beams;
- :func:`finish_beams`: the scorer's ``finalize`` -> the sequences or the output object.

Docs: docs/beam-search.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...generation_output import GenerateBeamDecoderOnlyOutput
from ...recorder import NO_TRACE, Recorder
from .beam_scorer import BeamSearchScorer

__all__ = ["BeamRun", "check_beam_rows", "top_candidates", "extend_beam_history", "advance_beams", "follow_beams",
           "finish_beams"]


def check_beam_rows(input_ids: np.ndarray, beam_scorer: BeamSearchScorer) -> None:
    """``input_ids`` must hold batch_size * num_beams rows (each prompt repeated K times)."""
    if input_ids.shape[0] != beam_scorer.batch_size * beam_scorer.num_beams:
        raise ValueError(f"Batch dimension of `input_ids` should be "
                         f"{beam_scorer.batch_size * beam_scorer.num_beams}, but is {input_ids.shape[0]}.")


def top_candidates(total: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[batch, beam, vocab] scores -> the n best per batch row: scores, beam, token, each [batch, n].

    Ranked by score, descending; equal scores by lower flat index ``beam*V + token`` first: the first n
    of a stable argsort of the K*V negated scores.

    Speed-up, exact: a full stable sort of the K*V = 4 * 50257 scores of GPT-2 costs ~16 ms per step; this
    costs ~1 ms. ``np.partition`` finds the n-th best score ``kth`` (linear time); the pool of every index
    scoring ``>= kth`` (ascending flat index) holds the n best of the full sort in the same relative order,
    so a stable sort of the pool starts with the same n (more than n only when scores tie with ``kth``).

    >>> total = np.array([[[-1.0, -3.0], [-1.0, -0.5]]], dtype=np.float32)   # (1, K=2, V=2)
    >>> top_candidates(total, 3)
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


class BeamRun(NamedTuple):
    """What a beam loop fixes before its first step, and every bookkeeping helper reads.

    scorer: the :class:`~refdecode.decoding.beam.beam_scorer.BeamSearchScorer` (or the constrained one);
    pad_token_id, eos: the loop's pad id and eos list; prompt_len: T0, the prompt's length (``decoder_prompt_len``);
    max_length: the stopping criteria's; return_dict_in_generate, output_scores: what to return; recorder:
    who watches (:mod:`refdecode.recorder`).
    """

    scorer: Any
    pad_token_id: int | None
    eos: list[int] | None
    prompt_len: int
    max_length: int | None
    return_dict_in_generate: bool = False
    output_scores: bool = False
    recorder: Recorder = NO_TRACE


def advance_beams(run: BeamRun, input_ids: np.ndarray, candidates: tuple, history: Any,
                  cache: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One beam step's bookkeeping: the scorer splits the ranked candidates into finished and running
    beams (:meth:`~refdecode.decoding.beam.beam_scorer.BeamSearchScorer.process`), then :func:`follow_beams`.

    ``candidates``: (scores, beams, tokens), each (B, C), best first. input_ids (B*K, T) -> (B*K, T+1);
    returns it with the running scores (B, K) float32 and the history (B*K, steps + 1) (or None).
    """
    cand_scores, cand_beams, cand_tokens = candidates
    step = run.scorer.process(input_ids, cand_scores, cand_tokens, cand_beams, pad_token_id=run.pad_token_id,
                              eos_token_id=run.eos, beam_indices=history, decoder_prompt_len=run.prompt_len)
    run.recorder.beam_step(run.scorer, step, cand_scores, cand_beams, cand_tokens, input_ids, run.eos, run.prompt_len)
    return follow_beams(step, input_ids, history, cache, run.scorer.batch_size)


def follow_beams(step: dict, input_ids: np.ndarray, history: Any, cache: Any,
                 batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The ids, the cache and the beam-index history follow the running beams a scorer's ``process`` chose.

    ``step``: ``next_beam_scores`` / ``next_beam_tokens`` / ``next_beam_indices``, each (B*K,).
    input_ids (B*K, T) -> (B*K, T+1); returns it with the running scores (B, K) and the history (or None).
    """
    beam_idx, next_tokens = step["next_beam_indices"], step["next_beam_tokens"]  # (B*K,) each
    input_ids = np.concatenate([input_ids[beam_idx], next_tokens[:, None]], axis=1)  # (B*K, T+1)
    cache.reorder(beam_idx)
    beam_scores = step["next_beam_scores"].reshape(batch_size, -1)  # (B*K,) -> (B, K)
    return input_ids, beam_scores, extend_beam_history(history, beam_idx)


def finish_beams(run: BeamRun, input_ids: np.ndarray, beam_scores: np.ndarray, history: Any, cache: Any,
                 records: tuple[tuple | None, tuple | None]) -> np.ndarray | GenerateBeamDecoderOnlyOutput:
    """The scorer's ``finalize`` on the running beams -> the sequences, or the output object
    (``sequences_scores`` only with ``output_scores``). ``records``: the (scores, raw logits) of the loop."""
    final = run.scorer.finalize(input_ids, beam_scores.reshape(-1), max_length=run.max_length,
                                pad_token_id=run.pad_token_id, eos_token_id=run.eos, beam_indices=history,
                                decoder_prompt_len=run.prompt_len)
    run.recorder.final(final["sequences"], final["sequence_scores"], final["beam_indices"])
    if not run.return_dict_in_generate:
        return final["sequences"]
    scores, raw_logits = records
    return GenerateBeamDecoderOnlyOutput(
        sequences=final["sequences"], sequences_scores=final["sequence_scores"] if run.output_scores else None,
        scores=scores, logits=raw_logits, beam_indices=final["beam_indices"], past_key_values=cache)
