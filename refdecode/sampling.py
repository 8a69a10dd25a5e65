r"""Multinomial sampling: draw each token from the processed and warped distribution (document 000, section 4).

Contract: ``sample(model, input_ids, ...)`` -> int64 (N, T_out) (or the output object), as
transformers 4.38.2 ``GenerationMixin.sample`` with the model first. Processors, then warpers,
act on the **raw logits**; ``scores`` records the warped scores (``-inf`` where filtered).

.. math:: y_t \sim \mathrm{softmax}\big(\mathrm{warpers}(\mathrm{processors}(y_{<t}, \mathrm{logits}_t))\big)

The draw goes through ``draw`` (default :func:`refdecode.sampling_draw.multinomial_sparse`, which draws
the same indices as :func:`~refdecode.sampling_draw.multinomial` from the non-zero entries only) with the
``np.random.Generator`` ``rng`` (or ``np.random.default_rng(seed)``): same seed, same tokens.
Finished rows get ``pad_token_id``, as in greedy search. ``top_k=1`` gives greedy search's tokens.
Docs: docs/sampling.md; the warpers: docs/temperature.md, docs/top-k.md, docs/top-p.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import sampling_draw
from .generation_output import GenerateDecoderOnlyOutput
from .greedy import check_no_nan, loop_defaults
from .logits_process import LogitsProcessorList
from .model_steps import decode_step, model_capacity, prefill
from .numerics import softmax
from .seed import default_generator
from .stopping_criteria import pad_finished_rows, stop_rows, update_unfinished
from .validation import check_integer

__all__ = ["sample", "make_rng"]


def make_rng(rng: np.random.Generator | None = None, seed: int | None = None) -> np.random.Generator:
    """The generator to draw from: ``rng`` if given, else ``np.random.default_rng(seed)``; with neither, the
    default generator of :func:`refdecode.seed.set_seed` (fresh entropy if it was never called)."""
    if rng is not None and seed is not None:
        raise ValueError("pass either `rng` or `seed`, not both")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` has to be a numpy.random.Generator, but is {type(rng).__name__}")
    if rng is not None:
        return rng
    if seed is not None:
        return np.random.default_rng(check_integer("seed", seed, minimum=0))
    return default_generator()  # set_seed's, else fresh


def sample(model: Any, input_ids: np.ndarray, logits_processor: Any = None, stopping_criteria: Any = None,
           logits_warper: Any = None, max_length: int | None = None, pad_token_id: int | None = None,
           eos_token_id: int | list[int] | None = None, output_scores: bool = False, output_logits: bool = False,
           return_dict_in_generate: bool = False, attention_mask: np.ndarray | None = None,
           rng: np.random.Generator | None = None, seed: int | None = None,
           draw: Callable[..., np.ndarray] | None = None, streamer: Any = None,
           ) -> np.ndarray | GenerateDecoderOnlyOutput:
    """Sample one token per step for each of the N rows of ``input_ids`` (int64 (N, T)).

    ``streamer`` (see :mod:`refdecode.streamers`) receives each step's (N,) tokens, then ``end()``.
    ``draw(probs (N, V), num_samples, replacement, rng) -> (N, num_samples)`` replaces the draw
    (tests replay transformers' tokens through it).

    >>> from refdecode.testing import TableModel
    >>> from refdecode.logits_warp import TopKLogitsWarper
    >>> model = TableModel(np.array([[0., 3., 1.], [1., 0., 3.], [3., 1., 0.]], dtype=np.float32))
    >>> sample(model, np.array([[0]]), logits_warper=[TopKLogitsWarper(1)], max_length=5, seed=0)  # top-1 = greedy
    array([[0, 1, 2, 0, 1]])
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    logits_warper = LogitsProcessorList(logits_warper if logits_warper is not None else [])
    if eos is not None and pad_token_id is None:
        raise ValueError("If `eos_token_id` is defined, make sure that `pad_token_id` is defined.")
    rng, draw = make_rng(rng, seed), draw if draw is not None else sampling_draw.multinomial_sparse
    scores = () if (return_dict_in_generate and output_scores) else None
    raw_logits = () if (return_dict_in_generate and output_logits) else None
    unfinished = np.ones(input_ids.shape[0], dtype=np.int64)  # (N,)
    # 1) model call: the prompt once (distinct rows only), then one token per step
    logits, cache = prefill(model, input_ids, attention_mask, model_capacity(model, criteria.max_length))
    while True:
        # 2) processors, then warpers, on the raw logits (N, V)
        next_scores = logits_warper(input_ids, logits_processor(input_ids, logits))
        check_no_nan(next_scores, input_ids.shape[1])
        scores = scores + (next_scores,) if scores is not None else None
        raw_logits = raw_logits + (logits,) if raw_logits is not None else None
        # 3) selection: one draw per row from softmax of the warped scores
        next_tokens = sampling_draw.checked_draw(draw, softmax(next_scores), 1, False, rng)[:, 0]  # (N, 1) -> (N,)
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
