"""Problem 1 of docs/course/assignment.md (four of the tutorials' exercises): a reference submission.

The same functions are the solutions of tutorials 03 and 04's exercises (``lab03_greedy.py`` and
``lab04_sampling.py`` import them from here). numpy only. Grade it:
``python tools/course/grade.py tutorials/solutions/submission``.
"""

from __future__ import annotations

import numpy as np


def repetition_penalty(input_ids, scores, penalty):
    """Each token already in the row: score / penalty if positive, score * penalty if negative (once per token)."""
    out = scores.copy()
    for row, ids in enumerate(input_ids):
        seen = np.unique(ids)
        s = out[row, seen]
        out[row, seen] = np.where(s < 0, s * penalty, s / penalty)
    return out


def no_repeat_ngram_banned(row, n):
    """Tokens that would complete an n-gram already in `row`: match the last n-1 tokens against every earlier n-gram."""
    if len(row) + 1 < n:
        return []
    prefix = tuple(row[len(row) - n + 1:])
    banned = {row[i + n - 1] for i in range(len(row) - n + 1) if tuple(row[i:i + n - 1]) == prefix}
    return sorted(banned)


def top_k_filter(scores, top_k):
    """Keep every score >= the k-th largest (so ties at the boundary all stay), -inf elsewhere."""
    k = min(top_k, scores.shape[-1])
    kth = np.sort(scores, axis=-1)[:, -k][:, None]     # (N, 1) the k-th largest score
    return np.where(scores < kth, np.float32(-np.inf), scores)


def llama_top_p(probs, p):
    """Meta llama's sample_top_p: sort descending, drop a token if the mass BEFORE it already exceeds p."""
    order = np.argsort(-probs, axis=-1, kind="stable")
    sorted_p = np.take_along_axis(probs, order, axis=-1)
    cum = np.cumsum(sorted_p, axis=-1)
    sorted_p = np.where(cum - sorted_p > p, np.float32(0.0), sorted_p)
    sorted_p = sorted_p / sorted_p.sum(axis=-1, keepdims=True)
    out = np.zeros_like(probs)
    np.put_along_axis(out, order, sorted_p, axis=-1)
    return out
