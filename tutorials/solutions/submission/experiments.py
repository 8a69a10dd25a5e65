"""Problem 5 of docs/course/assignment.md: the three measures, a reference for the instructor.

``python tutorials/solutions/submission/experiments.py`` prints the table of the starter's sweep (the sweep
itself is the starter's ``run``: tutorials/assignment/experiments.py).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np


def ngrams(tokens, n):
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def distinct_n(texts, n):
    """Distinct n-grams over all texts / all n-grams."""
    grams = [g for t in texts for g in ngrams(t, n)]
    return len(set(grams)) / len(grams) if grams else 0.0


def bleu(hypothesis, references, max_n=4):
    """BLEU-max_n of one hypothesis against references: clipped precisions (+1 smoothing for n > 1, Lin & Och
    2004), geometric mean, brevity penalty against the closest reference length."""
    log_precision = 0.0
    for n in range(1, max_n + 1):
        hyp = Counter(ngrams(hypothesis, n))
        most = Counter()
        for ref in references:
            most |= Counter(ngrams(ref, n))
        clipped = sum(min(count, most[g]) for g, count in hyp.items())
        total = max(sum(hyp.values()), 1)
        smooth = 0 if n == 1 else 1
        log_precision += math.log(max(clipped + smooth, 1e-9) / (total + smooth)) / max_n
    closest = min((abs(len(r) - len(hypothesis)), len(r)) for r in references)[1]
    brevity = 1.0 if len(hypothesis) > closest else math.exp(1 - closest / max(len(hypothesis), 1))
    return brevity * math.exp(log_precision)


def self_bleu(texts, max_n=4):
    """Mean BLEU of each text against all the others."""
    return float(np.mean([bleu(t, texts[:i] + texts[i + 1:], max_n) for i, t in enumerate(texts)]))


def log_likelihood(model, prompt_ids, continuation_ids):
    """Mean log p(token | prefix) of the continuation under the model itself (one forward pass)."""
    from refdecode import log_softmax
    ids = np.array([prompt_ids + continuation_ids])
    logp = log_softmax(model(ids).logits[0])                            # (T, V) float32
    start = len(prompt_ids)
    return float(np.mean([logp[start + i - 1, tok] for i, tok in enumerate(continuation_ids)]))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "assignment"))
    import experiments
    experiments.distinct_n, experiments.self_bleu, experiments.log_likelihood = distinct_n, self_bleu, log_likelihood
    experiments.run()
