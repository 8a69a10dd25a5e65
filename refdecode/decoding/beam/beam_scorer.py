r"""Beam bookkeeping: finished hypotheses (``BeamHypotheses``) and the per-step scorer (``BeamSearchScorer``).

Contract: the decode loops (beam_search.py, group_beam_search.py) compute scores and pick the
top candidates; this module decides, for each prompt, which candidates keep running, which
finished ones (those ending in eos) are kept, when a prompt is done, and finally which sequences
are returned. It never sees the model. Same names, arguments and arithmetic as transformers
4.38.2 ``generation/beam_search.py`` (the neural-speed article walks through ``is_done``/``process``/
``finalize``; the 4.26 walkthrough section 3.3 through ``process``/``add``/``finalize``).

Arithmetic: scores arrive as float32; like transformers (``tensor.item()``) they become Python
floats here, the length penalty is applied in float64, and ``finalize`` returns float32 scores.

.. math:: \mathrm{score}(y) = \frac{\sum_t \log p(y_t \mid y_{<t})}{\ell^{\,\alpha}},
   \qquad \ell = \text{generated length} = \text{cur\_len} - \text{prompt length}

where ``cur_len`` counts the eos token although the stored hypothesis does not contain it
(#8722), and :math:`\alpha` is ``length_penalty`` (1.0 by default, which is not neutral: 0 is).
Docs: docs/beam-search.md (the 4.26 walkthrough's length-penalty examples eg1-eg3 computed with this code).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from ...generation_rules import eos_list
from ...validation import check_allocation, check_choice, check_float, check_integer, describe

__all__ = ["BeamHypotheses", "BeamSearchScorer", "split_candidates", "pad_hypotheses", "check_length_penalty",
           "check_scorer_arguments"]


class BeamHypotheses:
    r"""The ``num_beams`` best finished hypotheses of one prompt (one group of it in group beam search).

    ``beams`` holds ``(score, hyp, beam_indices)`` tuples in insertion order; ``worst_score`` is
    the lowest score held (it starts at 1e9, as transformers, so the first ``add`` always sets it).
    When a new hypothesis makes the list too long, the lowest-scored one is dropped; on equal
    scores the earliest inserted is dropped (transformers sorts ``(score, index)`` pairs).

    Args:
        num_beams: how many finished hypotheses to keep.
        length_penalty: exponent :math:`\alpha` of the generated length in the score.
        early_stopping: True, False or "never" (see :meth:`is_done`).
        max_length: needed for ``early_stopping="never"`` with ``length_penalty > 0``.

    >>> h = BeamHypotheses(num_beams=2, length_penalty=1.0, early_stopping=False)
    >>> h.add(np.array([1, 2, 3]), -2.0, generated_len=2); h.add(np.array([1, 4]), -3.0, generated_len=1)
    >>> h.add(np.array([1, 5, 6]), -1.0, generated_len=2)   # score -0.5 pushes out the -3.0 one
    >>> [s for s, _, _ in h.beams], h.worst_score
    ([-1.0, -0.5], -1.0)
    """

    def __init__(self, num_beams: int, length_penalty: float, early_stopping: bool | str,
                 max_length: int | None = None):
        self.num_beams = check_integer("num_beams", num_beams, minimum=1)
        self.max_length = check_integer("max_length", max_length, minimum=1, allow_none=True)
        self.length_penalty = check_length_penalty(length_penalty, self.max_length)
        # exactly True, False or "never": is_done tests ``is True`` / ``is False``, so 1.0 would run as "never"
        self.early_stopping = check_choice("early_stopping", early_stopping, (True, False, "never"))
        self.beams: list[tuple[float, np.ndarray, tuple[int, ...] | None]] = []
        self.worst_score = 1e9
        if not isinstance(self.early_stopping, bool) and self.max_length is None:
            raise ValueError("When `do_early_stopping` is set to a string, `max_length` must be defined. Ensure it "
                             "is passed to the BeamScorer class instance at initialization time.")

    def __len__(self) -> int:
        return len(self.beams)

    def empty(self) -> BeamHypotheses:
        """A new pool with this one's settings (checked already) and no hypothesis: the scorers build one
        pool per prompt (and group) this way, so the arguments are checked once, not once per pool."""
        pool = copy.copy(self)
        pool.beams, pool.worst_score = [], 1e9
        return pool

    def add(self, hyp: np.ndarray, sum_logprobs: float, beam_indices: tuple[int, ...] | None = None,
            generated_len: int | None = None) -> None:
        """Score ``hyp`` (its tokens, eos not included) and keep it if it is among the best ``num_beams``.

        ``generated_len``: the tokens generated after the prompt, the length the penalty divides by. None
        (transformers 4.38.2's default, kept "for retrocompatibility" there) divides by the whole ``hyp``
        length, prompt included: the pre-4.36 rule; every loop of 4.38.2 and of refdecode passes it.
        """
        length = hyp.shape[-1] if generated_len is None else generated_len
        score = float(sum_logprobs) / _length_factor(length, self.length_penalty)
        if len(self) < self.num_beams or score > self.worst_score:
            self.beams.append((score, hyp, beam_indices))
            if len(self) > self.num_beams:
                sorted_next_scores = sorted([(s, idx) for idx, (s, _, _) in enumerate(self.beams)])
                del self.beams[sorted_next_scores[0][1]]
                self.worst_score = sorted_next_scores[1][0]
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self, best_sum_logprobs: float, cur_len: int, decoder_prompt_len: int = 0) -> bool:
        r"""Can no running beam beat the worst finished one any more? (transformers 4.38.2 rules)

        Never done before ``num_beams`` hypotheses are held. Then, with
        :math:`b` = ``best_sum_logprobs`` (the best candidate score of this step, eos candidates
        included) and :math:`w` = ``worst_score``:

        - ``early_stopping=True``: done at once.
        - ``False`` (the default) -- a **heuristic**: done when
          :math:`w \ge b / (\text{cur\_len} - \text{prompt})^{\alpha}`. It assumes the best running
          beam keeps its score at the current length, which under-estimates what a longer
          beam can reach when :math:`\alpha > 0` (#20901), so it can stop too early.
        - ``"never"``: with :math:`\alpha > 0` the denominator uses ``max_length`` (the largest
          attainable), otherwise ``cur_len``; the canonical beam-search bound (#21368).

        ``cur_len`` is the length the candidate scores were computed for: ``input_ids`` length + 1.

        >>> h = BeamHypotheses(1, 1.0, False); h.add(np.array([7]), -1.0, generated_len=1)
        >>> h.is_done(-3.0, cur_len=2), h.is_done(-1.5, cur_len=2)   # w=-1.0 vs -1.5, -0.75
        (True, False)
        """
        if len(self) < self.num_beams:
            return False
        if self.early_stopping is True:
            return True
        if self.early_stopping is False or self.length_penalty <= 0.0:
            highest_attainable_score = best_sum_logprobs / _length_factor(cur_len - decoder_prompt_len,
                                                                          self.length_penalty)
        else:  # "never" with length_penalty > 0
            assert self.max_length is not None  # checked in __init__
            if self.max_length <= decoder_prompt_len:
                raise ValueError("max_length is not larger than decoder prompt length")
            highest_attainable_score = best_sum_logprobs / _length_factor(self.max_length - decoder_prompt_len,
                                                                          self.length_penalty)
        return bool(self.worst_score >= highest_attainable_score)


class BeamSearchScorer:
    r"""Standard and diverse (grouped) beam search bookkeeping for a batch of ``batch_size`` prompts.

    One :class:`BeamHypotheses` per (prompt, group), kept as ``beam_hyps[b][g]``, with capacity
    ``group_size = num_beams // num_beam_groups``; ``done[b, g]`` marks finished ones.

    Args:
        batch_size: number of prompts B.
        num_beams: beams per prompt K (> 1).
        length_penalty: :math:`\alpha` in the score (see module docstring).
        do_early_stopping: True, False or "never" (see :meth:`BeamHypotheses.is_done`).
        num_beam_hyps_to_keep: sequences returned per prompt by :meth:`finalize`.
        num_beam_groups: G, groups of diverse beam search (K must be divisible by G).
        max_length: needed by ``do_early_stopping="never"``.
        device: accepted and ignored (NumPy has one device), so transformers code that passes
            ``device=...`` ports unchanged. In transformers ``device`` is the **third positional**
            argument; here the third is ``length_penalty``, so ``BeamSearchScorer(1, 2, "cpu")`` is
            refused (a non-number ``length_penalty``) instead of silently meaning something else.
    """

    def __init__(self, batch_size: int, num_beams: int, length_penalty: float = 1.0,
                 do_early_stopping: bool | str = False, num_beam_hyps_to_keep: int = 1, num_beam_groups: int = 1,
                 max_length: int | None = None, device: Any = None):
        batch_size, num_beams, num_beam_hyps_to_keep, num_beam_groups = check_scorer_arguments(
            batch_size, num_beams, length_penalty, num_beam_hyps_to_keep, num_beam_groups)
        self.batch_size = batch_size
        self.num_beams = num_beams
        self.length_penalty = check_length_penalty(length_penalty, max_length)
        self.do_early_stopping = check_choice("do_early_stopping", do_early_stopping, (True, False, "never"))
        self.num_beam_hyps_to_keep = num_beam_hyps_to_keep
        self.num_beam_groups = num_beam_groups
        self.group_size = num_beams // num_beam_groups
        pool = BeamHypotheses(self.group_size, length_penalty, do_early_stopping, max_length)
        self.beam_hyps = [[pool.empty() for _ in range(num_beam_groups)] for _ in range(batch_size)]  # [b][g]
        self.done = np.zeros((batch_size, num_beam_groups), dtype=bool)  # (B, G)

    @property
    def is_done(self) -> bool:
        """True when every (prompt, group) is done."""
        return bool(self.done.all())

    @property
    def _beam_hyps(self) -> list[BeamHypotheses]:
        """transformers' layout of the same objects, for code that inspects it: a flat list,
        ``_beam_hyps[b * num_beam_groups + g]`` = ``beam_hyps[b][g]``."""
        return [hyps for per_prompt in self.beam_hyps for hyps in per_prompt]

    def process(self, input_ids: np.ndarray, next_scores: np.ndarray, next_tokens: np.ndarray,
                next_indices: np.ndarray, pad_token_id: int | None = None, eos_token_id: int | list[int] | None = None,
                beam_indices: Any = None, group_index: int = 0, decoder_prompt_len: int = 0) -> dict[str, np.ndarray]:
        r"""One step: split the ranked candidates of each prompt into finished and running beams.

        Args:
            input_ids: int64 (B*g, T), the rows of this group (g = group_size), prompt included.
            next_scores: float32 (B, C) candidate scores (accumulated), best first.
            next_tokens: int64 (B, C) candidate tokens.
            next_indices: int64 (B, C) which beam of the prompt (0..g-1) each candidate extends.
            pad_token_id, eos_token_id: eos may be an int or a list.
            beam_indices: per row of ``input_ids``, the beam-index history (sequence of ints) or None.
            group_index: which group these rows are (group beam search).
            decoder_prompt_len: prompt length, so the length penalty counts generated tokens only.

        Returns:
            dict of flat arrays (B*g,) -- ``[batch, beam] -> [batch*beam]`` as transformers:
            ``next_beam_scores`` float32, ``next_beam_tokens`` int64, ``next_beam_indices`` int64
            (row of ``input_ids`` each new beam continues).

        Rules (4.38.2): walk the candidates in rank order; an eos candidate ranked ``>= g`` is
        ignored, one ranked ``< g`` is added to the finished hypotheses (without the eos) with
        generated length ``cur_len - prompt``; other candidates fill the g running slots in rank
        order. ``cur_len = T + 1``; the prompt is done if ``is_done(max candidate score, cur_len)``.

        The "pad step" (a quirk reproduced): a prompt already done emits ``pad_token_id`` with
        score 0, continuing row **0 of the whole batch** (transformers writes index 0, not
        ``b*g``). Its sequences are final already, but its rows of later per-step ``scores`` are
        computed from that row.
        """
        cur_len = input_ids.shape[-1] + 1
        g = self.group_size
        if input_ids.shape[0] != self.batch_size * g:
            raise ValueError(f"A {'group ' if self.num_beam_groups > 1 else ''}beam size of {input_ids.shape[0]} "
                             f"is used as the input, but a {'group ' if self.num_beam_groups > 1 else ''}beam size "
                             f"of {g} is expected by the beam scorer.")
        eos = eos_list(eos_token_id, no_token=True)
        out_scores = np.zeros((self.batch_size, g), dtype=next_scores.dtype)  # (B, g)
        out_tokens = np.zeros((self.batch_size, g), dtype=np.int64)          # (B, g)
        out_rows = np.zeros((self.batch_size, g), dtype=np.int64)            # (B, g) rows of input_ids
        for b in range(self.batch_size):
            hyps = self.beam_hyps[b][group_index]
            if self.done[b, group_index]:
                if eos is None or pad_token_id is None:
                    raise ValueError("Generated beams >= num_beams -> eos_token_id and pad_token have to be defined")
                out_tokens[b, :] = pad_token_id  # the pad step: scores 0, rows 0 (of the batch)
                continue
            out_scores[b], out_tokens[b], out_rows[b], n_running = split_candidates(
                hyps, input_ids, next_scores[b], next_tokens[b], b * g + next_indices[b], eos=eos,
                beam_indices=beam_indices, generated_len=cur_len - decoder_prompt_len)
            if n_running < g:
                raise ValueError(f"At most {g} tokens in {next_tokens[b].tolist()} can be equal to `eos_token_id: "
                                 f"{eos_token_id}`. Make sure {next_tokens[b].tolist()} are corrected.")
            self.done[b, group_index] = self.done[b, group_index] or hyps.is_done(
                float(next_scores[b].max()), cur_len, decoder_prompt_len)
        return {"next_beam_scores": out_scores.reshape(-1), "next_beam_tokens": out_tokens.reshape(-1),
                "next_beam_indices": out_rows.reshape(-1)}

    def finalize(self, input_ids: np.ndarray, final_beam_scores: np.ndarray, final_beam_tokens: Any = None,
                 final_beam_indices: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
                 eos_token_id: int | list[int] | None = None, beam_indices: Any = None,
                 decoder_prompt_len: int = 0) -> dict[str, np.ndarray | None]:
        r"""Add the running beams of unfinished prompts, pick the best, pad into one array.

        transformers 4.38.2's signature, so that a call ported from it runs unchanged.

        Args:
            input_ids: int64 (B*K, T) running beams; ``final_beam_scores`` float32 (B*K,) their scores.
            final_beam_tokens, final_beam_indices: unused, as in transformers (its loops pass the last step's).
            max_length: cap of the output width (``stopping_criteria.max_length``), or None.
            beam_indices: per row of ``input_ids`` (row ``b*K + g*group_size + j``), the history, or None.

        Returns:
            ``sequences`` int64 (B*R, W), R = num_beam_hyps_to_keep, rows grouped per prompt, best
            first; ``sequence_scores`` float32 (B*R,); ``beam_indices`` int64 (B*R, W) padded with
            -1, or None. W = min(longest hypothesis + 1, max_length).

        Running beams of a prompt that is not done are added with generated length ``T - prompt``
        (no eos counted). All groups of a prompt are pooled and sorted by score (Python's stable
        ``sorted``) and the best are popped from the end, so **on equal scores the later one wins**
        (later group, later inserted). A hypothesis shorter than W gets ``eos_token_id[0]`` appended
        -- also a running beam that never emitted eos, when it is shorter than W -- and the rest
        of the row is ``pad_token_id``.
        """
        eos = eos_list(eos_token_id, no_token=True)
        g, n_keep = self.group_size, self.num_beam_hyps_to_keep
        for b in range(self.batch_size):
            for grp in range(self.num_beam_groups):
                if self.done[b, grp]:
                    continue
                for j in range(g):
                    row = b * self.num_beams + grp * g + j
                    history = None if beam_indices is None else tuple(int(i) for i in beam_indices[row])
                    self.beam_hyps[b][grp].add(input_ids[row], float(final_beam_scores[row]), beam_indices=history,
                                               generated_len=input_ids.shape[-1] - decoder_prompt_len)
        best: list[tuple[float, np.ndarray, tuple[int, ...] | None]] = []
        for b in range(self.batch_size):
            pooled = [beam for hyps in self.beam_hyps[b] for beam in hyps.beams]
            ranked = sorted(pooled, key=lambda beam: beam[0])  # ascending; stable
            best += [ranked.pop() for _ in range(n_keep)]       # best first
        return pad_hypotheses(best, max_length, pad_token_id, eos)


# ----------------------------------------------------------------------------------------------------
# One prompt's step and the final padding, shared with constrained_beam_scorer.py
# ----------------------------------------------------------------------------------------------------


def split_candidates(hyps: BeamHypotheses, input_ids: np.ndarray, scores: np.ndarray, tokens: np.ndarray,
                     rows: np.ndarray, *, eos: list[int] | None, beam_indices: Any, generated_len: int,
                     may_finish: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Walk one prompt's ranked candidates (C,): finished ones into ``hyps``, the first g others keep running.

    An eos candidate ranked ``>= g`` (g = ``hyps.num_beams``), or one ``may_finish(row)`` refuses
    (constrained beam search: not every phrase is in yet), finishes nothing and is skipped; one ranked
    ``< g`` is added to ``hyps`` (without the eos, its history extended by its row). Others fill the g
    running slots in rank order. ``rows``: (C,) the row of ``input_ids`` each candidate extends.

    Returns the running slots' scores, tokens and rows, (g,) each, and how many were filled.
    """
    g = hyps.num_beams
    out_scores, out_tokens, out_rows = np.zeros(g, dtype=scores.dtype), np.zeros(g, np.int64), np.zeros(g, np.int64)
    n_running = 0
    for rank in range(tokens.shape[0]):
        token, score, row = int(tokens[rank]), scores[rank], int(rows[rank])
        if eos is not None and token in eos:
            if rank >= g or (may_finish is not None and not may_finish(row)):
                continue  # an eos outside the top g (or refused) is not a finished hypothesis
            history = None if beam_indices is None else tuple(int(i) for i in beam_indices[row]) + (row,)
            hyps.add(input_ids[row].copy(), float(score), beam_indices=history, generated_len=generated_len)
        else:
            out_scores[n_running], out_tokens[n_running], out_rows[n_running] = score, token, row
            n_running += 1
        if n_running == g:
            break
    return out_scores, out_tokens, out_rows, n_running


def pad_hypotheses(best: list, max_length: int | None, pad_token_id: int | None,
                   eos: list[int] | None) -> dict[str, np.ndarray | None]:
    """The chosen (score, hyp, history) hypotheses, best first per prompt -> one padded array each.

    ``sequences`` int64 (N, W), W = min(longest + 1, max_length): a hypothesis shorter than W gets
    ``eos[0]`` appended, the rest of its row is ``pad_token_id``; ``sequence_scores`` float32 (N,);
    ``beam_indices`` int64 (N, W) padded with -1, or None (no histories kept).
    """
    lengths = np.array([len(hyp) for _, hyp, _ in best])     # (N,)
    width = int(lengths.max()) + 1 if max_length is None else min(int(lengths.max()) + 1, max_length)
    if lengths.min() != lengths.max() and pad_token_id is None:
        raise ValueError("`pad_token_id` has to be defined")
    decoded = np.full((len(best), width), pad_token_id if pad_token_id is not None else 0, dtype=np.int64)
    with_indices = len(best) > 0 and best[0][2] is not None
    indices = np.full((len(best), width), -1, dtype=np.int64) if with_indices else None
    for i, (_, hyp, history) in enumerate(best):
        decoded[i, : lengths[i]] = hyp
        if indices is not None and history is not None:
            indices[i, : len(history)] = history
        if lengths[i] < width:
            if eos is None:
                raise ValueError("`eos_token_id` has to be defined to end hypotheses shorter than the output")
            decoded[i, lengths[i]] = eos[0]  # only the first eos id
    scores = np.array([score for score, _, _ in best], dtype=np.float32)  # (N,)
    return {"sequences": decoded, "sequence_scores": scores, "beam_indices": indices}


# ----------------------------------------------------------------------------------------------------
# The checks at the door: the constructors' arguments, and the length penalty's float64 range
# ----------------------------------------------------------------------------------------------------

#: float64 overflows above e**709.78 and reaches 0 below e**-745: ``length ** length_penalty`` stays a
#: positive finite float for every length <= max_length while |length_penalty| * ln(max_length) <= 709.
_LOG_FLOAT64_MAX = 709.0


def check_length_penalty(length_penalty: Any, max_length: int | None = None) -> float:
    r"""``length_penalty`` as a float: finite, and small enough that :math:`\ell^{\alpha}` is a positive finite
    float64 for every length :math:`\ell \le` ``max_length`` (when known).

    transformers 4.38.2 lets any value through: ``-inf`` raises ZeroDivisionError and ``250``
    OverflowError in ``BeamHypotheses.add`` (``length ** 250`` overflows from length 18 on); NaN makes
    every score NaN. All three are refused here, before the search starts.

    >>> check_length_penalty(250.0, max_length=20)
    Traceback (most recent call last):
    ...
    ValueError: `length_penalty` must be a finite number with |length_penalty| * ln(max_length) <= 709 (so that length ** length_penalty is a finite positive float64 for every length up to max_length=20), got 250.0 (float)
    """
    value = check_float("length_penalty", length_penalty)
    if max_length is not None and max_length > 1 and abs(value) * math.log(max_length) > _LOG_FLOAT64_MAX:
        raise ValueError("`length_penalty` must be a finite number with |length_penalty| * ln(max_length) <= 709 "
                         "(so that length ** length_penalty is a finite positive float64 for every length up to "
                         f"max_length={max_length}), got {describe(length_penalty)}")
    return value


def _length_factor(length: int, length_penalty: float) -> float:
    """``length ** length_penalty`` (float64), or a ValueError naming ``length_penalty`` if it is not a
    positive finite float (a scorer built without ``max_length`` cannot check the bound up front)."""
    try:
        factor = float(length) ** length_penalty
    except OverflowError:
        factor = math.inf
    if not 0.0 < factor < math.inf:
        raise ValueError(f"`length_penalty`={length_penalty} makes length ** length_penalty "
                         f"{'overflow' if factor else 'underflow to 0'} at length {length}; use a smaller "
                         "|length_penalty| (see check_length_penalty)")
    return factor


def check_scorer_arguments(batch_size: Any, num_beams: Any, length_penalty: Any, num_beam_hyps_to_keep: Any,
                           num_beam_groups: Any) -> tuple[int, int, int, int]:
    """:class:`BeamSearchScorer`'s arguments (transformers 4.38.2's checks and messages, and the types) ->
    ``batch_size, num_beams, num_beam_hyps_to_keep, num_beam_groups`` as Python ints."""
    if not isinstance(length_penalty, (int, float, np.integer, np.floating)) or \
            isinstance(length_penalty, (bool, np.bool_)):
        raise TypeError(f"`length_penalty` has to be a number, but is {length_penalty!r}"
                        + (" (transformers' third positional argument is `device`; here it is `length_penalty`: "
                           "pass `device=` as a keyword, refdecode ignores it)" if isinstance(length_penalty, str)
                           else ""))
    num_beams = check_integer("num_beams", num_beams)
    num_beam_groups = check_integer("num_beam_groups", num_beam_groups, minimum=1)
    batch_size = check_integer("batch_size", batch_size, minimum=1)
    num_beam_hyps_to_keep = check_integer("num_beam_hyps_to_keep", num_beam_hyps_to_keep, minimum=1)
    if num_beams <= 1:
        raise ValueError(f"`num_beams` has to be an integer strictly greater than 1, but is {num_beams}. For "
                         "`num_beams` == 1, one should make use of `greedy_search` instead.")
    if num_beam_groups > num_beams or num_beams % num_beam_groups != 0:
        raise ValueError("`num_beam_groups` has to be an integer smaller or equal than `num_beams` and "
                         "`num_beams` has to be divisible by `num_beam_groups`, but is "
                         f"{num_beam_groups} with `num_beams` being {num_beams}.")
    if num_beam_hyps_to_keep > num_beams:
        raise ValueError(f"`num_beam_hyps_to_keep` has to be <= `num_beams` ({num_beams}), "
                         f"but is {num_beam_hyps_to_keep}")
    check_allocation("BeamSearchScorer", 512 * batch_size * num_beam_groups,  # ~512 B per BeamHypotheses
                     f"`batch_size`={batch_size} x `num_beam_groups`={num_beam_groups} pools of hypotheses")
    return batch_size, num_beams, num_beam_hyps_to_keep, num_beam_groups
