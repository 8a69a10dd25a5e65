r"""Stage 5, stopping: when does a decode loop end, and what do finished rows emit meanwhile.

Contract (transformers 4.38.2, ``generation/stopping_criteria.py``): a criterion is called as
``criterion(input_ids, scores) -> bool`` where ``input_ids`` is int64 (N, T) (prompt included)
and ``scores`` is the tuple of per-step scores collected so far (``None`` unless the loop runs
with ``return_dict_in_generate=True, output_scores=True``). In 4.38 a criterion answers for the
**whole batch** with one bool; 4.39 switched to one bool per row (#29056). Both are accepted: a
criterion may return a bool (stop every row) or a (N,) bool array (stop those rows). A row stopped
by a criterion is finished like a row that emitted eos (:func:`stop_rows`): it gets
``pad_token_id`` afterwards, and the loop ends when every row is finished (beam loops: when every
row says stop).

The end-of-sequence token is *not* a criterion in 4.38 (``EosTokenCriteria`` arrived in 4.40):
greedy and sample keep an ``unfinished`` flag per row; once a row has emitted an eos token every
later token of that row is replaced by ``pad_token_id`` (:func:`pad_finished_rows`), and the loop
ends when every row is finished or a criterion says stop. Beam loops stop when the beam scorer is
done or a criterion says stop. Docs: docs/stopping.md.

>>> criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=4)])
>>> criteria(np.zeros((2, 3), dtype=np.int64), None), criteria(np.zeros((2, 4), dtype=np.int64), None)
(False, True)
>>> criteria.max_length
4
"""

from __future__ import annotations

import time

import numpy as np
from ..generation_rules import eos_list
from ..validation import is_integer, warn

__all__ = [
    "StoppingCriteria", "MaxLengthCriteria", "MaxNewTokensCriteria", "MaxTimeCriteria",
    "StoppingCriteriaList", "validate_stopping_criteria", "pad_finished_rows", "update_unfinished", "stop_rows",
    "EosTokenCriteria", "StopStringCriteria", "token_strings",
]


class StoppingCriteria:
    """Base class: ``__call__(input_ids (N, T) int64, scores, **kwargs) -> bool`` for the batch."""

    def __call__(self, input_ids: np.ndarray, scores: tuple | None, **kwargs: object) -> bool:
        raise NotImplementedError("StoppingCriteria needs to be subclassed")


class MaxLengthCriteria(StoppingCriteria):
    """Stop once ``input_ids.shape[-1] >= max_length``; the length **includes the prompt**.

    ``max_position_embeddings`` (the model's ``n_positions``) only adds a warning when the
    sequence reaches it without being done, as 4.38.2 does.
    """

    def __init__(self, max_length: int, max_position_embeddings: int | None = None):
        self.max_length = max_length
        self.max_position_embeddings = max_position_embeddings

    def __call__(self, input_ids: np.ndarray, scores: tuple | None, **kwargs: object) -> bool:
        cur_len = input_ids.shape[-1]
        is_done = cur_len >= self.max_length
        if self.max_position_embeddings is not None and not is_done and cur_len >= self.max_position_embeddings:
            warn(f"the generation will exceed the model's maximum length ({self.max_position_embeddings})")
        return bool(is_done)


class MaxNewTokensCriteria(StoppingCriteria):
    """Stop once ``start_length + max_new_tokens`` tokens are held (deprecated in 4.38, kept for ports).

    >>> import warnings; warnings.simplefilter("ignore", FutureWarning)
    >>> MaxNewTokensCriteria(start_length=3, max_new_tokens=2).max_length
    5
    """

    def __init__(self, start_length: int, max_new_tokens: int):
        warn("The class `MaxNewTokensCriteria` is deprecated. Please use "
                      f"`MaxLengthCriteria(max_length={start_length + max_new_tokens})` instead.",
                      FutureWarning)
        self.start_length = start_length
        self.max_new_tokens = max_new_tokens
        self.max_length = start_length + max_new_tokens

    def __call__(self, input_ids: np.ndarray, scores: tuple | None, **kwargs: object) -> bool:
        return bool(input_ids.shape[-1] >= self.max_length)


class MaxTimeCriteria(StoppingCriteria):
    """Stop once more than ``max_time`` seconds passed since ``initial_timestamp`` (default: construction)."""

    def __init__(self, max_time: float, initial_timestamp: float | None = None):
        self.max_time = max_time
        self.initial_timestamp = time.time() if initial_timestamp is None else initial_timestamp

    def __call__(self, input_ids: np.ndarray, scores: tuple | None, **kwargs: object) -> bool:
        return bool(time.time() - self.initial_timestamp > self.max_time)


