r"""Contrastive search: the most probable of the top-k tokens, penalised by how much it repeats the context.

Contract: ``contrastive_search(model, input_ids, top_k=, penalty_alpha=, ...)`` -> int64 (N, T_out) or the
output object, as transformers 4.38.2 ``GenerationMixin.contrastive_search`` with the model first.
``generate(..., penalty_alpha=a, top_k=k)`` with ``a > 0``, ``k > 1`` (and no sampling, one beam) runs it.
The model must return hidden states (:class:`refdecode.model.modeling.GPT2` with the plain forward pass).

Su et al. 2022, "A Contrastive Framework for Neural Text Generation" (arXiv:2202.06417). At every step,
with :math:`V^{(k)}` the k most probable next tokens (after the processors) and :math:`h_j` the last
hidden state (after ``ln_f``) of every context position j, prompt and padding included:

.. math:: x_t = \arg\max_{v \in V^{(k)}} \Big\{ (1 - \alpha)\, p(v \mid x_{<t})
          - \alpha \max_{j < t} \cos\big(h_v, h_j\big) \Big\}

The first term is the model's confidence, the second the **degeneration penalty**: a candidate whose
hidden state is close to one already in the context would repeat it. Computing :math:`h_v` takes a
forward pass of every candidate: the loop runs the k candidates of every row as one batch of N*k rows
(the cache holds k copies of every row), keeps the chosen candidate's hidden state, logits and cache,
and copies that cache to the k rows of the next step. With :math:`\alpha = 0` it is greedy search.

Ties (torch leaves them unspecified): the k candidates are ranked by probability, equal probabilities
by lower token id; equal contrastive scores pick the first (most probable) candidate.

Docs: docs/contrastive-search.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..generation_output import GenerateDecoderOnlyOutput
from ..numerics import softmax
from ..recorder import NO_TRACE, Recorder
from .loop import append_and_stop, check_no_nan, check_pad_token, collect, end_stream, loop_defaults, model_capacity, step_records

__all__ = ["contrastive_search", "degeneration_penalty", "contrastive_scores", "rank_candidates"]


def degeneration_penalty(context: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    r"""Max cosine similarity of each candidate's hidden state with the context's, float32.

    context (N, S, E), candidates (N, k, E) -> (N, k): :math:`\max_j \cos(h_{n,c}, h_{n,j})`.

    >>> ctx = np.array([[[1.0, 0.0], [0.0, 2.0]]], dtype=np.float32)          # two context states
    >>> degeneration_penalty(ctx, np.array([[[3.0, 0.0], [1.0, 1.0]]], dtype=np.float32)).round(4)
    array([[1.    , 0.7071]], dtype=float32)
    """
    norm_context = context / np.linalg.norm(context, axis=-1, keepdims=True)           # (N, S, E)
    norm_candidates = candidates / np.linalg.norm(candidates, axis=-1, keepdims=True)  # (N, k, E)
    cosine = norm_candidates @ norm_context.transpose(0, 2, 1)                        # (N, k, S)
    return cosine.max(axis=-1)                                                         # (N, k)


def contrastive_scores(context: np.ndarray, candidates: np.ndarray, probs: np.ndarray,
                       penalty_alpha: float) -> np.ndarray:
    r"""Each candidate's contrastive score, float32 (N, k): :math:`(1 - \alpha)\, p - \alpha \cdot \text{penalty}`.

    context (N, S, E); candidates (N, k, E); probs (N, k) (descending).

    >>> ctx = np.array([[[1.0, 0.0]]], dtype=np.float32)
    >>> cands = np.array([[[1.0, 0.0], [0.0, 1.0]]], dtype=np.float32)     # a repeat and a new direction
    >>> contrastive_scores(ctx, cands, np.array([[0.6, 0.4]], dtype=np.float32), 0.5).round(4)   # 0.3 - 0.5, 0.2 - 0
    array([[-0.2,  0.2]], dtype=float32)
    """
    return (1.0 - penalty_alpha) * probs - penalty_alpha * degeneration_penalty(context, candidates)  # (N, k)


def rank_candidates(context: np.ndarray, candidates: np.ndarray, probs: np.ndarray, penalty_alpha: float
                    ) -> np.ndarray:
    r"""transformers' ``_ranking_fast``: the index (N,) of each row's best candidate by
    :func:`contrastive_scores`; the first among equal scores.

    >>> ctx = np.array([[[1.0, 0.0]]], dtype=np.float32)
    >>> cands = np.array([[[1.0, 0.0], [0.0, 1.0]]], dtype=np.float32)     # a repeat and a new direction
    >>> probs = np.array([[0.6, 0.4]], dtype=np.float32)
    >>> rank_candidates(ctx, cands, probs, 0.0), rank_candidates(ctx, cands, probs, 0.5)
    (array([0]), array([1]))
    """
    return np.argmax(contrastive_scores(context, candidates, probs, penalty_alpha), axis=-1)


def contrastive_search(model: Any, input_ids: np.ndarray, top_k: int = 1, penalty_alpha: float = 0.0,
                       logits_processor: Any = None, stopping_criteria: Any = None, max_length: int | None = None,
                       pad_token_id: int | None = None, eos_token_id: int | list[int] | None = None,
                       output_scores: bool = False, output_logits: bool = False, output_hidden_states: bool = False,
                       output_attentions: bool = False, return_dict_in_generate: bool = False,
                       attention_mask: np.ndarray | None = None, streamer: Any = None,
                       recorder: Recorder = NO_TRACE) -> np.ndarray | GenerateDecoderOnlyOutput:
    """Contrastive search over the N rows of ``input_ids`` int64 (N, T); see the module docstring.

    ``scores`` records the processed logits of every step; ``hidden_states`` / ``attentions`` (with
    ``return_dict_in_generate``) those of the prompt, then the chosen candidate's at every step.
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    check_pad_token(eos, pad_token_id)
    scores, raw_logits = step_records(return_dict_in_generate, output_scores, output_logits)
    hidden, attentions = step_records(return_dict_in_generate, output_hidden_states, output_attentions)
    rows, k = input_ids.shape[0], top_k
    unfinished = np.ones(rows, dtype=np.int64)  # (N,) 1 = still generating
    # 1) the prompt, with every position's last hidden state: the context candidates are compared with
    cache = model.new_cache(rows, model_capacity(model, criteria.max_length))
    step = model(input_ids, attention_mask=attention_mask, past_key_values=cache, output_hidden_states=True,
                 output_attentions=output_attentions)
    context = step.hidden_states[-1]                                          # (N, T, E)
    logits = step.logits[:, -1, :]                                            # (N, V)
    cache = cache.expand(k)                                                   # (N*k rows): one per candidate
    mask = None if attention_mask is None else np.repeat(attention_mask, k, axis=0)  # (N*k, T)
    while unfinished.any():
        recorder.step(input_ids)
        # 2) processors on the logits; the candidates are the k most probable tokens
        next_scores = check_no_nan(logits_processor(input_ids, recorder.stage("logits", logits), recorder=recorder),
                                   input_ids.shape[1], model, logits)
        scores, raw_logits = collect(scores, next_scores), collect(raw_logits, logits)
        hidden, attentions = collect(hidden, step.hidden_states), collect(attentions, step.attentions)
        probs = softmax(next_scores)                                          # (N, V)
        top_ids = np.argsort(-probs, axis=-1, kind="stable")[:, :k]           # (N, k) most probable first
        # 3) every candidate through the model at once, for its hidden state
        mask = None if mask is None else np.concatenate([mask, np.ones((rows * k, 1), mask.dtype)], axis=1)
        step = model(top_ids.reshape(-1, 1), attention_mask=mask, past_key_values=cache, output_hidden_states=True,
                     output_attentions=output_attentions)
        candidates = step.hidden_states[-1].reshape(rows, k, -1)              # (N*k, 1, E) -> (N, k, E)
        # 4) selection: confidence minus the degeneration penalty; keep the chosen candidate's state
        ranking = contrastive_scores(context, candidates, np.take_along_axis(probs, top_ids, axis=-1), penalty_alpha)
        recorder.ranked(top_ids, ranking)
        selected = np.argmax(ranking, axis=-1)                                # (N,) the first among equal scores
        chosen = np.arange(rows) * k + selected                               # (N,) rows of the candidate batch
        context = np.concatenate([context, candidates[np.arange(rows), selected][:, None]], axis=1)  # (N, T+1, E)
        logits = step.logits[chosen, -1, :]                                   # (N, V)
        step = _chosen(step, chosen)
        cache.reorder(np.repeat(chosen, k))                                   # every copy continues the chosen one
        # 5) bookkeeping and stopping, as greedy search
        input_ids, unfinished = append_and_stop(input_ids, top_ids[np.arange(rows), selected], unfinished, eos,
                                                pad_token_id, criteria, scores, streamer, recorder)
    recorder.stopped(criteria, input_ids)
    recorder.final(input_ids)
    end_stream(streamer)
    if not return_dict_in_generate:
        return input_ids
    return GenerateDecoderOnlyOutput(sequences=input_ids, scores=scores, logits=raw_logits, attentions=attentions,
                                     hidden_states=hidden, past_key_values=cache)


def _chosen(step: Any, chosen: np.ndarray) -> Any:
    """The candidate step's outputs, keeping only the chosen rows (what transformers records next step)."""
    def pick(arrays: tuple | None) -> tuple | None:
        return None if arrays is None else tuple(a[chosen] for a in arrays)
    return type(step)(logits=step.logits[chosen], past_key_values=step.past_key_values,
                      hidden_states=pick(step.hidden_states), attentions=pick(step.attentions))
