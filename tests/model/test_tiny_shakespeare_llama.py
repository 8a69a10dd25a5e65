"""models/tiny-shakespeare-llama: refdecode's NumPy Llama equals transformers 4.38.2 on the shipped model, and writes
English.

Golden file: ``tests/golden/tiny_shakespeare_llama.npz`` from ``tools/golden/make_tiny_shakespeare_llama_golden.py``
(transformers 4.38.2 ``LlamaForCausalLM.from_pretrained("models/tiny-shakespeare-llama")``, eager attention, float16
weights upcast to float32). Regenerate it after retraining the model:
``.venv-oracle/bin/python tools/golden/make_tiny_shakespeare_llama_golden.py``.
"""

from __future__ import annotations

import json
import string

import numpy as np
import pytest
from conftest import GOLDEN, MODELS
from tokenizers import Tokenizer

import refdecode
from refdecode import Llama, generate
from refdecode.numerics import log_softmax

MODEL_DIR = MODELS / "tiny-shakespeare-llama"
GOLDEN_FILE = GOLDEN / "tiny_shakespeare_llama.npz"
REGENERATE = ".venv-oracle/bin/python tools/golden/make_tiny_shakespeare_llama_golden.py"
EOT = 50256
REL_TOL = 1e-4  # of the largest |logit|: float32 matmul order differs between NumPy and torch


@pytest.fixture(scope="module")
def model() -> Llama:
    return Llama.from_pretrained(MODEL_DIR)


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN_FILE, allow_pickle=False) as f:
        return dict(f)


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))


def assert_close(name: str, got: np.ndarray, want: np.ndarray) -> None:
    """|got - want| <= REL_TOL * max|want|; on failure print the max abs diff and the first values."""
    assert got.dtype == np.float32, f"{name}: dtype {got.dtype}, expected float32"
    assert got.shape == want.shape, f"{name}: shape {got.shape} != golden {want.shape}"
    diff = float(np.max(np.abs(got - want)))
    scale = float(np.max(np.abs(want)))
    assert diff <= REL_TOL * scale, (
        f"{name}: max abs diff {diff:.3g} > {REL_TOL} * max|logit| {scale:.3g}\n"
        f"  refdecode    {got.ravel()[:5]}\n  transformers {want.ravel()[:5]}\n"
        f"  (if the model was retrained, regenerate: {REGENERATE})"
    )


