"""The graded exercises' later hints and typical-mistake mimics: problem 1 of the course's assignment.

``_lab_guide.py`` merges them into its GUIDES when this file is there. The students' copy of the course
(tools/course/student_copy.py) leaves this file out: a mimic is a parameterised near-solution (``_ban_after(row,
n - 1)`` *is* no_repeat_ngram_banned) and the last hints nearly give the answer, so a graded exercise keeps only
its rules and its first hint there. Each mistake is ``(message, mimic)``, as ``_lab_guide.Mistake``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_TIE = "Among equal probabilities the lower token id comes first"


def _stable_desc(x: np.ndarray) -> np.ndarray:
    return np.argsort(-x, axis=-1, kind="stable")


def _gather_top_p(probs: np.ndarray, p: float, order: np.ndarray, drop: Callable, renorm: bool = True,
                  sorted_out: bool = False) -> np.ndarray:
    """llama's filter with a given sort order and drop rule ``drop(cumsum, sorted_p, p) -> mask``."""
    sp = np.take_along_axis(probs, order, axis=-1)
    sp = np.where(drop(np.cumsum(sp, axis=-1), sp, p), np.float32(0), sp)
    if renorm:
        sp = sp / sp.sum(axis=-1, keepdims=True)
    if sorted_out:
        return sp
    out = np.zeros_like(probs)
    np.put_along_axis(out, order, sp, axis=-1)
    return out


def _penalty(input_ids: np.ndarray, scores: np.ndarray, penalty: float, rule: Callable, once: bool = True,
             every: bool = False) -> np.ndarray:
    out = scores.copy()
    for row, ids in enumerate(input_ids):
        tokens = range(scores.shape[-1]) if every else (np.unique(ids) if once else ids)
        for t in tokens:
            out[row, t] = rule(out[row, t], np.float32(penalty))
    return out


def _ban_after(row: list[int], prefix_len: int) -> list[int]:
    """Tokens that followed an earlier occurrence of the last ``prefix_len`` tokens."""
    if prefix_len <= 0:
        return sorted(set(row))
    tail = row[len(row) - prefix_len:]
    return sorted({row[i + prefix_len] for i in range(len(row) - prefix_len) if row[i:i + prefix_len] == tail})


def _keep_top(scores: np.ndarray, n: int) -> np.ndarray:
    out = np.full_like(scores, -np.inf)
    idx = _stable_desc(scores)[:, :max(n, 0)]
    np.put_along_axis(out, idx, np.take_along_axis(scores, idx, axis=-1), axis=-1)
    return out


#: exercise -> its hints after the first (staged: nearly the answer last)
HINTS = {
    "repetition_penalty": (
        "Use np.unique per row, then np.where(score < 0, score * penalty, score / penalty).",
        "out = scores.copy(); for each row r: t = np.unique(input_ids[r]); s = out[r, t]; "
         "out[r, t] = np.where(s < 0, s * penalty, s / penalty)",
    ),
    "no_repeat_ngram_banned": (
        "An n-gram whose first n - 1 tokens equal the last n - 1 tokens of `row` bans its last token.",
        "prefix = tuple(row[len(row) - n + 1:]); banned = {g[-1] for g in ngrams if g[:-1] == prefix}",
    ),
    "top_k_filter": (
        "np.sort(scores, axis=-1)[:, -k] with k = min(top_k, V).",
        "np.where(scores < kth[:, None], -np.inf, scores)",
    ),
    "llama_top_p": (
        "Sort with np.argsort(-probs, kind=\"stable\"), mask, renormalise, then put the values back with "
         "np.put_along_axis.",
        "order = np.argsort(-probs, -1, kind='stable'); sp = take(probs, order); "
         "sp[cumsum(sp) - sp > p] = 0; sp /= sp.sum(-1); out[order] = sp",
    ),
}

#: exercise -> its mimicked mistakes, (message, mimic)
MISTAKES = {
    "repetition_penalty": (
        ("a negative score was divided by the penalty, which raises it: multiply negative scores, "
         "divide positive ones",
         lambda input_ids, scores, penalty: _penalty(input_ids, scores, penalty, lambda s, p: s / p)),
        ("you multiplied positive scores and divided negative ones: the other way round",
         lambda input_ids, scores, penalty: _penalty(
             input_ids, scores, penalty, lambda s, p: s * p if s > 0 else s / p)),
        ("a token that appears twice was penalised twice: the penalty applies once per distinct token",
         lambda input_ids, scores, penalty: _penalty(
             input_ids, scores, penalty, lambda s, p: s * p if s < 0 else s / p, once=False)),
        ("you penalised every token: only the tokens in input_ids are penalised",
         lambda input_ids, scores, penalty: _penalty(
             input_ids, scores, penalty, lambda s, p: s * p if s < 0 else s / p, every=True)),
    ),
    "no_repeat_ngram_banned": (
        ("you banned what followed the last token (a 2-gram rule) whatever n is: match the last n - 1 tokens",
         lambda row, n: _ban_after(row, 1)),
        ("you matched the last n tokens: an n-gram's prefix is its first n - 1 tokens",
         lambda row, n: _ban_after(row, n)),
    ),
    "top_k_filter": (
        ("a token tied with the k-th largest score was dropped: keep every score >= the k-th largest",
         lambda scores, top_k: _keep_top(scores, top_k)),
        ("you kept one token too many: the k-th largest is the last one kept",
         lambda scores, top_k: _keep_top(scores, top_k + 1)),
        ("you kept one token too few: the k-th largest score itself stays",
         lambda scores, top_k: _keep_top(scores, top_k - 1)),
    ),
    "llama_top_p": (
        ("you dropped a token whose preceding mass equals p exactly: llama keeps it (zero only when "
         "the mass before it is > p)",
         lambda probs, p: _gather_top_p(probs, p, _stable_desc(probs), lambda c, s, q: c - s >= q)),
        ("you dropped the token that crosses p: a token stays while the mass before it is <= p",
         lambda probs, p: _gather_top_p(probs, p, _stable_desc(probs), lambda c, s, q: c > q)),
        (f"a tied token differs: the rule is {_TIE.lower()} (np.argsort(-probs, kind=\"stable\"); "
         "np.argsort(probs)[:, ::-1] puts the higher id first)",
         lambda probs, p: _gather_top_p(probs, p, np.argsort(probs, axis=-1, kind="stable")[:, ::-1],
                                        lambda c, s, q: c - s > q)),
        ("the kept probabilities do not sum to 1: renormalise them",
         lambda probs, p: _gather_top_p(probs, p, _stable_desc(probs), lambda c, s, q: c - s > q,
                                        renorm=False)),
        ("you returned the probabilities in sorted order: put each back at its token id",
         lambda probs, p: _gather_top_p(probs, p, _stable_desc(probs), lambda c, s, q: c - s > q,
                                        sorted_out=True)),
    ),
}
