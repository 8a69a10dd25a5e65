"""Solutions to tutorial 03's exercises (the logits processors)."""

from __future__ import annotations

import numpy as np

from _run import check_all
from submission.processors import no_repeat_ngram_banned, repetition_penalty  # noqa: F401 (graded: problem 1)


def min_length(input_ids, scores, min_length, eos_token_id):
    """eos gets -inf while the sequence (prompt included) is shorter than min_length."""
    out = scores.copy()
    if input_ids.shape[-1] < min_length:
        out[:, eos_token_id] = -np.inf
    return out


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)
