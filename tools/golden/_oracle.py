"""What the golden scripts of this folder share: where the files go, one torch thread, the version they need,
how a file records where it came from, and the helpers that digest scores and detect near-ties.

The scripts run from the repository root in a venv with torch and transformers (``.venv-oracle/bin/python
tools/golden/make_x_golden.py``, see the README's "Regenerating golden files"). Python puts the script's own
folder first on ``sys.path``, so ``from _oracle import ...`` finds this module. Importing it sets torch to one
thread: the golden files are then the same on every machine however many cores it has.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
TIE_GAP = 1e-5  # a decision closer than this to a tie is re-drawn: torch's tie rule and refdecode's may differ there
N_TOP = 8       # digest: the best N_TOP values and ids of every step and row

torch.set_num_threads(1)


def require_transformers(version: str) -> None:
    """Stop unless the venv holds the transformers version the golden files must come from."""
    assert transformers.__version__ == version, transformers.__version__


def save_golden(path: Path, arrays: dict, format_version: int, script: str, regenerate: str, **fields) -> None:
    """``arrays`` and, stored last, "meta": JSON of the format version, the transformers and torch versions, the
    script, how to regenerate the file, then ``fields`` (cases, ...)."""
    meta = dict(format_version=format_version, transformers=transformers.__version__, torch=torch.__version__,
                script=script, regenerate=regenerate, **fields)
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(path, **arrays)


def smallest_gap(values: np.ndarray, ignore_zero_pairs: bool = False) -> float:
    """Smallest gap between neighbours along the last axis of descending rows (float64): how close a decision came to
    a tie. Two -inf are a tie (gap 0), NaN gaps are skipped; with ``ignore_zero_pairs`` two zero probabilities (a
    zero-probability tail) are not. Rows of one value: inf."""
    if values.shape[-1] < 2:
        return np.inf
    d = values[..., :-1] - values[..., 1:]
    d = np.where(np.isneginf(values[..., :-1]) & np.isneginf(values[..., 1:]), 0.0, d)
    if ignore_zero_pairs:
        d = np.where((values[..., :-1] == 0) & (values[..., 1:] == 0), np.inf, d)
    return float(np.nanmin(d))


def left_pad(prompts: list[list[int]], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Prompts of different lengths -> (input_ids, attention_mask), int64 (B, T), padded on the left with ``pad``."""
    width = max(len(p) for p in prompts)
    ids = np.full((len(prompts), width), pad, dtype=np.int64)
    mask = np.zeros((len(prompts), width), dtype=np.int64)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = p
        mask[i, width - len(p):] = 1
    return ids, mask


def digest(scores: tuple, prefix: str, arrays: dict, full: bool, int_dtype: type = np.int16) -> None:
    """Per step (S) and row (N): top-8 values/ids, -inf count, finite sum; optionally the full scores. Ids and counts
    as ``int_dtype`` (int16 for the tiny vocabularies; int32 where V = 50257 would overflow it)."""
    s = torch.stack(scores).numpy()                                             # (S, N, V)
    order = np.argsort(-s, axis=-1, kind="stable")[..., :N_TOP]
    arrays[prefix + "top_values"] = np.take_along_axis(s, order, axis=-1).astype(np.float32)
    arrays[prefix + "top_ids"] = order.astype(int_dtype)
    arrays[prefix + "n_neginf"] = np.isneginf(s).sum(axis=-1).astype(int_dtype)
    arrays[prefix + "finite_sum"] = np.where(np.isfinite(s), s, 0.0).astype(np.float64).sum(axis=-1)
    if full:
        arrays[prefix + "scores"] = s.astype(np.float32)
