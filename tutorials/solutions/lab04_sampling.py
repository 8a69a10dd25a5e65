"""Solutions to tutorial 04's exercises (temperature, top-k, llama's top-p)."""

from __future__ import annotations

import numpy as np

from _run import check_all


def temperature_softmax(logits, temperature):
    """softmax(logits / T), computed stably (subtract the row maximum first)."""
    z = logits / np.float32(temperature)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


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


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)
