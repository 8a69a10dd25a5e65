r"""The scorer of constrained beam search: beam search that must put given phrases into every output.

Contract: ``ConstrainedBeamSearchScorer.process`` gets, per step, the ranked candidates of each prompt
(as :class:`~refdecode.decoding.beam.beam_scorer.BeamSearchScorer.process` does) **plus** the scores of every
token for every beam (``scores_for_all_vocab``), and returns the K beams to continue;
``finalize`` returns the best finished hypotheses that satisfy every constraint. The constraints'
state machines are in :mod:`refdecode.decoding.beam.constraints`; the loop is
:func:`refdecode.decoding.beam.constrained_beam_search.constrained_beam_search`.

The algorithm (Hokamp & Liu 2017, "grid beam search"; Post & Vilar 2018, "dynamic beam
allocation", arXiv:1804.06609), as transformers 4.38.2 implements it:

1. **Candidates** as in beam search: walk the top 2K; an eos ranked < K finishes a hypothesis **only
   if the sequence already contains every constraint** (checked on the whole sequence, prompt
   included); the first K non-eos candidates are the "top-k" beams.
2. **Forced candidates**: for each running beam whose constraints are not complete, every token that
   would advance a constraint (:meth:`ConstraintListState.advance`) is proposed too, with that
   token's score from ``scores_for_all_vocab``, unless the same sequence is proposed already.
3. **Banks**: each candidate's bank is its number of fulfilled constraint tokens. Candidates are
   sorted by :math:`100 \cdot \text{bank} + \text{score}` (float32), descending, then taken
   **round-robin across banks**: the best of each bank in that order, then the second of each
   bank, ...; the first K are the next beams. So beams that made progress on the constraints
   survive even when their score is low, and the best unconstrained beams survive too.

Tie rules (torch leaves them unspecified): the 2K candidates as beam search (lower ``k*V + v``
first); the bank sort is ``torch.sort(descending=True)``'s CPU order: stable (earlier candidate
first: top-k ones, then forced ones in the order proposed) for up to 16 candidates, libstdc++'s
introsort order above (:mod:`refdecode.numerics.introsort`); the round-robin uses a stable sort
as transformers (``np.argsort(kind="mergesort")``).

transformers quirks reproduced: ``finalize`` adds **every** running beam that misses a constraint
when fewer than ``num_beam_hyps_to_keep`` complete ones exist (its fallback loop never updates its
counter), without beam indices; where transformers then crashes (``len(None)`` with
``output_scores``), refdecode leaves that row's ``beam_indices`` at -1 (docs/parity.md).

Docs: docs/constrained-beam-search.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...generation_rules import eos_list
from ...numerics.introsort import torch_cpu_sort_order
from .beam_scorer import BeamHypotheses, check_scorer_arguments, pad_hypotheses, split_candidates
from .constraints import Constraint, ConstraintListState

__all__ = ["ConstrainedBeamSearchScorer", "bank_round_robin"]


def bank_round_robin(banks: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    r"""Candidates (banks int (C,), scores float32 (C,)) -> the ``n`` kept, as indices into the C.

    Sort by :math:`100 \cdot \text{bank} + \text{score}` descending (float32, in ``torch.sort``'s CPU
    order: stable up to 16 candidates, :func:`torch_cpu_sort_order` above), number each
    candidate within its run of equal banks (0, 1, 2, ...), and take them in order of that number
    (stable): the best of every bank first.

    >>> banks = np.array([0, 0, 0, 1, 2])
    >>> scores = np.array([-1.0, -2.0, -3.0, -9.0, -8.0], dtype=np.float32)
    >>> bank_round_robin(banks, scores, 3).tolist()     # bank 2's best, bank 1's best, bank 0's best
    [4, 3, 0]
    """
    zipped = (banks * 100).astype(np.float32) + scores.astype(np.float32)   # float32, as torch's int64 + float32
    order = torch_cpu_sort_order(zipped, descending=True)                   # (C,) descending, torch's ties
    sorted_banks = banks[order]
    increments = np.zeros(len(order), dtype=np.int64)                       # rank within a run of equal banks
    for i in range(1, len(order)):
        increments[i] = increments[i - 1] + 1 if sorted_banks[i] == sorted_banks[i - 1] else 0
    return order[np.argsort(increments, kind="mergesort")][:n]


class ConstrainedBeamSearchScorer:
    r"""Beam search bookkeeping with positive constraints, for ``batch_size`` prompts of ``num_beams`` beams.

    Args:
        batch_size: B prompts.
        num_beams: K beams per prompt (> 1).
        constraints: the :class:`~refdecode.decoding.beam.constraints.Constraint` objects every output must satisfy.
        device: accepted and ignored (transformers' signature).
        length_penalty, do_early_stopping, num_beam_hyps_to_keep, max_length: as
            :class:`~refdecode.decoding.beam.beam_scorer.BeamSearchScorer`.
        num_beam_groups: must be 1 here (transformers accepts it in the signature only).
    """

    def __init__(self, batch_size: int, num_beams: int, constraints: list[Constraint], device: Any = None,
                 length_penalty: float = 1.0, do_early_stopping: bool | str = False, num_beam_hyps_to_keep: int = 1,
                 num_beam_groups: int = 1, max_length: int | None = None):
        if not isinstance(num_beam_groups, int) or num_beam_groups != 1:
            raise ValueError(f"`num_beam_groups` has to be 1 for constrained beam search, but is {num_beam_groups}")
        if not isinstance(constraints, list) or not constraints or not all(isinstance(c, Constraint) for c in constraints):
            raise ValueError(f"`constraints` has to be a non-empty list of Constraint objects, but is {constraints!r}")
        batch_size, num_beams, num_beam_hyps_to_keep, _ = check_scorer_arguments(
            batch_size, num_beams, length_penalty, num_beam_hyps_to_keep, num_beam_groups)  # BeamSearchScorer's
        self.batch_size, self.num_beams, self.group_size = batch_size, num_beams, num_beams
        self.num_beam_hyps_to_keep = num_beam_hyps_to_keep
        self.constraints = constraints
        pool = BeamHypotheses(num_beams, length_penalty, do_early_stopping, max_length)  # checked once
        self.beam_hyps = [pool.empty() for _ in range(batch_size)]
        self.done = np.zeros(batch_size, dtype=bool)  # (B,)

    @property
    def is_done(self) -> bool:
        return bool(self.done.all())

    @property
    def _beam_hyps(self) -> list[BeamHypotheses]:
        """transformers' name for ``beam_hyps`` (one per prompt), for code that inspects it."""
        return self.beam_hyps

    def make_constraint_states(self, n: int) -> list[ConstraintListState]:
        return [ConstraintListState([c.copy() for c in self.constraints]) for _ in range(n)]

    def check_completes_constraints(self, sequence: list[int]) -> bool:
        """Does ``sequence`` (token ids, prompt included) contain every constraint?"""
        state = self.make_constraint_states(1)[0]
        state.reset(sequence)
        return state.completed

    def process(self, input_ids: np.ndarray, next_scores: np.ndarray, next_tokens: np.ndarray,
                next_indices: np.ndarray, scores_for_all_vocab: np.ndarray, pad_token_id: int | None = None,
                eos_token_id: int | list[int] | None = None, beam_indices: Any = None,
                decoder_prompt_len: int = 0) -> dict[str, np.ndarray]:
        r"""One step (steps 1-3 of the module docstring) for every prompt.

        Args:
            input_ids: int64 (B*K, T). next_scores / next_tokens / next_indices: (B, C) ranked
                candidates (scores accumulated; indices = beam of the prompt, 0..K-1).
            scores_for_all_vocab: float32 (B*K, V), every token's accumulated score.
            beam_indices: per row, the beam-index history, or None.

        Returns:
            ``next_beam_scores`` float32, ``next_beam_tokens`` int64, ``next_beam_indices`` int64
            (rows of ``input_ids``), each (B*K,).
        """
        cur_len = input_ids.shape[-1] + 1
        k = self.num_beams
        if input_ids.shape[0] != self.batch_size * k:
            raise ValueError(f"A beam size of {input_ids.shape[0]} is used as the input, but a beam size of {k} "
                             "is expected by the beam scorer.")
        eos = eos_list(eos_token_id, no_token=True)
        out_scores = np.zeros((self.batch_size, k), dtype=next_scores.dtype)  # (B, K)
        out_tokens = np.zeros((self.batch_size, k), dtype=np.int64)
        out_rows = np.zeros((self.batch_size, k), dtype=np.int64)
        for b, hyps in enumerate(self.beam_hyps):
            if self.done[b]:
                if eos is None or pad_token_id is None:
                    raise ValueError("Generated beams >= num_beams -> eos_token_id and pad_token have to be defined")
                out_tokens[b, :] = pad_token_id  # the pad step, as BeamSearchScorer
                continue
            # an eos ranked >= K, or one before every phrase is in, finishes nothing
            out_scores[b], out_tokens[b], out_rows[b], n_running = split_candidates(
                hyps, input_ids, next_scores[b], next_tokens[b], b * k + next_indices[b], eos=eos,
                beam_indices=beam_indices, generated_len=cur_len - decoder_prompt_len,
                may_finish=lambda row: self.check_completes_constraints(input_ids[row].tolist()))
            out_scores[b], out_tokens[b], out_rows[b] = self.step_sentence_constraint(
                b, input_ids, scores_for_all_vocab, out_scores[b], out_tokens[b], out_rows[b])
            if n_running < k:
                raise ValueError(f"At most {k} tokens in {next_tokens[b].tolist()} can be equal to `eos_token_id: "
                                 f"{eos_token_id}`. Make sure {next_tokens[b].tolist()} are corrected.")
            self.done[b] = self.done[b] or hyps.is_done(float(next_scores[b].max()), cur_len, decoder_prompt_len)
        return {"next_beam_scores": out_scores.reshape(-1), "next_beam_tokens": out_tokens.reshape(-1),
                "next_beam_indices": out_rows.reshape(-1)}

    def step_sentence_constraint(self, batch_idx: int, input_ids: np.ndarray, vocab_scores: np.ndarray,
                                 sent_beam_scores: np.ndarray, sent_beam_tokens: np.ndarray,
                                 sent_beam_indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps 2-3 for prompt ``batch_idx``: add the forced candidates, keep K by banks, round-robin.

        ``sent_beam_*`` (K,) are the top-k candidates of step 1 (``indices`` = rows of ``input_ids``).
        """
        k = len(sent_beam_indices)
        first = batch_idx * k
        prompt_rows = input_ids[first: first + k]                                       # (K, T)
        full = np.concatenate([input_ids[sent_beam_indices], sent_beam_tokens[:, None]], axis=1)  # (K, T+1)
        seen = full.tolist()                                     # sequences proposed so far (no duplicates)
        states = self.make_constraint_states(k)
        new_rows, new_tokens, new_scores, new_states = [], [], [], []
        for j in range(k):
            states[j].reset(full[j].tolist())                    # the bank of top-k candidate j
            advance_state = self.make_constraint_states(1)[0]
            advance_state.reset(prompt_rows[j].tolist())         # beam j before this step
            if advance_state.completed:
                continue
            for token in advance_state.advance() or []:          # every token that advances a constraint
                new_state = advance_state.copy(stateful=True)
                new_state.add(token)
                seq = prompt_rows[j].tolist() + [token]
                if seq not in seen:
                    seen.append(seq)
                    new_rows.append(first + j)
                    new_tokens.append(token)
                    new_scores.append(vocab_scores[first + j, token])
                    new_states.append(new_state)
        if not new_rows:
            return sent_beam_scores, sent_beam_tokens, sent_beam_indices
        all_scores = np.concatenate([sent_beam_scores, np.array(new_scores, dtype=sent_beam_scores.dtype)])
        all_tokens = np.concatenate([sent_beam_tokens, np.array(new_tokens, dtype=np.int64)])
        all_rows = np.concatenate([sent_beam_indices, np.array(new_rows, dtype=np.int64)])
        banks = np.array([state.get_bank() for state in states + new_states], dtype=np.int64)
        keep = bank_round_robin(banks, all_scores, k)                                   # (K,)
        return all_scores[keep], all_tokens[keep], all_rows[keep]

    def finalize(self, input_ids: np.ndarray, final_beam_scores: np.ndarray, final_beam_tokens: Any = None,
                 final_beam_indices: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
                 eos_token_id: int | list[int] | None = None, beam_indices: Any = None,
                 decoder_prompt_len: int = 0) -> dict[str, np.ndarray | None]:
        """Add running beams that satisfy the constraints (or, lacking enough, every other one), pick the best.

        Same output as :meth:`refdecode.decoding.beam.beam_scorer.BeamSearchScorer.finalize`: ``sequences`` int64
        (B*R, W), ``sequence_scores`` float32 (B*R,), ``beam_indices`` int64 (B*R, W) or None.
        """
        eos = eos_list(eos_token_id, no_token=True)
        k, n_keep, generated_len = self.num_beams, self.num_beam_hyps_to_keep, input_ids.shape[-1] - decoder_prompt_len
        for b, hyps in enumerate(self.beam_hyps):
            if self.done[b]:
                continue
            rows = range(b * k, (b + 1) * k)
            complete = [row for row in rows if self.check_completes_constraints(input_ids[row].tolist())]
            for row in complete:
                history = None if beam_indices is None else tuple(int(i) for i in beam_indices[row])
                hyps.add(input_ids[row], float(final_beam_scores[row]), beam_indices=history,
                         generated_len=generated_len)
            if len(complete) < n_keep:  # the fallback: transformers adds ALL the others (its counter never moves)
                for row in rows:
                    if row not in complete:
                        hyps.add(input_ids[row], float(final_beam_scores[row]), generated_len=generated_len)
        best = []
        for hyps in self.beam_hyps:
            ranked = sorted(hyps.beams, key=lambda beam: beam[0])  # ascending, stable: later wins ties
            best += [ranked.pop() for _ in range(n_keep)]
        return pad_hypotheses(best, max_length, pad_token_id, eos)
