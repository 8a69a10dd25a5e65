"""refdecode.model.fast.llama against the plain refdecode.model.llama (itself checked against transformers 4.38.2 in
tests/model/test_llama.py): logits within 1e-5 of their scale on every Llama-family golden checkpoint (prefill,
left-padded batch, cached steps of 1, 4 and 11 rows), the fused and reordered weights hold the checkpoint's values,
and generate() picks the same tokens with either pass."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import GOLDEN, MODELS
from numeric_checks import rel_err

from refdecode import GenerationConfig, generate
from refdecode.model.fast import products
from refdecode.model.llama_modeling import Llama

RTOL = 1e-5  # relative to the largest |logit|: float32 rounding (another grouping of the same sums)
CHECKPOINTS = [GOLDEN / "models" / n for n in ("llama-gqa-tied", "llama-bias", "llama-rope-dynamic",
                                               "llama-rope-linear", "llama3-rope", "mistral-window", "qwen2-bias")]
CHECKPOINTS = [p for p in CHECKPOINTS if p.is_dir()] + [MODELS / "llama-tiny"]


def both(path):
    return Llama.from_pretrained(path), Llama.from_pretrained(path, forward="fast")


@pytest.mark.parametrize("path", CHECKPOINTS, ids=lambda p: p.name)
def test_fast_llama_logits_agree_with_plain_prefill_padding_and_cached_steps(path):
    plain, fast = both(path)
    rng = np.random.default_rng(0)
    V = plain.config.vocab_size
    ids = rng.integers(0, V, size=(2, 9))
    mask = np.ones((2, 9), dtype=np.int64)
    mask[1, :3] = 0  # left padding
    a, b = plain(ids, attention_mask=mask).logits, fast(ids, attention_mask=mask).logits
    assert b.dtype == np.float32 and b.shape == a.shape
    assert rel_err(b[mask.astype(bool)], a[mask.astype(bool)]) <= RTOL
    for rows, T in ((1, 1), (4, 1), (1, 11)):  # greedy step, beam-4 step, a verification pass of 11 rows
        caches = [m.new_cache(rows, 9 + T) for m in (plain, fast)]
        prefix = np.tile(ids[:1], (rows, 1))
        for m, c in zip((plain, fast), caches):
            m(prefix, past_key_values=c)
        new = rng.integers(0, V, size=(rows, T))
        a, b = (m(new, past_key_values=c).logits for m, c in zip((plain, fast), caches))
        assert b.dtype == np.float32 and rel_err(b, a) <= RTOL, (rows, T)
        assert all(c.length == 9 + T for c in caches)
    a, b = plain(ids, logits_to_keep=1).logits, fast(ids, logits_to_keep=1).logits  # the last layer on 1 row
    assert b.shape == a.shape == (2, 1, V) and rel_err(b, a) <= RTOL


@pytest.mark.parametrize("order", ["C", "F"])
def test_fused_weights_in_the_measured_order_hold_the_checkpoint_values(monkeypatch, order):
    monkeypatch.setattr(products, "PLANS", {})
    monkeypatch.setattr(products, "calibrate_order", lambda shape: order)
    plain, fast = both(GOLDEN / "models" / "qwen2-bias")  # attention biases: fused too
    p, f = plain.params["layers"][1], fast.params["layers"][1]
    qkv = f["self_attn"]["qkv"]
    assert products.order_of(qkv["weight"]) == order and qkv["weight"].dtype == np.float32
    expected = np.concatenate([p["self_attn"][n]["weight"] for n in ("q_proj", "k_proj", "v_proj")]).T
    assert np.array_equal(qkv["weight"], expected)
    assert np.array_equal(qkv["bias"], np.concatenate([p["self_attn"][n]["bias"] for n in ("q_proj", "k_proj",
                                                                                           "v_proj")]))
    gate_up = f["mlp"]["gate_up"]["weight"]
    assert np.array_equal(gate_up, np.concatenate([p["mlp"]["gate_proj"]["weight"], p["mlp"]["up_proj"]["weight"]]).T)
    assert np.array_equal(f["mlp"]["down_proj"]["weight"], p["mlp"]["down_proj"]["weight"].T)
    head = "lm_head" if "lm_head" in plain.params else "embed_tokens"
    assert np.array_equal(fast.params[head], plain.params[head])
    assert products.order_of(fast.params[head].T) == order


@pytest.mark.parametrize("mode", [dict(), dict(num_beams=4), dict(prompt_lookup_num_tokens=3)])
def test_generate_picks_the_same_tokens_with_either_pass(mode):
    plain, fast = both(GOLDEN / "models" / "llama-gqa-tied")
    prompt = np.array([[5, 9, 2, 5, 9, 7, 3]])
    cfg = GenerationConfig(max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0, **mode)
    a = generate(plain, prompt, generation_config=cfg)
    b = generate(fast, prompt, generation_config=cfg)
    assert np.array_equal(a, b)


def test_fast_llama_refuses_hidden_states_and_unknown_forwards():
    _, fast = both(MODELS / "llama-tiny")
    with pytest.raises(ValueError, match="need the plain forward pass"):
        fast(np.array([[1, 2]]), output_hidden_states=True)
    with pytest.raises(ValueError, match="`forward` has to be one of"):
        Llama.from_pretrained(MODELS / "llama-tiny", forward="turbo")
