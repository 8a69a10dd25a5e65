r"""Greedy search: at every step take the highest-scoring token (the 4.26 walkthrough (docs/references.md), section 2).

Contract: ``greedy_search(model, input_ids, ...)`` -> int64 (N, T_out) sequences (or a
:class:`~refdecode.generation_output.GenerateDecoderOnlyOutput`), exactly as transformers 4.38.2
``GenerationMixin.greedy_search`` with the model passed first. The processors see the **raw
logits** (no log_softmax in greedy/sample), and ``scores`` records what they return.

.. math:: y_t = \arg\max_v \; \mathrm{processors}(y_{<t},\ \mathrm{logits}_t)_v

Ties go to the lowest token id (``np.argmax``, like ``torch.argmax``). A row that emitted eos
receives ``pad_token_id`` at every later step (the 4.38 "pad step"; the loop keeps running for
the other rows), and the loop ends when every row is finished or a stopping criterion fires.

What every loop shares (the model calls, the defaults, the row bookkeeping) is in
:mod:`refdecode.decoding.loop`; this file holds the greedy loop itself. Docs: docs/greedy.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..generation_output import GenerateDecoderOnlyOutput
from ..recorder import NO_TRACE, Recorder
from .loop import (append_and_stop, check_no_nan, check_pad_token, collect, decode_step, decoder_output,
                   loop_defaults, model_capacity, prefill, step_records)

__all__ = ["greedy_search"]


def greedy_search(model: Any, input_ids: np.ndarray, logits_processor: Any = None, stopping_criteria: Any = None,
                  max_length: int | None = None, pad_token_id: int | None = None,
                  eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                  output_logits: bool = False, return_dict_in_generate: bool = False,
                  attention_mask: np.ndarray | None = None, streamer: Any = None,
                  recorder: Recorder = NO_TRACE) -> np.ndarray | GenerateDecoderOnlyOutput:
    """Greedy decoding of the N rows of ``input_ids`` (int64 (N, T)); ``attention_mask`` (N, T) or None.

    ``streamer`` (see :mod:`refdecode.text.streamers`) receives each step's (N,) tokens, then ``end()``.
    Returns int64 (N, T_out), or with ``return_dict_in_generate`` the output object (``scores``
    only with ``output_scores``, ``logits`` only with ``output_logits``).

    >>> from refdecode.model.stand_ins import TableModel
    >>> model = TableModel(np.log(np.array([[.1, .2, .7], [.6, .3, .1], [.2, .5, .3]], dtype=np.float32)))
    >>> greedy_search(model, np.array([[0], [2]]), max_length=5, eos_token_id=1, pad_token_id=0)
    array([[0, 2, 1],
           [2, 1, 0]])

    Row 1 emitted eos (1) at step 1, so it got the pad token (0) while row 0 finished; then all
    rows were done and the loop stopped before ``max_length``.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    check_pad_token(eos, pad_token_id)
    scores, raw_logits = step_records(return_dict_in_generate, output_scores, output_logits)
    unfinished = np.ones(input_ids.shape[0], dtype=np.int64)  # (N,) 1 = still generating
    # 1) model call: the prompt once, then one token per step (at the end of the loop)
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while unfinished.any():  # until every row is finished (step 5)
        recorder.step(input_ids)
        # 2) processors on the raw logits (N, V)
        next_scores = check_no_nan(logits_processor(input_ids, recorder.stage("logits", logits), recorder=recorder),
                                   input_ids.shape[1], model, logits)
        scores, raw_logits = collect(scores, next_scores), collect(raw_logits, logits)
        # 3) selection: argmax, lowest id on ties
        next_tokens = np.argmax(next_scores, axis=-1).astype(np.int64)  # (N,)
        # 4) bookkeeping: finished rows get pad, append (N, T) -> (N, T+1), stream; 5) stopping: a row is finished
        #    once it emitted eos or a criterion stops it (the batch, or per row)
        input_ids, unfinished = append_and_stop(input_ids, next_tokens, unfinished, eos, pad_token_id, criteria,
                                                scores, streamer, recorder)
        if unfinished.any():  # 1) model call for the next step: the newest token of each row, cached
            logits, attention_mask = decode_step(model, input_ids[:, -1], attention_mask, cache)
    return decoder_output(input_ids, scores, raw_logits, cache, return_dict_in_generate, streamer, criteria, recorder)