# ---- per-row criteria of transformers 4.40 / 4.41 (newer than the pinned 4.38.2; golden-checked against 4.41.0)


class EosTokenCriteria(StoppingCriteria):
    """Rows whose last token is one of ``eos_token_id``: a (N,) bool array (transformers 4.40+).

    In 4.38.2 the loops do this bookkeeping themselves (:func:`update_unfinished`); 4.40 made it a
    criterion. Passing it to a loop of refdecode gives the same tokens as the loop's own eos check.

    >>> EosTokenCriteria([2, 7])(np.array([[1, 2], [2, 5], [0, 7]]), None)
    array([ True, False,  True])
    """

    def __init__(self, eos_token_id: int | list[int]):
        try:  # an id, or any sequence of ids (a list, a tuple, a NumPy array, as torch.tensor takes them)
            ids = eos_list(eos_token_id if is_integer(eos_token_id) or eos_token_id is None else list(eos_token_id),
                           no_token=True)
        except (ValueError, TypeError):
            ids = None
        if not ids or min(ids) < 0:
            raise ValueError(f"`eos_token_id` has to be a non-negative integer or a non-empty list of them, "
                             f"but is {eos_token_id!r}")
        self.eos_token_id = np.array(ids, dtype=np.int64)

    def __call__(self, input_ids: np.ndarray, scores: tuple | None, **kwargs: object) -> np.ndarray:
        return np.isin(input_ids[:, -1], self.eos_token_id)


def token_strings(tokenizer: object) -> list[str]:
    """Every token id's own text (id -> str), as ``StopStringCriteria`` sees tokens.

    Each token is decoded **alone** (special tokens kept), so a token holding part of a multi-byte
    character reads as "\ufffd" (transformers decodes ``"abcdef" + token`` and strips the prefix,
    which gives the same strings for GPT-2's byte-level BPE). Needs ``tokenizer.decode(ids)`` and
    ``len(tokenizer)``.
    """
    return [tokenizer.decode([i]) for i in range(len(tokenizer))]


class StopStringCriteria(StoppingCriteria):
    r"""Stop a row once its text **ends with** one of ``stop_strings`` (transformers 4.41+, per row).

    "Ends with" is counted in tokens: the stop string must appear in the concatenated texts of the
    row's last tokens, and its **last character must lie in the row's last token** (that token may
    carry more characters after it). So "\n\n" stops a row whose last token is "\n\n" or ".\n\nA",
    but not a row that emitted "\n\n" two tokens ago. Each token's text is its own decode
    (:func:`token_strings`). Only the last ``max(len(s))`` tokens are looked at: every token has at
    least one character, so a stop string spans no more tokens than it has characters.

    transformers 4.41 computes the same answer with a precomputed table of where each token can sit
    inside each stop string (``_stop_string_create_embedding_vec``) and a vectorised cumulative
    sum; refdecode checks the definition directly, row by row. Golden-checked against 4.41.0 on
    every prefix of texts and random token sequences (``tests/golden/stop_strings.npz``).

    Args:
        tokenizer: a :class:`~refdecode.text.tokenizer.Tokenizer` (anything with ``decode`` and ``len``),
            or a list of the token strings.
        stop_strings: one string or a list of non-empty strings.

    >>> strings = ["a", "b", "\n", "\n\n", "b\nc"]                         # a 5-token vocabulary
    >>> StopStringCriteria(strings, "\n\n")(np.array([[0, 3], [2, 2], [3, 0], [0, 4]]), None)
    array([ True,  True, False, False])
    >>> StopStringCriteria(strings, "b\n")(np.array([[0, 4], [1, 2]]), None)     # "b\nc": the end is in the last token
    array([ True,  True])
    """

    def __init__(self, tokenizer: object, stop_strings: str | list[str]):
        stops = [stop_strings] if isinstance(stop_strings, str) else stop_strings
        if not isinstance(stops, (list, tuple)) or not stops or any(not isinstance(s, str) or not s for s in stops):
            raise ValueError(f"`stop_strings` has to be a non-empty string or a non-empty list of non-empty strings, "
                             f"but is {stop_strings!r}")
        self.stop_strings = tuple(stops)
        self.strings = list(tokenizer) if isinstance(tokenizer, (list, tuple)) else token_strings(tokenizer)
        self.window = max(len(s) for s in self.stop_strings)   # tokens to look at (>= 1 character each)

    def row_is_done(self, ids: list[int]) -> bool:
        """One row (token ids): does a stop string end inside its last token?"""
        pieces = [self.strings[i] for i in ids[-self.window:]]
        text, last = "".join(pieces), len(pieces[-1]) if pieces else 0
        # every end position inside the last token: text[:end] must end with a stop string
        return any(text[:end].endswith(stop) for end in range(len(text) - last + 1, len(text) + 1)
                   for stop in self.stop_strings)

    def __call__(self, input_ids: np.ndarray, scores: tuple | None, **kwargs: object) -> np.ndarray:
        return np.array([self.row_is_done(row) for row in input_ids.tolist()], dtype=bool)   # (N,)


