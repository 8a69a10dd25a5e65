"""Solutions to tutorial 02's exercises (positions of a padded batch, the cache reorder, RoPE)."""

from __future__ import annotations

import numpy as np

from _run import check_all


def position_ids(attention_mask):
    """Count real tokens from the left: cumsum(mask) - 1; pads get 1 (as transformers' generation)."""
    mask = np.asarray(attention_mask, dtype=np.int64)
    pos = np.cumsum(mask, axis=-1) - 1      # (B, T)
    pos[mask == 0] = 1
    return pos


def reorder_rows(keys, beam_idx):
    """Gather, not scatter: new row i is old row beam_idx[i] (a row may be copied twice, another dropped)."""
    return keys[np.asarray(beam_idx)]        # (N, H, S, D)


def rope(x, position_ids, theta):
    """Pair i = entries (i, i + D/2) turns by position * theta ** (-2i / D): x * cos + rotate_half(x) * sin."""
    x = np.asarray(x, dtype=np.float32)
    D = x.shape[-1]
    inv_freq = 1.0 / np.float32(theta) ** (np.arange(0, D, 2, dtype=np.float32) / np.float32(D))    # (D/2,)
    angles = np.asarray(position_ids, dtype=np.float32)[..., None] * inv_freq                       # (B, T, D/2)
    angles = np.concatenate([angles, angles], axis=-1)[:, None]                                     # (B, 1, T, D)
    rotated = np.concatenate([-x[..., D // 2:], x[..., : D // 2]], axis=-1)                         # rotate_half
    return (x * np.cos(angles) + rotated * np.sin(angles)).astype(np.float32)


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)
