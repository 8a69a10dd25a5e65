r"""Processors that look at the prompt: prompt repetition reward and prompt n-gram ban.

Contract: each maps ``input_ids`` int (N, T) and ``scores`` float32 (N, V) to a NEW float32
(N, V) array. The prompt is given once, when the processor is built: ``generate`` passes the
(B, T0) prompt it was called with -- not repeated for beams or return sequences -- as
transformers 4.38.2 passes ``inputs_tensor`` as ``encoder_input_ids`` for a decoder-only model.
(transformers named them for encoder-decoder models; its docstrings say they "can also be used
with decoder-only models".)

- :func:`encoder_repetition_penalty_process` (``encoder_repetition_penalty``): the repetition
  penalty inverted, on the prompt's tokens only;
- :func:`encoder_no_repeat_ngram_process` (``encoder_no_repeat_ngram_size``): never repeat an
  n-gram of the prompt.

Classifier-free guidance, the other processor that takes a prompt (a negative one), is
:mod:`refdecode.processors.guidance`. Docs: docs/repetition-penalty.md, docs/no-repeat-ngram.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .logits_process import LogitsProcessor
from .arguments import check_input_ids, check_scores, check_vocab_ids
from ..validation import is_float, is_integer

__all__ = [
    "encoder_repetition_penalty_process",
    "encoder_no_repeat_ngram_process",
    "prompt_ngrams",
    "check_prompt",
    "EncoderRepetitionPenaltyLogitsProcessor",
    "EncoderNoRepeatNGramLogitsProcessor",
]


def check_prompt(encoder_input_ids: Any) -> np.ndarray:
    """An integer (B, T) or (T,) array -> int64 (B, T)."""
    ids = np.asarray(encoder_input_ids)
    if not np.issubdtype(ids.dtype, np.integer) or ids.ndim not in (1, 2) or ids.size == 0:
        raise ValueError(f"`encoder_input_ids` has to be a non-empty integer array of shape (batch, seq) or (seq,), "
                         f"but has dtype {ids.dtype} and shape {ids.shape}")
    return (ids[None] if ids.ndim == 1 else ids).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Pure functions


def encoder_repetition_penalty_process(scores: np.ndarray, encoder_input_ids: np.ndarray, penalty: float) -> np.ndarray:
    r"""Make the prompt's tokens likelier (``penalty > 1``) or less likely (``< 1``): the repetition
    penalty with :math:`1/\theta` on the tokens of the prompt.

    .. math:: s'_{r,v} = \begin{cases} s_{r,v}/\theta & v \in \text{prompt}_r,\ s_{r,v} < 0 \\
              s_{r,v}\cdot\theta & v \in \text{prompt}_r,\ s_{r,v} \ge 0 \\
              s_{r,v} & \text{otherwise} \end{cases}

    computed as transformers does, with :math:`\theta' = 1/\theta` (a Python float) and
    ``where(s < 0, s * θ', s / θ')``.

    **Rows.** transformers 4.38.2 gathers and scatters ``encoder_input_ids`` (B, T0) into
    ``scores`` (N, V), which touches only rows ``r < B``, row r with prompt r. With one row per
    prompt (greedy, or sampling with one return sequence) that is each row with its own prompt;
    with beams or ``num_return_sequences`` > 1 (N = B*K) it is the first B rows -- for B = 1
    only beam 0 is rewarded, for B > 1 beam 1 of prompt 0 gets prompt 1's tokens. refdecode
    reproduces this (golden-tested); docs/repetition-penalty.md shows the consequence.

    Left padding counts: with pad = eos the eos score is rewarded too.

    >>> s = np.array([[2.0, -2.0, 1.0], [2.0, -2.0, 1.0]], dtype=np.float32)
    >>> encoder_repetition_penalty_process(s, np.array([[0, 1]]), 2.0)    # row 1 has no prompt row
    array([[ 4., -1.,  1.],
           [ 2., -2.,  1.]], dtype=float32)
    """
    n, vocab = check_scores(scores).shape
    prompt = check_prompt(encoder_input_ids)
    if prompt.shape[0] > n:
        raise ValueError(f"`encoder_input_ids` has {prompt.shape[0]} rows, more than `scores` ({n})")
    check_vocab_ids("encoder_input_ids", prompt, vocab)
    inverse = 1 / penalty
    seen = np.zeros(scores.shape, dtype=bool)  # (N, V); rows >= B stay False
    seen[np.arange(prompt.shape[0])[:, None], prompt] = True
    return np.where(seen, np.where(scores < 0, scores * inverse, scores / inverse), scores)


def prompt_ngrams(row: list[int], ngram_size: int) -> dict[tuple, list[int]]:
    """Every (n-1)-token prefix of ``row`` -> the tokens that followed it, with repeats, in order.

    >>> prompt_ngrams([1, 2, 3, 1, 2, 4], 3)
    {(1, 2): [3, 4], (2, 3): [1], (3, 1): [2]}
    """
    ngrams: dict[tuple, list[int]] = {}
    for i in range(len(row) - ngram_size + 1):
        ngrams.setdefault(tuple(row[i : i + ngram_size - 1]), []).append(row[i + ngram_size - 1])
    return ngrams


def encoder_no_repeat_ngram_process(input_ids: np.ndarray, scores: np.ndarray, encoder_input_ids: np.ndarray,
                                    ngram_size: int) -> np.ndarray:
    r"""Ban every token that would complete an n-gram of the prompt.

    With ``n = ngram_size``: row r ends with the n-1 tokens ``p``; every ``t`` such that ``p + [t]``
    is an n-gram of its prompt gets ``-inf``. Rows are matched to prompts as
    ``r // (N // B)`` (consecutive copies per prompt, as ``generate`` lays out beams and return
    sequences). A row shorter than n-1 bans nothing; n = 1 bans every prompt token at every step.
    Only the prompt's n-grams count (the generated text may repeat its own; combine with
    ``no_repeat_ngram_size`` for that).

    transformers 4.38.2 ``EncoderNoRepeatNGramLogitsProcessor``.

    >>> s = np.zeros((2, 4), dtype=np.float32)   # prompt (1, 2, 3): after "1" the token 2 is banned
    >>> encoder_no_repeat_ngram_process(np.array([[1, 2, 3, 1], [1, 2, 3, 2]]), s, np.array([[1, 2, 3]]), 2)
    array([[  0.,   0., -inf,   0.],
           [  0.,   0.,   0., -inf]], dtype=float32)
    """
    n_rows, vocab = check_scores(scores).shape
    check_input_ids(input_ids, n_rows)
    prompt = check_prompt(encoder_input_ids)
    if n_rows % prompt.shape[0]:
        raise ValueError(f"`scores` has to have a multiple of the {prompt.shape[0]} prompt rows, but has {n_rows}")
    per_prompt = n_rows // prompt.shape[0]
    ngrams = [prompt_ngrams(row, ngram_size) for row in prompt.tolist()]
    out = scores.copy()
    for r, row in enumerate(input_ids.tolist()):
        prefix = tuple(row[len(row) - ngram_size + 1 :]) if ngram_size > 1 else ()
        if len(row) >= ngram_size - 1:
            banned = ngrams[r // per_prompt].get(prefix, [])
            check_vocab_ids("encoder_input_ids", np.asarray(banned, dtype=np.int64), vocab)
            out[r, banned] = -np.inf
    return out


# ----------------------------------------------------------------------------------------------
# transformers-compatible classes


class EncoderRepetitionPenaltyLogitsProcessor(LogitsProcessor):
    """Reward (penalty > 1) the prompt's tokens; see :func:`encoder_repetition_penalty_process`."""

    def __init__(self, penalty: float, encoder_input_ids: np.ndarray):
        if not is_float(penalty) or not penalty > 0:
            raise ValueError(f"`encoder_repetition_penalty` has to be a strictly positive float, but is {penalty!r}")
        self.penalty = float(penalty)
        self.encoder_input_ids = check_prompt(encoder_input_ids)

    def __call__(self, input_ids, scores, **kwargs):
        return encoder_repetition_penalty_process(scores, self.encoder_input_ids, self.penalty)


class EncoderNoRepeatNGramLogitsProcessor(LogitsProcessor):
    """Never repeat an n-gram of the prompt; see :func:`encoder_no_repeat_ngram_process`."""

    def __init__(self, encoder_ngram_size: int, encoder_input_ids: np.ndarray):
        if not is_integer(encoder_ngram_size) or encoder_ngram_size <= 0:
            raise ValueError(f"`encoder_no_repeat_ngram_size` has to be a strictly positive integer, "
                             f"but is {encoder_ngram_size!r}")
        self.ngram_size = int(encoder_ngram_size)
        self.encoder_input_ids = check_prompt(encoder_input_ids)

    def __call__(self, input_ids, scores, **kwargs):
        return encoder_no_repeat_ngram_process(input_ids, scores, self.encoder_input_ids, self.ngram_size)