class StoppingCriteriaList(list):
    """A list of criteria; calling it ORs their answers.

    Every criterion returns one bool (4.38): the result is ``any(...)``, one bool for the batch.
    A criterion returning a (N,) bool array (the 4.39 style) makes the result a (N,) bool array,
    the row-wise OR (a plain bool counts for every row).

    >>> class FirstRowDone(StoppingCriteria):
    ...     def __call__(self, input_ids, scores, **kwargs):
    ...         return np.array([True, False])
    >>> StoppingCriteriaList([MaxLengthCriteria(9), FirstRowDone()])(np.zeros((2, 3), dtype=np.int64), None)
    array([ True, False])
    """

    def __call__(self, input_ids: np.ndarray, scores: tuple | None, **kwargs: object) -> bool | np.ndarray:
        answers = [criteria(input_ids, scores, **kwargs) for criteria in self]
        if all(np.ndim(a) == 0 for a in answers):
            return any(bool(a) for a in answers)
        done = np.zeros(input_ids.shape[0], dtype=bool)  # (N,)
        for criteria, answer in zip(self, answers):
            answer = np.asarray(answer)
            if answer.ndim and (answer.shape != done.shape or answer.dtype.kind != "b"):
                raise ValueError(f"a stopping criterion returns one bool, or one bool per row: (N,) = {done.shape} "
                                 f"bools, but {type(criteria).__name__} returned {answer.dtype} {answer.shape}")
            done |= answer.astype(bool)
        return done

    @property
    def max_length(self) -> int | None:
        """``max_length`` of the first MaxLength/MaxNewTokens criterion, else None (finalize's output width)."""
        for criterion in self:
            if isinstance(criterion, (MaxLengthCriteria, MaxNewTokensCriteria)):
                return criterion.max_length
        return None


def validate_stopping_criteria(stopping_criteria: StoppingCriteriaList, max_length: int) -> StoppingCriteriaList:
    """A copy of ``stopping_criteria`` with a MaxLengthCriteria(max_length) added unless one exists."""
    new_criteria = StoppingCriteriaList(stopping_criteria)
    if stopping_criteria.max_length is not None and stopping_criteria.max_length != max_length:
        warn("You set different `max_length` for stopping criteria and `max_length` parameter")
    elif stopping_criteria.max_length is None:
        new_criteria.append(MaxLengthCriteria(max_length=max_length))
    return new_criteria


# ---- eos bookkeeping of greedy / sample (4.38.2 greedy_search: "finished sentences should have
# their next token be a padding token")


def pad_finished_rows(next_tokens: np.ndarray, unfinished: np.ndarray, pad_token_id: int) -> np.ndarray:
    """(N,) chosen tokens, (N,) 1/0 unfinished flags -> (N,) tokens with finished rows set to pad.

    transformers computes ``next_tokens * unfinished + pad_token_id * (1 - unfinished)``.

    >>> pad_finished_rows(np.array([5, 6]), np.array([1, 0]), pad_token_id=9)
    array([5, 9])
    """
    return np.where(unfinished.astype(bool), next_tokens, np.int64(pad_token_id)).astype(np.int64)


def update_unfinished(unfinished: np.ndarray, next_tokens: np.ndarray, eos_token_id: list[int]) -> np.ndarray:
    """(N,) flags, (N,) tokens just appended -> (N,) flags with rows that emitted any eos id set to 0.

    >>> update_unfinished(np.array([1, 1, 0]), np.array([3, 7, 3]), eos_token_id=[7, 8])
    array([1, 0, 0])
    """
    hit_eos = np.isin(next_tokens, np.asarray(eos_token_id, dtype=np.int64))  # (N,) bool
    return (unfinished * ~hit_eos).astype(np.int64)


def stop_rows(done: bool | np.ndarray, unfinished: np.ndarray) -> np.ndarray:
    """The criteria's answer (one bool, or (N,) bools), (N,) 1/0 flags -> (N,) flags with stopped rows 0.

    >>> stop_rows(False, np.array([1, 1])), stop_rows(np.array([True, False]), np.array([1, 1]))
    (array([1, 1]), array([0, 1]))
    """
    return (unfinished * ~np.broadcast_to(np.asarray(done, dtype=bool), unfinished.shape)).astype(np.int64)
