r"""Logits warpers: reshape the distribution a token is *sampled* from (sample and beam_sample only).

Contract: like the processors of ``logits_process.py``, every warper maps ``scores`` float32 (B, V)
to a NEW float32 (B, V) array, never mutating its input; ``input_ids`` is accepted and ignored.
Removed tokens get ``filter_value`` (default ``-inf``), so ``softmax`` gives them probability 0;
nothing is renormalised here -- the sampler's softmax does that.

The order is fixed, as in transformers 4.38.2 ``GenerationMixin._get_logits_warper``::

    TemperatureLogitsWarper(temperature)        if temperature != 1.0
      -> TopKLogitsWarper(top_k, min_tokens_to_keep=m)   if top_k != 0   (generate's default top_k is 50)
      -> TopPLogitsWarper(top_p, min_tokens_to_keep=m)   if top_p < 1.0
    m = 1 for sample; m = len(eos_token_id) + 1 (2 for a single int) for beam_sample.

Order matters: top-p after temperature measures mass under the tempered distribution, and after
top-k only among the k survivors.

Three top-p rules are written out side by side (see :func:`top_p_warp`,
:func:`llama_top_p_probs` from the top-p article, :func:`shifted_top_p_warp` from the sampling note;
compared on both documents' examples in docs/top-p.md).
In exact arithmetic they all keep "the most probable tokens until their mass reaches p", but they
differ on the boundary: transformers drops a token when the mass of the tokens before it is
exactly p; the other two keep it. They also sum in opposite directions (transformers from the
least probable end), so in float32 they can split differently near the threshold.

Tie rule: transformers' :func:`top_p_warp` sorts as ``torch.sort`` does on the CPU: stably for rows of up
to 16 entries (tied tokens in id order: among tied tokens straddling the cut the LOWER ids come first and
are dropped first; ``[[0, 0, 0, 0]]`` with ``top_p=0.5`` keeps ids {2, 3}, as transformers 4.38.2 does;
``top_p=0`` on a tied maximum keeps the highest tied id, not ``argmax``'s); above 16, torch's order is
libstdc++'s introsort's, which refdecode reproduces (:mod:`refdecode.numerics.introsort`; 17 zeros and
``top_p=0.5`` keep ids 0-7 and 9). llama's and the sampling note's rules sort descending with a stable
sort (:func:`rank_descending`), so there the lower ids are kept. Top-k has no such ambiguity: it keeps
every token whose score ties with the k-th largest.
"""

from __future__ import annotations

import numpy as np

from ..numerics import on_finite_support, scatter_with_torch_ties, softmax, stable_sort, torch_cumsum, torch_softmax
from ..validation import is_float, is_number, warn
from .arguments import check_count, check_filter_value, check_positive_float, check_scores, checks_scores
from .logits_process import LogitsProcessor

__all__ = [
    "top_k_top_p_filtering",
    "rank_descending",
    "temperature_warp",
    "top_k_warp",
    "top_p_warp",
    "llama_top_p_probs",
    "shifted_top_p_warp",
    "LogitsWarper",
    "TemperatureLogitsWarper",
    "TopKLogitsWarper",
    "TopPLogitsWarper",
]


# ----------------------------------------------------------------------------------------------
# Pure functions: scores -> new scores


def rank_descending(scores: np.ndarray) -> np.ndarray:
    """Token ids of each row from highest to lowest score, ties broken toward the lower id: int64 (B, V).

    This is the one tie rule of the top-p variants: equal scores rank in token-id order, so the
    first-ranked token is the one ``np.argmax`` (and ``torch.argmax``) returns.

    >>> rank_descending(np.array([[1.0, 3.0, 1.0, 3.0]], dtype=np.float32))
    array([[1, 3, 0, 2]])
    """
    return np.argsort(-scores, axis=-1, kind="stable")  # negation is exact; -(-inf) = inf sorts last


