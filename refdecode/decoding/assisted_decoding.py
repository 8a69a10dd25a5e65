r"""Assisted decoding: check several drafted tokens in one forward pass of the model (speculative decoding).

Contract: ``assisted_decoding(model, input_ids, candidate_generator, ...)`` -> int64 (1, T_out) (or a
:class:`~refdecode.generation_output.GenerateDecoderOnlyOutput`), as transformers 4.38.2
``GenerationMixin.assisted_decoding`` with the model first; batch size 1. Each round:

1. the candidate generator (:mod:`refdecode.decoding.candidate_generator`) proposes c tokens;
2. **one** forward pass of the model over them gives c + 1 next-token distributions: after the
   sequence, after its first candidate, ..., after all c; the processors (and warpers) run on each
   position with the prefix it would have in plain decoding;
3. the tokens the model would have chosen are compared with the candidates: the longest agreeing
   prefix (n tokens) is accepted, plus the model's own token after it (:func:`count_matches`); when
   sampling with an assistant, the acceptance rule of speculative sampling (:func:`speculative_sampling`);
4. the sequence grows by n + 1 tokens and the KV cache is cropped to drop the rejected candidates.

Greedy: the model's argmax at position i only depends on the prefix, and a candidate is accepted only if
it *is* that argmax, so every accepted token is the token greedy search would have chosen, and the
model's token after the last match is too: the output is greedy search's, token for token. A round costs
one pass over the weights for up to c + 1 tokens instead of one.

transformers 4.38.2 behaviour kept here: ``scores`` gets one entry per accepted token; ``logits``
(``output_logits``) gets the raw (1, c + 1, V) logits of each **round**; only the last token of a round
is tested for eos, so a prompt-lookup round can carry the sequence past an eos that the model accepted
in the middle of the candidates (an assistant stops drafting at eos, so its rounds cannot).
Docs: docs/speculative-decoding.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..generation_output import GenerateDecoderOnlyOutput
from ..numerics import softmax
from ..processors.logits_process import LogitsProcessorList
from .candidate_generator import AssistedCandidateGenerator, extend_mask
from .loop import (check_no_nan, check_pad_token, collect, decoder_output, loop_defaults, model_capacity,
                   step_records, stream)
from .randomness import checked_draw, make_rng, multinomial, uniform

__all__ = ["assisted_decoding", "verify", "count_matches", "speculative_sampling", "_speculative_sampling"]


def verify(model: Any, candidate_ids: np.ndarray, attention_mask: np.ndarray | None, cache: Any,
           n_candidates: int) -> np.ndarray:
    """One forward pass over the tokens not yet in ``cache``; float32 (1, c + 1, V) logits of the last c + 1.

    Position i of the result is the model's next-token logits after ``candidate_ids[:, :S + i]`` (S = the
    sequence before the candidates), i = 0..c. The first round feeds the whole prompt with the candidates
    (this is the prefill); later rounds feed the last accepted token and the c candidates.
    """
    mask = extend_mask(attention_mask, candidate_ids.shape[1])  # (1, S + c)
    out = model(candidate_ids[:, cache.length :], attention_mask=mask, past_key_values=cache,
                logits_to_keep=n_candidates + 1)
    return out.logits


def count_matches(candidates: np.ndarray, selected: np.ndarray, last_is_eos: bool, max_matches: int) -> int:
    """How many leading candidates equal the model's choices; int in [0, min(c, max_matches)].

    Args:
        candidates: int64 (c,), the drafted tokens.
        selected: int64 (c + 1,), the model's token at each position (argmax, or a draw when sampling).
        last_is_eos: the last candidate is an eos token: if every candidate matched, count one fewer, so the
            round ends on that eos (the model's token after it would go past the end).
        max_matches: max_length - S - 1: the round may add at most n + 1 tokens before max_length.

    >>> count_matches(np.array([4, 7, 2]), np.array([4, 7, 9, 1]), False, 10)   # 2 agree, then 2 != 9
    2
    >>> count_matches(np.array([4, 7]), np.array([4, 7, 5]), True, 10)          # all agree, but 7 is eos
    1
    """
    c = candidates.shape[0]
    mismatches = np.flatnonzero(candidates != selected[:c])
    n = int(mismatches[0]) if mismatches.size else c  # leading matches
    if last_is_eos and n == c:
        n -= 1
    return min(n, max_matches)


def speculative_sampling(candidates: np.ndarray, candidate_scores: np.ndarray, new_scores: np.ndarray,
                         last_is_eos: bool, max_matches: int, rng: np.random.Generator,
                         draw: Callable[..., np.ndarray], uniform: Callable[..., np.ndarray]) -> tuple[np.ndarray, int]:
    r"""Accept drafted tokens so that the result is distributed as sampling from the model (transformers 4.38.2).

    Leviathan et al. 2023, algorithm 1 (https://arxiv.org/abs/2211.17192): with q the assistant's and p the
    model's distribution (softmax of the warped scores), candidate :math:`x_i` is accepted when

    .. math:: r_i \le p_i(x_i) / q_i(x_i),\qquad r_i \sim U[0, 1),

    up to the first rejection. After n accepted tokens one more is drawn: from
    :math:`\max(p_{n} - q_{n}, 0)` renormalised if candidate n was rejected, from :math:`p_{n}` (the bonus
    position) if all were accepted. If the last candidate is eos and all were accepted, the round ends on it
    without a draw.

    Args:
        candidates: int64 (c,). candidate_scores: float32 (c, V), the assistant's warped scores.
        new_scores: float32 (c + 1, V), the model's warped scores. max_matches: as :func:`count_matches`.
        rng, draw, uniform: the random generator, the multinomial draw and the acceptance uniforms.

    Returns:
        the accepted tokens int64 (n + 1,) and n.
    """
    c = candidates.shape[0]
    q, p = softmax(candidate_scores), softmax(new_scores)  # (c, V), (c + 1, V); NumPy's, as every draw's
    ratio = p[np.arange(c), candidates] / q[np.arange(c), candidates]  # p_i(x_i) / q_i(x_i), (c,)
    accepted = uniform(c, rng) <= ratio
    n = int((np.cumsum(~accepted) < 1).sum())  # accepted up to the first rejection
    if last_is_eos and n == c:
        return candidates.copy(), c - 1
    n = min(n, max_matches)
    if n < min(c, max_matches):  # candidate n was rejected: draw from the residual max(p - q, 0)
        residual = np.maximum(p[n] - q[n], np.float32(0.0))
        probs = residual / residual.sum()
    else:  # every candidate accepted: the model's distribution after them
        probs = p[n]
    token = draw(probs[None, :], 1, False, rng)[:, 0].astype(np.int64)  # (1,)
    return np.concatenate([candidates[:n], token]), n


def _speculative_sampling(candidate_input_ids: np.ndarray, candidate_logits: np.ndarray, candidate_length: int,
                          new_logits: np.ndarray, last_assistant_token_is_eos: bool,
                          max_matches: int) -> tuple[np.ndarray, np.int64]:
    """transformers 4.38.2's ``_speculative_sampling``, its arguments in its order, for code and tests ported from it:
    :func:`speculative_sampling` on batch 1, the uniforms and the draw from refdecode's default generator
    (:func:`refdecode.set_seed`), as 4.38.2 draws from torch's global one.

    ``candidate_input_ids`` (1, S + c), ``candidate_logits`` (1, c, V) the assistant's, ``new_logits`` (1, c + 1, V)
    the model's, both warped. Returns the accepted tokens (1, n + 1) and n.
    """
    rng = make_rng()
    tokens, n = speculative_sampling(candidate_input_ids[0, -candidate_length:], candidate_logits[0], new_logits[0],
                                     bool(last_assistant_token_is_eos), int(max_matches), rng, multinomial, uniform)
    return tokens[None, :], np.int64(n)


def assisted_decoding(model: Any, input_ids: np.ndarray, candidate_generator: Any, do_sample: bool = False,
                      logits_processor: Any = None, logits_warper: Any = None, stopping_criteria: Any = None,
                      max_length: int | None = None, pad_token_id: int | None = None,
                      eos_token_id: int | list[int] | None = None, output_scores: bool = False,
                      output_logits: bool = False, return_dict_in_generate: bool = False,
                      attention_mask: np.ndarray | None = None, rng: np.random.Generator | None = None,
                      seed: int | None = None, draw: Callable[..., np.ndarray] | None = None,
                      uniform: Callable[..., np.ndarray] = uniform,
                      streamer: Any = None) -> np.ndarray | GenerateDecoderOnlyOutput:
    """Greedy decoding or sampling of ``input_ids`` int64 (1, T), several tokens per model call.

    ``candidate_generator``: :class:`~refdecode.decoding.candidate_generator.PromptLookupCandidateGenerator` or
    :class:`~refdecode.decoding.candidate_generator.AssistedCandidateGenerator`. ``draw`` replaces the multinomial
    draw and ``uniform(n, rng)`` the acceptance uniforms of :func:`speculative_sampling` (tests replay
    transformers' random numbers through them). ``streamer`` receives each round's accepted tokens (1, n + 1),
    then ``end()``.

    >>> from refdecode.decoding.candidate_generator import PromptLookupCandidateGenerator
    >>> from refdecode.model.stand_ins import TableModel
    >>> model = TableModel(np.log(np.array([[.1, .6, .3], [.2, .1, .7], [.8, .1, .1]], dtype=np.float32)))
    >>> assisted_decoding(model, np.array([[0, 1, 2, 0]]), PromptLookupCandidateGenerator(3), max_length=10)
    array([[0, 1, 2, 0, 1, 2, 0, 1, 2, 0]])
    >>> model.calls      # (rows, tokens) per model call: 6 new tokens in 2 calls (greedy needs 6)
    [(1, 7), (1, 4)]
    """
    logits_processor, criteria, pad_token_id, eos = loop_defaults(
        model, logits_processor, stopping_criteria, max_length, pad_token_id, eos_token_id)
    logits_warper = LogitsProcessorList(logits_warper if logits_warper is not None else [])
    check_pad_token(eos, pad_token_id)
    if input_ids.shape[0] != 1:
        raise ValueError(f"assisted generate is only supported for batch_size = 1, got {input_ids.shape[0]} rows")
    rng, draw = make_rng(rng, seed), draw if draw is not None else multinomial
    scores, raw_logits = step_records(return_dict_in_generate, output_scores, output_logits)
    max_len, n_positions = criteria.max_length, int(model.config.n_positions)
    cache = model.new_cache(1, model_capacity(model, max_len))
    while True:
        cur_len = input_ids.shape[1]
        # 1) candidates; beyond n_positions none could be accepted (max_length <= n_positions), and
        #    transformers would index past the position table: cut them there
        candidate_ids, candidate_scores = candidate_generator.get_candidates(input_ids)
        candidate_ids = candidate_ids[:, :n_positions]
        c = candidate_ids.shape[1] - cur_len
        last_is_eos = eos is not None and int(candidate_ids[0, -1]) in eos
        # 2) one forward pass: the model's logits after each prefix, processed (and warped) per position
        logits = verify(model, candidate_ids, attention_mask, cache, c)  # (1, c + 1, V)
        new_scores = np.stack([logits_warper(candidate_ids[:, : cur_len + i],
                                             logits_processor(candidate_ids[:, : cur_len + i], logits[:, i]))
                               for i in range(c + 1)], axis=1)  # (1, c + 1, V)
        check_no_nan(new_scores, cur_len, model, logits)
        # 3) accept the agreeing prefix of n candidates, plus one token of the model's
        max_matches = max_len - cur_len - 1
        if do_sample and candidate_scores is not None:
            valid, n = speculative_sampling(candidate_ids[0, cur_len:], candidate_scores[0], new_scores[0],
                                            last_is_eos, max_matches, rng, draw, uniform)
        else:
            if do_sample:
                selected = checked_draw(draw, softmax(new_scores[0]), 1, False, rng)[:, 0]  # (c + 1,)
            else:
                selected = np.argmax(new_scores[0], axis=-1).astype(np.int64)  # (c + 1,)
            n = count_matches(candidate_ids[0, cur_len:], selected, last_is_eos, max_matches)
            valid = selected[: n + 1]
        # 4) append n + 1 tokens; the cache keeps all but the newest (it is fed next round)
        input_ids = np.concatenate([input_ids, valid[None, :]], axis=1)  # (1, S) -> (1, S + n + 1)
        stream(streamer, valid[None, :])
        cache.crop(input_ids.shape[1] - 1)
        candidate_generator.update_candidate_strategy(input_ids, new_scores, n)
        for i in range(n + 1):
            scores = collect(scores, new_scores[:, i])
        raw_logits = collect(raw_logits, logits)
        # 5) stopping: the newest token is eos, or a criterion fires
        if (eos is not None and int(input_ids[0, -1]) in eos) | criteria(input_ids, scores):
            break
    if isinstance(candidate_generator, AssistedCandidateGenerator):
        candidate_generator.keep_num_assistant_tokens()
    return decoder_output(input_ids, scores, raw_logits, cache, return_dict_in_generate, streamer, criteria)
