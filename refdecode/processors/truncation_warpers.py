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

The float details (torch's softmax bit for bit, ``cumsum``'s float64 accumulator, the tie order of
``torch.sort`` on the CPU where a cut splits a tie group) come from :mod:`refdecode.numerics`, so the
bodies below read as transformers' ``__call__`` do.

Docs: docs/entropy-sampling.md.
"""

from __future__ import annotations

import numpy as np

from ..numerics import (categorical_entropy, scatter_with_torch_ties, stable_sort, torch_cumsum, torch_exp,
                        torch_log_softmax, torch_nansum, torch_softmax, torch_sqrt)
from ..validation import is_integer, is_number
from .arguments import check_filter_value, checks_distributions, checks_scores
from .logits_warp import LogitsWarper

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


@checks_scores
def typical_warp(scores: np.ndarray, mass: float, filter_value: float = -float("inf"),
                 min_tokens_to_keep: int = 1) -> np.ndarray:
    r"""Locally typical sampling: keep the tokens whose surprisal is closest to the entropy.

    .. math:: d_v = \left|-\log p_v - H\right|,\qquad H = -\sum_u p_u \log p_u

    Sort by :math:`d` ascending; with :math:`c_i` the cumulative probability of the first i+1
    sorted tokens, let :math:`n = \#\{i : c_i < \text{mass}\}` (at most V-1); keep every token
    with :math:`d_v \le d_{(n)}` (ties with the boundary kept) plus the first
    ``min_tokens_to_keep`` of the sorted order. The most probable token can be dropped (when
    it is far more probable than typical).

    transformers 4.38.2 ``TypicalLogitsWarper``, line for line. The float details come from the numerics
    wing (docs/last-bit.md): torch's log_softmax and softmax bit for bit, ``nansum``'s order of additions,
    ``cumsum`` with a float64 accumulator, ``mass`` compared as float32, ``torch.exp`` (MKL's ``vmsExp`` on
    torch's CPU build), and torch's CPU order for the tie group the ``min_tokens_to_keep`` cut splits.

    >>> s = np.log(np.array([[0.5, 0.25, 0.15, 0.1]], dtype=np.float32))   # H = 1.21 nats
    >>> typical_warp(s, 0.5)              # d = [0.52, 0.18, 0.69, 1.09]: token 1, then 0 (mass 0.75)
    array([[-0.6931472, -1.3862944,       -inf,       -inf]], dtype=float32)
    """
    normalized = torch_log_softmax(scores)
    with np.errstate(invalid="ignore"):  # -inf * 0 = NaN for removed tokens: nansum skips them, as torch's does
        ent = -torch_nansum(normalized * torch_exp(normalized))[..., None]  # entropy, (B, 1)
    shifted_scores = np.abs(-normalized - ent)
    sorted_scores, sorted_indices = stable_sort(shifted_scores, descending=False)
    sorted_logits = np.take_along_axis(scores, sorted_indices, axis=-1)
    cumulative_probs = torch_cumsum(torch_softmax(sorted_logits))
    last_ind = np.minimum((cumulative_probs < np.float32(mass)).sum(axis=-1), sorted_scores.shape[-1] - 1)
    sorted_indices_to_remove = sorted_scores > np.take_along_axis(sorted_scores, last_ind[:, None], axis=-1)
    sorted_indices_to_remove[..., :min_tokens_to_keep] = False
    # scatter sorted to original indexing (the tie group min_tokens_to_keep splits: in torch's order)
    indices_to_remove = scatter_with_torch_ties(sorted_indices_to_remove, sorted_indices, shifted_scores)
    return np.where(indices_to_remove, np.float32(filter_value), scores)


@checks_scores
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
    probabilities = torch_softmax(scores)
    indices_to_remove = probabilities < np.float32(epsilon)
    # Keep the words with the 'min_tokens_to_keep'-highest probabilities
    top_k = min(min_tokens_to_keep, scores.shape[-1])
    indices_to_remove &= scores < np.partition(scores, -top_k, axis=-1)[..., -top_k, None]  # torch.topk's k-th
    return np.where(indices_to_remove, np.float32(filter_value), scores)


@checks_scores
@checks_distributions
def eta_warp(scores: np.ndarray, epsilon: float, filter_value: float = -float("inf"),
             min_tokens_to_keep: int = 1) -> np.ndarray:
    r"""Eta sampling: epsilon sampling with a cutoff that adapts to the entropy :math:`H` of the row.

    .. math:: \eta = \min\!\left(\epsilon,\ \sqrt{\epsilon}\,e^{-H}\right),\qquad
              \text{remove } v \text{ if } p_v < \eta

    except the ``min_tokens_to_keep`` highest scores. A flat distribution (large H) gets a small
    cutoff, a peaked one the full :math:`\epsilon`. :math:`H` is computed as
    ``torch.distributions.Categorical(logits=scores).entropy()`` does (``scores - logsumexp(scores)``,
    clamped at the float32 minimum, so ``-inf`` tokens add 0; torch's sum order); ``epsilon`` is a float32
    constant. A row that is all ``-inf`` or holds NaN has no entropy: it is refused at the door
    (:func:`~refdecode.processors.arguments.checks_distributions`), as torch's ``Categorical`` refuses it.

    transformers 4.38.2 ``EtaLogitsWarper``; torch's elementwise ``exp`` and ``sqrt`` are MKL's ``vmsExp`` /
    ``vmsSqrt``, bit for bit from the numerics wing (``sqrt`` is not correctly rounded on about one input in
    six, which decides rows where :math:`\eta` lands exactly on a probability; docs/last-bit.md).

    >>> s = np.log(np.array([[0.6, 0.3, 0.06, 0.04]], dtype=np.float32))   # H = 0.98, eta = min(0.1, 0.12)
    >>> np.isfinite(eta_warp(s, 0.1))
    array([[ True,  True, False, False]])
    """
    probabilities = torch_softmax(scores)
    entropy = categorical_entropy(scores)  # torch.distributions.Categorical(logits=scores).entropy(), (B,)
    eps = np.float32(epsilon)
    eta = np.minimum(eps, torch_sqrt(eps) * torch_exp(-entropy))[..., None]  # (B, 1)
    indices_to_remove = probabilities < eta
    top_k = min(min_tokens_to_keep, scores.shape[-1])
    indices_to_remove &= scores < np.partition(scores, -top_k, axis=-1)[..., -top_k, None]  # torch.topk's k-th
    return np.where(indices_to_remove, np.float32(filter_value), scores)


@checks_scores
def min_p_warp(scores: np.ndarray, min_p: float, filter_value: float = -float("inf"),
               min_tokens_to_keep: int = 1) -> np.ndarray:
    r"""Min-p sampling: keep the tokens at least ``min_p`` times as probable as the best one.

    .. math:: \text{remove } v \text{ if } p_v < \text{min\_p}\cdot\max_u p_u

    except the first ``min_tokens_to_keep`` tokens in descending score order (``torch.argsort``'s order:
    among equal scores the lower id comes first in rows of up to 16 entries; above, the tied tokens
    across the cut are the ones torch's CPU sort puts first, :mod:`refdecode.numerics.introsort`).
    ``min_p = 0`` removes nothing, ``min_p = 1`` keeps only the tokens tied with the best.

    transformers **4.41** ``MinPLogitsWarper`` (newer than the pinned 4.38.2; golden-checked
    against 4.41.0). The threshold is the float32 product ``min_p * max(p)``.

    >>> s = np.log(np.array([[0.5, 0.3, 0.12, 0.08]], dtype=np.float32))
    >>> np.isfinite(min_p_warp(s, 0.2))          # threshold 0.1: 0.08 goes
    array([[ True,  True,  True, False]])
    """
    probs = torch_softmax(scores)
    top_probs = probs.max(axis=-1, keepdims=True)
    tokens_to_remove = probs < np.float32(min_p) * top_probs
    sorted_scores, sorted_indices = stable_sort(scores, descending=True)  # torch.argsort(scores, descending=True)
    sorted_indices_to_remove = np.take_along_axis(tokens_to_remove, sorted_indices, axis=-1)
    sorted_indices_to_remove[..., :min_tokens_to_keep] = False
    # scatter sorted to original indexing (the tie group min_tokens_to_keep splits: in torch's order)
    indices_to_remove = scatter_with_torch_ties(sorted_indices_to_remove, sorted_indices, scores, descending=True)
    return np.where(indices_to_remove, np.float32(filter_value), scores)


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
