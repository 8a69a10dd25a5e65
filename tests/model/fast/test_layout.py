"""refdecode.model.fast.layout: weights loaded in the measured order hold the file's values; transpose_into is a transpose."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MODELS
from hypothesis import given
from hypothesis import strategies as st
from refdecode.model.checkpoint import read_header, read_tensor
from refdecode.model.fast import products
from refdecode.model.fast.layout import load_params_column_major, transpose_into
from refdecode.model.modeling import GPT2


@pytest.mark.parametrize("order", ["C", "F"])
def test_loaded_matrices_are_stored_in_the_measured_order_and_hold_the_file_values(monkeypatch, order):
    """Whatever the calibration finds (forced here to each order), the loader stores every product's W (the Conv1D
    weight, the head's wte.T) in that order, with the file's values; embeddings of positions stay row-major."""
    monkeypatch.setattr(products, "PLANS", {})
    monkeypatch.setattr(products, "calibrate_order", lambda shape: order)
    path = MODELS / "tiny-shakespeare" / "model.safetensors"
    model = GPT2.from_pretrained(MODELS / "tiny-shakespeare", forward="fast")
    header = read_header(path)
    w = model.params["h"][1]["mlp"]["c_fc"]["weight"]
    assert products.order_of(w) == order and products.order_of(model.params["wte"].T) == order
    assert w.dtype == np.float32 and model.params["wte"].dtype == np.float32
    stored = read_tensor(path, header["transformer.h.1.mlp.c_fc.weight"]).astype(np.float32)
    assert np.array_equal(w, stored)
    assert np.array_equal(model.params["wte"], read_tensor(path, header["transformer.wte.weight"]))
    assert model.params["wpe"].flags.c_contiguous  # position embeddings stay row-major (a row is looked up)
    plain = GPT2.from_pretrained(MODELS / "tiny-shakespeare")  # the plain forward pass reads them as stored
    assert plain.params["h"][1]["mlp"]["c_fc"]["weight"].flags.c_contiguous
    assert np.array_equal(plain.params["h"][1]["mlp"]["c_fc"]["weight"], w)


def test_the_column_major_loader_still_stores_every_matrix_column_major():
    params = load_params_column_major(MODELS / "tiny-shakespeare" / "model.safetensors",
                                      GPT2.from_pretrained(MODELS / "tiny-shakespeare").config)
    assert params["h"][0]["attn"]["c_attn"]["weight"].flags.f_contiguous and params["wte"].flags.f_contiguous


@given(st.integers(1, 70), st.integers(1, 70), st.integers(1, 20))
def test_transpose_into_is_a_transpose(rows, cols, tile):
    a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    out = np.empty((cols, rows), dtype=np.float32)
    transpose_into(out, a, tile=tile)
    assert np.array_equal(out, a.T)
