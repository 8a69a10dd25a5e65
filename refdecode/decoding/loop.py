r"""What every decode loop shares: the model calls, the argument defaults, the NaN check and the per-row
bookkeeping of the loops that add one token per row per step.

Contract: the loops (``greedy.py``, ``sampling.py``, ``contrastive_search.py``, ``assisted_decoding.py``, the
beam loops in ``beam/``, and any loop added later) import this module and never each other, so each loop
file holds only what makes its algorithm different: which scores it computes and how it selects. This
module knows nothing about which algorithm runs, and nothing about beams (their bookkeeping is
:mod:`refdecode.decoding.beam.bookkeeping`, which only the beam loops import); it turns token ids into
next-token logits through the KV cache and does the row bookkeeping around the selection.

The model side (transformers takes ``logits[:, -1, :]`` without an upcast; so do we, float32):

- :func:`prefill` runs the prompt through the model **once per distinct prompt**: ``generate``
  repeats every prompt K times for beams (or R times for return sequences), so consecutive rows
  are identical; the cache is computed on one row of each run and ``expand``-ed (row b ->
  rows b*r .. b*r+r-1, like ``repeat_interleave``). If the rows are not in identical runs (a
  caller built them by hand), every row is prefilled.
- :func:`decode_step` feeds the N chosen tokens, appends a column of ones to the attention mask
  (transformers' ``_update_model_kwargs_for_generation``) and returns the new logits. Position
  ids come from the mask inside the model (``cumsum - 1``, pads at 1), as GPT-2's
  ``prepare_inputs_for_generation`` computes them.

Docs: docs/index.md (the model side), docs/greedy.md (the bookkeeping).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..generation_config import model_generation_config
from ..generation_output import GenerateDecoderOnlyOutput
from ..generation_rules import eos_list
from ..processors.logits_process import LogitsProcessorList
from ..recorder import NO_TRACE, Recorder
from ..validation import warn
from .stopping_criteria import (
    MaxLengthCriteria,
    StoppingCriteriaList,
    pad_finished_rows,
    stop_rows,
    update_unfinished,
    validate_stopping_criteria,
)

__all__ = ["prefill", "decode_step", "repeat_run_length", "model_capacity", "loop_defaults", "check_pad_token",
           "check_no_nan", "collect", "step_records", "append_tokens", "append_and_stop", "stream", "end_stream",
           "decoder_output"]


# ----------------------------------------------------------------------------------------------------
# The model side: the prompt once, then one token per step through the cache
# ----------------------------------------------------------------------------------------------------


def repeat_run_length(input_ids: np.ndarray, attention_mask: np.ndarray | None) -> int:
    """(N, T) rows -> the largest r such that the rows come in N/r runs of r identical rows.

    >>> repeat_run_length(np.array([[1, 2], [1, 2], [3, 4], [3, 4]]), None)
    2
    >>> repeat_run_length(np.array([[1, 2], [1, 2], [3, 4]]), None)
    1
    """
    rows = input_ids if attention_mask is None else np.concatenate([input_ids, attention_mask], axis=1)  # (N, 2T)
    n = rows.shape[0]
    for r in range(n, 1, -1):
        if n % r == 0 and np.array_equal(rows.reshape(n // r, r, -1), np.repeat(rows[::r, None], r, axis=1)):
            return r
    return 1


def model_capacity(model: Any, max_length: int | None) -> int:
    """Cache capacity S_max: the loop's ``max_length`` if known, else the model's ``n_positions``."""
    n_positions = int(model.config.n_positions)
    return n_positions if max_length is None else min(int(max_length), n_positions)


def prefill(model: Any, input_ids: np.ndarray, attention_mask: np.ndarray | None,
            capacity: int) -> tuple[np.ndarray, Any]:
    """Prompt (N, T) -> last-position logits float32 (N, V) and a KV cache holding T tokens per row.

    Distinct prompts only: with runs of r identical rows, the model sees (N/r, T) and the cache
    is expanded to N rows.
    """
    r = repeat_run_length(input_ids, attention_mask)
    ids = input_ids[::r]                                            # (N/r, T)
    mask = None if attention_mask is None else attention_mask[::r]  # (N/r, T)
    cache = model.new_cache(ids.shape[0], capacity)
    out = model(ids, attention_mask=mask, past_key_values=cache, logits_to_keep=1)
    logits = np.repeat(out.logits[:, -1, :], r, axis=0)  # (N/r, V) -> (N, V)
    cache = out.past_key_values if r == 1 else out.past_key_values.expand(r)
    return logits, cache


def decode_step(model: Any, next_tokens: np.ndarray, attention_mask: np.ndarray | None,
                cache: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Tokens (N,) int64 -> logits float32 (N, V); mask (N, S) -> (N, S+1); the cache grows in place."""
    if attention_mask is not None:
        ones = np.ones((attention_mask.shape[0], 1), dtype=attention_mask.dtype)
        attention_mask = np.concatenate([attention_mask, ones], axis=1)  # (N, S) -> (N, S+1)
    out = model(next_tokens[:, None], attention_mask=attention_mask, past_key_values=cache, logits_to_keep=1)
    return out.logits[:, -1, :], attention_mask


