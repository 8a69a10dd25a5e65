r"""Greedy search: at every step take the highest-scoring token (source document 000, section 2).

Contract: ``greedy_search(model, input_ids, ...)`` -> int64 (N, T_out) sequences (or a
:class:`~refdecode.generation_output.GenerateDecoderOnlyOutput`), exactly as transformers 4.38.2
``GenerationMixin.greedy_search`` with the model passed first. The processors see the **raw
logits** (no log_softmax in greedy/sample), and ``scores`` records what they return.

.. math:: y_t = \arg\max_v \; \mathrm{processors}(y_{<t},\ \mathrm{logits}_t)_v

Ties go to the lowest token id (``np.argmax``, like ``torch.argmax``). A row that emitted eos
receives ``pad_token_id`` at every later step (the 4.38 "pad step"; the loop keeps running for
the other rows), and the loop ends when every row is finished or a stopping criterion fires.

This module also holds the argument defaults shared by all loops (:func:`loop_defaults`).
Docs: docs/greedy.md.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .generation_config import model_generation_config
from .generation_output import GenerateDecoderOnlyOutput
from .logits_process import LogitsProcessorList
from .model_steps import decode_step, model_capacity, prefill
from .stopping_criteria import (
    MaxLengthCriteria,
    StoppingCriteriaList,
    pad_finished_rows,
    stop_rows,
    update_unfinished,
    validate_stopping_criteria,
)

__all__ = ["greedy_search", "loop_defaults", "check_no_nan"]


def loop_defaults(model: Any, logits_processor: Any, stopping_criteria: Any, max_length: int | None,
                  pad_token_id: int | None, eos_token_id: int | list[int] | None,
                  ) -> tuple[Any, StoppingCriteriaList, int | None, list[int] | None]:
    """Fill in what a loop was not given, as transformers' loops do.

    - processors: an empty list (a plain list is wrapped in LogitsProcessorList); stopping criteria:
      an empty list, plus MaxLengthCriteria for the deprecated ``max_length`` argument;
    - ``pad_token_id`` / ``eos_token_id``: from the model's generation config; eos becomes a list.

    Deviation: with no length criterion at all, transformers loops until every row emits eos
    (and crashes past ``n_positions``); refdecode stops at ``n_positions`` with a warning.
    """
    logits_processor = LogitsProcessorList(logits_processor if logits_processor is not None else [])
    criteria = StoppingCriteriaList(stopping_criteria if stopping_criteria is not None else [])
    if max_length is not None:
        criteria = validate_stopping_criteria(criteria, max_length)
    if criteria.max_length is None:
        warnings.warn("no max_length stopping criterion: stopping at the model's n_positions", UserWarning,
                      stacklevel=3)
        criteria.append(MaxLengthCriteria(max_length=int(model.config.n_positions)))
    defaults = model_generation_config(model)
    pad_token_id = pad_token_id if pad_token_id is not None else defaults.pad_token_id
    eos_token_id = eos_token_id if eos_token_id is not None else defaults.eos_token_id
    eos = [eos_token_id] if isinstance(eos_token_id, int) else eos_token_id
    return logits_processor, criteria, pad_token_id, eos


def check_no_nan(scores: np.ndarray, step: int) -> None:
    """Refuse NaN scores: argmax/top-k/sampling would pick an arbitrary token (torch keeps going)."""
    if np.isnan(scores).any():
        raise ValueError(f"`scores` contain NaN at generation step {step} (rows "
                         f"{np.flatnonzero(np.isnan(scores).any(axis=-1)).tolist()}): check the processors/warpers")


def greedy_search(model: Any, input_ids: np.ndarray, logits_processor: Any = None, stopping_criteria: Any = None,
                  max_length: int | None = None, pad_token_id: int | None = None,
                  eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                  output_logits: bool = False, return_dict_in_generate: bool = False,
                  attention_mask: np.ndarray | None = None, streamer: Any = None,
                  ) -> np.ndarray | GenerateDecoderOnlyOutput:
    """Greedy decoding of the N rows of ``input_ids`` (int64 (N, T)); ``attention_mask`` (N, T) or None.

    ``streamer`` (see :mod:`refdecode.streamers`) receives each step's (N,) tokens, then ``end()``.
    Returns int64 (N, T_out), or with ``return_dict_in_generate`` the output object (``scores``
    only with ``output_scores``, ``logits`` only with ``output_logits``).

    >>> from refdecode.testing import TableModel
    >>> model = TableModel(np.log(np.array([[.1, .2, .7], [.6, .3, .1], [.2, .5, .3]], dtype=np.float32)))
    >>> greedy_search(model, np.array([[0], [2]]), max_length=5, eos_token_id=1, pad_token_id=0)
    array([[0, 2, 1],
           [2, 1, 0]])

    Row 1 emitted eos (1) at step 1, so it got the pad token (0) while row 0 finished; then all
    rows were done and the loop stopped before ``max_length``.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    if eos is not None and pad_token_id is None:
        raise ValueError("If `eos_token_id` is defined, make sure that `pad_token_id` is defined.")
    scores = () if (return_dict_in_generate and output_scores) else None
    raw_logits = () if (return_dict_in_generate and output_logits) else None
    unfinished = np.ones(input_ids.shape[0], dtype=np.int64)  # (N,) 1 = still generating
    # 1) model call: the prompt once, then one token per step (at the end of the loop)
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        # 2) processors on the raw logits (N, V)
        next_scores = logits_processor(input_ids, logits)
        check_no_nan(next_scores, input_ids.shape[1])
        scores = scores + (next_scores,) if scores is not None else None
        raw_logits = raw_logits + (logits,) if raw_logits is not None else None
        # 3) selection: argmax, lowest id on ties
        next_tokens = np.argmax(next_scores, axis=-1).astype(np.int64)  # (N,)
        # 4) bookkeeping: finished rows get pad, append, mark rows that emitted eos
        if eos is not None:
            next_tokens = pad_finished_rows(next_tokens, unfinished, pad_token_id)
        input_ids = np.concatenate([input_ids, next_tokens[:, None]], axis=1)  # (N, T) -> (N, T+1)
        if streamer is not None:
            streamer.put(next_tokens)
        if eos is not None:
            unfinished = update_unfinished(unfinished, next_tokens, eos)
        # 5) stopping: every row finished (eos, or a criterion: for the batch, or per row as in 4.39)
        unfinished = stop_rows(criteria(input_ids, scores), unfinished)
        if unfinished.max() == 0:
            break
        logits, attention_mask = decode_step(model, next_tokens, attention_mask, cache)
    if streamer is not None:
        streamer.end()
    if return_dict_in_generate:
        return GenerateDecoderOnlyOutput(sequences=input_ids, scores=scores, logits=raw_logits, past_key_values=cache)
    return input_ids
