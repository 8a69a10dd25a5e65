"""Tests for refdecode/processors/score_cleanup.py: golden parity with transformers 4.38.2 and the definitions."""

from __future__ import annotations

import numpy as np
import pytest
from processor_golden import check_standalone, standalone_cases

from refdecode.processors.score_cleanup import InfNanRemoveLogitsProcessor, LogitNormalization


@pytest.mark.parametrize("case, arrays", standalone_cases("processors_more.npz",
                                                          {"InfNanRemoveLogitsProcessor", "LogitNormalization"}))
def test_golden(case, arrays):
    check_standalone(case, arrays)


def test_inf_nan_remove_gives_finite_scores_and_keeps_the_finite_ones():
    s = np.array([[np.nan, np.inf, -np.inf, 2.5]], dtype=np.float32)
    out = InfNanRemoveLogitsProcessor()(None, s)
    assert np.isfinite(out).all() and out[0, 3] == 2.5 and out[0, 0] == 0.0 and out.dtype == np.float32
    assert np.isnan(s[0, 0])     # input untouched


def test_logit_normalization_rows_sum_to_one_in_probability():
    s = np.random.default_rng(0).normal(size=(3, 7)).astype(np.float32)
    out = LogitNormalization()(None, s)
    np.testing.assert_allclose(np.exp(out.astype(np.float64)).sum(axis=-1), 1.0, rtol=1e-6)
    assert out.dtype == np.float32


def test_scores_must_be_float32():
    with pytest.raises(TypeError, match="`scores`"):
        LogitNormalization()(None, np.zeros((1, 3)))