# ----------------------------------------------------------------------------------------------------
# Arguments every loop takes
# ----------------------------------------------------------------------------------------------------


def loop_defaults(model: Any, logits_processor: Any, stopping_criteria: Any, max_length: int | None,
                  pad_token_id: int | None, eos_token_id: int | list[int] | None,
                  ) -> tuple[Any, StoppingCriteriaList, int | None, list[int] | None]:
    """Fill in what a loop was not given, as transformers' loops do.

    - processors: an empty list (a plain list is wrapped in LogitsProcessorList); stopping criteria:
      an empty list, plus MaxLengthCriteria for the deprecated ``max_length`` argument;
    - ``pad_token_id`` / ``eos_token_id``: from the model's generation config when not given (a loop called by
      hand; ``generate`` gives both, from the config it merged); eos becomes a list.

    Deviation: with no length criterion at all, transformers loops until every row emits eos
    (and crashes past ``n_positions``); refdecode stops at ``n_positions`` with a warning.
    """
    logits_processor = LogitsProcessorList(logits_processor if logits_processor is not None else [])
    criteria = StoppingCriteriaList(stopping_criteria if stopping_criteria is not None else [])
    if max_length is not None:
        criteria = validate_stopping_criteria(criteria, max_length)
    if criteria.max_length is None:
        warn("no max_length stopping criterion: stopping at the model's n_positions")
        criteria.append(MaxLengthCriteria(max_length=int(model.config.n_positions)))
    if pad_token_id is None or eos_token_id is None:  # transformers' loops: `x if x is not None else config's x`
        defaults = model_generation_config(model)
        pad_token_id = pad_token_id if pad_token_id is not None else defaults.pad_token_id
        eos_token_id = eos_token_id if eos_token_id is not None else defaults.eos_token_id
    return logits_processor, criteria, pad_token_id, eos_list(eos_token_id, no_token=True)


def check_pad_token(eos: list[int] | None, pad_token_id: int | None) -> None:
    """Greedy and sample pad finished rows, so an eos id needs a pad id (transformers' message)."""
    if eos is not None and pad_token_id is None:
        raise ValueError("If `eos_token_id` is defined, make sure that `pad_token_id` is defined.")


def check_no_nan(scores: np.ndarray, step: int, model: Any = None, logits: np.ndarray | None = None) -> np.ndarray:
    """``scores``, unless they hold NaN: argmax/top-k/sampling would pick an arbitrary token (torch keeps going).

    One ``isnan`` pass over the processed scores (N, V) per step. Only when it finds NaN does it look at the
    step's raw ``logits``: NaN there is the model's fault, not the processors' (a NaN/inf in the checkpoint
    propagates through every layer), and the message names the weights the model reports as non-finite
    (``GPT2.nonfinite_weights``, which scans the checkpoint only then). NaN logits that a processor cleans
    (``remove_invalid_values=True``) pass, as in transformers.
    """
    if np.isnan(scores).any():
        rows = np.flatnonzero(np.isnan(scores).any(axis=-1))[:10].tolist()
        if logits is not None and np.isnan(logits).any():
            bad = model.nonfinite_weights() if hasattr(model, "nonfinite_weights") else []
            cause = (f"the checkpoint holds non-finite weights: {', '.join(bad[:5])}" if bad else
                     "check the checkpoint's weights and the model")
            raise ValueError(f"the model's logits contain NaN (generation step {step}, rows {rows}): {cause}")
        raise ValueError(f"`scores` contain NaN at generation step {step} (rows {rows}): check the processors/warpers")
    return scores


