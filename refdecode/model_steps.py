r"""The model side of every decode loop: prefill the prompt once, then one token per step.

Contract: turns token ids into next-token logits through the KV cache; knows nothing about
scores, processors or beams. Used by greedy.py, sampling.py, beam_search.py and
group_beam_search.py, which is what lets their loop bodies stay about the search.

- :func:`prefill` runs the prompt through the model **once per distinct prompt**: ``generate``
  repeats every prompt K times for beams (or R times for return sequences), so consecutive rows
  are identical; the cache is computed on one row of each run and ``expand``-ed (row b ->
  rows b*r .. b*r+r-1, like ``repeat_interleave``). If the rows are not in identical runs (a
  caller built them by hand), every row is prefilled.
- :func:`decode_step` feeds the N chosen tokens, appends a column of ones to the attention mask
  (transformers' ``_update_model_kwargs_for_generation``) and returns the new logits. Position
  ids come from the mask inside the model (``cumsum - 1``, pads at 1), as GPT-2's
  ``prepare_inputs_for_generation`` computes them.

transformers takes ``logits[:, -1, :]`` without an upcast; so do we (float32).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["prefill", "decode_step", "repeat_run_length", "model_capacity", "check_logits"]


def check_logits(model: Any, logits: np.ndarray, where: str) -> np.ndarray:
    """Refuse NaN logits from the model, naming the model's fault (not the processors', which run later).

    NaN logits come from the weights (a NaN/inf in the checkpoint propagates through every layer) or from
    the model code; when the model has a ``params`` dict (:class:`refdecode.gpt2.GPT2`), the message
    names the tensors that hold non-finite values. Cost: one ``isnan`` pass over (N, V) per step.
    """
    if np.isnan(logits).any():
        rows = np.flatnonzero(np.isnan(logits).any(axis=-1))
        bad = _nonfinite_params(getattr(model, "params", None))
        cause = (f"the checkpoint holds non-finite weights: {', '.join(bad[:5])}" if bad else
                 "check the checkpoint's weights and the model (the processors have not run yet)")
        raise ValueError(f"the model's logits contain NaN ({where}, rows {rows[:10].tolist()}): {cause}")
    return logits


def _nonfinite_params(params: Any, prefix: str = "") -> list[str]:
    """Names (``h.0.attn.c_attn.weight``) of the arrays in a nested params dict/list that hold NaN or inf."""
    if isinstance(params, np.ndarray):
        n = int(params.size - np.count_nonzero(np.isfinite(params)))
        return [f"{prefix.rstrip('.')} ({n} non-finite of {params.size})"] if n else []
    items = params.items() if isinstance(params, dict) else enumerate(params) if isinstance(params, list) else ()
    return [name for key, value in items for name in _nonfinite_params(value, f"{prefix}{key}.")]


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
    logits = np.repeat(check_logits(model, out.logits[:, -1, :], "prompt"), r, axis=0)  # (N/r, V) -> (N, V)
    cache = out.past_key_values if r == 1 else out.past_key_values.expand(r)
    return logits, cache


def decode_step(model: Any, next_tokens: np.ndarray, attention_mask: np.ndarray | None,
                cache: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Tokens (N,) int64 -> logits float32 (N, V); mask (N, S) -> (N, S+1); the cache grows in place."""
    if attention_mask is not None:
        ones = np.ones((attention_mask.shape[0], 1), dtype=attention_mask.dtype)
        attention_mask = np.concatenate([attention_mask, ones], axis=1)  # (N, S) -> (N, S+1)
    out = model(next_tokens[:, None], attention_mask=attention_mask, past_key_values=cache, logits_to_keep=1)
    return check_logits(model, out.logits[:, -1, :], "a decoding step"), attention_mask
