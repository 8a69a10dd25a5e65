r"""Truncation warpers that look at the whole distribution: typical, epsilon, eta and min-p sampling.

Contract: like the warpers of ``logits_warp.py``, each maps ``scores`` float32 (B, V) to a NEW
float32 (B, V) array (``input_ids`` is accepted and ignored); removed tokens get ``filter_value``
(default ``-inf``); nothing is renormalised (the sampler's softmax does that). Where top-k and
top-p keep "the k best" or "the best until mass p", these cut by a property of the distribution:

- **typical** (``typical_p``): keep tokens whose surprisal :math:`-\log p_v` is closest to the
  entropy :math:`H`, until their mass reaches ``typical_p`` (Meister et al., arXiv:2202.00666);
- **epsilon** (``epsilon_cutoff``): keep tokens with :math:`p_v \ge \epsilon` (Hewitt et al.,
  arXiv:2210.15191);
- **eta** (``eta_cutoff``): keep :math:`p_v \ge \eta = \min(\epsilon, \sqrt{\epsilon}\,e^{-H})`
  (same paper): the cutoff falls when the distribution is flat;
- **min-p** (``min_p``): keep :math:`p_v \ge \text{min\_p}\cdot\max_u p_u` (transformers 4.41,
  newer than the pinned 4.38.2; golden-checked against 4.41.0).

All four keep at least ``min_tokens_to_keep`` tokens: the most probable ones. The order in
which ``generate`` builds them (transformers' ``_get_logits_warper``; min-p from 4.41)::

    Temperature -> TopK -> TopP -> MinP -> Typical -> Epsilon -> Eta -> LogitNormalization

Ties: typical sorts ascending and min-p descending in ``torch.sort``'s CPU order: stable (equal keys
in token-id order) for rows of up to 16 entries, libstdc++'s introsort's order above, reproduced by
:mod:`refdecode.processors.torch_sort` where it decides the output: for the tie group that straddles
the ``min_tokens_to_keep`` cut (see docs/top-p.md, "Ties beyond 16 entries"). Epsilon and eta compare
values only.

Docs: docs/entropy-sampling.md.
"""

from __future__ import annotations

import numpy as np

from .logits_warp import LogitsWarper
from .torch_sort import torch_order_at_cut
from ..numerics import log_softmax, softmax
from .arguments import check_filter_value, check_scores
from ..validation import is_integer, is_number

__all__ = [
    "typical_warp",
    "epsilon_warp",
    "eta_warp",
    "min_p_warp",
    "TypicalLogitsWarper",
    "EpsilonLogitsWarper",
    "EtaLogitsWarper",
    "MinPLogitsWarper",
]


# ----------------------------------------------------------------------------------------------
# Pure functions: scores -> new scores


def _entropy(logp: np.ndarray) -> np.ndarray:
    r""":math:`H = -\sum_v p_v \log p_v` per row, float32 (B, V) log-probs -> (B, 1); ``-inf`` tokens add 0."""
    with np.errstate(invalid="ignore"):  # -inf * 0 = nan: dropped by nansum, as torch's nansum does
        return -np.nansum(logp * np.exp(logp), axis=-1, keepdims=True)


def _keep_top(scores: np.ndarray, remove: np.ndarray, m: int) -> np.ndarray:
    """``remove`` (B, V) minus the ``m`` highest scores of each row (ties with the m-th are kept too)."""
    vocab = scores.shape[-1]
    k = min(m, vocab)
    kth = np.partition(scores, vocab - k, axis=-1)[:, vocab - k : vocab - k + 1]  # (B, 1) k-th largest
    return remove & (scores < kth)


