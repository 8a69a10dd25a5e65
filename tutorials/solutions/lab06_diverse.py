"""Solutions to tutorial 06's exercises (the Hamming penalty, the 2K candidates)."""

from __future__ import annotations

import numpy as np

from _run import check_all


def hamming_penalty(scores, previous_tokens, diversity_penalty):
    """Subtract the penalty once for every time an earlier group chose the token at this step."""
    counts = np.bincount(np.asarray(previous_tokens, dtype=np.int64), minlength=scores.shape[-1])   # (V,)
    return scores - np.float32(diversity_penalty) * counts.astype(np.float32)


def top_candidates(total, n):
    """Rank all K*V (beam, token) pairs of a prompt together (not n per beam); ties: lower beam*V+token first."""
    batch, beams, vocab = total.shape
    flat = total.reshape(batch, beams * vocab)                         # (B, K*V)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :n]            # (B, n)
    return np.take_along_axis(flat, order, axis=1), order // vocab, order % vocab


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)
