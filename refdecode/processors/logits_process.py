r"""Logits processors: rules that edit next-token scores before a token is chosen.

Contract: every processor takes ``input_ids`` int (B, T) -- the whole sequence so far, prompt and
left padding included -- and ``scores`` float32 (B, V) for the next position, and returns a NEW
float32 (B, V) array. Inputs are never mutated (transformers 4.38.2 wrote into ``scores`` in place;
PR #29680 later made every processor out-of-place, which is what we do from the start).
Processors know nothing about models, caches or how the next token is picked: greedy and sample
feed them raw logits, beam modes feed them log-probabilities (see ``beam_search.py``).

Each rule is a pure function (``min_length_process``, ``min_new_tokens_process``,
``repetition_penalty_process``, ``no_repeat_ngram_process``, ``hamming_diversity_process``) with a
thin class around it that carries transformers 4.38.2's name, constructor signature and argument
validation, so code written against ``transformers.LogitsProcessorList`` ports by changing the
import and ``torch`` -> ``numpy``.

Calling convention: ``processor(input_ids, scores, **kwargs)``. Every processor here accepts and
ignores keyword arguments it does not use; only :class:`HammingDiversityLogitsProcessor` reads
``current_tokens`` and ``beam_group_idx`` (group beam search passes them). Like transformers 4.38.2,
:class:`LogitsProcessorList` passes the extra keyword arguments only to a processor whose signature
takes them, so a custom two-argument processor written for transformers runs here unchanged.

Docs: docs/processors.md, then one page per processor (docs/repetition-penalty.md,
docs/no-repeat-ngram.md, docs/min-length.md, docs/group-beam-search.md for the Hamming penalty).
"""

from __future__ import annotations

import inspect

import numpy as np

from ..recorder import NO_TRACE, Recorder
from .arguments import check_count, check_input_ids, check_positive_float, check_scores, check_vocab_ids
from ..generation_rules import eos_list
from ..validation import is_integer

__all__ = [
    "min_length_process",
    "min_new_tokens_process",
    "repetition_penalty_process",
    "no_repeat_ngram_banned_tokens",
    "no_repeat_ngram_process",
    "hamming_diversity_process",
    "LogitsProcessor",
    "LogitsProcessorList",
    "MinLengthLogitsProcessor",
    "MinNewTokensLengthLogitsProcessor",
    "RepetitionPenaltyLogitsProcessor",
    "NoRepeatNGramLogitsProcessor",
    "HammingDiversityLogitsProcessor",
]


# ----------------------------------------------------------------------------------------------
# Pure functions: (input_ids, scores, ...) -> new scores


def _ban_tokens(scores: np.ndarray, token_ids: list[int]) -> np.ndarray:
    """Copy of ``scores`` (B, V) with the columns ``token_ids`` set to -inf in every row."""
    check_vocab_ids("eos_token_id", np.asarray(token_ids, dtype=np.int64), scores.shape[1])
    out = scores.copy()
    out[:, token_ids] = -np.inf
    return out