def typical_warp(scores: np.ndarray, mass: float, filter_value: float = -float("inf"),
                 min_tokens_to_keep: int = 1) -> np.ndarray:
    r"""Locally typical sampling: keep the tokens whose surprisal is closest to the entropy.

    .. math:: d_v = \left|-\log p_v - H\right|,\qquad H = -\sum_u p_u \log p_u

    Sort by :math:`d` ascending; with :math:`c_i` the cumulative probability of the first i+1
    sorted tokens, let :math:`n = \#\{i : c_i < \text{mass}\}` (at most V-1); keep every token
    with :math:`d_v \le d_{(n)}` (ties with the boundary kept) plus the first
    ``min_tokens_to_keep`` of the sorted order. The most probable token can be dropped (when
    it is far more probable than typical).

    transformers 4.38.2 ``TypicalLogitsWarper``. The cumulative sum accumulates in float64 and
    rounds to float32, like torch's CPU ``cumsum``; ``mass`` is compared as float32. Ties in
    :math:`d`: "the first ``min_tokens_to_keep``" are those of torch's CPU sort (stable up to 16
    entries; above, the tie group across that cut is put in torch's order). The order of other tied
    tokens is not reproduced: a tie group with one score is kept or removed whole, and tokens with
    different scores but equal :math:`d` change only the summation order of the softmax and the
    cumulative sum, whose float32 rounding refdecode does not reproduce bit for bit on long rows
    anyway (its softmax sums in NumPy's order, not torch's).

    >>> s = np.log(np.array([[0.5, 0.25, 0.15, 0.1]], dtype=np.float32))   # H = 1.21 nats
    >>> typical_warp(s, 0.5)              # d = [0.52, 0.18, 0.69, 1.09]: token 1, then 0 (mass 0.75)
    array([[-0.6931472, -1.3862944,       -inf,       -inf]], dtype=float32)
    """
    vocab = check_scores(scores).shape[1]
    logp = log_softmax(scores)
    distance = np.abs(-logp - _entropy(logp))  # (B, V)
    order = np.argsort(distance, axis=-1, kind="stable")  # ascending; NaN (all -inf row) last
    for b in range(order.shape[0]):  # tied tokens across the min_tokens_to_keep cut: torch's sort chooses
        torch_order_at_cut(distance[b], order[b], min_tokens_to_keep)
    sorted_distance = np.take_along_axis(distance, order, axis=-1)
    probs = softmax(np.take_along_axis(scores, order, axis=-1))
    cumulative = np.cumsum(probs, axis=-1, dtype=np.float64).astype(np.float32)
    last = np.minimum((cumulative < np.float32(mass)).sum(axis=-1), vocab - 1)  # (B,)
    remove_sorted = sorted_distance > sorted_distance[np.arange(len(last)), last][:, None]
    remove_sorted[:, :min_tokens_to_keep] = False
    remove = np.empty_like(remove_sorted)
    np.put_along_axis(remove, order, remove_sorted, axis=-1)  # sorted order -> token order
    return np.where(remove, np.float32(filter_value), scores)


def epsilon_warp(scores: np.ndarray, epsilon: float, filter_value: float = -float("inf"),
                 min_tokens_to_keep: int = 1) -> np.ndarray:
    r"""Epsilon sampling: remove every token with :math:`p_v < \epsilon`, except the
    ``min_tokens_to_keep`` highest scores (all tokens tied with the m-th highest are kept).

    transformers 4.38.2 ``EpsilonLogitsWarper``; the comparison is float32 ``softmax(scores) < epsilon``.

    >>> s = np.log(np.array([[0.6, 0.3, 0.06, 0.04]], dtype=np.float32))
    >>> np.isfinite(epsilon_warp(s, 0.05))         # 0.04 < 0.05 goes
    array([[ True,  True,  True, False]])
    >>> np.isfinite(epsilon_warp(s, 0.9, min_tokens_to_keep=2))   # none reach 0.9: the best 2 stay
    array([[ True,  True, False, False]])
    """
    check_scores(scores)
    remove = _keep_top(scores, softmax(scores) < np.float32(epsilon), min_tokens_to_keep)
    return np.where(remove, np.float32(filter_value), scores)


def eta_warp(scores: np.ndarray, epsilon: float, filter_value: float = -float("inf"),
             min_tokens_to_keep: int = 1) -> np.ndarray:
    r"""Eta sampling: epsilon sampling with a cutoff that adapts to the entropy :math:`H` of the row.

    .. math:: \eta = \min\!\left(\epsilon,\ \sqrt{\epsilon}\,e^{-H}\right),\qquad
              \text{remove } v \text{ if } p_v < \eta

    except the ``min_tokens_to_keep`` highest scores. A flat distribution (large H) gets a small
    cutoff, a peaked one the full :math:`\epsilon`. :math:`H` is computed as
    ``torch.distributions.Categorical(logits=scores).entropy()`` does (log-probs clamped at the
    float32 minimum, so ``-inf`` tokens add 0); ``epsilon`` is a float32 constant.

    transformers 4.38.2 ``EtaLogitsWarper``.

    >>> s = np.log(np.array([[0.6, 0.3, 0.06, 0.04]], dtype=np.float32))   # H = 0.98, eta = min(0.1, 0.12)
    >>> np.isfinite(eta_warp(s, 0.1))
    array([[ True,  True, False, False]])
    """
    if not (np.isfinite(check_scores(scores)).any(axis=-1) & ~np.isnan(scores).any(axis=-1)).all():
        raise ValueError("eta sampling needs a distribution in every row, but `scores` has a row that is all -inf "
                         "or holds NaN (torch's Categorical refuses it too)")
    logp = np.maximum(log_softmax(scores), np.finfo(np.float32).min)  # Categorical clamps -inf
    entropy = -np.sum(logp * np.exp(logp), axis=-1, keepdims=True)  # (B, 1)
    eps = np.float32(epsilon)
    eta = np.minimum(eps, np.sqrt(eps) * np.exp(-entropy))
    remove = _keep_top(scores, softmax(scores) < eta, min_tokens_to_keep)
    return np.where(remove, np.float32(filter_value), scores)


