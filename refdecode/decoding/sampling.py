r"""Multinomial sampling: draw each token from the processed and warped distribution (the 4.26 walkthrough, section 4).

Contract: ``sample(model, input_ids, ...)`` -> int64 (N, T_out) (or the output object), as
transformers 4.38.2 ``GenerationMixin.sample`` with the model first. Processors, then warpers,
act on the **raw logits**; ``scores`` records the warped scores (``-inf`` where filtered).

.. math:: y_t \sim \mathrm{softmax}\big(\mathrm{warpers}(\mathrm{processors}(y_{<t}, \mathrm{logits}_t))\big)

The draw goes through ``draw`` (default :func:`refdecode.decoding.randomness.multinomial`) with the
``np.random.Generator`` ``rng`` (or ``np.random.default_rng(seed)``): same seed, same tokens.
Finished rows get ``pad_token_id``, as in greedy search. ``top_k=1`` gives greedy search's tokens.
Docs: docs/sampling.md; the warpers: docs/temperature.md, docs/top-k.md, docs/top-p.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..generation_output import GenerateDecoderOnlyOutput
from ..numerics import softmax
from ..processors.logits_process import LogitsProcessorList
from ..recorder import NO_TRACE, Recorder
from .loop import (append_and_stop, check_no_nan, check_pad_token, collect, decode_step, decoder_output,
                   loop_defaults, model_capacity, prefill, step_records)
from .randomness import checked_draw, make_rng, multinomial

__all__ = ["sample"]


def sample(model: Any, input_ids: np.ndarray, logits_processor: Any = None, stopping_criteria: Any = None,
           logits_warper: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
           eos_token_id: int | list[int] | None = None, output_scores: bool = False, output_logits: bool = False,
           return_dict_in_generate: bool = False, attention_mask: np.ndarray | None = None,
           rng: np.random.Generator | None = None, seed: int | None = None,
           draw: Callable[..., np.ndarray] | None = None, streamer: Any = None,
           recorder: Recorder = NO_TRACE) -> np.ndarray | GenerateDecoderOnlyOutput:
    """Sample one token per step for each of the N rows of ``input_ids`` (int64 (N, T)).

    ``streamer`` (see :mod:`refdecode.text.streamers`) receives each step's (N,) tokens, then ``end()``.
    ``draw(probs (N, V), num_samples, replacement, rng) -> (N, num_samples)`` replaces the draw
    (tests replay transformers' tokens through it).

    >>> from refdecode.model.stand_ins import TableModel
    >>> from refdecode.processors.logits_warp import TopKLogitsWarper
    >>> model = TableModel(np.array([[0., 3., 1.], [1., 0., 3.], [3., 1., 0.]], dtype=np.float32))
    >>> sample(model, np.array([[0]]), logits_warper=[TopKLogitsWarper(1)], max_length=5, seed=0)  # top-1 = greedy
    array([[0, 1, 2, 0, 1]])
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    check_pad_token(eos, pad_token_id)
    logits_warper = LogitsProcessorList(logits_warper if logits_warper is not None else [])
    rng, draw = make_rng(rng, seed), draw if draw is not None else multinomial
    scores, raw_logits = step_records(return_dict_in_generate, output_scores, output_logits)
    unfinished = np.ones(input_ids.shape[0], dtype=np.int64)  # (N,) 1 = still generating
    # 1) model call: the prompt once (distinct rows only), then one token per step
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while unfinished.any():  # until every row is finished (step 5)
        recorder.step(input_ids)
        # 2) processors, then warpers, on the raw logits (N, V)
        processed = logits_processor(input_ids, recorder.stage("logits", logits), recorder=recorder)
        next_scores = check_no_nan(logits_warper(input_ids, processed, recorder=recorder), input_ids.shape[1], model,
                                   logits)
        scores, raw_logits = collect(scores, next_scores), collect(raw_logits, logits)
        # 3) selection: one draw per row from softmax of the warped scores (NumPy's, as every draw: docs/sampling.md)
        next_tokens = checked_draw(draw, softmax(next_scores), 1, False, rng)[:, 0]  # (N, 1) -> (N,)
        # 4) bookkeeping: finished rows get pad, append (N, T) -> (N, T+1), stream; 5) stopping: a row is finished
        #    once it emitted eos or a criterion stops it (the batch, or per row)
        input_ids, unfinished = append_and_stop(input_ids, next_tokens, unfinished, eos, pad_token_id, criteria,
                                                scores, streamer, recorder)
        if unfinished.any():  # 1) model call for the next step: the newest token of each row, cached
            logits, attention_mask = decode_step(model, input_ids[:, -1], attention_mask, cache)
    return decoder_output(input_ids, scores, raw_logits, cache, return_dict_in_generate, streamer, criteria, recorder)