# ----------------------------------------------------------------------------------------------------
# What the loops record per step
# ----------------------------------------------------------------------------------------------------


def step_records(return_dict_in_generate: bool, output_scores: bool,
                 output_logits: bool) -> tuple[tuple | None, tuple | None]:
    """The empty (scores, raw logits) records a loop fills step by step: ``()`` when asked for, else None."""
    scores = () if (return_dict_in_generate and output_scores) else None
    raw_logits = () if (return_dict_in_generate and output_logits) else None
    return scores, raw_logits


def collect(record: tuple | None, item: np.ndarray) -> tuple | None:
    """``record + (item,)``, or None when the loop was not asked to record (``record`` is None)."""
    return None if record is None else record + (item,)


# ----------------------------------------------------------------------------------------------------
# Greedy and sample: one token per row per step
# ----------------------------------------------------------------------------------------------------


def append_tokens(input_ids: np.ndarray, next_tokens: np.ndarray, unfinished: np.ndarray, eos: list[int] | None,
                  pad_token_id: int | None, streamer: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Finished rows get pad, the tokens are appended (and streamed), rows that emitted eos are marked finished.

    input_ids (N, T) -> (N, T+1); next_tokens (N,); unfinished (N,) 1/0 -> (N,) 1/0 after this step.
    ``streamer`` (:mod:`refdecode.text.streamers`), if given, receives the (N,) tokens appended.

    >>> ids, unfinished = append_tokens(np.array([[5], [6]]), np.array([7, 8]), np.array([1, 0]), [7], 0)
    >>> ids.tolist(), unfinished.tolist()      # row 1 was finished: it gets pad 0; row 0 just emitted eos 7
    ([[5, 7], [6, 0]], [0, 0])
    """
    if eos is not None:
        next_tokens = pad_finished_rows(next_tokens, unfinished, pad_token_id)
        unfinished = update_unfinished(unfinished, next_tokens, eos)
    stream(streamer, next_tokens)
    return np.concatenate([input_ids, next_tokens[:, None]], axis=1), unfinished  # (N, T) -> (N, T+1)


def stream(streamer: Any, tokens: np.ndarray) -> None:
    """Hand the step's (N,) tokens to ``streamer`` (:mod:`refdecode.text.streamers`), if there is one."""
    if streamer is not None:
        streamer.put(tokens)


def end_stream(streamer: Any) -> None:
    """Tell ``streamer`` that generation has ended, if there is one."""
    if streamer is not None:
        streamer.end()


def append_and_stop(input_ids: np.ndarray, next_tokens: np.ndarray, unfinished: np.ndarray, eos: list[int] | None,
                    pad_token_id: int | None, criteria: Any, scores: tuple | None, streamer: Any = None,
                    recorder: Recorder = NO_TRACE) -> tuple[np.ndarray, np.ndarray]:
    """Steps 4 and 5 of greedy / sample: :func:`append_tokens`, then a row is also finished once a stopping
    criterion stops it (for the batch, or per row as in 4.39); the recorder sees the tokens and the rows left.

    input_ids (N, T) -> (N, T+1); next_tokens (N,); unfinished (N,) 1/0 -> (N,) 1/0.
    """
    input_ids, unfinished = append_tokens(input_ids, next_tokens, unfinished, eos, pad_token_id, streamer)
    unfinished = stop_rows(criteria(input_ids, scores), unfinished)
    recorder.selected(input_ids[:, -1], unfinished)
    return input_ids, unfinished


def decoder_output(input_ids: np.ndarray, scores: tuple | None, raw_logits: tuple | None, cache: Any,
                   return_dict_in_generate: bool, streamer: Any = None, criteria: Any = None,
                   recorder: Recorder = NO_TRACE) -> np.ndarray | GenerateDecoderOnlyOutput:
    """The end of greedy/sample: the trace notes what stopped the loop and its result, the stream ends; the
    sequences, or with ``return_dict_in_generate`` the output object."""
    recorder.stopped(criteria, input_ids)
    recorder.final(input_ids)
    end_stream(streamer)
    if return_dict_in_generate:
        return GenerateDecoderOnlyOutput(sequences=input_ids, scores=scores, logits=raw_logits, past_key_values=cache)
    return input_ids