def min_length_process(input_ids: np.ndarray, scores: np.ndarray, min_length: int, eos_token_id) -> np.ndarray:
    r"""Forbid end-of-sequence while the sequence is shorter than ``min_length``.

    .. math:: s'_{b,e} = -\infty \ \text{for every } e \in \text{eos\_token\_id} \quad\text{if } T < \text{min\_length}

    ``T = input_ids.shape[-1]`` counts the prompt (and any left padding), so with a prompt of 5
    tokens and ``min_length=10`` EOS is banned for the first 5 generated tokens. Strict ``<``:
    at ``T == min_length`` EOS is allowed again. The same T applies to every row. Nothing else
    changes (no renormalisation).

    transformers 4.38.2 ``MinLengthLogitsProcessor``; the 4.26 walkthrough (docs/references.md),
    "MinLengthLogitsProcessor".

    Args:
        input_ids: int (B, T). scores: float32 (B, V). eos_token_id: int or list of ints.

    >>> s = np.zeros((1, 4), dtype=np.float32)
    >>> min_length_process(np.array([[1, 2]]), s, 3, eos_token_id=[0, 3])   # T=2 < 3: banned
    array([[-inf,   0.,   0., -inf]], dtype=float32)
    >>> min_length_process(np.array([[1, 2, 1]]), s, 3, eos_token_id=0)     # T=3: allowed
    array([[0., 0., 0., 0.]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    if input_ids.shape[-1] < min_length:
        return _ban_tokens(scores, eos_list(eos_token_id))
    return scores.copy()


def min_new_tokens_process(
    input_ids: np.ndarray, scores: np.ndarray, prompt_length_to_skip: int, min_new_tokens: int, eos_token_id
) -> np.ndarray:
    r"""Forbid end-of-sequence until ``min_new_tokens`` tokens were generated after the prompt.

    .. math:: s'_{b,e} = -\infty \ \text{for every eos } e
              \quad\text{if } T - \text{prompt\_length\_to\_skip} < \text{min\_new\_tokens}

    Unlike :func:`min_length_process` the prompt does not count (``generate`` passes the padded
    prompt width as ``prompt_length_to_skip``). Strict ``<``.

    transformers 4.38.2 ``MinNewTokensLengthLogitsProcessor`` (not in the source documents; see the
    notes, section 13).

    >>> s = np.zeros((1, 3), dtype=np.float32)
    >>> min_new_tokens_process(np.array([[5, 6, 7]]), s, 2, 2, eos_token_id=2)  # 1 new token < 2
    array([[  0.,   0., -inf]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    if input_ids.shape[-1] - prompt_length_to_skip < min_new_tokens:
        return _ban_tokens(scores, eos_list(eos_token_id))
    return scores.copy()


def repetition_penalty_process(input_ids: np.ndarray, scores: np.ndarray, penalty: float) -> np.ndarray:
    r"""Push down every token that already occurs in the row (CTRL, arXiv:1909.05858).

    .. math::
        s'_{b,v} = \begin{cases} s_{b,v}\cdot\theta & v \in \text{input\_ids}_b,\ s_{b,v} < 0 \\
                                 s_{b,v}/\theta & v \in \text{input\_ids}_b,\ s_{b,v} \ge 0 \\
                                 s_{b,v} & \text{otherwise} \end{cases}

    Applied once per distinct token however often it occurs. "Occurs" means anywhere in
    ``input_ids``: prompt, generated tokens and left padding (with GPT-2, pad = eos, so a
    left-padded row penalises EOS; transformers 5.23 stopped doing that, see
    :mod:`refdecode.processors.transformers5`). A score of exactly 0 is divided and stays 0.
    ``penalty > 1`` lowers, ``0 < penalty < 1`` raises.

    transformers 4.38.2 ``RepetitionPenaltyLogitsProcessor`` (gather, ``where(score < 0, score *
    penalty, score / penalty)``, scatter); the 4.26 walkthrough's "RepetitionPenaltyLogitsProcessor"
    and the sampling note's ``apply_repetition_penalty`` (same rule, written as a Python loop over ``set(ids)``).

    >>> s = np.array([[2.0, -2.0, 1.0, 3.0]], dtype=np.float32)
    >>> repetition_penalty_process(np.array([[0, 1, 1]]), s, 2.0)   # tokens 0 and 1 seen
    array([[ 1., -4.,  1.,  3.]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    check_vocab_ids("input_ids", input_ids, scores.shape[1])
    seen = np.zeros(scores.shape, dtype=bool)  # (B, V)
    seen[np.arange(scores.shape[0])[:, None], input_ids] = True  # every position: prompt, padding, generated
    penalised = np.where(scores < 0, scores * penalty, scores / penalty)  # Python float keeps float32
    return np.where(seen, penalised, scores)


def no_repeat_ngram_banned_tokens(row: list[int], ngram_size: int) -> list[int]:
    r"""Tokens that would complete an n-gram already present in ``row`` (fairseq's rule).

    With ``n = ngram_size`` and ``prefix = row[-(n-1):]`` (empty when ``n == 1``): every ``t`` such
    that ``prefix + [t]`` occurs somewhere in ``row``. Rows shorter than ``n - 1`` ban nothing. For
    ``n == 1`` every token of the row is banned. Returned in order of first occurrence, with repeats,
    as transformers' ``_get_generated_ngrams`` lists them.

    >>> no_repeat_ngram_banned_tokens([1, 2, 3, 1, 2, 4, 1], 2)   # bigrams starting with 1: (1,2) twice
    [2, 2]
    >>> no_repeat_ngram_banned_tokens([1, 2, 3, 1, 2], 3)        # prefix (1, 2) was followed by 3
    [3]
    """
    n = ngram_size
    if len(row) + 1 < n:  # transformers: "cur_len + 1 < ngram_size" -> nothing banned
        return []
    prefix = tuple(row[len(row) + 1 - n :])
    return [row[i + n - 1] for i in range(len(row) - n + 1) if tuple(row[i : i + n - 1]) == prefix]


def no_repeat_ngram_process(input_ids: np.ndarray, scores: np.ndarray, ngram_size: int) -> np.ndarray:
    r"""Ban every token that would repeat an n-gram of the row: :math:`s'_{b,t} = -\infty` for
    ``t in no_repeat_ngram_banned_tokens(input_ids[b], ngram_size)``.

    The prompt (and padding) counts: n-grams are collected over the whole of ``input_ids[b]``,
    and the last ``n - 1`` tokens of the row are the prefix that must not be completed again.

    transformers 4.38.2 ``NoRepeatNGramLogitsProcessor`` (``_calc_banned_ngram_tokens``, "copied
    from fairseq"); the 4.26 walkthrough, "NoRepeatNGramLogitsProcessor" (beam search section).

    >>> s = np.zeros((2, 4), dtype=np.float32)
    >>> no_repeat_ngram_process(np.array([[1, 2, 1], [0, 0, 0]]), s, 2)   # row 0: (1,2) seen; row 1: (0,0)
    array([[  0.,   0., -inf,   0.],
           [-inf,   0.,   0.,   0.]], dtype=float32)
    """
    check_input_ids(input_ids, check_scores(scores).shape[0])
    check_vocab_ids("input_ids", input_ids, scores.shape[1])
    out = scores.copy()
    for b, row in enumerate(input_ids.tolist()):
        out[b, no_repeat_ngram_banned_tokens(row, ngram_size)] = -np.inf
    return out


def _hamming_layout(scores, current_tokens, beam_group_idx, num_beams, num_beam_groups) -> tuple[int, int, int]:
    """Check the group beam search call and return (B, first beam of the group, group size)."""
    check_scores(scores)
    if not np.issubdtype(current_tokens.dtype, np.integer) or current_tokens.ndim != 1:
        raise TypeError(
            f"`current_tokens` has to be a 1-D integer array, but is {current_tokens.dtype} {current_tokens.shape}"
        )
    if current_tokens.shape[0] % num_beams:
        raise ValueError(
            f"`current_tokens` has to have batch * num_beams = k * {num_beams} entries, but has {current_tokens.shape[0]}"
        )
    if not is_integer(beam_group_idx) or not 0 <= beam_group_idx < num_beam_groups:
        raise ValueError(f"`beam_group_idx` has to be an integer in [0, {num_beam_groups - 1}], but is {beam_group_idx}")
    batch = current_tokens.shape[0] // num_beams
    start = beam_group_idx * (num_beams // num_beam_groups)
    group_size = min(start + num_beams // num_beam_groups, num_beams) - start  # transformers' min(): last group
    if scores.shape[0] != batch * group_size:
        raise ValueError(f"`scores` has to have batch * group_size = {batch * group_size} rows, but has {scores.shape[0]}")
    check_vocab_ids("current_tokens", current_tokens, scores.shape[1])
    return batch, start, group_size


def hamming_diversity_process(
    scores: np.ndarray,
    current_tokens: np.ndarray,
    beam_group_idx: int,
    diversity_penalty: float,
    num_beams: int,
    num_beam_groups: int,
) -> np.ndarray:
    r"""Diverse beam search (Vijayakumar et al., arXiv:1610.02424): penalise tokens that earlier
    groups already chose at this step.

    .. math:: s'_{b,j,v} = s_{b,j,v} - \lambda \cdot \#\{k < \text{start}(g) : c_{b,k} = v\}

    for group ``g = beam_group_idx``, batch item ``b`` and beam ``j`` of the group, where
    ``c = current_tokens`` viewed as (B, K) holds the tokens chosen this step (only the beams of
    groups ``< g`` are filled when group ``g`` runs) and ``start(g) = g * (K // G)``. Group 0 is
    returned unchanged. A token chosen twice by earlier groups is penalised twice.

    Shapes: ``scores`` float32 (B * group_size, V) -- only the rows of group ``g``, grouped per batch
    item -- with ``group_size = min(start + K // G, K) - start``; ``current_tokens`` int (B * K,).

    transformers 4.38.2 ``HammingDiversityLogitsProcessor`` (``bincount`` per batch item); source
    the 4.26 walkthrough, "group_beam_search" / "HammingDiversityLogitsProcessor".

    >>> s = np.zeros((1, 4), dtype=np.float32)             # B=1, K=4, G=2: group 1 = beams 2, 3
    >>> hamming_diversity_process(s[[0, 0]], np.array([3, 3, 0, 0]), 1, 0.5, 4, 2)
    array([[ 0.,  0.,  0., -1.],
           [ 0.,  0.,  0., -1.]], dtype=float32)
    """
    current_tokens = np.asarray(current_tokens)
    batch, start, group_size = _hamming_layout(scores, current_tokens, beam_group_idx, num_beams, num_beam_groups)
    vocab = scores.shape[1]
    if start == 0:
        return scores.copy()
    previous = current_tokens.reshape(batch, num_beams)[:, :start]  # (B, K) -> (B, start)
    counts = np.zeros((batch, vocab), dtype=np.float32)  # (B, V)
    np.add.at(counts, (np.arange(batch)[:, None], previous), 1.0)
    penalty = counts * diversity_penalty  # float32, like torch's int64 count * Python float
    grouped = scores.reshape(batch, group_size, vocab) - penalty[:, None, :]  # (B, group_size, V)
    return grouped.reshape(batch * group_size, vocab)


# ----------------------------------------------------------------------------------------------
# transformers-compatible classes


class LogitsProcessor:
    """Base class with transformers' name: subclasses implement ``__call__(input_ids, scores, **kwargs)``."""

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray, **kwargs) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} is an abstract class; subclass it and implement __call__")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class LogitsProcessorList(list):
    """A list of processors/warpers applied in order: ``scores = p(input_ids, scores, ...)`` for each p.

    Keyword arguments (group beam search's ``current_tokens``, ``beam_group_idx``) go only to the
    processors whose signature takes them, as in transformers 4.38.2: a processor with ``**kwargs``
    gets all of them, one with named extra parameters gets those (a missing one is a ValueError, as
    4.38.2), a two-argument processor gets none. This is signature inspection, which the house style
    avoids; it is here so that processors written for transformers port unchanged.
    ``recorder`` (a :class:`~refdecode.recorder.Recorder`, by default the no-op one) is given each
    processor's output under its name: the step trace (docs/traces.md).

    >>> procs = LogitsProcessorList([MinLengthLogitsProcessor(3, eos_token_id=0),
    ...                              RepetitionPenaltyLogitsProcessor(2.0),
    ...                              lambda input_ids, scores: scores + 1.0])   # a two-argument processor
    >>> procs(np.array([[1, 2]]), np.array([[1.0, 4.0, -1.0]], dtype=np.float32), beam_group_idx=0)
    array([[-inf,   3.,  -1.]], dtype=float32)
    """

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray, recorder: Recorder = NO_TRACE,
                 **kwargs) -> np.ndarray:
        for processor in self:
            scores = recorder.stage(_stage_name(processor),
                                    processor(input_ids, scores, **_kwargs_taken(processor, kwargs)))
        return scores


def _stage_name(processor) -> str:
    """The name a trace gives a processor's output: its class name (a plain function: its own name)."""
    return processor.__name__ if inspect.isfunction(processor) else type(processor).__name__


def _kwargs_taken(processor, kwargs: dict) -> dict:
    """The subset of ``kwargs`` that ``processor``'s ``__call__`` signature names (all of them for ``**kwargs``)."""
    if not kwargs:
        return kwargs
    params = list(inspect.signature(processor).parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return kwargs
    extra = [p for p in params[2:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if any(p.name not in kwargs and p.default is p.empty for p in extra):
        raise ValueError(f"Make sure that all the required parameters: {[p.name for p in params]} for "
                         f"{processor.__class__} are passed to the logits processor.")
    return {p.name: kwargs[p.name] for p in extra if p.name in kwargs}


class MinLengthLogitsProcessor(LogitsProcessor):
    """EOS gets -inf while ``input_ids.shape[-1] < min_length`` (the prompt counts); see :func:`min_length_process`."""

    def __init__(self, min_length: int, eos_token_id):
        self.min_length = check_count("min_length", min_length, minimum=0)
        self.eos_token_id = eos_list(eos_token_id)

    def __call__(self, input_ids, scores, **kwargs):
        return min_length_process(input_ids, scores, self.min_length, self.eos_token_id)


class MinNewTokensLengthLogitsProcessor(LogitsProcessor):
    """EOS gets -inf while fewer than ``min_new_tokens`` follow the prompt; see :func:`min_new_tokens_process`."""

    def __init__(self, prompt_length_to_skip: int, min_new_tokens: int, eos_token_id):
        self.prompt_length_to_skip = check_count("prompt_length_to_skip", prompt_length_to_skip, minimum=0)
        self.min_new_tokens = check_count("min_new_tokens", min_new_tokens, minimum=0)
        self.eos_token_id = eos_list(eos_token_id)

    def __call__(self, input_ids, scores, **kwargs):
        return min_new_tokens_process(
            input_ids, scores, self.prompt_length_to_skip, self.min_new_tokens, self.eos_token_id
        )


class RepetitionPenaltyLogitsProcessor(LogitsProcessor):
    """Divide positive / multiply negative scores of tokens in ``input_ids``; see :func:`repetition_penalty_process`.

    ``penalty`` must be a float > 0 (an int such as ``2`` is refused, as in transformers).
    """

    def __init__(self, penalty: float):
        self.penalty = check_positive_float("penalty", penalty)

    def __call__(self, input_ids, scores, **kwargs):
        return repetition_penalty_process(input_ids, scores, self.penalty)


class NoRepeatNGramLogitsProcessor(LogitsProcessor):
    """Ban tokens that would repeat an n-gram of the row; see :func:`no_repeat_ngram_process`."""

    def __init__(self, ngram_size: int):
        self.ngram_size = check_count("ngram_size", ngram_size, minimum=1)

    def __call__(self, input_ids, scores, **kwargs):
        return no_repeat_ngram_process(input_ids, scores, self.ngram_size)


class HammingDiversityLogitsProcessor(LogitsProcessor):
    """Group beam search's diversity penalty; see :func:`hamming_diversity_process`.

    Called as ``processor(input_ids, scores, current_tokens=..., beam_group_idx=...)``;
    ``input_ids`` is not used.
    """

    def __init__(self, diversity_penalty: float, num_beams: int, num_beam_groups: int):
        self.diversity_penalty = check_positive_float("diversity_penalty", diversity_penalty,
                                                      what="a float strictly larger than 0")
        self.num_beams = check_count("num_beams", num_beams, minimum=2)
        self.num_beam_groups = check_count("num_beam_groups", num_beam_groups, minimum=2)
        if num_beam_groups > num_beams:
            raise ValueError(
                f"`num_beam_groups` has to be smaller or equal to `num_beams` = {num_beams}, but is {num_beam_groups}"
            )

    def __call__(self, input_ids, scores, current_tokens=None, beam_group_idx=None, **kwargs):
        if current_tokens is None or beam_group_idx is None:
            raise ValueError(
                "HammingDiversityLogitsProcessor needs the keyword arguments `current_tokens` and "
                f"`beam_group_idx` (group beam search passes them), but got current_tokens={current_tokens!r}, "
                f"beam_group_idx={beam_group_idx!r}"
            )
        return hamming_diversity_process(
            scores, current_tokens, beam_group_idx, self.diversity_penalty, self.num_beams, self.num_beam_groups
        )
