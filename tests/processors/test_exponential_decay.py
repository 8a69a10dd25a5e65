"""Tests for refdecode/processors/exponential_decay.py: golden parity with transformers 4.38.2, the equation, validation."""

from __future__ import annotations

import numpy as np
import pytest
from processor_golden import check_standalone, standalone_cases

from refdecode.processors.exponential_decay import ExponentialDecayLengthPenalty, exponential_decay_length_penalty_process


@pytest.mark.parametrize("case, arrays", standalone_cases("processors_more.npz", {"ExponentialDecayLengthPenalty"}))
def test_golden(case, arrays):
    check_standalone(case, arrays)


def test_golden_count():
    assert len(standalone_cases("processors_more.npz", {"ExponentialDecayLengthPenalty"})) >= 24


def test_starts_after_start_index_generated_tokens_and_grows_exponentially():
    """start_index=1 with a 2-token prompt: regulation_start 3; T=3 unchanged, T=4 factor 2^1-1, T=5 2^2-1."""
    proc = ExponentialDecayLengthPenalty((1, 2.0), eos_token_id=0, input_ids_seq_length=2)
    s = np.array([[1.0, 5.0]], dtype=np.float32)
    got = [proc(np.zeros((1, t), dtype=np.int64), s)[0, 0] for t in (3, 4, 5)]
    assert got == [1.0, 2.0, 4.0]
    neg = exponential_decay_length_penalty_process(np.zeros((1, 5), dtype=np.int64), np.array([[-1.0, 0.0]], dtype=np.float32),
                                                   3, 2.0, 0)
    assert neg.tolist() == [[2.0, 0.0]] and neg.dtype == np.float32    # -1 + |-1| * 3: negative scores rise too


@pytest.mark.parametrize("pair", [(1,), (-1, 1.5), (1, 0.0), (1.5, 2.0), "12", (True, 2.0)])
def test_invalid_pair_names_the_argument(pair):
    with pytest.raises(ValueError, match="`exponential_decay_length_penalty`"):
        ExponentialDecayLengthPenalty(pair, 0, 3)


def test_a_factor_past_float64_is_a_value_error_naming_the_argument():
    """1e10 ** 40 overflows Python's float (transformers 4.38.2 raises OverflowError from the same pow); a huge but
    finite factor is float32 inf, as torch's product with a Python scalar gives."""
    proc = ExponentialDecayLengthPenalty((0, 1e10), eos_token_id=0, input_ids_seq_length=1)
    s = np.array([[1.0, 5.0]], dtype=np.float32)
    with pytest.raises(ValueError, match="`exponential_decay_length_penalty`.*overflows float64"):
        proc(np.zeros((1, 42), dtype=np.int64), s)
    assert proc(np.zeros((1, 6), dtype=np.int64), s)[0, 0] == np.inf   # 1e50: finite in float64, inf in float32
