"""Problem 1 of the assignment (docs/course/assignment.md): four of the tutorials' exercises, graded.

Each function is an exercise of tutorials 03 and 04 (the rules are stated there and in the docstrings below).
Check them with the tutorials' checker (``python selfcheck.py`` runs it on these four) before you submit;
the grader runs them on hidden cases. numpy only: a function that calls refdecode's processors scores 0.
"""

from __future__ import annotations

import numpy as np


def repetition_penalty(input_ids, scores, penalty):
    """(N, T) ids, (N, V) float32 scores -> new scores: each token already in row n, once, divided by ``penalty``
    if its score is positive, multiplied by it if negative. Do not change ``scores`` in place."""
    raise NotImplementedError


def no_repeat_ngram_banned(row, n):
    """The sorted list of tokens that would complete an n-gram already in ``row`` (a list of ids)."""
    raise NotImplementedError


def top_k_filter(scores, top_k):
    """(N, V) float32 -> -inf for every score below the k-th largest of its row; ties with the k-th are kept."""
    raise NotImplementedError


def llama_top_p(probs, p):
    """Meta llama's sample_top_p filter on (N, V) probabilities: sort descending (ties: lower id first), drop a
    token if the mass before it is already > p, renormalise the rest; float32, in token order."""
    raise NotImplementedError
