r"""The processors' and warpers' arguments, checked at the door in transformers 4.38.2's wording.

Contract: each function takes one argument of a processor's ``__init__`` or ``__call__`` and returns it
normalised (a Python int or float, the array itself) or raises a ``ValueError`` / ``TypeError`` that names
the parameter, the allowed range and the value received (a ValueError for a wrong type too, where
transformers raises one). Shared by the modules of :mod:`refdecode.processors`; the checks that
``GenerationConfig`` needs as well (token ids, id sequences) are in :mod:`refdecode.validation`.

A rule's pure function (``top_p_warp(scores, top_p, ...)``) opens with its algorithm, as transformers'
``__call__`` does: the check of ``scores`` stands above the ``def`` as the decorator :func:`checks_scores`,
and the classes check their ``__init__`` arguments with the functions below.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

import numpy as np

from ..validation import is_float, is_integer, is_number

__all__ = ["check_count", "check_positive_float", "check_scores", "checks_scores", "check_distributions",
           "checks_distributions", "check_input_ids", "check_vocab_ids", "check_filter_value"]

Rule = TypeVar("Rule", bound=Callable[..., np.ndarray])

#: How check_count names the range ``value >= minimum``, as transformers' messages do.
_AT_LEAST = {0: "a non-negative integer", 1: "a strictly positive integer (>= 1)",
             2: "an integer strictly larger than 1"}



def check_count(name: str, value: Any, minimum: int) -> int:
    """``value`` as a Python int if it is an integer ``>= minimum`` (0, 1 or 2), else a ValueError naming ``name``."""
    if not is_integer(value) or value < minimum:
        raise ValueError(f"`{name}` has to be {_AT_LEAST[minimum]}, but is {value!r}")
    return int(value)


def check_positive_float(name: str, value: Any, what: str = "a strictly positive float (> 0)") -> float:
    """``value`` as a Python float if it is a float > 0 (an int such as ``2`` is refused), else a ValueError."""
    if not is_float(value) or not value > 0:
        raise ValueError(f"`{name}` has to be {what}, but is {value!r}")
    return float(value)


def check_scores(scores: Any) -> np.ndarray:
    """``scores`` must be a float32 (B, V) array; anything else is a TypeError/ValueError, not a silent cast."""
    if not isinstance(scores, np.ndarray) or scores.dtype != np.float32:
        kind = scores.dtype if isinstance(scores, np.ndarray) else type(scores).__name__
        raise TypeError(f"`scores` has to be a float32 numpy array of shape (batch, vocab), but is {kind}: refdecode "
                        "computes in float32 only, the dtype of the model's logits, which is where its results are "
                        "checked equal to transformers'; cast with `scores.astype(np.float32)`")
    if scores.ndim != 2:
        raise ValueError(f"`scores` has to have shape (batch, vocab), but has shape {scores.shape}")
    return scores


def checks_scores(rule: Rule) -> Rule:
    """Decorator: :func:`check_scores` on a rule's first argument (and ``min_tokens_to_keep`` >= 1 and a numeric
    ``filter_value`` where the rule takes them) before the rule runs.

    The door check is not part of the rule, so it stands above the ``def`` and the body reads like
    transformers' ``__call__``::

        @checks_scores
        def top_p_warp(scores, top_p, filter_value=-inf, min_tokens_to_keep=1):
            sorted_logits, sorted_indices = stable_sort(scores)   # the rule, from its first line
            ...

    ``functools.wraps`` keeps the rule's name, docstring (and so its doctests) and signature.

    >>> rule = checks_scores(lambda scores: scores)
    >>> rule(np.zeros((1, 2)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: `scores` has to be a float32 numpy array of shape (batch, vocab), but is float64: ...
    """

    signature = inspect.signature(rule)

    @functools.wraps(rule)
    def checked(scores, *args, **kwargs):
        given = signature.bind(scores, *args, **kwargs).arguments  # TypeError for a wrong call, as the rule gives
        if "min_tokens_to_keep" in given:  # a count: 0 would keep nothing (or, in a slice [-0:], everything)
            check_count("min_tokens_to_keep", given["min_tokens_to_keep"], 1)
        if "filter_value" in given:
            check_filter_value(given["filter_value"])
        return rule(check_scores(scores), *args, **kwargs)

    return checked  # type: ignore[return-value]


def check_distributions(scores: np.ndarray) -> np.ndarray:
    """Every row of float32 (B, V) ``scores`` must be a distribution: a finite entry and no NaN, else a ValueError.

    What ``torch.distributions.Categorical(logits=scores)`` refuses (its argument check), for the rules that
    build one (eta's entropy)."""
    if not (np.isfinite(scores).any(axis=-1) & ~np.isnan(scores).any(axis=-1)).all():
        raise ValueError("eta sampling needs a distribution in every row, but `scores` has a row that is all -inf "
                         "or holds NaN (torch's Categorical refuses it too)")
    return scores


def checks_distributions(rule: Rule) -> Rule:
    """Decorator: :func:`check_distributions` on a rule's first argument before the rule runs (below
    :func:`checks_scores`, which checks the array first), so the rule's body holds no guard.

    >>> rule = checks_distributions(lambda scores: scores)
    >>> rule(np.full((1, 2), -np.inf, dtype=np.float32))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: eta sampling needs a distribution in every row, but `scores` has a row that is all -inf ...
    """

    @functools.wraps(rule)
    def checked(scores, *args, **kwargs):
        return rule(check_distributions(scores), *args, **kwargs)

    return checked  # type: ignore[return-value]


def check_input_ids(input_ids: Any, batch: int) -> np.ndarray:
    """``input_ids`` must be an integer (B, T) array with the same B as ``scores``."""
    if not isinstance(input_ids, np.ndarray) or not np.issubdtype(input_ids.dtype, np.integer):
        kind = input_ids.dtype if isinstance(input_ids, np.ndarray) else type(input_ids).__name__
        raise TypeError(f"`input_ids` has to be an integer numpy array of shape (batch, seq), but is {kind}")
    if input_ids.ndim != 2 or input_ids.shape[0] != batch:
        raise ValueError(
            f"`input_ids` has to have shape (batch, seq) with batch = scores.shape[0] = {batch}, "
            f"but has shape {input_ids.shape}"
        )
    return input_ids


def check_vocab_ids(name: str, ids: np.ndarray, vocab_size: int) -> None:
    """Token ids must index the vocabulary: ValueError instead of an IndexError or Python's negative indexing."""
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        bad = ids[(ids < 0) | (ids >= vocab_size)].ravel()[0]
        raise ValueError(f"`{name}` has to hold token ids in [0, {vocab_size - 1}] (vocab size), but holds {bad}")


def check_filter_value(filter_value: Any) -> float:
    """``filter_value`` as a Python float (any real number), else a ValueError."""
    if not is_number(filter_value):
        raise ValueError(f"`filter_value` has to be a float, but is {filter_value!r}")
    return float(filter_value)
