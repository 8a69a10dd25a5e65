"""refdecode.model.kv_cache.KVCache: layout, O(1) appends into preallocated slots, growth, reorder, expand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refdecode.model.kv_cache import KVCache


def filled(batch_size: int, length: int, n_layer: int = 2, capacity: int = 8) -> KVCache:
    """A cache whose key at (layer l, row b, position s) is 100*l + 10*b + s (values: the negative)."""
    cache = KVCache(n_layer=n_layer, batch_size=batch_size, n_head=2, head_dim=3, capacity=capacity)
    for s in range(length):
        for layer in range(n_layer):
            k = (100 * layer + 10 * np.arange(batch_size) + s).astype(np.float32)
            k = np.broadcast_to(k[:, None, None, None], (batch_size, 2, 1, 3))  # (B, H, T=1, D)
            cache.append(layer, k, -k)
        cache.advance(1)
    return cache


def ids(cache: KVCache, layer: int = 0) -> list[list[int]]:
    """The stored key numbers per row, (B, S)."""
    return cache.keys(layer)[:, 0, :, 0].astype(int).tolist()


def test_layout_and_dtype():
    cache = KVCache(n_layer=3, batch_size=2, n_head=4, head_dim=5, capacity=7)
    assert (cache.n_layer, cache.batch_size, cache.n_head, cache.head_dim) == (3, 2, 4, 5)
    assert (cache.length, cache.capacity) == (0, 7)
    assert cache.keys(0).shape == (2, 4, 0, 5) and cache.keys(0).dtype == np.float32
    assert cache._k[0].shape == (2, 4, 7, 5)  # (B, H, S_max, D), preallocated


def test_append_writes_in_place_without_reallocating():
    cache = filled(batch_size=2, length=3)
    store = cache._k[0]
    k = np.full((2, 2, 2, 3), 7.0, dtype=np.float32)
    keys, values = cache.append(0, k, k)
    assert keys.shape == (2, 2, 5, 3) and np.shares_memory(keys, store)  # a view, no concatenation
    assert cache.length == 3  # advance() is the caller's job, once per forward pass
    cache.append(1, k, k)
    cache.advance(2)
    assert ids(cache) == [[0, 1, 2, 7, 7], [10, 11, 12, 7, 7]]
    assert ids(cache, 1) == [[100, 101, 102, 7, 7], [110, 111, 112, 7, 7]]
    assert (-cache.values(0)[:, 0, :3, 0]).astype(int).tolist() == [[0, 1, 2], [10, 11, 12]]


def test_growth_doubles_and_keeps_content():
    cache = filled(batch_size=2, length=3, capacity=4)
    cache.append(0, np.zeros((2, 2, 2, 3), np.float32), np.zeros((2, 2, 2, 3), np.float32))  # 3 + 2 > 4
    assert cache._k[0].shape[2] == 8  # doubled
    assert ids(cache)[0][:3] == [0, 1, 2]


def test_reorder_seed_003_example():
    """The neural-speed article: beams [0, 1, 2, 3] -> [0, 1, 1, 2]. Copying slot by slot in place would overwrite old
    beam 2 (needed by new beam 3) when copying 1 -> 2 first; gathering first makes the order irrelevant."""
    cache = filled(batch_size=4, length=3)
    cache.reorder(np.array([0, 1, 1, 2]))
    assert [row[0] for row in ids(cache)] == [0, 10, 10, 20]
    assert [row[0] for row in ids(cache, 1)] == [100, 110, 110, 120]
    cache = filled(batch_size=4, length=3)
    cache.reorder(np.array([2, 1, 1, 0]))
    assert ids(cache) == [[20, 21, 22], [10, 11, 12], [10, 11, 12], [0, 1, 2]]
    assert (-cache.values(1)[:, 0, 0, 0]).astype(int).tolist() == [120, 110, 110, 100]


def test_reorder_is_in_place():
    cache = filled(batch_size=3, length=2)
    store = cache._k[0]
    cache.reorder(np.array([1, 1, 1]))
    assert cache._k[0] is store and ids(cache) == [[10, 11]] * 3


@pytest.mark.parametrize("beam_idx, error, match", [
    (np.array([0, 1]), ValueError, r"beam_idx.*\(3,\)"),
    (np.array([0, 1, 3]), ValueError, r"beam_idx.*\[0, 3\)"),
    (np.array([0, -1, 2]), ValueError, r"beam_idx.*\[0, 3\)"),
    (np.array([0.0, 1.0, 2.0]), TypeError, "beam_idx.*integer"),
])
def test_reorder_rejects_bad_indices(beam_idx, error, match):
    with pytest.raises(error, match=match):
        filled(batch_size=3, length=1).reorder(beam_idx)


def test_expand_is_repeat_interleave_and_a_new_cache():
    cache = filled(batch_size=2, length=2)
    beams = cache.expand(3)
    assert beams is not cache and beams.batch_size == 6 and beams.length == 2
    assert ids(beams) == [[0, 1]] * 3 + [[10, 11]] * 3  # row b -> rows b*K .. b*K + K - 1
    assert beams.capacity == cache.capacity
    beams.reorder(np.array([5, 4, 3, 2, 1, 0]))
    assert ids(cache) == [[0, 1], [10, 11]]  # the original is untouched


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_expand_rejects_bad_num_beams(bad):
    with pytest.raises(ValueError, match="num_beams"):
        filled(batch_size=1, length=1).expand(bad)


def test_constructor_and_append_checks():
    with pytest.raises(ValueError, match="capacity.*>= 1.*0"):
        KVCache(n_layer=1, batch_size=1, n_head=1, head_dim=1, capacity=0)
    cache = KVCache(n_layer=1, batch_size=2, n_head=1, head_dim=1, capacity=2)
    with pytest.raises(ValueError, match="layer.*\\[0, 1\\).*1"):
        cache.append(1, np.zeros((2, 1, 1, 1), np.float32), np.zeros((2, 1, 1, 1), np.float32))
    with pytest.raises(ValueError, match=r"shape \(2, 1, T, 1\)"):
        cache.append(0, np.zeros((3, 1, 1, 1), np.float32), np.zeros((3, 1, 1, 1), np.float32))


# ---- crop (speculative and prompt-lookup decoding)


def append_tokens(cache: KVCache, kv: np.ndarray) -> None:
    """Append (L, 2, B, H, T, D) keys/values, every layer, then advance by T."""
    for layer in range(cache.n_layer):
        cache.append(layer, kv[layer, 0], kv[layer, 1])
    cache.advance(kv.shape[-2])


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data(), st.integers(1, 3), st.integers(1, 6))
def test_crop_then_append_equals_never_having_appended(chunks, data, new_len, capacity):
    """Drafted tokens that are rejected leave no trace: after crop(n) and a new append, every layer's keys and
    values equal those of a cache that only ever saw the first n tokens and the new ones (capacity small so
    the doubling also happens after a crop)."""
    rng = np.random.default_rng(sum(chunks) + 7 * new_len)
    L, B, H, D = 2, 2, 2, 3
    seen = rng.standard_normal((L, 2, B, H, sum(chunks), D)).astype(np.float32)   # (L, k/v, B, H, S, D)
    new = rng.standard_normal((L, 2, B, H, new_len, D)).astype(np.float32)
    keep = data.draw(st.integers(0, sum(chunks)), label="keep")
    cropped = KVCache(L, B, H, D, capacity)
    start = 0
    for n in chunks:
        append_tokens(cropped, seen[..., start : start + n, :])
        start += n
    cropped.crop(keep)
    append_tokens(cropped, new)
    fresh = KVCache(L, B, H, D, capacity)
    if keep:
        append_tokens(fresh, seen[..., :keep, :])
    append_tokens(fresh, new)
    assert cropped.length == fresh.length == keep + new_len
    for layer in range(L):
        np.testing.assert_array_equal(cropped.keys(layer), fresh.keys(layer))
        np.testing.assert_array_equal(cropped.values(layer), fresh.values(layer))
        assert cropped.keys(layer).dtype == np.float32


def test_crop_keeps_the_prefix_and_is_in_place():
    cache = filled(batch_size=2, length=4)
    store = cache._k[0]
    cache.crop(2)
    assert cache.length == 2 and ids(cache) == [[0, 1], [10, 11]] and cache._k[0] is store
    cache.crop(2)  # cropping to the current length changes nothing
    assert ids(cache) == [[0, 1], [10, 11]]
    cache.crop(0)
    assert cache.length == 0 and cache.keys(1).shape == (2, 2, 0, 3)


@pytest.mark.parametrize("bad", [-1, 5, 1.0, True, "2"])
def test_crop_rejects_lengths_outside_what_is_held(bad):
    cache = filled(batch_size=1, length=4)
    with pytest.raises(ValueError, match=r"`length` must be an integer in \[0, 4\]"):
        cache.crop(bad)
    assert cache.length == 4
