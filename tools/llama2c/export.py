r"""A Hugging Face Llama folder -> llama2.c's legacy ``.bin`` checkpoint and ``tokenizer.bin`` (NumPy + safetensors).

    python tools/llama2c/export.py models/tiny-shakespeare-llama OUT_DIR [--repeat-kv]
                                                    # writes OUT_DIR/model.bin, OUT_DIR/tokenizer.bin

Follows llama2.c's ``export.py`` (commit 350e04f) ``legacy_export`` (lines 75-127), the format its ``run.c`` reads
(``read_checkpoint``, lines 142-162, ``memory_map_weights``, lines 111-140), without torch:

* header: 7 int32 ``dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, max_seq_len`` (export.py:87-88);
  ``vocab_size`` is negative when the classifier is not the embedding (export.py:82-85, run.c:148-150);
* float32 weights, each kind for all layers before the next kind (export.py:91-116): embedding; attention norms;
  wq; wk; wv; wo; ffn norms; w1 (gate); w2 (down); w3 (up); final norm;
* ``freq_cis`` real and imaginary parts, (max_seq_len, head_size / 2) each (export.py:117-119, model.py:41-47:
  ``cos(t / theta^(2i / head_size))``, ``sin(...)``), which run.c skips (run.c:137-138);
* the classifier, only when not shared (export.py:121-123).

Hugging Face stores q_proj and k_proj permuted for its ``rotate_half`` RoPE (pairs (i, i + D/2) of each head);
llama2.c rotates adjacent pairs (2i, 2i + 1). The rows are put back as export.py's ``permute_reverse`` does
(export.py:467-469: ``w.view(n_heads, 2, D / 2, E).transpose(1, 2).reshape``), with the key heads for k_proj
(``n_kv_heads``; export.py:475 passes ``n_heads`` there, right only without grouped-query attention).

``tokenizer.bin`` (llama2.c's ``tokenizer.py`` ``export``, lines 41-70; read by run.c:396-407): uint32
``max_token_length``, then per token float32 score, int32 length, the bytes. The tokens are the bytes of GPT-2's
byte-level vocabulary (``tokenizer.json``'s ``model.vocab``, each character mapped back through GPT-2's
byte-to-unicode table); score ``-id`` (GPT-2's ids above 255 follow its merge order, so llama2.c's
highest-score-first merge prefers the earlier merge). A folder without ``tokenizer.json`` gets the placeholder
token ``<id>`` for each id. The peers decode token ids, never text: the tokenizer file is read, not used to encode.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

__all__ = ["header", "permute_reverse", "repeat_heads", "llama2c_tensors", "write_checkpoint", "vocabulary_bytes",
           "write_tokenizer", "export"]


def header(config: dict, shared: bool, repeat_kv: bool = False) -> tuple[int, ...]:
    """The 7 int32 of the legacy header (export.py:87-88); vocab_size negated when not shared (export.py:84-85);
    ``repeat_kv``: n_kv_heads = n_heads (the key/value heads written repeated)."""
    vocab, heads = int(config["vocab_size"]), int(config["num_attention_heads"])
    return (int(config["hidden_size"]), int(config["intermediate_size"]), int(config["num_hidden_layers"]), heads,
            heads if repeat_kv else int(config.get("num_key_value_heads") or heads),
            vocab if shared else -vocab, int(config["max_position_embeddings"]))


def permute_reverse(w: np.ndarray, n_heads: int) -> np.ndarray:
    """HF's rotate_half rows -> llama2.c's interleaved pairs (export.py:468-469).

    w: (n_heads * D, E) -> (n_heads * D, E): row h*D + 2i <- h*D + i, row h*D + 2i + 1 <- h*D + D/2 + i.
    """
    rows, cols = w.shape
    return w.reshape(n_heads, 2, rows // n_heads // 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


def repeat_heads(w: np.ndarray, n_kv: int, n_heads: int) -> np.ndarray:
    """(n_kv * D, E) -> (n_heads * D, E): query head h reads key/value head h // (n_heads / n_kv), as run.c:292
    (``h / kv_mul``) and transformers' ``repeat_kv``: the same model, with one key/value head per query head."""
    rows, cols = w.shape
    return np.repeat(w.reshape(n_kv, rows // n_kv, cols), n_heads // n_kv, axis=0).reshape(-1, cols)


def freqs_cis(head_size: int, seq_len: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """llama2.c's model.py:41-47 in float32: cos and sin of outer(t, theta^(-2i / head_size)), (seq_len, D / 2)."""
    freqs = (1.0 / (np.float32(theta) ** (np.arange(0, head_size, 2, dtype=np.float32) / np.float32(head_size))))
    angles = np.outer(np.arange(seq_len, dtype=np.float32), freqs.astype(np.float32))
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def llama2c_tensors(config: dict, weights: dict[str, np.ndarray],
                    repeat_kv: bool = False) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """(header, the float32 tensors in the legacy file's order) from a HF config and its safetensors tensors;
    ``repeat_kv``: the key/value heads repeated to one per query head (for readers without grouped-query attention)."""
    w = {k.removeprefix("model."): np.asarray(v, dtype=np.float32) for k, v in weights.items()}
    shared = "lm_head.weight" not in w or np.array_equal(w["lm_head.weight"], w["embed_tokens.weight"])
    head = header(config, shared, repeat_kv)
    dim, _, n_layers, n_heads, n_kv, _, seq_len = head
    kv = int(config.get("num_key_value_heads") or n_heads)          # the checkpoint's key/value heads
    if repeat_kv:
        for p in (f"layers.{i}.self_attn." for i in range(n_layers)):
            for name in ("k_proj.weight", "v_proj.weight"):
                w[p + name] = repeat_heads(w[p + name], kv, n_heads)
    layer = [f"layers.{i}." for i in range(n_layers)]
    out = [w["embed_tokens.weight"]]
    out += [w[p + "input_layernorm.weight"] for p in layer]
    out += [permute_reverse(w[p + "self_attn.q_proj.weight"], n_heads) for p in layer]
    out += [permute_reverse(w[p + "self_attn.k_proj.weight"], n_kv) for p in layer]
    for name in ("self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm", "mlp.gate_proj",
                 "mlp.down_proj", "mlp.up_proj"):
        out += [w[p + name + ".weight"] for p in layer]
    out.append(w["norm.weight"])
    out += list(freqs_cis(dim // n_heads, seq_len, float(config.get("rope_theta", 10000.0))))
    if not shared:
        out.append(w["lm_head.weight"])
    return head, out


def write_checkpoint(path: Path, head: tuple[int, ...], tensors: list[np.ndarray]) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("7i", *head))
        for t in tensors:
            f.write(np.ascontiguousarray(t, dtype="<f4").tobytes())


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-unicode table, reversed (printable bytes map to themselves, the rest to 256 + n)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    chars, n = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(keep, chars)}


def vocabulary_bytes(folder: Path, vocab_size: int) -> list[bytes]:
    """Each id's bytes: GPT-2's byte-level tokens decoded, or ``<id>`` where the folder has no tokenizer.json."""
    path = folder / "tokenizer.json"
    if not path.exists():
        return [f"<{i}>".encode() for i in range(vocab_size)]
    vocab = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    decoder, tokens = _byte_decoder(), [b""] * vocab_size
    for token, i in vocab.items():
        if i < vocab_size:
            tokens[i] = bytes(decoder[c] for c in token)
    return tokens


def write_tokenizer(path: Path, tokens: list[bytes]) -> None:
    """tokenizer.py:61-70: uint32 max_token_length, then per token float32 score (-id), int32 length, bytes."""
    with open(path, "wb") as f:
        f.write(struct.pack("I", max(len(t) for t in tokens)))
        for i, t in enumerate(tokens):
            f.write(struct.pack("fI", -float(i), len(t)))
            f.write(t)


def export(folder: Path, out: Path, repeat_kv: bool = False) -> tuple[Path, Path]:
    """Write ``out/model.bin`` and ``out/tokenizer.bin`` for the HF Llama folder ``folder`` (``repeat_kv``: see
    :func:`llama2c_tensors`)."""
    config = json.loads((folder / "config.json").read_text())
    if config.get("model_type") != "llama":
        raise ValueError(f"`folder` has to hold a Llama checkpoint (model_type llama), but {folder} holds "
                         f"{config.get('model_type')!r}")
    head, tensors = llama2c_tensors(config, load_file(str(folder / "model.safetensors")), repeat_kv)
    out.mkdir(parents=True, exist_ok=True)
    write_checkpoint(out / "model.bin", head, tensors)
    write_tokenizer(out / "tokenizer.bin", vocabulary_bytes(folder, abs(head[5])))
    return out / "model.bin", out / "tokenizer.bin"


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--repeat-kv"]
    if len(args) != 2:
        sys.exit("usage: export.py HF_LLAMA_FOLDER OUT_DIR [--repeat-kv]")
    for written in export(Path(args[0]), Path(args[1]), "--repeat-kv" in sys.argv[1:]):
        print(written)
