"""A GPT-2-124M-shaped checkpoint whose weights copy: a hand-built induction circuit. Not a test.

Prompt lookup pays off when the model repeats text it has seen (a passage, then "repeat it"). A trained
GPT-2 does that with induction heads; the random checkpoint of ``bench_generate.py`` does not, and no trained
124M checkpoint is available offline. This script writes one that does, with the exact shapes, dtype and
byte count of GPT-2 124M (so a decoding step reads the same 495 MB), in Hugging Face's layout::

    python benchmarks/make_copy_checkpoint.py [OUT]      # default benchmarks/_checkpoints/gpt2-124m-copy/

NumPy and safetensors only, deterministic (seed 0). The circuit (pre-LN GPT-2, everything in the 767
directions orthogonal to the all-ones vector, so every layer norm only rescales):

- **Embeddings.** ``wte[v] = ALPHA * bits(v)`` in a 16-dimensional subspace A (bit i of the id, as +1/-1; any
  two ids differ in a bit, so ``bits(v) . bits(w) <= 14 < 16 = bits(v) . bits(v)``). ``wpe[t]`` holds
  ``cos/sin(w_j t)`` for ``w_j = pi / 2**j``, j = 0..10, in a 22-dimensional subspace P: for any offset
  ``0 < |d| < 2048``, the frequency of d's lowest set bit gives ``cos(w_j d) = -1``, so
  ``sum_j cos(w_j d)`` is 11 at d = 0 and at most 9 elsewhere.
- **Layer 0, heads 0-3: previous tokens.** Head o-1 (o = 1..4) rotates the query's P-part back by o steps, so
  position t attends to t - o with a score margin of 2 units, and copies ``bits(x[t-o])`` into subspace B_o.
- **Layer 1, head 0: induction.** Query ``[bits(x[t]), bits(x[t-1]), bits(x[t-2]), bits(x[t-3])]`` (A, B_1..B_3),
  key ``[bits(x[s-1]), ..., bits(x[s-4])]`` (B_1..B_4): the score peaks where the last four tokens occurred
  before; the value ``bits(x[s])`` is written into A with gain 40, so the LM head (tied ``wte``) picks the
  token that followed that 4-gram.
- **Everything else** (the other heads, all MLPs, layers 2-11) is random like GPT-2's init (std 0.02), with the
  output projections scaled to std 1e-4 so they do not disturb the circuit: the same matrices are read and
  multiplied, their contribution is small.

It is a benchmark fixture, not a language model: on a copy prompt it copies (prompt lookup's best case); on
anything else its output is the nearest match of the last tokens, or noise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-copy"
E, N_HEAD, N_LAYER, N_POS, VOCAB, HEAD = 768, 12, 12, 1024, 50257, 64
BITS, FREQS, OFFSETS = 16, 11, 4
ALPHA, GAIN = 1.0, 40.0  # token code scale; how strongly the induction head writes its answer
INIT_STD, OUT_STD = 0.02, 1e-4  # random weights; output projections of everything outside the circuit


def config(n_embd: int = E, n_head: int = N_HEAD, n_layer: int = N_LAYER, n_positions: int = N_POS,
           vocab_size: int = VOCAB) -> dict:
    """config.json of the checkpoint (GPT-2 124M's by default)."""
    return {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": vocab_size - 1,
            "eos_token_id": vocab_size - 1, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": n_positions,
            "n_embd": n_embd, "n_head": n_head, "n_inner": None, "n_layer": n_layer, "n_positions": n_positions,
            "scale_attn_weights": True, "tie_word_embeddings": True, "vocab_size": vocab_size,
            "attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0}


def rotation(offset: int) -> np.ndarray:
    """(22, 22): each (cos, sin) plane of P turned back by ``offset`` steps of its frequency."""
    r = np.zeros((2 * FREQS, 2 * FREQS))
    for j in range(FREQS):
        a = -offset * np.pi / 2**j
        r[2 * j:2 * j + 2, 2 * j:2 * j + 2] = [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
    return r


def build(seed: int = 0, n_embd: int = E, n_head: int = N_HEAD, n_layer: int = N_LAYER, n_positions: int = N_POS,
          vocab_size: int = VOCAB) -> dict[str, np.ndarray]:
    """The tensors, float32, Hugging Face names. Any shape with head size 64, >= 4 heads, 2 <= n_layer,
    n_embd >= 103 and vocab_size <= 2**16 holds the circuit (tests/benchmarks/test_copy_checkpoint.py builds a small one)."""
    E, N_LAYER, N_POS, VOCAB = n_embd, n_layer, n_positions, vocab_size
    if n_embd // n_head != HEAD or n_head < OFFSETS or n_layer < 2 or vocab_size > 2**BITS:
        raise ValueError("the circuit needs head size 64, >= 4 heads, >= 2 layers and <= 65536 tokens")
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((E, E))
    m[:, 0] = 1.0
    u = np.linalg.qr(m)[0][:, 1:]  # (E, E-1) orthonormal, every column orthogonal to the all-ones vector
    a = u[:, 0:BITS]  # the current token's bits
    b = [u[:, BITS * o:BITS * (o + 1)] for o in range(1, OFFSETS + 1)]  # b[o-1]: the bits of x[t-o]
    p = u[:, BITS * (OFFSETS + 1):BITS * (OFFSETS + 1) + 2 * FREQS]  # positions

    codes = ((np.arange(VOCAB)[:, None] >> np.arange(BITS)) & 1) * 2.0 - 1.0  # (V, 16) of +-1
    t = np.arange(N_POS)[:, None] * (np.pi / 2.0 ** np.arange(FREQS))  # (N_POS, 11)
    c = np.stack([np.cos(t), np.sin(t)], axis=2).reshape(N_POS, 2 * FREQS)  # (N_POS, 22), norm sqrt(11)
    rho = 4.0 * ALPHA / np.sqrt(FREQS)  # |wpe[t]| = |wte[v]| = 4 * ALPHA

    w: dict[str, np.ndarray] = {"transformer.wte.weight": ALPHA * codes @ a.T, "transformer.wpe.weight": rho * c @ p.T,
                                "transformer.ln_f.weight": np.ones(E), "transformer.ln_f.bias": np.zeros(E)}
    for layer in range(N_LAYER):
        h = f"transformer.h.{layer}."
        w[h + "ln_1.weight"], w[h + "ln_1.bias"] = np.ones(E), np.zeros(E)
        w[h + "ln_2.weight"], w[h + "ln_2.bias"] = np.ones(E), np.zeros(E)
        w[h + "attn.c_attn.weight"] = rng.normal(0.0, INIT_STD, (E, 3 * E))
        w[h + "attn.c_attn.bias"] = np.zeros(3 * E)
        w[h + "attn.c_proj.weight"] = rng.normal(0.0, OUT_STD, (E, E))
        w[h + "attn.c_proj.bias"] = np.zeros(E)
        w[h + "mlp.c_fc.weight"] = rng.normal(0.0, INIT_STD, (E, 4 * E))
        w[h + "mlp.c_fc.bias"] = np.zeros(4 * E)
        w[h + "mlp.c_proj.weight"] = rng.normal(0.0, OUT_STD, (4 * E, E))
        w[h + "mlp.c_proj.bias"] = np.zeros(E)

    def head(layer: int, k: int, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, out: np.ndarray) -> None:
        """Head k of a layer: (E, 64) query/key/value maps, (64, E) output map; other columns zero."""
        cols = slice(k * HEAD, (k + 1) * HEAD)
        qkv = w[f"transformer.h.{layer}.attn.c_attn.weight"]
        qkv[:, cols], qkv[:, E:][:, cols], qkv[:, 2 * E:][:, cols] = wq, wk, wv
        w[f"transformer.h.{layer}.attn.c_proj.weight"][cols] = out

    def pad(x: np.ndarray) -> np.ndarray:  # (E, n) -> (E, 64)
        return np.concatenate([x, np.zeros((E, HEAD - x.shape[1]))], axis=1)

    # Layer 0: |x| = 4 ALPHA sqrt(2), so layer norm scales by s0; attention scores are q.k / 8.
    s0 = np.sqrt(E) / (4.0 * ALPHA * np.sqrt(2.0))
    beta0 = 30.0 * HEAD**0.5 / (2.0 * (s0 * rho) ** 2)  # score margin of 30 between t-o and any other position
    for o in range(1, OFFSETS + 1):
        head(0, o - 1, pad(beta0 * p @ rotation(o).T), pad(p), pad(a),
             (1.0 / s0) * pad(b[o - 1]).T)  # writes ALPHA * bits(x[t-o]) into B_o
    # Layer 1: |x| = 4 ALPHA sqrt(6) (A, P and B_1..B_4), layer norm scales by s1.
    s1 = np.sqrt(E) / (4.0 * ALPHA * np.sqrt(6.0))
    beta1 = 30.0 * HEAD**0.5 / (2.0 * s1**2)  # a full 4-gram match scores 30 above any partial one
    head(1, 0, (beta1 / ALPHA) * np.concatenate([a, b[0], b[1], b[2]], axis=1),
         (1.0 / ALPHA) * np.concatenate(b, axis=1), pad(a), (GAIN / s1) * pad(a).T)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}


def main(out: Path = OUT) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    save_file(build(), str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config(), indent=2) + "\n")
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
