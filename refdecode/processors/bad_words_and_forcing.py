r"""Token constraints: ban, bias, allow or force particular tokens (and token sequences).

Contract: every processor maps ``input_ids`` int (B, T) and ``scores`` float32 (B, V) to a NEW
float32 (B, V) array (inputs never mutated), like those of ``logits_process.py``; B counts rows
(prompts times beams or return sequences). ``T`` counts the whole row, prompt and left padding
included, which is what the step-dependent rules below compare against.

- :func:`sequence_bias_process` (``sequence_bias``): add a bias to the last token of a sequence
  when the row ends with the rest of it (one-token sequences: always);
- :func:`no_bad_words_process` (``bad_words_ids``): the same with bias ``-inf``;
- :func:`prefix_constrained_process` (``prefix_allowed_tokens_fn``): only the tokens a callback
  allows for the row;
- :func:`forced_bos_process` / :func:`forced_eos_process` (``forced_bos_token_id`` /
  ``forced_eos_token_id``): one token (or the eos set) at one step, everything else ``-inf``;
- :func:`suppress_tokens_process` / :func:`suppress_tokens_at_begin_process`
  (``suppress_tokens`` / ``begin_suppress_tokens``): ``-inf`` always, or at one step.

Each is a pure function with a transformers-named class around it (argument checks at the door,
as transformers 4.38.2 does them, plus range checks where 4.38.2 crashes later). Their place in
``generate``'s processor order is listed in :func:`refdecode.pipeline.logits_processors`.

Docs: docs/bad-words-and-forcing.md.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..generation_rules import check_id_sequences, check_sequence_bias, check_token_list, eos_list
from ..numerics import softmax
from ..validation import is_integer, is_number
from .arguments import check_input_ids, check_scores
from .logits_process import LogitsProcessor

__all__ = [
    "sequence_bias_process",
    "no_bad_words_process",
    "bad_words_bias",
    "prefix_constrained_process",
    "forced_bos_process",
    "forced_eos_process",
    "suppress_tokens_process",
    "suppress_tokens_at_begin_process",
    "force_tokens_process",
    "bark_eos_prioritizer_process",
    "SequenceBiasLogitsProcessor",
    "NoBadWordsLogitsProcessor",
    "PrefixConstrainedLogitsProcessor",
    "ForcedBOSTokenLogitsProcessor",
    "BarkEosPrioritizerLogitsProcessor",
    "ForcedEOSTokenLogitsProcessor",
    "SuppressTokensLogitsProcessor",
    "SuppressTokensAtBeginLogitsProcessor",
    "ForceTokensLogitsProcessor",
]


def _check_vocab(name: str, ids, vocab: int) -> None:
    """Token ids an argument names must index the vocabulary (torch raises IndexError; we name the argument)."""
    bad = [int(i) for i in ids if not 0 <= i < vocab]
    if bad:
        raise ValueError(f"`{name}` has to hold token ids in [0, {vocab - 1}] (vocab size {vocab}), but holds {bad}")


# ----------------------------------------------------------------------------------------------
# Pure functions: (input_ids, scores, ...) -> new scores


def sequence_bias_process(input_ids: np.ndarray, scores: np.ndarray, sequence_bias: dict,
                          name: str = "sequence_bias") -> np.ndarray:
    r"""Add ``sequence_bias[seq]`` to token ``seq[-1]`` in every row that ends with ``seq[:-1]``.

    .. math:: s'_{b,v} = s_{b,v} + \sum_{\text{seq}:\ \text{seq}_{-1} = v,\
              \ \text{row}_b \text{ ends with } \text{seq}_{:-1}} \text{bias}(\text{seq})

    A one-token sequence always applies. A sequence longer than the row (``len(seq) > T``) is
    skipped. The bias is built as transformers 4.38.2 ``SequenceBiasLogitsProcessor`` builds it
    (float32 zeros, the one-token biases, then each longer sequence in dict order), then added to
    ``scores`` once, so ``-inf`` biases give ``-inf`` and ``+inf`` plus ``-inf`` gives NaN as there.
    ``name``: the argument an id outside the vocabulary is blamed on (``bad_words_ids`` for the bad words).

    >>> s = np.zeros((2, 4), dtype=np.float32)
    >>> sequence_bias_process(np.array([[0, 1], [0, 2]]), s, {(3,): -1.0, (1, 2): 5.0})  # row 0 ends with 1
    array([[ 0.,  0.,  5., -1.],
           [ 0.,  0.,  0., -1.]], dtype=float32)
    """
    batch, vocab = check_scores(scores).shape
    check_input_ids(input_ids, batch)
    _check_vocab(name, [t for seq in sequence_bias for t in seq], vocab)
    length_1 = np.zeros(vocab, dtype=np.float32)
    for seq, bias in sequence_bias.items():
        if len(seq) == 1:
            length_1[seq[-1]] = bias
    total = np.zeros_like(scores) + length_1  # (B, V)
    for seq, bias in sequence_bias.items():
        if len(seq) == 1 or len(seq) > input_ids.shape[1]:
            continue
        matching = (input_ids[:, input_ids.shape[1] - (len(seq) - 1):] == np.array(seq[:-1])).all(axis=1)  # (B,)
        total[:, seq[-1]] += np.where(matching, np.float32(bias), np.float32(0.0))
    return scores + total


def no_bad_words_process(input_ids: np.ndarray, scores: np.ndarray, bad_words_ids: list,
                         eos_token_id=None) -> np.ndarray:
    r"""Ban the last token of each bad word whose other tokens end the row: :math:`s'_{b,w_{-1}} = -\infty`.

    A one-token bad word is always banned, except ``[eos]`` (transformers drops those so that a
    sequence can always end). Equivalent to :func:`sequence_bias_process` with bias ``-inf`` per
    word, which is how transformers 4.38.2 ``NoBadWordsLogitsProcessor`` implements it.

    >>> s = np.zeros((2, 4), dtype=np.float32)
    >>> no_bad_words_process(np.array([[0, 1], [1, 0]]), s, [[3], [1, 2], [0]], eos_token_id=0)
    array([[  0.,   0., -inf, -inf],
           [  0.,   0.,   0., -inf]], dtype=float32)
    """
    return sequence_bias_process(input_ids, scores, bad_words_bias(bad_words_ids, eos_token_id), "bad_words_ids")


def bad_words_bias(bad_words_ids: list, eos_token_id=None) -> dict:
    """``bad_words_ids`` (non-empty list of non-empty lists of ids) -> {tuple: -inf}, ``[eos]`` words dropped.
    Checked before they are dropped, as in 4.38.2: ``[[eos]]`` gives an empty bias, a processor changing nothing."""
    check_id_sequences("bad_words_ids", bad_words_ids)
    eos = [] if eos_token_id is None else eos_list(eos_token_id)
    words = [word for word in bad_words_ids if all(word != [e] for e in eos)]
    return {tuple(int(t) for t in word): float("-inf") for word in words}


def prefix_constrained_process(input_ids: np.ndarray, scores: np.ndarray,
                               prefix_allowed_tokens_fn: Callable, num_beams: int) -> np.ndarray:
    r"""Allow only ``prefix_allowed_tokens_fn(batch_id, row)`` in each row: the others get ``-inf``.

    .. math:: s'_{r,v} = s_{r,v} + \begin{cases} 0 & v \in \text{allowed}(r // K, \text{row}_r) \\
              -\infty & \text{otherwise}\end{cases}

    Rows are grouped by ``num_beams`` = K (``generate`` passes ``num_beams // num_beam_groups``):
    ``batch_id = r // K``; with sampling (K = 1) every row, including each of the
    ``num_return_sequences`` copies of a prompt, is its own batch id. ``row`` is the int64 (T,)
    token array of the row, prompt included. An empty allowed list raises ``ValueError``.

    transformers 4.38.2 ``PrefixConstrainedLogitsProcessor`` (De Cao et al., arXiv:2010.00904).

    >>> allow = lambda batch_id, row: [int(row[-1]) + 1]          # only "previous token + 1"
    >>> prefix_constrained_process(np.array([[0], [2]]), np.zeros((2, 4), dtype=np.float32), allow, 1)
    array([[-inf,   0., -inf, -inf],
           [-inf, -inf, -inf,   0.]], dtype=float32)
    """
    batch, vocab = check_scores(scores).shape
    check_input_ids(input_ids, batch)
    if batch % num_beams:
        raise ValueError(f"`scores` has to have batch * num_beams rows (num_beams = {num_beams}), but has {batch}")
    mask = np.full_like(scores, -np.inf)  # (B, V)
    for r, row in enumerate(input_ids.astype(np.int64)):
        allowed = list(prefix_allowed_tokens_fn(r // num_beams, row))
        if len(allowed) == 0:
            raise ValueError(f"`prefix_allowed_tokens_fn` returned an empty list for batch ID {r // num_beams}. "
                             "This means that the constraint is unsatisfiable.")
        _check_vocab("prefix_allowed_tokens_fn", allowed, vocab)
        mask[r, allowed] = 0.0
    return scores + mask


def _force(scores: np.ndarray, token_ids: list[int]) -> np.ndarray:
    """Every column -inf except ``token_ids``, which become 0 (a log-probability of 1)."""
    out = np.full_like(scores, -np.inf)
    out[:, token_ids] = 0.0
    return out


def forced_bos_process(input_ids: np.ndarray, scores: np.ndarray, bos_token_id: int) -> np.ndarray:
    r"""When the row holds exactly one token (``T == 1``), force ``bos_token_id``: it gets 0, all else ``-inf``.

    Made for encoder-decoder models, whose decoder starts from one start token; for a decoder-only
    model it fires only when the prompt is a single token, and forces the first generated token.
    At every other length the scores pass unchanged. transformers 4.38.2 ``ForcedBOSTokenLogitsProcessor``.

    >>> forced_bos_process(np.array([[7]]), np.array([[1.0, 2.0, 3.0]], dtype=np.float32), 1)
    array([[-inf,   0., -inf]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    _check_vocab("bos_token_id", [bos_token_id], scores.shape[1])
    return _force(scores, [bos_token_id]) if input_ids.shape[-1] == 1 else scores.copy()


def forced_eos_process(input_ids: np.ndarray, scores: np.ndarray, max_length: int, eos_token_id) -> np.ndarray:
    r"""At the last step (``T == max_length - 1``) force an eos: every eos id gets 0, all else ``-inf``.

    ``max_length`` counts the prompt (``generate`` passes its final ``max_length``). With several eos
    ids all of them stay possible. transformers 4.38.2 ``ForcedEOSTokenLogitsProcessor``.

    >>> forced_eos_process(np.array([[5, 6]]), np.array([[1.0, 2.0, 3.0]], dtype=np.float32), 3, [0, 2])
    array([[  0., -inf,   0.]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    eos = eos_list(eos_token_id)
    _check_vocab("eos_token_id", eos, scores.shape[1])
    return _force(scores, eos) if input_ids.shape[-1] == max_length - 1 else scores.copy()


def bark_eos_prioritizer_process(scores: np.ndarray, eos_token_id: list[int], min_eos_p: float | None) -> np.ndarray:
    r"""Stop when eos is likely enough: a row where an eos token's probability exceeds ``min_eos_p`` keeps only its
    eos scores (every other token ``-inf``); other rows are unchanged. ``min_eos_p`` None or 0: off.

    .. math:: s'_b = \begin{cases} s_{b,v} \text{ for } v \in E,\ -\infty \text{ elsewhere} &
              \text{if } \max_{e \in E} \mathrm{softmax}(s_b)_e > p_{\min} \\ s_b & \text{otherwise} \end{cases}

    transformers 4.38.2 ``BarkEosPrioritizerLogitsProcessor`` (Bark's "early stop"; refdecode has no Bark, the
    processor is here for code ported from 4.38.2's tests).

    >>> s = np.log(np.array([[0.5, 0.3, 0.2], [0.8, 0.1, 0.1]], dtype=np.float32))
    >>> np.isfinite(bark_eos_prioritizer_process(s, [2], 0.15))      # row 0: p(eos) = 0.2 > 0.15
    array([[False, False,  True],
           [ True,  True,  True]])
    """
    check_scores(scores)
    if not min_eos_p:
        return scores.copy()
    _check_vocab("eos_token_id", eos_token_id, scores.shape[1])
    probs = softmax(scores)                                                          # (B, V)
    early = (probs[:, eos_token_id] > min_eos_p).any(axis=1, keepdims=True)          # (B, 1)
    only_eos = np.full_like(scores, -np.inf)
    only_eos[:, eos_token_id] = scores[:, eos_token_id]
    return np.where(early, only_eos, scores)


def suppress_tokens_process(input_ids: np.ndarray, scores: np.ndarray, suppress_tokens: list[int]) -> np.ndarray:
    r"""Set the listed tokens to ``-inf`` at every step. transformers 4.38.2 ``SuppressTokensLogitsProcessor``.

    >>> suppress_tokens_process(np.array([[0]]), np.zeros((1, 3), dtype=np.float32), [0, 2])
    array([[-inf,   0., -inf]], dtype=float32)
    """
    _check_vocab("suppress_tokens", suppress_tokens, check_scores(scores).shape[1])
    out = scores.copy()
    out[:, list(suppress_tokens)] = -np.inf
    return out


def suppress_tokens_at_begin_process(input_ids: np.ndarray, scores: np.ndarray, begin_suppress_tokens: list[int],
                                     begin_index: int) -> np.ndarray:
    r"""Set the listed tokens to ``-inf`` only when ``T == begin_index`` (the first generated token).

    ``generate`` passes ``begin_index`` = the prompt width (+ 1 when the prompt is one token and
    a BOS is forced, so the suppression applies after the forced token).
    transformers 4.38.2 ``SuppressTokensAtBeginLogitsProcessor``.

    >>> s = np.zeros((1, 3), dtype=np.float32)
    >>> suppress_tokens_at_begin_process(np.array([[5, 6]]), s, [1], begin_index=2)
    array([[  0., -inf,   0.]], dtype=float32)
    >>> suppress_tokens_at_begin_process(np.array([[5, 6, 1]]), s, [1], begin_index=2)
    array([[0., 0., 0.]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    if input_ids.shape[1] == begin_index:
        return suppress_tokens_process(input_ids, scores, begin_suppress_tokens)
    return scores.copy()


def force_tokens_process(input_ids: np.ndarray, scores: np.ndarray, force_token_map: dict[int, int]) -> np.ndarray:
    r"""At length ``T = input_ids.shape[-1]``, if ``force_token_map`` has ``T``, force that token (0, all else -inf).

    ``forced_decoder_ids = [[index, token], ...]`` is Whisper's decoder prompt (its language and task
    tokens); the index is the **whole** sequence length, prompt included, so for a decoder-only model
    ``[[T0 + 1, t]]`` forces the second generated token of a T0-token prompt. transformers 4.38.2
    ``ForceTokensLogitsProcessor``; ``generate`` also moves ``SuppressTokensAtBegin``'s index past the
    last forced position, as 4.38.2 does.

    >>> force_tokens_process(np.array([[5, 6]]), np.array([[1.0, 2.0, 3.0]], dtype=np.float32), {2: 1})
    array([[-inf,   0., -inf]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    token = force_token_map.get(input_ids.shape[-1])
    return scores.copy() if token is None else _force(scores, [token])


# ----------------------------------------------------------------------------------------------
# Argument checks (transformers 4.38.2's, with the argument named)


# ----------------------------------------------------------------------------------------------
# transformers-compatible classes


class SequenceBiasLogitsProcessor(LogitsProcessor):
    """Additive bias on token sequences; see :func:`sequence_bias_process`.

    ``sequence_bias``: ``{(token, ...): float}``, non-empty, keys non-empty tuples of ids >= 0.
    """

    def __init__(self, sequence_bias: dict):
        self.sequence_bias = check_sequence_bias(sequence_bias)

    def __call__(self, input_ids, scores, **kwargs):
        return sequence_bias_process(input_ids, scores, self.sequence_bias)


class NoBadWordsLogitsProcessor(LogitsProcessor):
    """Never complete a bad word; see :func:`no_bad_words_process`.

    ``bad_words_ids``: a non-empty list of non-empty lists of token ids (``[eos]`` entries dropped; when
    every word is ``[eos]`` the processor changes nothing, as in transformers 4.38.2).
    """

    def __init__(self, bad_words_ids: list, eos_token_id=None):
        self.bad_words_ids = bad_words_ids
        self.sequence_bias = bad_words_bias(bad_words_ids, eos_token_id)

    def __call__(self, input_ids, scores, **kwargs):
        return sequence_bias_process(input_ids, scores, self.sequence_bias, "bad_words_ids")


class PrefixConstrainedLogitsProcessor(LogitsProcessor):
    """Only the tokens a callback allows; see :func:`prefix_constrained_process`."""

    def __init__(self, prefix_allowed_tokens_fn: Callable, num_beams: int):
        if not callable(prefix_allowed_tokens_fn):
            raise ValueError(f"`prefix_allowed_tokens_fn` has to be callable (batch_id, input_ids) -> list of "
                             f"token ids, but is {prefix_allowed_tokens_fn!r}")
        if not is_integer(num_beams) or num_beams < 1:
            raise ValueError(f"`num_beams` has to be a positive integer, but is {num_beams!r}")
        self.prefix_allowed_tokens_fn = prefix_allowed_tokens_fn
        self.num_beams = int(num_beams)

    def __call__(self, input_ids, scores, **kwargs):
        return prefix_constrained_process(input_ids, scores, self.prefix_allowed_tokens_fn, self.num_beams)


class ForcedBOSTokenLogitsProcessor(LogitsProcessor):
    """Force ``bos_token_id`` when the row has one token; see :func:`forced_bos_process`."""

    def __init__(self, bos_token_id: int):
        if not is_integer(bos_token_id) or bos_token_id < 0:
            raise ValueError(f"`forced_bos_token_id` has to be a non-negative integer token id, but is {bos_token_id!r}")
        self.bos_token_id = int(bos_token_id)

    def __call__(self, input_ids, scores, **kwargs):
        return forced_bos_process(input_ids, scores, self.bos_token_id)


class ForcedEOSTokenLogitsProcessor(LogitsProcessor):
    """Force an eos at ``T == max_length - 1``; see :func:`forced_eos_process`."""

    def __init__(self, max_length: int, eos_token_id):
        if not is_integer(max_length) or max_length < 1:
            raise ValueError(f"`max_length` has to be a positive integer, but is {max_length!r}")
        self.max_length = int(max_length)
        try:
            self.eos_token_id = eos_list(eos_token_id)
        except ValueError:
            raise ValueError(f"`forced_eos_token_id` has to be a non-negative integer or a list of them, "
                             f"but is {eos_token_id!r}") from None

    def __call__(self, input_ids, scores, **kwargs):
        return forced_eos_process(input_ids, scores, self.max_length, self.eos_token_id)


class BarkEosPrioritizerLogitsProcessor(LogitsProcessor):
    """Only the eos scores where eos is likelier than ``min_eos_p``; see :func:`bark_eos_prioritizer_process`."""

    def __init__(self, eos_token_id, min_eos_p: float | None):
        self.eos_token_id = eos_list(eos_token_id)
        if min_eos_p is not None and (not is_number(min_eos_p) or not min_eos_p > 0):
            raise ValueError(f"`min_eos_p` has to be a positive float, but is {min_eos_p}")
        self.min_eos_p = None if min_eos_p is None else float(min_eos_p)

    def __call__(self, input_ids, scores, **kwargs):
        return bark_eos_prioritizer_process(scores, self.eos_token_id, self.min_eos_p)


class SuppressTokensLogitsProcessor(LogitsProcessor):
    """``-inf`` for ``suppress_tokens`` at every step; see :func:`suppress_tokens_process`."""

    def __init__(self, suppress_tokens):
        self.suppress_tokens = check_token_list("suppress_tokens", suppress_tokens)

    def __call__(self, input_ids, scores, **kwargs):
        return suppress_tokens_process(input_ids, scores, self.suppress_tokens)


class SuppressTokensAtBeginLogitsProcessor(LogitsProcessor):
    """``-inf`` for ``begin_suppress_tokens`` when ``T == begin_index``; see :func:`suppress_tokens_at_begin_process`."""

    def __init__(self, begin_suppress_tokens, begin_index: int):
        self.begin_suppress_tokens = check_token_list("begin_suppress_tokens", begin_suppress_tokens)
        if not is_integer(begin_index) or begin_index < 0:
            raise ValueError(f"`begin_index` has to be a non-negative integer, but is {begin_index!r}")
        self.begin_index = int(begin_index)

    def set_begin_index(self, begin_index: int) -> None:
        """transformers' setter (Whisper moves the index after its forced tokens)."""
        self.begin_index = int(begin_index)

    def __call__(self, input_ids, scores, **kwargs):
        return suppress_tokens_at_begin_process(input_ids, scores, self.begin_suppress_tokens, self.begin_index)


class ForceTokensLogitsProcessor(LogitsProcessor):
    """Force ``token`` at sequence length ``index`` for each ``[index, token]`` of ``force_token_map``;
    see :func:`force_tokens_process`."""

    def __init__(self, force_token_map):
        if not isinstance(force_token_map, (list, tuple, dict)) or not all(
                isinstance(pair, (list, tuple)) and len(pair) == 2 and all(is_integer(v) and v >= 0 for v in pair)
                for pair in (force_token_map.items() if isinstance(force_token_map, dict) else force_token_map)):
            raise ValueError("`forced_decoder_ids` has to be a list of [index, token_id] pairs of non-negative "
                             f"integers, but is {force_token_map!r}")
        self.force_token_map = {int(i): int(t) for i, t in dict(force_token_map).items()}

    def __call__(self, input_ids, scores, **kwargs):
        _check_vocab("forced_decoder_ids", list(self.force_token_map.values()), check_scores(scores).shape[1])
        return force_tokens_process(input_ids, scores, self.force_token_map)
