r"""The serving parameters: presence penalty, frequency penalty and logit bias (not in transformers 4.38.2).

Contract: each maps ``input_ids`` int (N, T) and ``scores`` float32 (N, V) to a NEW float32 (N, V) array.
No version of transformers has these rules; every serving API does (OpenAI's chat and completions API, and
vLLM, llama.cpp, mlx-lm and OpenVINO GenAI, which differ in which tokens they count: docs/processors.md, "Serving penalties").
refdecode follows OpenAI's published formula

.. math:: s'_{r,v} = s_{r,v} - c_{r,v}\,\alpha_\text{frequency} - [c_{r,v} > 0]\,\alpha_\text{presence}
          + b_v

where :math:`c_{r,v}` is how many times token v occurs among row r's **generated** tokens (the prompt is
not counted: the first ``prompt_length`` columns of ``input_ids`` are skipped) and :math:`b_v` the logit
bias. The sign of the logit plays no part (the penalties subtract; the repetition penalty divides).

- :func:`frequency_penalty_process` (``frequency_penalty``, in [-2, 2]): minus count times the penalty;
- :func:`presence_penalty_process` (``presence_penalty``, in [-2, 2]): minus the penalty once a token occurred;
- :func:`logit_bias_process` (``logit_bias``, token id -> finite float): plus a fixed bias per token id.

``generate`` builds none of them (``GenerationConfig`` holds transformers' fields): pass them in
``generate(..., logits_processor=LogitsProcessorList([...]))``, which runs them after the processors
``generate`` builds and before the warpers, or use the command line's ``--frequency-penalty``,
``--presence-penalty`` and ``--logit-bias``, which do that. The OpenAI order is frequency, then presence,
then bias.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import check_input_ids, check_scores, check_vocab_ids
from .logits_process import LogitsProcessor
from ..validation import is_integer, is_number

__all__ = [
    "generated_token_counts",
    "frequency_penalty_process",
    "presence_penalty_process",
    "logit_bias_process",
    "check_serving_penalty",
    "check_logit_bias",
    "FrequencyPenaltyLogitsProcessor",
    "PresencePenaltyLogitsProcessor",
    "LogitBiasLogitsProcessor",
]

#: OpenAI's range for ``presence_penalty`` and ``frequency_penalty`` (vLLM checks the same one).
PENALTY_RANGE = (-2.0, 2.0)


# ----------------------------------------------------------------------------------------------
# Checks at the door


def check_serving_penalty(name: str, value: Any) -> float:
    """``value`` as a Python float if it is a real number in [-2, 2], else a TypeError / ValueError naming ``name``."""
    if not is_number(value):
        raise TypeError(f"`{name}` has to be a float in [-2.0, 2.0], but is {type(value).__name__} {value!r}")
    if not PENALTY_RANGE[0] <= value <= PENALTY_RANGE[1]:  # NaN fails both comparisons
        raise ValueError(f"`{name}` has to be a float in [-2.0, 2.0], but is {value!r}")
    return float(value)


def check_prompt_length(prompt_length: Any) -> int:
    """``prompt_length`` as a Python int >= 0, else a TypeError / ValueError."""
    if not is_integer(prompt_length) or prompt_length < 0:
        raise ValueError(f"`prompt_length` has to be an integer >= 0 (the prompt's columns of input_ids), "
                         f"but is {prompt_length!r}")
    return int(prompt_length)


def check_logit_bias(logit_bias: Any, vocab_size: int | None = None) -> dict[int, float]:
    """A dict token id (int, in [0, vocab_size)) -> finite float, else a TypeError / ValueError naming ``logit_bias``."""
    if not isinstance(logit_bias, dict):
        raise TypeError(f"`logit_bias` has to be a dict token id -> float, but is {type(logit_bias).__name__}")
    for token, bias in logit_bias.items():
        if not is_integer(token) or token < 0:
            raise ValueError(f"`logit_bias` has to have integer token ids >= 0 as keys, but has {token!r}")
        if not is_number(bias) or not np.isfinite(bias):
            raise ValueError(f"`logit_bias` has to map token ids to finite floats, but maps {token} to {bias!r}")
    if vocab_size is not None:
        check_vocab_ids("logit_bias", np.asarray(list(logit_bias), dtype=np.int64), vocab_size)
    return {int(t): float(b) for t, b in logit_bias.items()}


# ----------------------------------------------------------------------------------------------
# Pure functions


def generated_token_counts(input_ids: np.ndarray, prompt_length: int, vocab_size: int) -> np.ndarray:
    """How many times each token occurs in each row's generated part: int (N, T) -> int64 (N, V).

    The generated part is ``input_ids[:, prompt_length:]``; the prompt (left padding included) is not counted.

    >>> generated_token_counts(np.array([[2, 0, 1, 1]]), 1, 3)    # prompt [2]; generated [0, 1, 1]
    array([[1, 2, 0]])
    """
    n = input_ids.shape[0]
    if prompt_length > input_ids.shape[1]:
        raise ValueError(f"`prompt_length` has to be at most input_ids.shape[1] = {input_ids.shape[1]}, "
                         f"but is {prompt_length}")
    generated = input_ids[:, prompt_length:]  # (N, T - prompt_length)
    check_vocab_ids("input_ids", generated, vocab_size)
    counts = np.zeros((n, vocab_size), dtype=np.int64)  # (N, V)
    np.add.at(counts, (np.repeat(np.arange(n), generated.shape[1]), generated.ravel()), 1)
    return counts


def frequency_penalty_process(input_ids: np.ndarray, scores: np.ndarray, frequency_penalty: float,
                              prompt_length: int) -> np.ndarray:
    r"""Subtract the penalty once per occurrence of the token among the generated tokens.

    .. math:: s'_{r,v} = s_{r,v} - c_{r,v}\,\alpha_\text{frequency}

    in float32 (``float32(count) * float32(penalty)``, then the subtraction), whatever the sign of
    :math:`s_{r,v}`. A negative penalty rewards repetition. OpenAI's formula; vLLM's ``apply_penalties``.

    >>> s = np.array([[1.0, -1.0, 0.5]], dtype=np.float32)
    >>> frequency_penalty_process(np.array([[2, 0, 0, 1]]), s, 0.5, 1)   # generated 0, 0, 1: counts 2, 1, 0
    array([[ 0. , -1.5,  0.5]], dtype=float32)
    """
    n, vocab = check_scores(scores).shape
    check_input_ids(input_ids, n)
    counts = generated_token_counts(input_ids, prompt_length, vocab)  # (N, V)
    return scores - counts.astype(np.float32) * np.float32(frequency_penalty)


def presence_penalty_process(input_ids: np.ndarray, scores: np.ndarray, presence_penalty: float,
                             prompt_length: int) -> np.ndarray:
    r"""Subtract the penalty once from every token that occurs among the generated tokens.

    .. math:: s'_{r,v} = s_{r,v} - [c_{r,v} > 0]\,\alpha_\text{presence}

    whatever the sign of :math:`s_{r,v}` and however often the token occurred. OpenAI's formula.

    >>> s = np.array([[1.0, -1.0, 0.5]], dtype=np.float32)
    >>> presence_penalty_process(np.array([[2, 0, 0, 1]]), s, 0.5, 1)    # 0 and 1 occurred, 2 only in the prompt
    array([[ 0.5, -1.5,  0.5]], dtype=float32)
    """
    n, vocab = check_scores(scores).shape
    check_input_ids(input_ids, n)
    present = generated_token_counts(input_ids, prompt_length, vocab) > 0  # (N, V)
    return np.where(present, scores - np.float32(presence_penalty), scores)


def logit_bias_process(scores: np.ndarray, logit_bias: dict[int, float]) -> np.ndarray:
    r"""Add a fixed bias to the listed token ids, in every row and at every step.

    .. math:: s'_{r,v} = s_{r,v} + b_v \quad (b_v = 0 \text{ for an id not listed})

    The bias is added in float32. OpenAI's ``logit_bias`` (there -100 to 100; refdecode takes any finite
    value): -100 all but bans a token, +100 all but forces it.

    >>> s = np.array([[1.0, -1.0, 0.5]], dtype=np.float32)
    >>> logit_bias_process(s, {0: -100.0, 2: 1.5})
    array([[-99., -1.,  2.]], dtype=float32)
    """
    vocab = check_scores(scores).shape[1]
    bias = check_logit_bias(logit_bias, vocab)
    row = np.zeros(vocab, dtype=np.float32)  # (V,)
    row[list(bias)] = np.asarray(list(bias.values()), dtype=np.float32)
    return scores + row


# ----------------------------------------------------------------------------------------------
# Classes (named as the parameter; no transformers class exists)


class FrequencyPenaltyLogitsProcessor(LogitsProcessor):
    """The frequency penalty; see :func:`frequency_penalty_process`. ``frequency_penalty`` in [-2, 2]."""

    def __init__(self, frequency_penalty: float, prompt_length: int):
        self.frequency_penalty = check_serving_penalty("frequency_penalty", frequency_penalty)
        self.prompt_length = check_prompt_length(prompt_length)

    def __call__(self, input_ids, scores, **kwargs):
        return frequency_penalty_process(input_ids, scores, self.frequency_penalty, self.prompt_length)


class PresencePenaltyLogitsProcessor(LogitsProcessor):
    """The presence penalty; see :func:`presence_penalty_process`. ``presence_penalty`` in [-2, 2]."""

    def __init__(self, presence_penalty: float, prompt_length: int):
        self.presence_penalty = check_serving_penalty("presence_penalty", presence_penalty)
        self.prompt_length = check_prompt_length(prompt_length)

    def __call__(self, input_ids, scores, **kwargs):
        return presence_penalty_process(input_ids, scores, self.presence_penalty, self.prompt_length)


class LogitBiasLogitsProcessor(LogitsProcessor):
    """A fixed bias per token id; see :func:`logit_bias_process`. ``vocab_size``, if given, checks the ids now."""

    def __init__(self, logit_bias: dict[int, float], vocab_size: int | None = None):
        self.logit_bias = check_logit_bias(logit_bias, vocab_size)

    def __call__(self, input_ids, scores, **kwargs):
        return logit_bias_process(scores, self.logit_bias)
