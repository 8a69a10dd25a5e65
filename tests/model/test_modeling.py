"""refdecode.model.modeling: the GPT2 object runs the forward pass named at the call site, and says which.

The forward passes themselves are tested in tests/model/test_gpt2.py (plain, against transformers' goldens)
and tests/model/fast/test_forward.py (fast against plain); the argument checks of ``model(...)`` in tests/model/test_gpt2.py.
"""

import numpy as np
import pytest
from conftest import MODELS

from refdecode.model.fast import gpt2_fast
from refdecode.model.gpt2 import gpt2
from refdecode.model.modeling import FORWARDS, GPT2


def test_the_plain_forward_pass_is_the_default_and_fast_is_named():
    plain = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    fast = GPT2.from_pretrained(MODELS / "gpt2-tiny", forward="fast")
    assert plain.forward == "plain" and FORWARDS[plain.forward] is gpt2
    assert fast.forward == "fast" and FORWARDS[fast.forward] is gpt2_fast
    ids = np.array([[15496, 995, 11]])
    np.testing.assert_allclose(fast(ids).logits, plain(ids).logits, rtol=0, atol=1e-5)


def test_the_forward_pass_that_runs_is_the_one_named(monkeypatch):
    """Guards against a model that says "plain" and runs something else."""
    calls = []
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    monkeypatch.setitem(FORWARDS, "plain", lambda *args: calls.append("plain") or gpt2(*args))
    model(np.array([[1, 2]]))
    assert calls == ["plain"]


@pytest.mark.parametrize("bad", ["Fast", "", None, True])
def test_an_unknown_forward_pass_is_refused(bad):
    with pytest.raises(ValueError, match=r"`forward` has to be one of \['fast', 'plain'\]"):
        GPT2.from_pretrained(MODELS / "gpt2-tiny", forward=bad)
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    with pytest.raises(ValueError, match="`forward`"):
        GPT2(model.config, model.params, forward=bad)


def test_mmap_with_the_fast_pass_keeps_the_stored_layout():
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny", forward="fast", mmap=True)
    assert not model.params["h"][0]["mlp"]["c_fc"]["weight"].flags.f_contiguous
    assert model(np.array([[1, 2]])).logits.dtype == np.float32


def test_nonfinite_weights_names_the_tensor():
    """The decode loop asks the model which weights are not finite when the logits turn NaN."""
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    assert model.nonfinite_weights() == []
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    weight = model.params["h"][1]["mlp"]["c_fc"]["weight"]
    weight[0, 3] = np.inf
    assert model.nonfinite_weights() == [f"h.1.mlp.c_fc.weight (1 non-finite of {weight.size})"]
    weight[0, 3] = 0.0
    assert model.nonfinite_weights() == []