def temperature_warp(scores: np.ndarray, temperature: float) -> np.ndarray:
    r"""Divide the scores by the temperature: :math:`s' = s / T`, so :math:`\mathrm{softmax}(s') \propto e^{s/T}`.

    ``T < 1`` sharpens (``T -> 0`` tends to argmax, all mass on the largest score), ``T > 1``
    flattens (``T -> inf`` tends to uniform over the finite scores). The order of scores is
    unchanged; ``-inf`` stays ``-inf``. Computed in float32, like ``scores / temperature`` in torch.

    transformers 4.38.2 ``TemperatureLogitsWarper``; the top-p article, section 1 ("Temperature
    温度系数作用": ``softmax(logits[:, -1] / temperature)``); the sampling note adds ``eps = 1e-7`` to T,
    which transformers does not (it refuses T <= 0 instead).

    >>> temperature_warp(np.array([[2.0, -1.0, -np.inf]], dtype=np.float32), 0.5)
    array([[  4.,  -2., -inf]], dtype=float32)
    """
    return check_scores(scores) / temperature  # Python float: stays float32


def top_k_warp(
    scores: np.ndarray, top_k: int, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1
) -> np.ndarray:
    r"""Keep the tokens whose score is at least the k-th largest; set the rest to ``filter_value``.

    .. math:: s'_v = s_v \text{ if } s_v \ge s_{(k)} \text{ else filter\_value},\qquad
              k = \min(\max(\text{top\_k}, \text{min\_tokens\_to\_keep}), V)

    where :math:`s_{(k)}` is the k-th largest score of the row. Ties with the k-th value are all
    kept, so more than k tokens can survive (llama.cpp keeps exactly k). ``top_k > V`` keeps
    everything. If the k-th largest is ``-inf`` nothing is removed.

    transformers 4.38.2 ``TopKLogitsWarper`` (``scores < topk(scores, k)[0][..., -1, None]``);
    the 4.26 walkthrough, "TopKLogitsWarper"; the sampling note's ``top_k_filtering`` is the same rule
    without the caps (``top_k = 0`` disables it there; ``top_k > V`` makes its ``torch.topk`` raise).

    >>> s = np.array([[1.0, 3.0, 2.0, 2.0, 0.0]], dtype=np.float32)
    >>> top_k_warp(s, 2)          # 2nd largest is 2.0, tied: three tokens survive
    array([[-inf,   3.,   2.,   2., -inf]], dtype=float32)
    >>> top_k_warp(s, 1, min_tokens_to_keep=2)   # k = max(1, 2)
    array([[-inf,   3.,   2.,   2., -inf]], dtype=float32)
    """
    vocab = check_scores(scores).shape[1]
    k = min(max(top_k, min_tokens_to_keep), vocab)
    kth_largest = np.partition(scores, vocab - k, axis=-1)[:, vocab - k : vocab - k + 1]  # (B, 1)
    return np.where(scores < kth_largest, np.float32(filter_value), scores)


