"""Write a Llama checkpoint of GPT-2 124M's class with random weights, for ``bench_llama.py``. NumPy only, seconds.

Not a test. The shape is GPT-2 124M's where Llama has the same knob (width 768, 12 layers, 12 heads of 64, the GPT-2
vocabulary of 50,257, the LM head tied to the embedding) plus what Llama adds: 4 key-value heads (grouped-query
attention, 3 query heads per key-value head) and a SwiGLU MLP of 2,048 (8/3 x 768, as Llama sizes it), RoPE with
base 10,000, RMSNorm. 114.2 M parameters, 457 MB of float32 read per decoding step. Weights ~ N(0, 0.02) (the
initializer_range transformers uses), norms 1; Hugging Face's layout and names (``model.layers.{i}.self_attn.q_proj``,
...), a 4.38-style config.json that transformers 4.38.2 and 5.x both read::

    python benchmarks/make_llama_checkpoint.py [OUT]     # default benchmarks/_checkpoints/llama-124m-random/

Deterministic (seed 0): re-running writes the same bytes. The directory is git-ignored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "_checkpoints" / "llama-124m-random"
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 768, "intermediate_size": 2048,
    "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 4, "vocab_size": 50257,
    "max_position_embeddings": 1024, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True,
    "hidden_act": "silu", "attention_bias": False, "initializer_range": 0.02, "torch_dtype": "float32",
    "bos_token_id": 50256, "eos_token_id": 50256,
}


def shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """Every tensor of the checkpoint, by its Hugging Face name, with its shape (Linear weights (out, in))."""
    E, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    KV = E // cfg["num_attention_heads"] * cfg["num_key_value_heads"]  # key/value width: 4 heads of 64 = 256
    out = {"model.embed_tokens.weight": (V, E), "model.norm.weight": (E,)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (E,), p + "post_attention_layernorm.weight": (E,),
                    p + "self_attn.q_proj.weight": (E, E), p + "self_attn.k_proj.weight": (KV, E),
                    p + "self_attn.v_proj.weight": (KV, E), p + "self_attn.o_proj.weight": (E, E),
                    p + "mlp.gate_proj.weight": (F, E), p + "mlp.up_proj.weight": (F, E),
                    p + "mlp.down_proj.weight": (E, F)})
    return out


def main(out: Path = OUT) -> None:
    rng = np.random.default_rng(0)
    tensors = {name: np.ones(s, np.float32) if name.endswith("norm.weight")
               else rng.standard_normal(s, dtype=np.float32) * np.float32(0.02) for name, s in shapes(CONFIG).items()}
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps({"bos_token_id": 50256, "eos_token_id": 50256}) + "\n")
    n = sum(t.size for t in tensors.values())
    print(f"wrote {out}: {n / 1e6:.1f} M parameters, {4 * n / 1e6:.0f} MB")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
