"""Golden decode files of transformers 4.38.2 (tools/golden/make_decode_golden.py and friends): load them, replay
transformers' draws, compare sequences exactly and scores within ATOL, printing the first values on failure."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
from conftest import GOLDEN

from refdecode import from_pretrained
from refdecode.model.modeling import GPT2

ATOL = 1e-4


@cache
def golden(name: str) -> tuple[dict, dict]:
    with np.load(GOLDEN / name) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(str(arrays.pop("meta"))), arrays


@cache
def golden_model(name: str) -> GPT2:
    return GPT2.from_pretrained(GOLDEN / "models" / name)


@cache
def any_model(name: str):
    """A golden checkpoint of any family (GPT-2 or Llama), by its directory's model_type."""
    return from_pretrained(GOLDEN / "models" / name)


class CopiesComputedAlike:
    """A golden model whose copies of one beam (rows with the same tokens and mask so far) get the same logits.

    Beam sample can hold several copies of one beam, and orders them by their scores: an exact tie, decided by
    the lower flat index, when the copies' logits are bit-identical, as they were in transformers' golden runs.
    Some BLAS kernels do not compute identical rows identically (OpenBLAS's Haswell and Zen sgemm kernels give
    a row's last bit by its position in the batch; its SkylakeX and Sandybridge kernels do not: measured on
    this repository's beam-sample goldens, 6 of them replay only under the latter), so on those machines the copies differ in the last bit and
    the tie goes by that bit instead. This stand-in gives every copy the logits of the first row with its
    history, which is what a row-invariant matmul computes: the replay then tests the rule, not the BLAS.
    """

    def __init__(self, model: GPT2):
        self.model, self.config = model, model.config
        self.histories: dict[int, np.ndarray] = {}                    # id(cache) -> (B, S) tokens

    def new_cache(self, batch_size: int, capacity: int):
        return self._tracked(self.model.new_cache(batch_size, capacity), np.zeros((batch_size, 0), np.int64))

    def _tracked(self, cache, history: np.ndarray):
        """The cache, its reorder and expand also reordering / repeating the rows' histories."""
        reorder, expand = cache.reorder, cache.expand
        self.histories[id(cache)] = history

        def reorder_with_history(beam_idx: np.ndarray) -> None:
            reorder(beam_idx)
            self.histories[id(cache)] = self.histories[id(cache)][beam_idx]

        def expand_with_history(num_beams: int):
            return self._tracked(expand(num_beams), np.repeat(self.histories[id(cache)], num_beams, axis=0))
        cache.reorder, cache.expand = reorder_with_history, expand_with_history
        return cache

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray | None = None, past_key_values=None,
                 **kwargs):
        out = self.model(input_ids, attention_mask=attention_mask, past_key_values=past_key_values, **kwargs)
        if past_key_values is None or id(past_key_values) not in self.histories:
            return out                                                 # a call outside the decode loop's cache
        history = np.concatenate([self.histories[id(past_key_values)], input_ids], axis=1)  # (B, S + T)
        self.histories[id(past_key_values)] = history
        seen = history if attention_mask is None else np.concatenate([history, attention_mask], axis=1)
        _, group_of_row = np.unique(seen, axis=0, return_inverse=True)  # rows with the same tokens and mask
        leader: dict[int, int] = {}
        for row, group in enumerate(group_of_row.ravel()):
            out.logits[row] = out.logits[leader.setdefault(int(group), row)]
        return out

    def __getattr__(self, name: str):
        return getattr(self.model, name)


def check(name: str, ours: np.ndarray, ref: np.ndarray, exact: bool) -> None:
    """Compare, printing max abs diff and first values on failure (as llm.c's check_tensor)."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{name}: shape {ours.shape} != golden {ref.shape}"
    if exact:
        assert np.array_equal(ours, ref), f"{name}: differs\n ours={ours.tolist()}\n gold={ref.tolist()}"
        return
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(ours), finite) and np.array_equal(ours[~finite], ref[~finite]), \
        f"{name}: non-finite entries differ"
    diff = np.abs(ours[finite].astype(np.float64) - ref[finite]) if finite.any() else np.zeros(1)
    assert diff.max() <= ATOL, (f"{name}: max abs diff {diff.max():.3g} > {ATOL}\n ours={ours.ravel()[:6]}\n"
                                f" gold={ref.ravel()[:6]}")


def check_scores(cid: str, scores: tuple, arrays: dict) -> None:
    s = np.stack(scores)                                                   # (S, N, V)
    assert s.dtype == np.float32
    ids = arrays[f"{cid}/top_ids"].astype(np.int64)
    assert s.shape[:2] == ids.shape[:2], f"{cid}: {s.shape[:2]} steps/rows != golden {ids.shape[:2]}"
    check(f"{cid} scores (golden top-8)", np.take_along_axis(s, ids, axis=-1), arrays[f"{cid}/top_values"], False)
    check(f"{cid} max score", s.max(axis=-1), arrays[f"{cid}/top_values"][..., 0], False)
    check(f"{cid} number of -inf", np.isneginf(s).sum(axis=-1), arrays[f"{cid}/n_neginf"], True)
    finite_sum = np.where(np.isfinite(s), s, 0.0).astype(np.float64).sum(axis=-1)
    np.testing.assert_allclose(finite_sum, arrays[f"{cid}/finite_sum"], atol=2e-3, err_msg=f"{cid} finite sum")
    if f"{cid}/scores" in arrays:
        check(f"{cid} full scores", s, arrays[f"{cid}/scores"], False)


def replay(arrays: dict, cid: str, n_draws: int):
    """A draw function returning transformers' recorded multinomial outputs, in order."""
    draws = [arrays[f"{cid}/draw{i:02d}"].astype(np.int64) for i in range(n_draws)]

    def draw(probs, num_samples, replacement, rng):
        assert draws, "more draws than transformers made"
        d = draws.pop(0)
        assert d.shape == (probs.shape[0], num_samples)
        assert (np.take_along_axis(probs, d, axis=1) > 0).all(), "replayed token has zero probability here"
        return d
    draw.remaining = draws
    return draw