def greedy_tokens(model: Llama, prompt: np.ndarray, n_new: int) -> np.ndarray:
    """Argmax continuation through the KV cache, stopping at <|endoftext|>: int64 (T,) -> (T + n,), n <= n_new.

    Written out here (not refdecode.decoding.greedy) so this file tests the shipped model, not the decoding code.
    """
    cache = model.new_cache(1, len(prompt) + n_new)
    logits = model(prompt[None], past_key_values=cache).logits  # (1, T, V)
    out = list(prompt)
    for _ in range(n_new):
        nxt = int(np.argmax(logits[0, -1]))
        out.append(nxt)
        if nxt == EOT:
            break
        logits = model(np.array([[nxt]], dtype=np.int64), past_key_values=cache).logits  # (1, 1, V)
    return np.array(out, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------
# the shipped files


def test_shipped_files_are_a_llama_with_the_gpt2_vocabulary(model, tokenizer):
    """Guards the model card's promises: GQA shape, the GPT-2 vocabulary and ids, float16 storage, the same tokenizer."""
    c = model.config
    assert (c.vocab_size, c.max_position_embeddings, c.num_hidden_layers, c.hidden_size) == (50257, 256, 4, 128)
    assert (c.num_attention_heads, c.num_key_value_heads, c.intermediate_size) == (4, 2, 384)
    assert tokenizer.get_vocab_size() == 50257 and tokenizer.token_to_id("<|endoftext|>") == EOT
    assert (MODEL_DIR / "tokenizer.json").read_bytes() == (MODELS / "tiny-shakespeare" / "tokenizer.json").read_bytes()
    config = json.loads((MODEL_DIR / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"] is True
    assert config.get("pad_token_id") is None, "pad_token_id in config.json would freeze the <|endoftext|> embedding"
    gen = json.loads((MODEL_DIR / "generation_config.json").read_text())
    assert (gen["bos_token_id"], gen["eos_token_id"], gen["pad_token_id"]) == (EOT, EOT, EOT)
    raw = (MODEL_DIR / "model.safetensors").read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F16"}
    assert "lm_head.weight" not in header and len(raw) < 20e6


def test_from_pretrained_picks_llama_from_the_config():
    assert isinstance(refdecode.from_pretrained(MODEL_DIR), Llama)


def test_golden_meta_names_its_reference(golden):
    meta = json.loads(str(golden["meta"]))
    assert meta["format_version"] == 1 and meta["transformers"] == "4.38.2", meta
    assert meta["regenerate"] == REGENERATE and meta["attn_implementation"] == "eager"


# ---------------------------------------------------------------------------------------------------
# parity with transformers 4.38.2


@pytest.mark.parametrize("i", [0, 1])
def test_logits_equal_transformers(model, golden, i):
    """Full last-position logits (all 50257) and a 64-token slice at every position, within 1e-4 relative."""
    ids = golden[f"prompt_{i}_ids"]
    logits = model(ids[None]).logits[0]  # (T, V)
    assert_close(f"prompt {i} last-position logits", logits[-1], golden[f"prompt_{i}_last_logits"])
    assert_close(f"prompt {i} logits slice", logits[:, golden[f"prompt_{i}_slice_ids"]],
                 golden[f"prompt_{i}_slice_logits"])


def test_cached_greedy_equals_transformers_generate(model, golden):
    """Greedy through the KV cache = transformers' ``generate(do_sample=False)``; catches cache/RoPE position bugs."""
    want = golden["greedy_ids"]
    got = greedy_tokens(model, golden["greedy_prompt_ids"], len(want) - len(golden["greedy_prompt_ids"]))
    want = want[: len(got)]  # transformers pads with <|endoftext|> after an early stop
    np.testing.assert_array_equal(got, want)


def test_beam_search_equals_transformers_generate(model, golden):
    """refdecode's generate(num_beams=4, num_return_sequences=4): the same 4 sequences and sequences_scores."""
    prompt = golden["greedy_prompt_ids"][None]
    new = golden["beam_ids"].shape[1] - prompt.shape[1]
    out = generate(model, prompt, num_beams=4, num_return_sequences=4, max_new_tokens=new, do_sample=False,
                   pad_token_id=EOT, output_scores=True, return_dict_in_generate=True)
    np.testing.assert_array_equal(np.asarray(out.sequences), golden["beam_ids"])
    assert out.sequences_scores.dtype == np.float32
    np.testing.assert_allclose(out.sequences_scores, golden["beam_sequences_scores"], rtol=1e-4, atol=1e-5)


def test_excerpt_cross_entropy_equals_transformers(model, golden):
    """Mean next-token NLL of the held-out play's opening: same as transformers, and far below uniform.

    Uniform guessing over 50257 tokens costs ln(50257) = 10.8 nats; the trained model must be under ln(150) = 5.0
    nats on unseen Shakespeare (it has 4.34), or the shipped weights are not the trained ones.
    """
    ids = golden["excerpt_ids"]
    logp = log_softmax(model(ids[None]).logits[0])  # (N, V)
    nll = -float(np.mean(logp[np.arange(len(ids) - 1), ids[1:]]))
    assert abs(nll - float(golden["excerpt_nll"])) <= 1e-4 * float(golden["excerpt_nll"]), (nll, golden["excerpt_nll"])
    assert nll < np.log(150.0), f"perplexity {np.exp(nll):.0f} on held-out Shakespeare"


# ---------------------------------------------------------------------------------------------------
# it writes English


def test_greedy_romeo_reads_as_english(model, tokenizer):
    """Greedy text after "ROMEO:\\n" is lines of English words, not random tokens (see test_tiny_shakespeare.py)."""
    prompt = np.array(tokenizer.encode("ROMEO:\n").ids, dtype=np.int64)
    text = tokenizer.decode(greedy_tokens(model, prompt, 40)[len(prompt):].tolist())
    allowed = set(string.ascii_letters + string.digits + " \n,.;:!?'-")
    assert set(text) <= allowed, f"unexpected characters {set(text) - allowed} in {text!r}"
    assert sum(ch.isalpha() for ch in text) > 0.6 * len(text), text
    words = {w.strip(string.punctuation).lower() for w in text.split()}
    common = {"the", "and", "i", "to", "of", "a", "you", "my", "that", "in", "is", "not", "me", "it", "with",
              "be", "your", "his", "this", "but", "he", "have", "as", "thou", "thy", "will", "so", "for", "lord"}
    assert len(words & common) >= 3, text
