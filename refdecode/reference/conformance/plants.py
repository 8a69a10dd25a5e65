r"""Planted bugs: deliberately broken refdecodes that ``check`` must catch (``serve --plant NAME``).

Contract: ``apply(name)`` patches refdecode **in the current process** (``serve`` runs in its own
process) with one of the classic porting bugs below, each a few lines next to the rule it breaks.
They exist to prove that the suite notices each bug; ``tests/reference/conformance/test_plants.py`` checks
which case types fail for each.

=========================  ====================================================================
top_p_boundary             top-p keeps the tokens whose *inclusive* cumulative mass is < top_p:
                           the token that reaches top_p is dropped (one token too few)
top_k_ties                 top-k keeps exactly k tokens (a stable sort), not every tie of the k-th
repetition_penalty_sign    the repetition penalty always divides, so negative scores go *up*
beam_candidates_k          beam search ranks K candidates instead of 2K (so an eos among them
                           leaves too few running beams)
length_penalty_total       BeamHypotheses scores by the whole length (prompt included), not the
                           generated length
is_done_heuristic          early_stopping="never" uses the cur_len heuristic of False, not the
                           max_length bound
no_cache_reorder           the model state (KV cache / toy hash) is not reordered with the beams
lookup_last_match          prompt lookup drafts from the most recent earlier occurrence of the
                           n-gram, not the first
residual_from_p            speculative sampling draws the token after a rejected draft from the
                           model's p, not from the residual max(p - q, 0)
top_p_float64              top-p in float64: softmax, cumulative sums and 1 - top_p, never
                           rounded to float32 (torch rounds each prefix to float32)
finalize_order             finalize breaks equal hypothesis scores the other way: the earlier
                           inserted wins (transformers' stable sort + pop: the later one)
=========================  ====================================================================
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

import numpy as np

import refdecode as rd

from .toy_model import ToyCache

__all__ = ["PLANTS", "apply", "planted"]


def _top_p_boundary(self, input_ids, scores, **kwargs):
    order = np.argsort(-scores, axis=-1, kind="stable")                          # (B, V) descending
    probs = rd.softmax(np.take_along_axis(scores, order, axis=-1))
    keep_sorted = np.cumsum(probs, axis=-1) < self.top_p                        # BUG: should keep the crossing one
    keep_sorted[:, : self.min_tokens_to_keep] = True
    keep = np.empty_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    return np.where(keep, scores, np.float32(self.filter_value))


def _top_k_ties(self, input_ids, scores, **kwargs):
    k = min(self.top_k, scores.shape[-1])  # top_k is max(top_k, min_tokens_to_keep) already
    top = np.argsort(-scores, axis=-1, kind="stable")[:, :k]                     # BUG: exactly k, ties cut
    keep = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(keep, top, True, axis=-1)
    return np.where(keep, scores, np.float32(self.filter_value))


def _repetition_penalty_sign(self, input_ids, scores, **kwargs):
    seen = np.zeros(scores.shape, dtype=bool)
    seen[np.arange(scores.shape[0])[:, None], input_ids] = True
    return np.where(seen, scores / self.penalty, scores)                         # BUG: negative scores rise


def _beam_candidates_k(original: Callable) -> Callable:
    def top_candidates(total, n):
        return original(total, total.shape[1])                                  # BUG: K, not 2K
    return top_candidates


def _length_penalty_total(original: Callable) -> Callable:
    def add(self, hyp, sum_logprobs, beam_indices=None, *, generated_len):
        return original(self, hyp, sum_logprobs, beam_indices,
                        generated_len=hyp.shape[-1])                            # BUG: whole length, prompt included
    return add


def _is_done_heuristic(original: Callable) -> Callable:
    def is_done(self, best_sum_logprobs, cur_len, decoder_prompt_len=0):
        if len(self) < self.num_beams:
            return False
        if self.early_stopping is True:
            return True
        bound = best_sum_logprobs / (cur_len - decoder_prompt_len) ** self.length_penalty  # BUG: also for "never"
        return bool(self.worst_score >= bound)
    return is_done


def _lookup_last_match(original: Callable) -> Callable:
    def prompt_lookup(ids, num_output_tokens, max_matching_ngram_size):
        S = ids.shape[0]
        for n in range(min(max_matching_ngram_size, S - 1), 0, -1):
            windows = np.lib.stride_tricks.sliding_window_view(ids, n)
            starts = np.flatnonzero((windows == ids[S - n :]).all(axis=1)) + n
            for start in starts[::-1]:                                           # BUG: the most recent first
                if start < S:
                    return ids[start : min(start + num_output_tokens, S)].astype(np.int64)
        return np.zeros(1, dtype=np.int64)
    return prompt_lookup


def _residual_from_p(original: Callable) -> Callable:
    def speculative_sampling(candidates, candidate_scores, new_scores, last_is_eos, max_matches, rng, draw, uniform):
        c = candidates.shape[0]
        q, p = rd.softmax(candidate_scores), rd.softmax(new_scores)
        accepted = uniform(c, rng) <= p[np.arange(c), candidates] / q[np.arange(c), candidates]
        n = int((np.cumsum(~accepted) < 1).sum())
        if last_is_eos and n == c:
            return candidates.copy(), c - 1
        n = min(n, max_matches)
        token = draw(p[n][None, :], 1, False, rng)[:, 0].astype(np.int64)      # BUG: p_n even after a rejection
        return np.concatenate([candidates[:n], token]), n
    return speculative_sampling


def _top_p_float64(self, input_ids, scores, **kwargs):
    order = np.argsort(scores, axis=-1, kind="stable")                           # (B, V) ascending
    probs = rd.softmax(np.take_along_axis(scores, order, axis=-1).astype(np.float64))  # BUG: all in float64,
    remove_sorted = np.cumsum(probs, axis=-1) <= 1.0 - self.top_p                # never rounded to float32
    remove_sorted[:, -self.min_tokens_to_keep:] = False
    remove = np.empty_like(remove_sorted)
    np.put_along_axis(remove, order, remove_sorted, axis=-1)
    return np.where(remove, np.float32(self.filter_value), scores)


def _finalize_order() -> None:
    import builtins

    from ...decoding.beam import beam_scorer

    def sorted_earlier_last(items, key=None):  # only finalize's ranking passes a key
        if key is None:
            return builtins.sorted(items)
        return builtins.sorted(list(items)[::-1], key=key)                       # BUG: among equal scores the
    _set(beam_scorer, "sorted", sorted_earlier_last)                             # earlier one is popped first


_UNDO: list[tuple[object, str, object]] = []  # (owner, attribute, original) of every patch, for `planted`


_ABSENT = object()  # the owner had no such attribute (a module shadowing a builtin): undo deletes it


def _set(owner: object, name: str, value: object) -> None:
    _UNDO.append((owner, name, getattr(owner, name, _ABSENT)))
    setattr(owner, name, value)


def _replace_everywhere(names: tuple[str, ...], make: Callable[[Callable], Callable]) -> None:
    """Replace each module-level function of ``names`` in every refdecode module that holds it (wherever the
    package keeps it: ``top_candidates_partitioned`` in beam_search.py today, ``top_candidates`` elsewhere)."""
    modules = [m for key, m in list(sys.modules.items()) if key.startswith("refdecode") and m is not None]
    patched = 0
    for name in names:
        holders = [m for m in modules if callable(getattr(m, name, None))]
        replacement = make(getattr(holders[0], name)) if holders else None
        for module in holders:
            _set(module, name, replacement)
            patched += 1
    if not patched:
        raise ValueError(f"cannot plant: no refdecode module defines any of {names}")


def _patch_method(cls: type, name: str, make: Callable[[Callable], Callable]) -> None:
    _set(cls, name, make(getattr(cls, name)))


#: name -> (what is broken, how to plant it)
PLANTS: dict[str, tuple[str, Callable[[], None]]] = {
    "top_p_boundary": ("top-p drops the token that reaches top_p (keeps one too few)",
                       lambda: _patch_method(rd.TopPLogitsWarper, "__call__", lambda _: _top_p_boundary)),
    "top_k_ties": ("top-k keeps exactly k tokens, cutting ties with the k-th",
                   lambda: _patch_method(rd.TopKLogitsWarper, "__call__", lambda _: _top_k_ties)),
    "repetition_penalty_sign": ("repetition penalty divides negative scores too",
                                lambda: _patch_method(rd.RepetitionPenaltyLogitsProcessor, "__call__",
                                                      lambda _: _repetition_penalty_sign)),
    "beam_candidates_k": ("beam search ranks K candidates instead of 2K",
                          lambda: _replace_everywhere(("top_candidates_partitioned", "top_candidates"),
                                                              _beam_candidates_k)),
    "length_penalty_total": ("length penalty on the total length instead of the generated length",
                             lambda: _patch_method(rd.BeamHypotheses, "add", _length_penalty_total)),
    "is_done_heuristic": ('early_stopping="never" uses the cur_len heuristic',
                          lambda: _patch_method(rd.BeamHypotheses, "is_done", _is_done_heuristic)),
    "no_cache_reorder": ("the KV cache / toy model state is not reordered with the beams",
                         lambda: [_patch_method(cls, "reorder", lambda _: lambda self, beam_idx: None)
                                  for cls in (rd.KVCache, ToyCache)]),
    "lookup_last_match": ("prompt lookup drafts after the most recent earlier occurrence, not the first",
                          lambda: _replace_everywhere(("prompt_lookup",), _lookup_last_match)),
    "top_p_float64": ("top-p computed in float64 (softmax, sums, threshold), not torch's float32-rounded prefixes",
                      lambda: _patch_method(rd.TopPLogitsWarper, "__call__", lambda _: _top_p_float64)),
    "finalize_order": ("finalize: among equal hypothesis scores the earlier inserted wins",
                       _finalize_order),
    "residual_from_p": ("speculative sampling draws from p after a rejection, not from max(p - q, 0)",
                        lambda: _replace_everywhere(("speculative_sampling",), _residual_from_p)),
}


def apply(name: str) -> None:
    """Plant bug ``name`` in this process (``serve --plant``: for the rest of the process)."""
    if name not in PLANTS:
        raise ValueError(f"`--plant` has to be one of {', '.join(PLANTS)} (or `list`), but is {name!r}")
    # every module whose functions a plant replaces is imported already: importing this module ran the
    # package's __init__, which imports every cases module (cases_speculative imports prompt_lookup by name)
    PLANTS[name][1]()


@contextlib.contextmanager
def planted(name: str):
    """Plant bug ``name`` for the ``with`` block only, then put refdecode back.

    >>> import numpy as np, refdecode
    >>> scores = np.array([[2.0, 2.0, 1.0]], dtype=np.float32)
    >>> with planted("top_k_ties"):
    ...     refdecode.TopKLogitsWarper(1)(None, scores)
    array([[  2., -inf, -inf]], dtype=float32)
    >>> refdecode.TopKLogitsWarper(1)(None, scores)            # both tokens tied with the 1st largest
    array([[  2.,   2., -inf]], dtype=float32)
    """
    mark = len(_UNDO)
    apply(name)
    try:
        yield
    finally:
        while len(_UNDO) > mark:
            owner, attribute, original = _UNDO.pop()
            if original is _ABSENT:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)