@checks_scores
def top_p_warp(
    scores: np.ndarray, top_p: float, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1
) -> np.ndarray:
    r"""transformers' nucleus rule: drop the least probable tail whose total mass is at most ``1 - top_p``.

    Steps (per row): sort ascending; ``p = softmax(sorted)``; ``c = cumsum(p)``; remove sorted
    position ``i`` if ``c_i <= 1 - top_p``; never remove the last ``min_tokens_to_keep`` positions
    (the most probable ones); map back to token order; removed tokens get ``filter_value``.

    Equivalently, a token is kept iff the mass of the tokens *more* probable than it is ``< top_p``:
    the kept set is the smallest most-probable prefix whose mass reaches ``top_p`` (``>= top_p``).
    The token that crosses the threshold is kept; a token whose predecessors' mass equals
    ``top_p`` exactly is dropped. ``top_p = 1`` removes only zero-probability tokens (``-inf`` or
    underflowed ``exp``); ``top_p = 0`` keeps exactly ``min_tokens_to_keep`` tokens.

    The float details are torch's on the CPU, from the numerics wing (docs/last-bit.md): ``torch_softmax``
    (bit for bit: on round probabilities the cumulative sum lands exactly on the threshold, and its last
    bit decides), ``torch_cumsum`` (float64 accumulator), and ``torch.sort`` as a pair: ``stable_sort``
    (ties in id order), whose ``scatter_with_torch_ties`` back to token order puts a tie group the cut
    splits in torch's CPU order; the threshold is ``float32(1 - top_p)``.

    transformers 4.38.2 ``TopPLogitsWarper``; the 4.26 walkthrough, "TopPLogitsWarper".

    The top-p article's example (probs [0.1, 0.3, 0.4, 0.15, 0.05], p = 0.8): ascending cumsum
    [0.05, 0.15, 0.3, 0.6, 1.0] <= 0.2 removes tokens 4 and 0, keeps {1, 2, 3} (mass 0.85):

    >>> kept = lambda s: np.flatnonzero(np.isfinite(s[0]))     # token ids that survive
    >>> kept(top_p_warp(np.log(np.array([[0.1, 0.3, 0.4, 0.15, 0.05]], dtype=np.float32)), 0.8))
    array([1, 2, 3])

    The sampling note's example (probs [0.4, 0.2, 0.15, 0.15, 0.1], p = 0.8): cumsum [0.1, 0.25, ...]
    removes only token 4; four tokens are kept (mass 0.9), not the three the document's prose says:

    >>> kept(top_p_warp(np.log(np.array([[0.4, 0.2, 0.15, 0.15, 0.1]], dtype=np.float32)), 0.8))
    array([0, 1, 2, 3])

    When the mass of the more probable tokens is exactly p, the token is dropped (llama's and
    the sampling note's rules keep it). Here {0, 1} has mass 0.75 = p, so tokens 2 and 3 go:

    >>> kept(top_p_warp(np.log(np.array([[0.5, 0.25, 0.125, 0.125]], dtype=np.float32)), 0.75))
    array([0, 1])

    Ties at the cut: ascending cumsum [0.25, 0.5, 0.75, 1] <= 0.5 removes the first two in the
    stable ascending order, ids 0 and 1 (transformers 4.38.2 on torch's CPU sort keeps {2, 3} too):

    >>> kept(top_p_warp(np.zeros((1, 4), dtype=np.float32), 0.5))
    array([2, 3])

    Over 16 entries torch's sort is not stable; its order is reproduced (4.38.2 keeps the same ids):

    >>> kept(top_p_warp(np.zeros((1, 17), dtype=np.float32), 0.5))
    array([0, 1, 2, 3, 4, 5, 6, 7, 9])
    """
    sorted_logits, sorted_indices = stable_sort(scores, descending=False)
    cumulative_probs = torch_cumsum(torch_softmax(sorted_logits))
    # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
    sorted_indices_to_remove = cumulative_probs <= np.float32(1.0 - top_p)
    # Keep at least min_tokens_to_keep
    sorted_indices_to_remove[..., -min_tokens_to_keep:] = False
    # scatter sorted to original indexing (a tie group the cut splits: torch's order decides, not the id order)
    indices_to_remove = scatter_with_torch_ties(sorted_indices_to_remove, sorted_indices, scores)
    return np.where(indices_to_remove, np.float32(filter_value), scores)


