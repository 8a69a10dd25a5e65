r"""Length-dependent score changes that are not hard limits: the exponential decay length penalty.

Contract: ``input_ids`` int (B, T) and ``scores`` float32 (B, V) -> a NEW float32 (B, V) array.
The hard limits (``min_length``, ``min_new_tokens``) live in ``logits_process.py``; the beam
``length_penalty`` (which divides finished hypotheses' scores by ``length ** alpha``) lives in
``beam_scorer.py``. This one softly raises the eos score once a length is passed.

Docs: docs/bad-words-and-forcing.md (section "Exponential decay length penalty").
"""

from __future__ import annotations

import numpy as np

from .logits_process import LogitsProcessor
from .arguments import check_input_ids, check_scores, check_vocab_ids
from ..generation_rules import eos_list
from ..validation import is_integer, is_number

__all__ = ["exponential_decay_length_penalty_process", "ExponentialDecayLengthPenalty"]


def exponential_decay_length_penalty_process(input_ids: np.ndarray, scores: np.ndarray, regulation_start: int,
                                             regulation_factor: float, eos_token_id) -> np.ndarray:
    r"""Raise the eos scores exponentially once the row is longer than ``regulation_start``.

    .. math:: s'_{b,e} = s_{b,e} + |s_{b,e}|\,(\alpha^{\,T - \text{start}} - 1)
              \quad\text{for every eos } e, \text{ if } T > \text{start}

    with :math:`\alpha` = ``regulation_factor`` and ``start`` = ``regulation_start`` (``generate``
    passes ``start_index + prompt width``, so ``exponential_decay_length_penalty=(start_index,
    alpha)`` counts generated tokens). Working on :math:`|s|` raises negative scores too: for
    :math:`s < 0` the result is :math:`s\,(2 - \alpha^{k})`. The factor :math:`\alpha^{k} - 1` is
    computed in Python (float64) and rounded to float32 for the product, as torch does with a
    Python scalar. transformers 4.38.2 ``ExponentialDecayLengthPenalty``.

    >>> s = np.array([[-2.0, 1.0, 4.0]], dtype=np.float32)
    >>> exponential_decay_length_penalty_process(np.array([[5, 6, 7]]), s, 1, 1.5, [0, 2])  # k = 2: 1.5^2 - 1
    array([[0.5, 1. , 9. ]], dtype=float32)
    """
    batch, vocab = check_scores(scores).shape
    check_input_ids(input_ids, batch)
    eos = eos_list(eos_token_id)
    check_vocab_ids("eos_token_id", np.asarray(eos, dtype=np.int64), vocab)
    cur_len = input_ids.shape[-1]
    out = scores.copy()
    if cur_len > regulation_start:
        try:
            factor = pow(regulation_factor, cur_len - regulation_start) - 1
        except OverflowError:  # transformers 4.38.2 raises this OverflowError from the same Python pow
            raise ValueError(f"`exponential_decay_length_penalty`: decay_factor {regulation_factor!r} to the power "
                             f"{cur_len - regulation_start} overflows float64 (at most about 1.8e308); use a smaller "
                             "decay_factor or a later start_index") from None
        with np.errstate(over="ignore"):   # a factor past float32's range is inf, as torch's cast makes it
            factor32 = np.float32(factor)
        for e in eos:
            out[:, e] = out[:, e] + np.abs(out[:, e]) * factor32
    return out


class ExponentialDecayLengthPenalty(LogitsProcessor):
    """Exponentially growing eos score after ``start_index`` generated tokens; see
    :func:`exponential_decay_length_penalty_process`.

    Args:
        exponential_decay_length_penalty: ``(start_index, decay_factor)``: an int >= 0 and a float > 0.
        eos_token_id: int or list of ints.
        input_ids_seq_length: the prompt width, added to ``start_index``.
    """

    def __init__(self, exponential_decay_length_penalty, eos_token_id, input_ids_seq_length: int):
        pair = exponential_decay_length_penalty
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not is_integer(pair[0]) or pair[0] < 0 \
                or not is_number(pair[1]) or not pair[1] > 0:
            raise ValueError(f"`exponential_decay_length_penalty` has to be a pair (start_index: int >= 0, "
                             f"decay_factor: float > 0), but is {pair!r}")
        if not is_integer(input_ids_seq_length) or input_ids_seq_length < 0:
            raise ValueError(f"`input_ids_seq_length` has to be a non-negative integer, but is {input_ids_seq_length!r}")
        self.regulation_start = int(pair[0]) + int(input_ids_seq_length)
        self.regulation_factor = float(pair[1])
        self.eos_token_id = eos_list(eos_token_id)

    def __call__(self, input_ids, scores, **kwargs):
        return exponential_decay_length_penalty_process(input_ids, scores, self.regulation_start,
                                                        self.regulation_factor, self.eos_token_id)
