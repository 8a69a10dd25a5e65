"""refdecode.model.fast.products: every candidate computes x @ W; the calibration picks the fastest, keeps it, never
offers what cannot run, drops what raises, and keeps plain x @ W among the candidates."""

from __future__ import annotations

import types

import numpy as np
import pytest
from numeric_checks import rel_err

from refdecode.model.fast import products

RTOL = 1e-5  # another kernel groups the sums differently: float32 rounding


@pytest.fixture
def fresh(monkeypatch):
    """An empty plan table, small scratch memory, and every matrix calibrated (not only those over 1 MiB)."""
    monkeypatch.setattr(products, "PLANS", {})
    monkeypatch.setattr(products, "MIN_CALIBRATED_BYTES", 0)
    monkeypatch.setattr(products, "_scratch", lambda: np.full(1 << 16, 0.01, dtype=np.float32))


@pytest.mark.parametrize("form", list(products.FORMS))
@pytest.mark.parametrize("pad", [1, 4])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 11, 16])
def test_every_form_is_x_at_w(form, pad, rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 96), dtype=np.float32)
    for order in ("C", "F") if form != "blocks" else ("F",):  # blocks read W^T's rows: a column-major W
        w = np.asarray(rng.standard_normal((96, 700), dtype=np.float32), order=order)
        got = products.FORMS[form](products.padded(x, pad), w)[:rows]
        assert got.shape == (rows, 700) and got.dtype == np.float32
        assert rel_err(got, x.astype(np.float64) @ w.astype(np.float64)) <= RTOL


def test_padded_appends_zero_rows_to_a_multiple():
    x = np.ones((11, 3), dtype=np.float32)
    p = products.padded(x, 4)
    assert p.shape == (12, 3) and p.dtype == np.float32 and np.array_equal(p[:11], x) and not p[11].any()
    assert products.padded(x, 1) is x and products.padded(p, 4) is p


@pytest.mark.parametrize("rows, bucket", [(1, 1), (2, 4), (3, 4), (4, 4), (5, 16), (11, 16), (16, 16)])
def test_row_buckets(rows, bucket):
    assert products.row_bucket(rows) == bucket


@pytest.mark.parametrize("rows", [0, products.FEW_ROWS + 1])
def test_row_bucket_rejects_counts_outside_the_few_rows(rows):
    with pytest.raises(ValueError, match="`rows` has to be in"):
        products.row_bucket(rows)


def test_fastest_takes_the_least_time_and_drops_a_candidate_that_raises(monkeypatch):
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(products, "time", types.SimpleNamespace(thread_time=lambda: clock.now))
    cost = {"plain": 3.0, "quick": 1.0, "slow": 5.0}

    def run(c):
        if c == "broken":
            raise RuntimeError("a kernel that behaves differently")
        clock.now += cost[c]

    assert products._fastest(["plain", "broken", "quick", "slow"], run) == "quick"
    cost["quick"] = 9.0
    assert products._fastest(["plain", "broken", "quick", "slow"], run) == "plain"


def test_calibrate_rows_offers_plain_matmul_never_blocks_on_a_row_major_w_and_keeps_its_choice(fresh, monkeypatch):
    seen = []
    fastest = products._fastest
    monkeypatch.setattr(products, "_fastest", lambda candidates, run: seen.append(candidates) or fastest(candidates, run))
    plan = products.calibrate_rows((96, 700), "C", 16, False)
    assert ("matmul", 1, False) in seen[0]
    assert all(form != "blocks" for form, _, _ in seen[0]) and {p for _, p, _ in seen[0]} == {1, 4}
    assert plan in seen[0] and products.PLANS[(96, 700, "C", 16, False)] == plan
    assert products.calibrate_rows((96, 700), "C", 16, False) == plan and len(seen) == 1  # measured once
    products.calibrate_rows((96, 700), "C", 4, True)  # the head: the row-major copy's blocks are a candidate too
    assert ("blocks", 1, True) in seen[1] and ("matmul", 1, False) in seen[1]


def test_a_form_that_raises_is_not_chosen_and_the_product_still_holds(fresh, monkeypatch):
    def broken(x, w):
        raise RuntimeError("a kernel that behaves differently")

    monkeypatch.setitem(products.FORMS, "transposed", broken)
    monkeypatch.setitem(products.FORMS, "blocks", broken)
    x = np.random.default_rng(0).standard_normal((11, 96), dtype=np.float32)
    w = np.asfortranarray(np.random.default_rng(1).standard_normal((96, 700), dtype=np.float32))
    got = products.product(x, w)
    assert products.PLANS[(96, 700, "F", 16, False)][0] == "matmul"
    assert got.shape == (11, 700) and rel_err(got, x @ w) <= RTOL


def test_calibrate_order_picks_an_order_and_plans_one_row(fresh):
    order = products.calibrate_order((96, 700))
    assert order in ("C", "F") and products.storage_order((96, 700)) == order
    form, pad, use_other = products.PLANS[(96, 700, order, 1, False)]
    assert form in ("matmul", "transposed") and pad == 1 and not use_other


def test_small_matrices_are_not_measured(monkeypatch):
    monkeypatch.setattr(products, "PLANS", {})
    monkeypatch.setattr(products, "_scratch", lambda: pytest.fail("a small matrix was measured"))
    assert products.calibrate_order((64, 64)) == "C"
    assert products.calibrate_rows((64, 64), "F", 4, True) == ("matmul", 1, False)


def test_scratch_views_are_matrices_of_the_shape_in_the_order_inside_the_buffer():
    buffer = np.zeros(1000, dtype=np.float32)
    for order in ("C", "F"):
        views = products.scratch_views((10, 30), order, buffer)
        assert len(views) == 3 and all(v.shape == (10, 30) and products.order_of(v) == order for v in views)
        assert all(np.shares_memory(v, buffer) for v in views)
    big = products.scratch_views((10, 500), "C", buffer)  # more than the buffer: cut to the columns that fit
    assert len(big) == 1 and big[0].shape == (10, 100)


def test_product_of_other_strides_or_many_rows_is_plain_matmul(monkeypatch):
    monkeypatch.setattr(products, "calibrate_rows", lambda *a: pytest.fail("measured"))
    rng = np.random.default_rng(2)
    w = rng.standard_normal((40, 60), dtype=np.float32)[:, ::2]  # neither row- nor column-major
    x = rng.standard_normal((3, 40), dtype=np.float32)
    assert np.array_equal(products.product(x, w), x @ w)
    many = rng.standard_normal((products.FEW_ROWS + 1, 40), dtype=np.float32)
    w2 = np.ascontiguousarray(w)
    assert np.array_equal(products.product(many, w2), many @ w2)