def llama_top_p_probs(probs: np.ndarray, p: float) -> np.ndarray:
    r"""Meta llama's ``sample_top_p`` filter: the distribution it samples from.

    The top-p article's section 3.2 gives this function (the same code; the article names neither llama nor Meta).

    Steps: sort probabilities descending; ``S = cumsum``; remove position ``i`` if
    ``S_i - p_i > p`` (the mass strictly before it exceeds p); zero the removed ones; renormalise.
    Returned in token order (the document samples in sorted order and maps back with ``gather``).

    So a token is kept iff the mass of the more probable tokens is ``<= p`` -- one more token than
    transformers keeps when that mass equals p exactly. Input is probabilities (after softmax),
    float32 (B, V); output float32 (B, V), rows summing to 1. Ties: :func:`rank_descending`, so on
    a straddling tie the lower ids are kept. Because it ranks *probabilities*, not scores, it can
    also differ from transformers where two different scores round to the same probability:
    scores [0, 6.1e-36] give probs [0.5, 0.5], so at p = 0 llama keeps token 0 and transformers
    keeps token 1 (the higher score).

    The top-p article's example, probs [0.1, 0.3, 0.4, 0.15, 0.05] with p = 0.8: sorted [0.4, 0.3,
    0.15, 0.1, 0.05], ``S - p_i`` = [0, 0.4, 0.7, 0.85, 0.95], mask [F, F, F, T, T]: the code keeps
    THREE tokens {2, 1, 3} (mass 0.85, renormalised 0.47/0.35/0.18). The document's step 4 shows
    mask [F, F, T, T, T] and step 6 renormalises two tokens (0.5714, 0.4286) -- the prose
    disagrees with its own code; its step 2 ("smallest set whose mass reaches p") agrees with the code.

    >>> llama_top_p_probs(np.array([[0.1, 0.3, 0.4, 0.15, 0.05]], dtype=np.float32), 0.8).round(4)
    array([[0.    , 0.3529, 0.4706, 0.1765, 0.    ]], dtype=float32)

    On the sampling note's example it keeps four tokens, like transformers and the note's code:

    >>> llama_top_p_probs(np.array([[0.4, 0.2, 0.15, 0.15, 0.1]], dtype=np.float32), 0.8).round(4)
    array([[0.4444, 0.2222, 0.1667, 0.1667, 0.    ]], dtype=float32)

    When the mass before a token is exactly p, llama keeps it and transformers does not
    (transformers keeps only {0, 1} here); the tied pair 2, 3 straddles the cut and the lower id wins:

    >>> llama_top_p_probs(np.array([[0.5, 0.25, 0.125, 0.125]], dtype=np.float32), 0.75).round(4)
    array([[0.5714, 0.2857, 0.1429, 0.    ]], dtype=float32)
    """
    check_scores(probs)
    order = rank_descending(probs)  # (B, V)
    probs_sort = np.take_along_axis(probs, order, axis=-1)
    probs_sum = np.cumsum(probs_sort, axis=-1, dtype=np.float64).astype(np.float32)
    probs_sort = np.where(probs_sum - probs_sort > np.float32(p), np.float32(0.0), probs_sort)
    probs_sort = probs_sort / probs_sort.sum(axis=-1, keepdims=True)
    out = np.empty_like(probs_sort)
    np.put_along_axis(out, order, probs_sort, axis=-1)  # sorted order -> token order
    return out


def shifted_top_p_warp(logits: np.ndarray, top_p: float) -> np.ndarray:
    r"""The sampling note's ``top_p_filtering``: the "cumsum > p, shifted right by one" mask.

    Steps: sort logits descending; ``c = cumsum(softmax(sorted))``; ``r = c > top_p``; shift ``r``
    right by one (``r[1:] = r[:-1]``, ``r[0] = False``) so the token that crosses ``top_p`` is kept;
    removed tokens get ``-inf``. A token is kept iff the mass of the more probable tokens is
    ``<= top_p`` -- the same set as :func:`llama_top_p_probs` in exact arithmetic (llama computes
    that mass as ``S_i - p_i``, this one reads ``S_{i-1}``). There is no ``min_tokens_to_keep``;
    the first token always survives. Ties: :func:`rank_descending` (lower ids kept first).

    The sampling note's example, probs [0.4, 0.2, 0.15, 0.15, 0.1] with top_p 0.8: c = [0.4, 0.6, 0.75,
    0.9, 1.0], ``c > 0.8`` = [F, F, F, T, T], shifted [F, F, F, F, T]: the code keeps FOUR tokens
    (mass 0.9). The prose walks through "0.9 -- we've surpassed 0.8, so this element isn't
    selected", keeping three [0.4, 0.2, 0.15]: prose and code disagree. transformers'
    :func:`top_p_warp` and :func:`llama_top_p_probs` also keep four.

    >>> kept = lambda s: np.flatnonzero(np.isfinite(s[0]))     # token ids that survive
    >>> kept(shifted_top_p_warp(np.log(np.array([[0.4, 0.2, 0.15, 0.15, 0.1]], dtype=np.float32)), 0.8))
    array([0, 1, 2, 3])

    On the top-p article's example it keeps the same three tokens as llama's code:

    >>> kept(shifted_top_p_warp(np.log(np.array([[0.1, 0.3, 0.4, 0.15, 0.05]], dtype=np.float32)), 0.8))
    array([1, 2, 3])
    """
    check_scores(logits)
    order = rank_descending(logits)  # (B, V)
    cumulative = np.cumsum(softmax(np.take_along_axis(logits, order, axis=-1)), axis=-1, dtype=np.float64)
    over = cumulative.astype(np.float32) > np.float32(top_p)
    remove_sorted = np.zeros_like(over)
    remove_sorted[:, 1:] = over[:, :-1]  # shift right: keep the token that crosses top_p
    remove = np.empty_like(remove_sorted)
    np.put_along_axis(remove, order, remove_sorted, axis=-1)
    return np.where(remove, np.float32(-np.inf), logits)


