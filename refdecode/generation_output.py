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

Like transformers' ``ModelOutput``, an output is also a read-only mapping of its fields that are not
None: ``out["sequences"]``, ``out[0]`` (the first such field), ``out.to_tuple()``, ``out.keys()``,
``"scores" in out``. :func:`compute_transition_scores` recovers each chosen token's score.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .numerics import log_softmax

__all__ = ["ModelOutput", "GenerateDecoderOnlyOutput", "GenerateBeamDecoderOnlyOutput", "compute_transition_scores"]


class ModelOutput:
    """Mapping access to a dataclass's non-None fields, in field order (transformers' ``ModelOutput``).

    >>> out = GenerateDecoderOnlyOutput(sequences=np.array([[1, 2]]))
    >>> out["sequences"].tolist(), out[0].tolist(), len(out.to_tuple()), list(out.keys()), "scores" in out
    ([[1, 2]], [[1, 2]], 1, ['sequences'], False)
    """

    def keys(self) -> list[str]:
        """Names of the fields that are not None."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]  # type: ignore[arg-type]

    def values(self) -> list[Any]:
        return [getattr(self, k) for k in self.keys()]

    def items(self) -> list[tuple[str, Any]]:
        return [(k, getattr(self, k)) for k in self.keys()]

    def to_tuple(self) -> tuple[Any, ...]:
        """The non-None fields as a tuple, in field order."""
        return tuple(self.values())

    def __getitem__(self, key: str | int | slice) -> Any:
        if isinstance(key, str):
            if key not in self.keys():
                raise KeyError(key)
            return getattr(self, key)
        return self.to_tuple()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


@dataclass
class GenerateDecoderOnlyOutput(ModelOutput):
    """Output of greedy_search and sample."""

    sequences: np.ndarray
    scores: tuple[np.ndarray, ...] | None = None
    logits: tuple[np.ndarray, ...] | None = None
    attentions: tuple[tuple[np.ndarray, ...], ...] | None = None     # per step, per layer (N, H, T, S+T)
    hidden_states: tuple[tuple[np.ndarray, ...], ...] | None = None  # per step, n_layer + 1 of (N, T, E)
    past_key_values: Any = None


@dataclass
class GenerateBeamDecoderOnlyOutput(ModelOutput):
    """Output of beam_search, beam_sample and group_beam_search."""

    sequences: np.ndarray
    sequences_scores: np.ndarray | None = None
    scores: tuple[np.ndarray, ...] | None = None
    logits: tuple[np.ndarray, ...] | None = None
    beam_indices: np.ndarray | None = None
    attentions: tuple[tuple[np.ndarray, ...], ...] | None = None     # per step, per layer (B*K, H, T, S+T)
    hidden_states: tuple[tuple[np.ndarray, ...], ...] | None = None  # per step, n_layer + 1 of (B*K, T, E)
    past_key_values: Any = None


# ---- per-token scores of the chosen tokens


def compute_transition_scores(sequences: np.ndarray, scores: tuple[np.ndarray, ...],
                              beam_indices: np.ndarray | None = None, normalize_logits: bool = False) -> np.ndarray:
    r"""The score of each generated token under the step that chose it, as 4.38.2's ``compute_transition_scores``.

    Args:
        sequences: int (N, T_out) from ``generate`` (prompt included).
        scores: the output's ``scores``: S steps of float (rows, V) arrays (rows = N, or B*K for beams).
        beam_indices: int (N, >= S) from a beam output (-1 after a sequence ended), or None for greedy /
            sample (row i took its scores from row i at every step).
        normalize_logits: apply log-softmax over V to each step's scores first.

    Returns:
        float (N, L), L = the longest generated length: ``out[i, t] = scores[t][b, sequences[i, T_out - L + t]]``
        with ``b = beam_indices[i, t]``; 0 where the sequence had already ended (beam index -1).
        For beam search, ``out.sum(1) / L_i ** length_penalty`` gives back ``sequences_scores``.

    >>> steps = (np.log(np.array([[.5, .3, .2]], dtype=np.float32)), np.log(np.array([[.1, .1, .8]], dtype=np.float32)))
    >>> np.exp(compute_transition_scores(np.array([[2, 0, 2]]), steps)).round(2)   # prompt [2], then tokens 0, 2
    array([[0.5, 0.8]], dtype=float32)
    """
    if len(scores) == 0:
        raise ValueError("`scores` is empty: generate with `return_dict_in_generate=True, output_scores=True`")
    rows, vocab = scores[0].shape
    if beam_indices is None:  # greedy / sample: the same row at every step
        beam_indices = np.broadcast_to(np.arange(rows)[:, None], (rows, len(scores)))
    stacked = np.stack(scores).reshape(len(scores), -1).T  # S x (rows, V) -> (rows*V, S)
    if normalize_logits:
        stacked = log_softmax(stacked.reshape(rows, vocab, -1), axis=1).reshape(rows * vocab, -1)
    beam_indices = np.asarray(beam_indices)
    ended = beam_indices < 0                              # (N, >=S)
    length = int((~ended).sum(-1).max())                              # L: longest generated length
    beam_rows = np.where(ended[:, :length], 0, beam_indices[:, :length])  # (N, L); ended -> row 0, masked below
    cut = sequences.shape[-1] - length
    flat = sequences[:, cut:] + beam_rows * vocab                     # (N, L) index into (rows*V)
    out = np.take_along_axis(stacked[:, :length], flat, axis=0)       # out[i, t] = stacked[flat[i, t], t]
    return np.where(ended[:, :length], out.dtype.type(0), out)
