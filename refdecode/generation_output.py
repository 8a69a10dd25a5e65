r"""What the decode loops return with ``return_dict_in_generate=True`` (transformers 4.38.2 output classes).

Contract: plain containers, no logic. Field meanings as transformers:

- ``sequences`` int64 (N, T_out): prompt + generated tokens (N = B*R rows, grouped per prompt).
- ``scores``: tuple with one float32 (rows, V) array per generated step, or None. Greedy/sample:
  the processed (and, for sampling, warped) scores, ``-inf`` where a token was filtered. Beam
  modes: the processed log-probabilities of the step, **not** accumulated (#14654); rows are
  all B*K beams.
- ``logits``: tuple of the raw last-position logits per step (``output_logits=True``), or None.
- beam modes also: ``sequences_scores`` float32 (N,) length-penalised scores, and
  ``beam_indices`` int64 (N, T_out) -- at each generated step the beam row the token came from,
  -1 after the end. Both None unless ``output_scores=True``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["GenerateDecoderOnlyOutput", "GenerateBeamDecoderOnlyOutput"]


@dataclass
class GenerateDecoderOnlyOutput:
    """Output of greedy_search and sample."""

    sequences: np.ndarray
    scores: tuple[np.ndarray, ...] | None = None
    logits: tuple[np.ndarray, ...] | None = None
    past_key_values: Any = None


@dataclass
class GenerateBeamDecoderOnlyOutput:
    """Output of beam_search, beam_sample and group_beam_search."""

    sequences: np.ndarray
    sequences_scores: np.ndarray | None = None
    scores: tuple[np.ndarray, ...] | None = None
    logits: tuple[np.ndarray, ...] | None = None
    beam_indices: np.ndarray | None = None
    past_key_values: Any = None
