"""The Llama model object: GPT2's interface (what the decode loops call), its checks at the door, its outputs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import GOLDEN, MODELS

from refdecode import GPT2, KVCache, Llama

TINY = MODELS / "llama-tiny"


@pytest.fixture(scope="module")
def model() -> Llama:
    return Llama.from_pretrained(TINY)


def test_cached_steps_give_the_logits_of_one_full_pass(model):
    ids = np.array([[15496, 995, 11, 314, 716, 257]])
    full = model(ids).logits
    out = model(ids[:, :3])
    for t in range(3, 6):
        out = model(ids[:, t:t + 1], past_key_values=out.past_key_values)
        np.testing.assert_allclose(out.logits[:, 0], full[:, t], rtol=0, atol=1e-4)
    assert out.logits.dtype == np.float32 and out.past_key_values.length == 6


def test_left_padding_does_not_change_the_real_tokens(model):
    """Position ids from the mask (4.38.2's cumsum - 1): a padded row's real tokens see what they see unpadded."""
    alone = model(np.array([[995, 11, 314]])).logits[0]
    padded = model(np.array([[0, 0, 995, 11, 314]]), attention_mask=np.array([[0, 0, 1, 1, 1]])).logits[0, 2:]
    np.testing.assert_allclose(padded, alone, rtol=0, atol=1e-4)


def test_hidden_states_and_attentions_where_the_loops_ask(model):
    out = model(np.array([[1, 2, 3]]), output_hidden_states=True, output_attentions=True, logits_to_keep=1)
    c = model.config
    assert len(out.hidden_states) == c.num_hidden_layers + 1 and out.hidden_states[-1].shape == (1, 3, c.hidden_size)
    assert len(out.attentions) == c.num_hidden_layers and out.attentions[0].shape == (1, c.num_attention_heads, 3, 3)
    np.testing.assert_allclose(out.attentions[0].sum(-1), 1.0, rtol=1e-6)
    assert np.all(np.triu(out.attentions[1][0, 0], k=1) == 0)               # causal
    assert out.logits.shape == (1, 1, c.vocab_size)


def test_same_interface_as_gpt2(model):
    gpt2 = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    for name in ("generation_config", "new_cache", "nonfinite_weights", "cache_layout", "forward"):
        assert hasattr(model, name) and hasattr(gpt2, name), name
    for name in ("vocab_size", "n_positions", "eos_token_id", "bos_token_id", "n_layer", "n_embd"):
        assert hasattr(model.config, name) and hasattr(gpt2.config, name), name
    assert model.generation_config.eos_token_id == 50256 and model.nonfinite_weights() == []
    cache = model.new_cache(2, 4)
    assert (cache.n_layer, cache.n_head, cache.head_dim) == (2, 2, 8)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(input_ids=np.array([[50257]])), ValueError, r"`input_ids` values must be in \[0, 50257\)"),
    (dict(input_ids=np.array([[1.0]])), TypeError, "`input_ids` must be an integer array"),
    (dict(input_ids=np.array([[1, 2]]), attention_mask=np.array([[1]])), ValueError,
     r"`attention_mask` must have shape \(B, S \+ T\) = \(1, 2\)"),
    (dict(input_ids=np.array([[1]]), past_key_values=KVCache(2, 1, 4, 8, 4)), ValueError,
     "`past_key_values` must hold batch_size=1, n_layer=2, n_head=2, head_dim=8"),
    (dict(input_ids=np.array([[1]]), position_ids=np.array([[256]])), ValueError,
     r"`position_ids` values must be in \[0, 256\)"),
    (dict(input_ids=np.zeros((1, 257), np.int64)), ValueError, "cached \\+ new tokens must be <= n_positions=256, "),
    (dict(input_ids=np.array([[1]]), logits_to_keep=2), ValueError, r"`logits_to_keep` must be an integer in \[0, T=1\]"),
])
def test_bad_call_names_the_argument(model, kwargs, error, match):
    with pytest.raises(error, match=match):
        model(**kwargs)


def test_mistral_refuses_a_sequence_longer_than_its_sliding_window():
    """Past the window 4.38.2's eager and sdpa attention disagree (tools/golden/make_llama_golden.py measured it)."""
    mistral = Llama.from_pretrained(GOLDEN / "models" / "mistral-window")
    assert mistral.config.n_positions == mistral.config.sliding_window == 24
    out = mistral(np.ones((1, 24), np.int64))
    with pytest.raises(ValueError, match=r"n_positions=24 \(mistral's sliding_window: refdecode refuses sequences "
                                         r"longer than the window") as err:
        mistral(np.ones((1, 1), np.int64), past_key_values=out.past_key_values)
    assert "\n" not in str(err.value)


def test_nonfinite_weights_named_when_memory_mapped(tmp_path):
    model = Llama.from_pretrained(TINY, mmap=True)
    assert model.nonfinite_weights() == []
    with pytest.raises(FileNotFoundError, match="model directory not found"):
        Llama.from_pretrained(tmp_path / "missing")


@pytest.mark.slow
def test_llama_tiny_is_what_its_script_writes(tmp_path):
    """models/llama-tiny is reproducible: tools/make_llama_tiny.py writes the same bytes (NumPy only, fixed seed)."""
    import subprocess
    import sys

    root = MODELS.parent
    subprocess.run([sys.executable, str(root / "tools" / "make_llama_tiny.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json"):
        assert (tmp_path / name).read_bytes() == (TINY / name).read_bytes(), name
    assert (TINY / "model.safetensors").stat().st_size < 5_000_000
