"""refdecode.reference.conformance.toy_model: the toy model's state is a hash of the row, and its cache agrees with the whole row."""

from __future__ import annotations

import numpy as np
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.toy_model import ToyModel, toy_hash
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


def test_toy_model_state_is_the_fnv_hash_of_the_row():
    """logits = bigram[last] + mix[h mod M], h = FNV-1a over every token; checked by hand for [2, 0]."""
    bigram = np.arange(9, dtype=np.float32).reshape(3, 3)
    mix = np.array([[0.5, 0, 0], [0, 0.25, 0], [0, 0, 0.125]], dtype=np.float32)
    h = ((((2166136261 ^ 2) * 16777619) % 2**32) ^ 0) * 16777619 % 2**32
    assert toy_hash([2, 0]) == h
    logits = ToyModel(bigram, mix)(np.array([[2, 0]])).logits
    assert logits.dtype == np.float32
    np.testing.assert_array_equal(logits[0, -1], bigram[0] + mix[h % 3])


def test_toy_model_cache_gives_the_same_logits_as_the_whole_row():
    """Incremental (cached) calls equal one call on the whole row; reorder moves the state with the rows."""
    rng = np.random.default_rng(0)
    model = ToyModel(rng.standard_normal((5, 5)).astype(np.float32), rng.standard_normal((7, 5)).astype(np.float32))
    rows = np.array([[1, 2, 3, 4], [4, 3, 2, 1]])
    cache = model.new_cache(2, 8)
    model(rows[:, :2], past_key_values=cache)
    step = model(rows[:, 2:], past_key_values=cache).logits
    np.testing.assert_array_equal(step, model(rows).logits[:, 2:])
    cache.reorder(np.array([1, 1]))
    np.testing.assert_array_equal(model(np.array([[0], [0]]), past_key_values=cache).logits[:, 0],
                                  model(np.array([[4, 3, 2, 1, 0]])).logits[[0, 0], -1])


def test_prompt_lookup_runs_on_the_toy_model_and_gives_greedy_searchs_tokens():
    """prompt lookup with the documented ToyModel failed on a missing ``crop``; the cache now keeps
    the tokens, and cropping recomputes the hash of the shorter rows."""
    from refdecode import generate
    from refdecode.reference.conformance.toy_model import ToyModel, toy_hash

    rng = np.random.default_rng(0)
    for _ in range(5):
        toy = ToyModel(rng.standard_normal((6, 6)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32))
        prompt = rng.integers(0, 5, (1, 6))
        lookup = generate(toy, prompt, max_new_tokens=8, eos_token_id=5, prompt_lookup_num_tokens=3)
        assert np.array_equal(lookup, generate(toy, prompt, max_new_tokens=8, eos_token_id=5))
    cache = toy.new_cache(1, 16)
    toy(np.array([[1, 2, 3, 4]]), past_key_values=cache)
    cache.crop(2)
    assert cache.length == 2 and cache.h.tolist() == [toy_hash([1, 2])] and cache.last.tolist() == [2]
