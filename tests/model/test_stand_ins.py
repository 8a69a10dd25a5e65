"""refdecode.model.stand_ins: the stand-in models tests and docs decode with behave like a model with a KV cache."""

from __future__ import annotations

import numpy as np

from refdecode import generate, softmax
from refdecode.model.stand_ins import TOY_NEXT, TOY_WORDS, CountingModel, TableModel, toy_tree_model


def test_a_table_model_gives_the_row_of_the_last_token_as_logits():
    table = np.arange(9, dtype=np.float32).reshape(3, 3)
    model = TableModel(table)
    cache = model.new_cache(2, 8)
    out = model(np.array([[0, 2], [1, 1]]), past_key_values=cache)
    assert out.logits.dtype == np.float32 and out.logits.shape == (2, 2, 3)
    assert np.array_equal(out.logits[:, -1], table[[2, 1]])
    assert cache.length == 2


def test_a_counting_model_records_every_call_and_changes_nothing():
    inner = TableModel(np.log(np.array([[.1, .6, .3], [.2, .1, .7], [.8, .1, .1]], dtype=np.float32)))
    counting = CountingModel(inner)
    assert np.array_equal(generate(counting, np.array([[0]]), max_new_tokens=3),
                          generate(inner, np.array([[0]]), max_new_tokens=3))
    assert counting.calls == 3                          # the prompt, then one call per new token but the last


def test_the_toy_tree_holds_the_probabilities_it_documents():
    """After each listed word, softmax of the logits gives the documented next-word probabilities (and 0 elsewhere);
    after any other word, "The" with probability 1."""
    model = toy_tree_model()
    for word in TOY_WORDS:
        probs = softmax(model(np.array([[TOY_WORDS.index(word)]])).logits[0, -1])
        want = np.zeros(len(TOY_WORDS))
        for nxt, p in TOY_NEXT.get(word, {"The": 1.0}).items():
            want[TOY_WORDS.index(nxt)] = p
        np.testing.assert_allclose(probs, want, atol=1e-6, err_msg=word)