def min_p_warp(scores: np.ndarray, min_p: float, filter_value: float = -float("inf"),
               min_tokens_to_keep: int = 1) -> np.ndarray:
    r"""Min-p sampling: keep the tokens at least ``min_p`` times as probable as the best one.

    .. math:: \text{remove } v \text{ if } p_v < \text{min\_p}\cdot\max_u p_u

    except the first ``min_tokens_to_keep`` tokens in descending score order (``torch.argsort``'s order:
    among equal scores the lower id comes first in rows of up to 16 entries; above, the tied tokens
    across the cut are the ones torch's CPU sort puts first, :mod:`refdecode.processors.torch_sort`).
    ``min_p = 0`` removes nothing, ``min_p = 1`` keeps only the tokens tied with the best.

    transformers **4.41** ``MinPLogitsWarper`` (newer than the pinned 4.38.2; golden-checked
    against 4.41.0). The threshold is the float32 product ``min_p * max(p)``.

    >>> s = np.log(np.array([[0.5, 0.3, 0.12, 0.08]], dtype=np.float32))
    >>> np.isfinite(min_p_warp(s, 0.2))          # threshold 0.1: 0.08 goes
    array([[ True,  True,  True, False]])
    """
    check_scores(scores)
    probs = softmax(scores)
    remove = probs < np.float32(min_p) * probs.max(axis=-1, keepdims=True)  # (B, V)
    order = np.argsort(-scores, axis=-1, kind="stable")  # (B, V) descending; ties: lower id first
    for b in range(order.shape[0]):  # tied tokens across the min_tokens_to_keep cut: torch's argsort chooses
        torch_order_at_cut(scores[b], order[b], min_tokens_to_keep, descending=True)
    np.put_along_axis(remove, order[:, :min_tokens_to_keep], False, axis=-1)  # the m best
    return np.where(remove, np.float32(filter_value), scores)


# ----------------------------------------------------------------------------------------------
# transformers-compatible classes


def _check_min_tokens_to_keep(value) -> int:
    if not is_integer(value) or value < 1:
        raise ValueError(f"`min_tokens_to_keep` has to be a positive integer (>= 1), but is {value!r}")
    return int(value)


def _check_open_unit(name: str, value) -> float:
    """A real number strictly between 0 and 1 (NaN refused)."""
    if not is_number(value) or not 0.0 < value < 1.0:
        raise ValueError(f"`{name}` has to be a float > 0 and < 1, but is {value!r}")
    return float(value)


class _CutoffWarper(LogitsWarper):
    """What the four warpers below share: ``filter_value``, ``min_tokens_to_keep`` and a call that runs their pure
    function ``warp(scores, cutoff, filter_value, min_tokens_to_keep)`` with the cutoff named by ``cutoff``."""

    warp: staticmethod
    cutoff: str  # the attribute holding the cutoff (transformers' name: mass, epsilon, min_p)

    def __init__(self, filter_value: float, min_tokens_to_keep: int):
        self.filter_value = check_filter_value(filter_value)
        self.min_tokens_to_keep = _check_min_tokens_to_keep(min_tokens_to_keep)

    def __call__(self, input_ids, scores, **kwargs):
        return self.warp(scores, getattr(self, self.cutoff), self.filter_value, self.min_tokens_to_keep)


class TypicalLogitsWarper(_CutoffWarper):
    """Typical sampling; see :func:`typical_warp`. ``mass`` (``typical_p``) in (0, 1)."""

    warp, cutoff = staticmethod(typical_warp), "mass"

    def __init__(self, mass: float = 0.9, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        self.mass = _check_open_unit("typical_p", mass)
        super().__init__(filter_value, min_tokens_to_keep)


class EpsilonLogitsWarper(_CutoffWarper):
    """Epsilon sampling; see :func:`epsilon_warp`. ``epsilon`` (``epsilon_cutoff``) in (0, 1)."""

    warp, cutoff = staticmethod(epsilon_warp), "epsilon"

    def __init__(self, epsilon: float, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        self.epsilon = _check_open_unit("epsilon_cutoff", epsilon)
        super().__init__(filter_value, min_tokens_to_keep)


class EtaLogitsWarper(_CutoffWarper):
    """Eta sampling; see :func:`eta_warp`. ``epsilon`` (``eta_cutoff``) in (0, 1)."""

    warp, cutoff = staticmethod(eta_warp), "epsilon"

    def __init__(self, epsilon: float, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        self.epsilon = _check_open_unit("eta_cutoff", epsilon)
        super().__init__(filter_value, min_tokens_to_keep)


class MinPLogitsWarper(_CutoffWarper):
    """Min-p sampling (transformers 4.41+); see :func:`min_p_warp`. ``min_p`` in [0, 1]."""

    warp, cutoff = staticmethod(min_p_warp), "min_p"

    def __init__(self, min_p: float, filter_value: float = -float("inf"), min_tokens_to_keep: int = 1):
        if not is_number(min_p) or not 0.0 <= min_p <= 1.0:
            raise ValueError(f"`min_p` has to be a float in the [0, 1] interval, but is {min_p!r}")
        self.min_p = float(min_p)
        super().__init__(filter_value, min_tokens_to_keep)
