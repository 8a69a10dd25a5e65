"""Solutions to tutorial 03's exercises (the logits processors)."""

from __future__ import annotations

import numpy as np

from _run import check_all


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


def min_length(input_ids, scores, min_length, eos_token_id):
    """eos gets -inf while the sequence (prompt included) is shorter than min_length."""
    out = scores.copy()
    if input_ids.shape[-1] < min_length:
        out[:, eos_token_id] = -np.inf
    return out


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)
