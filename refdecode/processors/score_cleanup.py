r"""Score clean-up: replace non-finite scores, and renormalise to log-probabilities.

Contract: ``scores`` float32 (B, V) -> a NEW float32 (B, V) array; ``input_ids`` is ignored.

- :func:`inf_nan_remove_process` (``remove_invalid_values=True``): NaN -> 0, +-inf -> the largest /
  smallest float32, so the sampler never sees a NaN. Use it only when needed: it also turns the
  ``-inf`` of every earlier processor into a finite (if vanishing) score. In the order of
  ``generate`` it runs after all the banning processors except suppress-tokens.
- :func:`logit_normalization_process` (``renormalize_logits=True``): ``log_softmax`` again, the
  very last processor (and, for the sampling modes, also the very last warper), so that beam
  scores stay log-probabilities after processors that shift mass.

Docs: docs/bad-words-and-forcing.md (section "Clean-up").
"""

from __future__ import annotations

import numpy as np

from .logits_process import LogitsProcessor
from .logits_warp import LogitsWarper
from ..numerics import torch_log_softmax
from .arguments import check_scores

__all__ = ["inf_nan_remove_process", "logit_normalization_process", "InfNanRemoveLogitsProcessor",
           "LogitNormalization"]

_F32 = np.finfo(np.float32)


def inf_nan_remove_process(scores: np.ndarray) -> np.ndarray:
    r"""NaN -> 0.0, :math:`+\infty` -> float32 max (3.4e38), :math:`-\infty` -> float32 min (-3.4e38).

    transformers 4.38.2 ``InfNanRemoveLogitsProcessor``. A row that was all ``-inf`` becomes a row
    of equal finite scores: uniform, not "no distribution".

    >>> inf_nan_remove_process(np.array([[np.nan, np.inf, -np.inf, 1.5]], dtype=np.float32))
    array([[ 0.0000000e+00,  3.4028235e+38, -3.4028235e+38,  1.5000000e+00]], dtype=float32)
    """
    check_scores(scores)
    out = np.where(np.isnan(scores), np.float32(0.0), scores)
    out = np.where(out == np.inf, _F32.max, out)
    return np.where(out == -np.inf, _F32.min, out)


def logit_normalization_process(scores: np.ndarray) -> np.ndarray:
    r""":math:`s' = \log\mathrm{softmax}(s)`: each row becomes log-probabilities (``logsumexp = 0``).

    transformers 4.38.2 ``LogitNormalization``.

    >>> logit_normalization_process(np.array([[0.0, 0.0, -np.inf]], dtype=np.float32))
    array([[-0.6931472, -0.6931472,       -inf]], dtype=float32)
    """
    scores = check_scores(scores)
    # torch's kernel to the bit (beam scores add these up); .view keeps an ndarray subclass (a tensor shim) as given
    return torch_log_softmax(scores).view(type(scores))


class InfNanRemoveLogitsProcessor(LogitsProcessor):
    """Replace NaN and +-inf by finite values; see :func:`inf_nan_remove_process`."""

    def __call__(self, input_ids, scores, **kwargs):
        return inf_nan_remove_process(scores)


class LogitNormalization(LogitsWarper):
    """Renormalise with ``log_softmax``; see :func:`logit_normalization_process`. Both a processor and a warper."""

    def __call__(self, input_ids, scores, **kwargs):
        return logit_normalization_process(scores)
