"""tools/llama2c/export.py: the legacy llama2.c file read back as run.c reads it (header, then each kind of weight
for all layers, freq_cis, no classifier when shared), its weights equal to the checkpoint's, q/k rows put back
into llama2.c's interleaved RoPE pairs (checked against rotate_half's RoPE on the Hugging Face rows), and
tokenizer.bin read back as run.c's build_tokenizer reads it."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from safetensors.numpy import load_file

sys.path.insert(0, str(ROOT / "tools" / "llama2c"))
import export  # noqa: E402

GQA = ROOT / "tests" / "golden" / "models" / "llama-gqa-tied"
SHAKESPEARE = ROOT / "models" / "tiny-shakespeare-llama"


def read_back(path: Path) -> tuple[tuple[int, ...], dict[str, np.ndarray], int]:
    """run.c:142-162 and 111-140 in NumPy: (header, the named float32 arrays, floats left over)."""
    data = path.read_bytes()
    head = struct.unpack("7i", data[:28])
    dim, hidden, L, H, KV, vocab, seq = head
    D = dim // H
    flat = np.frombuffer(data[28:], dtype="<f4")
    shapes = [("emb", (abs(vocab), dim)), ("rms_att", (L, dim)), ("wq", (L, H * D, dim)), ("wk", (L, KV * D, dim)),
              ("wv", (L, KV * D, dim)), ("wo", (L, dim, H * D)), ("rms_ffn", (L, dim)), ("w1", (L, hidden, dim)),
              ("w2", (L, dim, hidden)), ("w3", (L, hidden, dim)), ("rms_final", (dim,)),
              ("freq_cos", (seq, D // 2)), ("freq_sin", (seq, D // 2))]
    if vocab < 0:
        shapes.append(("wcls", (-vocab, dim)))
    out, at = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        out[name] = flat[at:at + n].reshape(shape)
        at += n
    return head, out, flat.size - at


@pytest.fixture(scope="module")
def gqa(tmp_path_factory):
    out = tmp_path_factory.mktemp("gqa")
    export.export(GQA, out)
    return out


def test_header_and_sizes_are_run_c_s(gqa):
    head, w, left = read_back(gqa / "model.bin")
    config = json.loads((GQA / "config.json").read_text())
    assert head == (32, 64, 2, 4, 2, 128, 64)          # tied: vocab_size positive (shared classifier)
    assert head[5] == config["vocab_size"] and left == 0
    assert w["wk"].shape == (2, 16, 32) and w["freq_cos"].shape == (64, 4)


def test_weights_round_trip(gqa):
    _, w, _ = read_back(gqa / "model.bin")
    hf = load_file(str(GQA / "model.safetensors"))
    np.testing.assert_array_equal(w["emb"], hf["model.embed_tokens.weight"])
    for i in range(2):
        p = f"model.layers.{i}."
        np.testing.assert_array_equal(w["w1"][i], hf[p + "mlp.gate_proj.weight"])
        np.testing.assert_array_equal(w["w2"][i], hf[p + "mlp.down_proj.weight"])
        np.testing.assert_array_equal(w["w3"][i], hf[p + "mlp.up_proj.weight"])
        np.testing.assert_array_equal(w["wv"][i], hf[p + "self_attn.v_proj.weight"])
        np.testing.assert_array_equal(w["rms_ffn"][i], hf[p + "post_attention_layernorm.weight"])
        # q/k: the same rows, reordered per head (never equal as stored: the permutation is not the identity)
        assert not np.array_equal(w["wq"][i], hf[p + "self_attn.q_proj.weight"])
        assert sorted(map(tuple, w["wk"][i])) == sorted(map(tuple, hf[p + "self_attn.k_proj.weight"]))
    np.testing.assert_array_equal(w["rms_final"], hf["model.norm.weight"])


def rope_interleaved(q: np.ndarray, pos: int, D: int) -> np.ndarray:
    """run.c:264-281: pairs (2i, 2i + 1) of each head rotated by pos / 10000^(2i / D). q: (H, D)."""
    theta = pos / 10000.0 ** (np.arange(0, D, 2) / D)
    a, b = q[:, 0::2], q[:, 1::2]
    out = np.empty_like(q)
    out[:, 0::2], out[:, 1::2] = a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)
    return out


def rope_half(q: np.ndarray, pos: int, D: int) -> np.ndarray:
    """transformers' rotate_half RoPE: pairs (i, i + D/2) of each head. q: (H, D)."""
    theta = np.tile(pos / 10000.0 ** (np.arange(0, D, 2) / D), 2)
    half = np.concatenate([-q[:, D // 2:], q[:, :D // 2]], axis=1)
    return q * np.cos(theta) + half * np.sin(theta)


def test_q_and_k_rows_give_hf_rope_scores(gqa):
    """q.k after llama2.c's RoPE on the exported rows = q.k after HF's RoPE on the checkpoint's rows."""
    _, w, _ = read_back(gqa / "model.bin")
    hf = load_file(str(GQA / "model.safetensors"))
    x, y = np.random.default_rng(0).standard_normal((2, 32))
    for name, n_heads, key in (("wq", 4, "q_proj"), ("wk", 2, "k_proj")):
        mine, theirs = w[name][1].astype(np.float64), hf[f"model.layers.1.self_attn.{key}.weight"].astype(np.float64)
        q_mine = rope_interleaved((mine @ x).reshape(n_heads, 8), 5, 8)
        k_mine = rope_interleaved((mine @ y).reshape(n_heads, 8), 2, 8)
        q_hf = rope_half((theirs @ x).reshape(n_heads, 8), 5, 8)
        k_hf = rope_half((theirs @ y).reshape(n_heads, 8), 2, 8)
        np.testing.assert_allclose((q_mine * k_mine).sum(1), (q_hf * k_hf).sum(1), rtol=1e-10)
        # and the rows themselves: llama2.c row h*8 + 2i + j is HF row h*8 + 4j + i
        assert np.array_equal(mine[2 * 1 + 1], theirs[4 * 1 + 1])


def test_freq_cis_are_llama2c_s(gqa):
    _, w, _ = read_back(gqa / "model.bin")
    angles = np.outer(np.arange(64), 1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8))
    np.testing.assert_allclose(w["freq_cos"], np.cos(angles), atol=1e-5)
    np.testing.assert_allclose(w["freq_sin"], np.sin(angles), atol=1e-5)


def test_untied_classifier_follows_with_negative_vocab():
    config = {"vocab_size": 4, "hidden_size": 4, "intermediate_size": 6, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 3}
    rng = np.random.default_rng(1)
    shapes = {"embed_tokens.weight": (4, 4), "layers.0.input_layernorm.weight": (4,),
              "layers.0.self_attn.q_proj.weight": (4, 4), "layers.0.self_attn.k_proj.weight": (2, 4),
              "layers.0.self_attn.v_proj.weight": (2, 4), "layers.0.self_attn.o_proj.weight": (4, 4),
              "layers.0.post_attention_layernorm.weight": (4,), "layers.0.mlp.gate_proj.weight": (6, 4),
              "layers.0.mlp.down_proj.weight": (4, 6), "layers.0.mlp.up_proj.weight": (6, 4),
              "norm.weight": (4,)}
    weights = {"model." + k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    weights["lm_head.weight"] = rng.standard_normal((4, 4)).astype(np.float32)
    head, tensors = export.llama2c_tensors(config, weights)
    assert head == (4, 6, 1, 2, 1, -4, 3)
    np.testing.assert_array_equal(tensors[-1], weights["lm_head.weight"])
    assert all(t.dtype == np.float32 for t in tensors)


def test_tokenizer_bin_has_gpt2_bytes(tmp_path):
    tokens = export.vocabulary_bytes(SHAKESPEARE, 50257)
    export.write_tokenizer(tmp_path / "tokenizer.bin", tokens)
    data = (tmp_path / "tokenizer.bin").read_bytes()
    (max_len,), at, read = struct.unpack("I", data[:4]), 4, []
    for _ in range(50257):
        score, n = struct.unpack("fi", data[at:at + 8])
        read.append((score, data[at + 8:at + 8 + n]))
        at += 8 + n
    assert at == len(data) and max_len == max(len(b) for _, b in read)
    assert read[198] == (-198.0, b"\n") and read[11] == (-11.0, b",")
    assert read[15496][1] == b"Hello" and read[995][1] == b" world"      # "Ġworld": the space byte restored


def test_not_a_llama_is_refused(tmp_path):
    with pytest.raises(ValueError, match="folder"):
        export.export(ROOT / "models" / "tiny-shakespeare", tmp_path)


def test_repeat_kv_gives_one_key_head_per_query_head(tmp_path):
    """--repeat-kv (for readers without grouped-query attention): n_kv_heads = n_heads, query head h reading the
    checkpoint's key/value head h // 2 (4 heads over 2)."""
    export.export(GQA, tmp_path, repeat_kv=True)
    head, w, left = read_back(tmp_path / "model.bin")
    _, plain, _ = read_back(export.export(GQA, tmp_path / "plain")[0])
    assert head == (32, 64, 2, 4, 4, 128, 64) and left == 0
    for name in ("wk", "wv"):
        assert w[name].shape == (2, 32, 32)
        for h in range(4):
            np.testing.assert_array_equal(w[name][:, h * 8:(h + 1) * 8], plain[name][:, (h // 2) * 8:(h // 2 + 1) * 8])
    np.testing.assert_array_equal(w["wq"], plain["wq"])
