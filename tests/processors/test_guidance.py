"""refdecode.processors.guidance: classifier-free guidance mixes the two branches; golden cases in test_prompt_penalties come from the same golden file."""

from __future__ import annotations

import numpy as np
from refdecode.processors.guidance import UnbatchedClassifierFreeGuidanceLogitsProcessor
from refdecode.testing import TableModel


def test_guidance_scale_one_returns_log_softmax_and_scale_mixes_with_the_unconditional_branch():
    """TableModel: next-token logits depend on the last token only. Unconditional branch = last prompt token,
    so at the first step u = log_softmax(table[last]) and s' = g (log_softmax(s) - u) + u."""
    table = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.3, 0.3, 0.4]], dtype=np.float32))
    model = TableModel(table, eos_token_id=0)
    s = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    ls = s - np.log(np.exp(s).sum())
    one = UnbatchedClassifierFreeGuidanceLogitsProcessor(1.0, model)(np.array([[2, 1]]), s)
    np.testing.assert_allclose(one, ls, rtol=1e-6)
    out = UnbatchedClassifierFreeGuidanceLogitsProcessor(3.0, model)(np.array([[2, 1]]), s)
    u = table[1] - np.log(np.exp(table[1]).sum())
    np.testing.assert_allclose(out, 3.0 * (ls - u) + u, rtol=1e-5)
    assert out.dtype == np.float32
