"""refdecode.processors.guidance: classifier-free guidance mixes the two branches; golden cases in test_prompt_penalties come from the same golden file."""

from __future__ import annotations

import numpy as np
from refdecode.processors.guidance import UnbatchedClassifierFreeGuidanceLogitsProcessor
from refdecode.model.stand_ins import TableModel


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


def test_any_callable_model_and_scores_with_more_axes_as_transformers_tests_use_them():
    """4.38.2's own test passes a plain function returning ``.logits`` (1, 1, 3) and scores of
    shape (1, 1, 3); refdecode required a refdecode model (``new_cache``) and (N, V) scores."""
    from types import SimpleNamespace

    from refdecode import UnbatchedClassifierFreeGuidanceLogitsProcessor, log_softmax

    uncond = np.array([[[1.0, 0.0, 1.5]]], dtype=np.float32)
    cond = np.array([[[1.0, 1.0, 1.0]]], dtype=np.float32)
    seen = []

    def dummy_model(input_ids, attention_mask, use_cache=True, past_key_values=None):
        seen.append((input_ids.tolist(), attention_mask.tolist(), use_cache, past_key_values))
        return SimpleNamespace(logits=uncond, past_key_values=f"past{len(seen)}")

    want = (log_softmax(uncond) + 1.5 * (log_softmax(cond) - log_softmax(uncond)))[0, -1]
    for args in [(np.array([[0]]), np.array([[1]])), (np.array([[0]]),), ()]:
        cfg = UnbatchedClassifierFreeGuidanceLogitsProcessor(1.5, dummy_model, *args)
        out = cfg(np.array([[0]]), cond)
        assert out.shape == (1, 1, 3) and out.dtype == np.float32
        np.testing.assert_allclose(out[0, -1], want, rtol=1e-6)
    seen.clear()
    cfg = UnbatchedClassifierFreeGuidanceLogitsProcessor(1.5, dummy_model, np.array([[4, 5]]))
    cfg(np.array([[7]]), cond), cfg(np.array([[7, 8]]), cond)       # the branch's prompt, then the newest token
    assert seen == [([[4, 5]], [[1, 1]], True, None), ([[8]], [[1, 1, 1]], True, "past1")]
    seen.clear()
    cfg = UnbatchedClassifierFreeGuidanceLogitsProcessor(1.5, dummy_model, np.array([[4, 5]]), use_cache=False)
    cfg(np.array([[7]]), cond), cfg(np.array([[7, 8]]), cond)       # without a cache: the whole branch again
    assert [ids for ids, *_ in seen] == [[[4, 5]], [[4, 5, 8]]]
