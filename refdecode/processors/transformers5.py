r"""transformers 5.x's processor rules where they depart from 4.38.2: their one home.

Contract: the 4.38.2 rules (``logits_process.py`` and the rest of ``processors/``) hold no branch for a later
version. What 5.x changed in a processor lives here, written as the 4.38.2 rule applied to what 5.x lets it
see, and is used by the two places that run 5.x: ``generate(..., semantics="5")`` (``pipeline.py`` builds
:func:`repetition_penalty_processor`) and the ``transformers-5`` engine profile
(``refdecode/reference/engines``, whose ``rp_ctx="unpadded"`` calls :func:`repetition_penalty_process`).

The 5.x rules refdecode knows, with the release each first appeared in (read in the PyPI wheels: the first
release whose ``generation/`` source has it, the one before it does not):

- ``RepetitionPenaltyLogitsProcessor(penalty, prompt_ignore_length)``, the argument that leaves the first
  positions out: **4.52.1** (not in 4.51.3; transformers PR #37625). Here: :class:`RepetitionPenaltyLogitsProcessor`.
- ``generate`` passes each row's left-padding width as ``prompt_ignore_length``, so padding (= eos with GPT-2)
  is no longer penalised: **5.23.0** (not in 5.22.2; ``_get_logits_processor``). Here:
  :func:`repetition_penalty_processor` (``semantics="5"``).
- Not processors, so not here (the ``transformers-5`` profile's other switches, ``reference/engines/rules.py``):
  ``min_new_tokens`` replaces ``min_length`` (**4.40.0**, ``_prepare_generated_length``); the vectorised beam
  search, which keeps the generated eos and stops by its own heuristic (**4.50.0**).

Docs: docs/parity.md ("transformers 5.x semantics").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import check_integer, describe, is_integer
from . import logits_process

__all__ = ["repetition_penalty_process", "RepetitionPenaltyLogitsProcessor", "padding_lengths",
           "repetition_penalty_processor"]


def repetition_penalty_process(input_ids: np.ndarray, scores: np.ndarray, penalty: float,
                               prompt_ignore_length: int | np.ndarray = 0) -> np.ndarray:
    r"""transformers 5.x's repetition penalty: 4.38.2's rule on each row without its first positions.

    Row ``b`` is penalised by :func:`refdecode.processors.logits_process.repetition_penalty_process` for the
    tokens at positions ``t >= prompt_ignore_length[b]`` only (an int: the same for every row; 0, the default,
    is 4.38.2's rule). ``generate`` passes each row's left-padding width, so padding no longer counts as seen.

    >>> s = np.array([[2.0, -2.0, 1.0, 3.0]], dtype=np.float32)
    >>> repetition_penalty_process(np.array([[0, 1, 1]]), s, 2.0, np.array([1]))   # position 0 is padding
    array([[ 2., -4.,  1.,  3.]], dtype=float32)
    """
    if np.shape(input_ids)[:1] != np.shape(scores)[:1]:
        raise ValueError(f"`input_ids` has {np.shape(input_ids)[:1]} rows but `scores` has {np.shape(scores)[:1]}")
    if np.ndim(prompt_ignore_length) == 1 and len(prompt_ignore_length) != np.shape(scores)[0]:
        raise ValueError(f"`prompt_ignore_length` has {len(prompt_ignore_length)} rows but `scores` has "
                         f"{np.shape(scores)[0]} (one padding width per row)")
    ignore = np.broadcast_to(np.asarray(prompt_ignore_length), (np.shape(scores)[0],))
    rows = [logits_process.repetition_penalty_process(input_ids[b:b + 1, int(ignore[b]):], scores[b:b + 1], penalty)
            for b in range(np.shape(scores)[0])]
    return np.concatenate(rows) if rows else scores.copy()


class RepetitionPenaltyLogitsProcessor(logits_process.RepetitionPenaltyLogitsProcessor):
    """transformers 5.x's ``RepetitionPenaltyLogitsProcessor(penalty, prompt_ignore_length=None)``.

    ``prompt_ignore_length``: None (4.38.2's rule: every position counts), an int >= 0, or a 1-D array of ints
    >= 0, one per row. Each row runs the 4.38.2 processor on its positions from ``prompt_ignore_length[b]`` on.
    """

    def __init__(self, penalty: float, prompt_ignore_length: int | np.ndarray | None = None):
        super().__init__(penalty)
        self.prompt_ignore_length = _check_ignore_length(prompt_ignore_length)

    def __call__(self, input_ids, scores, **kwargs):
        if self.prompt_ignore_length is None:
            return super().__call__(input_ids, scores)
        return repetition_penalty_process(np.asarray(input_ids), scores, self.penalty, self.prompt_ignore_length)


def _check_ignore_length(value: Any) -> int | np.ndarray | None:
    """``prompt_ignore_length``: None, an int >= 0, or a 1-D array of ints >= 0 (transformers 5.x's argument)."""
    if value is None:
        return None
    if is_integer(value):
        return check_integer("prompt_ignore_length", value, minimum=0)
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or (arr < 0).any():
        raise ValueError(f"`prompt_ignore_length` must be None, an int >= 0 or a 1-D array of ints >= 0, "
                         f"got {describe(value)}")
    return arr.astype(np.int64)


def padding_lengths(attention_mask: np.ndarray | None, rows_per_prompt: int) -> np.ndarray | None:
    """(B, T) attention mask -> (B * rows_per_prompt,) each row's left-padding width; None without a mask.

    5.23.0 ``generation/utils.py`` ``_get_logits_processor``: ``padding_lengths = (mask != 0).int().argmax(dim=1)``
    (the first unmasked position; 0 for an all-zero row), on the mask already expanded to
    ``max(num_beams, num_return_sequences)`` rows per prompt, hence the ``np.repeat``.
    """
    if attention_mask is None:
        return None
    lengths = (np.asarray(attention_mask) != 0).argmax(axis=1).astype(np.int64)  # (B,)
    return np.repeat(lengths, rows_per_prompt)


def repetition_penalty_processor(penalty: float, attention_mask: np.ndarray | None,
                                 rows_per_prompt: int) -> RepetitionPenaltyLogitsProcessor:
    """The repetition penalty 5.23.0's ``generate`` builds: padding-aware, from the request's attention mask."""
    return RepetitionPenaltyLogitsProcessor(penalty, padding_lengths(attention_mask, rows_per_prompt))
