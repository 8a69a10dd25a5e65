r"""Classifier-free guidance: mix the model's scores with those of an unconditional (or negative) prompt.

Contract: :func:`guidance_mix` is the mix of the two branches, a pure function of float32 (N, V) arrays;
:class:`UnbatchedClassifierFreeGuidanceLogitsProcessor` (``guidance_scale``) maps ``input_ids`` int (N, T)
and ``scores`` float32 (N, V) to NEW float32 (N, V) log-space scores. Unlike every other processor it runs a
model (any object with ``new_cache`` and transformers' call signature), so it holds state: the unconditional
branch's KV cache. It never imports the model: the model is passed in.

Docs: docs/guidance.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..numerics import log_softmax
from ..validation import is_number
from .arguments import check_scores
from .logits_process import LogitsProcessor
from .prompt_penalties import check_prompt

__all__ = ["guidance_mix", "UnbatchedClassifierFreeGuidanceLogitsProcessor"]


def guidance_mix(scores: np.ndarray, unconditional_logits: np.ndarray, guidance_scale: float) -> np.ndarray:
    r"""Classifier-free guidance's mix of the two branches; float32 (N, V) each -> float32 (N, V) log-space scores.

    .. math:: s' = \gamma\,(\log\mathrm{softmax}(s) - u) + u,\qquad u = \log\mathrm{softmax}(\ell_u)

    with :math:`\ell_u` the unconditional branch's last logits; :math:`\gamma = 1` gives
    :math:`\log\mathrm{softmax}(s)` (transformers 4.38.2 returns before running the branch).

    >>> s = np.log(np.array([[0.5, 0.5]], dtype=np.float32))
    >>> u = np.log(np.array([[0.8, 0.2]], dtype=np.float32))
    >>> np.exp(guidance_mix(s, u, 2.0)).round(4)          # 0.5^2 / 0.8 and 0.5^2 / 0.2: pushed away from u
    array([[0.3125, 1.25  ]], dtype=float32)
    """
    scores = log_softmax(scores)
    if guidance_scale == 1:
        return scores
    unconditional = log_softmax(unconditional_logits)
    return float(guidance_scale) * (scores - unconditional) + unconditional  # a Python float keeps float32


class UnbatchedClassifierFreeGuidanceLogitsProcessor(LogitsProcessor):
    r"""Classifier-free guidance for a decoder-only model (Sanchez et al., arXiv:2306.17806).

    .. math:: s' = \gamma\,(\log\mathrm{softmax}(s) - u) + u,\qquad
              u = \log\mathrm{softmax}(\text{model}(\text{negative prompt} + \text{generated})_{-1})

    :math:`\gamma` = ``guidance_scale``: 1 gives the plain log-probabilities, > 1 pushes away from
    the unconditional (or negative-prompt) continuation, < 1 toward it. Without
    ``unconditional_ids`` the unconditional branch starts from the last prompt token of each row.
    Each call feeds the row's newest token to the branch, whose KV cache this object holds (it
    is never reordered when beams are: transformers 4.38.2 does the same). The branch's position
    ids are ``arange(S, S + T)`` whatever the mask (transformers calls the model's ``forward``
    without position ids), so a left-padded negative prompt is not shifted. The output is
    float32 log-space scores, not raw logits.

    transformers 4.38.2 ``UnbatchedClassifierFreeGuidanceLogitsProcessor``. ``scores`` may have more axes
    than (N, V), as there: the mix broadcasts the (N, V) unconditional row over them.

    Args:
        guidance_scale: float.
        model: a refdecode GPT2 (it has ``new_cache``: the branch runs through refdecode's KV cache, which
            gives the scores of recomputing it, so ``use_cache`` changes nothing), or any callable that
            transformers' processor accepts: called as transformers calls it,
            ``model(ids, attention_mask=, use_cache=, past_key_values=)`` returning ``.logits`` (N, T, V)
            (and ``.past_key_values``, handed back next call; without a cache it sees the whole branch).
        unconditional_ids: int (N, T_u) negative prompt, one row per generated row, or None.
        unconditional_attention_mask: 0/1 (N, T_u) or None (all ones).
    """

    def __init__(self, guidance_scale: float, model: Any, unconditional_ids: np.ndarray | None = None,
                 unconditional_attention_mask: np.ndarray | None = None, use_cache: bool = True):
        if not is_number(guidance_scale) or not np.isfinite(guidance_scale):
            raise ValueError(f"`guidance_scale` has to be a finite float, but is {guidance_scale!r}")
        if unconditional_ids is not None:
            unconditional_ids = check_prompt(unconditional_ids)
            if unconditional_attention_mask is not None and \
                    np.shape(unconditional_attention_mask) != unconditional_ids.shape:
                raise ValueError(f"`negative_prompt_attention_mask` has to have the shape of `negative_prompt_ids` "
                                 f"{unconditional_ids.shape}, but has {np.shape(unconditional_attention_mask)}")
        self.guidance_scale = float(guidance_scale)  # a Python float keeps the float32 arithmetic
        self.model = model
        self.use_cache = use_cache
        self.unconditional_ids = unconditional_ids
        self.unconditional_attention_mask = unconditional_attention_mask
        self.started = False
        self.cache: Any = None  # a refdecode model's KVCache for the branch, made on the first call
        self.past: Any = None   # another model's past_key_values, as it returned them

    def unconditional_logits(self, input_ids: np.ndarray) -> np.ndarray:
        """Run the branch one step: the first call its whole prompt, then the row's newest token -> (N, V)."""
        if not self.started:
            ids = input_ids[:, -1:] if self.unconditional_ids is None else self.unconditional_ids  # (N, T_u)
            mask = self.unconditional_attention_mask
            mask = np.ones_like(ids) if mask is None else np.asarray(mask).astype(np.int64)
            if ids.shape[0] != input_ids.shape[0]:
                raise ValueError(f"`negative_prompt_ids` has to have one row per generated row ({input_ids.shape[0]}: "
                                 f"batch x beams or return sequences), but has {ids.shape[0]}")
            self.started = True
            if hasattr(self.model, "new_cache"):
                self.cache = self.model.new_cache(ids.shape[0], int(self.model.config.n_positions))
        else:
            ids = input_ids[:, -1:]  # (N, 1)
            mask = np.concatenate([self.unconditional_attention_mask, np.ones_like(ids)], axis=1)
            if self.cache is None and not self.use_cache:  # a model without a cache reads the whole branch
                ids = np.concatenate([self.unconditional_ids, ids], axis=1)
        self.unconditional_ids, self.unconditional_attention_mask = ids, mask
        if self.cache is None:  # any callable, called as transformers 4.38.2 calls it
            out = self.model(ids, attention_mask=mask, use_cache=self.use_cache, past_key_values=self.past)
            self.past = getattr(out, "past_key_values", None)
            return np.asarray(out.logits)[:, -1, :]
        past = self.cache.length
        positions = np.broadcast_to(np.arange(past, past + ids.shape[1], dtype=np.int64), ids.shape)
        out = self.model(ids, attention_mask=mask, position_ids=positions, past_key_values=self.cache,
                         logits_to_keep=1)
        return out.logits[:, -1, :]

    def __call__(self, input_ids, scores, **kwargs):
        if not isinstance(scores, np.ndarray) or scores.dtype != np.float32 or scores.ndim < 2:
            check_scores(scores)  # its message: float32 (batch, vocab)
        if self.guidance_scale == 1:  # off: no second forward pass
            return log_softmax(scores)
        return guidance_mix(scores, self.unconditional_logits(input_ids), self.guidance_scale)