# ----------------------------------------------------------------------------------------------
# transformers-compatible classes


class LogitsWarper(LogitsProcessor):
    """Base class with transformers' name for sampling-only processors."""


class TemperatureLogitsWarper(LogitsWarper):
    """``scores / temperature``; see :func:`temperature_warp`. ``temperature``: a float > 0 (``2`` is refused)."""

    def __init__(self, temperature: float):
        if is_float(temperature) and temperature == 0.0:
            raise ValueError(f"`temperature` has to be a strictly positive float (> 0), but is {temperature!r}; "
                             "for greedy decoding set `do_sample=False` instead")
        self.temperature = check_positive_float("temperature", temperature)

    def __call__(self, input_ids, scores, **kwargs):
        return temperature_warp(scores, self.temperature)


class TopKLogitsWarper(LogitsWarper):
    """Keep scores >= the k-th largest; see :func:`top_k_warp`.

    As in transformers, ``self.top_k = max(top_k, min_tokens_to_keep)``; the cap at V happens per call.
    """

    def __init__(self, top_k: int, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        top_k = check_count("top_k", top_k, minimum=1)
        self.top_k = max(top_k, check_count("min_tokens_to_keep", min_tokens_to_keep, minimum=0))
        self.filter_value = check_filter_value(filter_value)

    def __call__(self, input_ids, scores, **kwargs):
        return top_k_warp(scores, self.top_k, self.filter_value)


class TopPLogitsWarper(LogitsWarper):
    """transformers' nucleus filter; see :func:`top_p_warp`. ``top_p`` in [0, 1] (both ends allowed).

    With ``filter_value = -inf`` (the default) a call runs the rule on each row's finite entries only
    (:func:`~refdecode.numerics.torch_cpu.on_finite_support`: after top-k, 50 of GPT-2's 50,257), which gives
    the whole rows' bits; a finite ``filter_value`` runs the whole rows.
    """

    def __init__(self, top_p: float, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        if not is_number(top_p) or not 0.0 <= top_p <= 1.0:  # NaN fails too (transformers lets NaN through)
            raise ValueError(f"`top_p` has to be a float in [0, 1], but is {top_p!r}")
        self.top_p = float(top_p)
        self.filter_value = check_filter_value(filter_value)
        self.min_tokens_to_keep = check_count("min_tokens_to_keep", min_tokens_to_keep, minimum=1)

    def __call__(self, input_ids, scores, **kwargs):
        def rule(rows):
            return top_p_warp(rows, self.top_p, self.filter_value, self.min_tokens_to_keep)

        return on_finite_support(rule, scores) if self.filter_value == -np.inf else rule(scores)


def top_k_top_p_filtering(logits: np.ndarray, top_k: int = 0, top_p: float = 1.0, filter_value: float = -float("inf"),
                          min_tokens_to_keep: int = 1) -> np.ndarray:
    """transformers 4.38.2's deprecated helper, for code that still calls it: top-k when ``top_k > 0``, then top-p
    when ``0 <= top_p <= 1`` (so also at the default 1.0, which drops the zero-probability tokens); float32 (B, V).

    >>> top_k_top_p_filtering(np.array([[1.0, 3.0, 2.0]], dtype=np.float32), top_k=2)
    array([[-inf,   3.,   2.]], dtype=float32)
    """
    warn("`top_k_top_p_filtering` is scheduled for deletion in v4.39. Use `TopKLogitsWarper` and `TopPLogitsWarper` "
         "instead.", DeprecationWarning)
    if top_k > 0:
        logits = TopKLogitsWarper(top_k=top_k, filter_value=filter_value, min_tokens_to_keep=min_tokens_to_keep)(
            None, logits)
    if 0 <= top_p <= 1.0:
        logits = TopPLogitsWarper(top_p=top_p, filter_value=filter_value, min_tokens_to_keep=min_tokens_to_keep)(
            None, logits)
    return logits
