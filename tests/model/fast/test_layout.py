"""refdecode.model.fast.layout: weights loaded column-major hold the file's values; transpose_into is a transpose."""

from __future__ import annotations

import numpy as np
from conftest import MODELS
from hypothesis import given
from hypothesis import strategies as st
from refdecode.model.checkpoint import read_header, read_tensor
from refdecode.model.fast.layout import transpose_into
from refdecode.model.modeling import GPT2


def test_loaded_matrices_are_column_major_and_hold_the_file_values():
    path = MODELS / "tiny-shakespeare" / "model.safetensors"
    model = GPT2.from_pretrained(MODELS / "tiny-shakespeare", forward="fast")
    header = read_header(path)
    w = model.params["h"][1]["mlp"]["c_fc"]["weight"]
    assert w.flags.f_contiguous and w.dtype == np.float32
    stored = read_tensor(path, header["transformer.h.1.mlp.c_fc.weight"]).astype(np.float32)
    assert np.array_equal(w, stored)
    assert model.params["wpe"].flags.c_contiguous  # position embeddings stay row-major (a row is looked up)
    plain = GPT2.from_pretrained(MODELS / "tiny-shakespeare")  # the plain forward pass reads them as stored
    assert plain.params["h"][1]["mlp"]["c_fc"]["weight"].flags.c_contiguous
    assert np.array_equal(plain.params["h"][1]["mlp"]["c_fc"]["weight"], w)


@given(st.integers(1, 70), st.integers(1, 70), st.integers(1, 20))
def test_transpose_into_is_a_transpose(rows, cols, tile):
    a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    out = np.empty((cols, rows), dtype=np.float32)
    transpose_into(out, a, tile=tile)
    assert np.array_equal(out, a.T)
