"""Write ``models/llama-tiny/``: a random Llama with GPT-2's vocabulary, small enough to commit (~3.5 MB).

It exists so that every decoding mode, the CLI and the conformance suite can run on a Llama-family checkpoint
offline (grouped-query attention, RoPE, RMSNorm, SwiGLU, a tied LM head); its text is gibberish. NumPy only,
fixed seed, so re-running this script reproduces the same bytes::

    python tools/make_llama_tiny.py [--out models/llama-tiny]

Writes config.json (a transformers 4.38.2 ``LlamaConfig``: vocab 50257, hidden 32, 4 query heads sharing 2
key/value heads, 2 layers, tied embeddings), model.safetensors (float16, the names ``save_pretrained`` writes:
``model.`` prefix, no ``lm_head.weight`` since it is tied) and generation_config.json; ``tokenizer.json`` is
copied from models/gpt2-tiny. The weights are larger than ``_init_weights``' N(0, 0.02), so that the logits
spread over a few units (a flat distribution makes near-ties everywhere); RMSNorm gains are perturbed around 1
so a loader that drops them changes the logits.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 50256,
    "eos_token_id": 50256,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "max_position_embeddings": 256,
    "model_type": "llama",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "float16",
    "transformers_version": "4.38.2",
    "use_cache": True,
    "vocab_size": 50257,
}
GENERATION_CONFIG = {"_from_model_config": True, "bos_token_id": 50256, "eos_token_id": 50256,
                     "transformers_version": "4.38.2"}


def random_llama(config: dict, seed: int, dtype=np.float16) -> dict[str, np.ndarray]:
    """Random Llama tensors under save_pretrained names (``model.layers.0.self_attn.q_proj.weight``, ...)."""
    rng = np.random.default_rng(seed)
    E, L, V, F = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"], config["intermediate_size"]
    D = E // config["num_attention_heads"]
    KV = config["num_key_value_heads"] * D

    def normal(shape, s):
        return rng.normal(0.0, s, size=shape).astype(dtype)

    def gain(n):
        return (1.0 + normal((n,), 0.1)).astype(dtype)

    t = {"model.embed_tokens.weight": normal((V, E), 0.5)}
    for i in range(L):
        p = f"model.layers.{i}."
        t.update({
            p + "input_layernorm.weight": gain(E),
            p + "self_attn.q_proj.weight": normal((E, E), 1.0 / math.sqrt(E)),
            p + "self_attn.k_proj.weight": normal((KV, E), 1.0 / math.sqrt(E)),
            p + "self_attn.v_proj.weight": normal((KV, E), 1.0 / math.sqrt(E)),
            p + "self_attn.o_proj.weight": normal((E, E), 0.5 / math.sqrt(E)),
            p + "post_attention_layernorm.weight": gain(E),
            p + "mlp.gate_proj.weight": normal((F, E), 1.0 / math.sqrt(E)),
            p + "mlp.up_proj.weight": normal((F, E), 1.0 / math.sqrt(E)),
            p + "mlp.down_proj.weight": normal((E, F), 0.5 / math.sqrt(F)),
        })
    t["model.norm.weight"] = gain(E)
    return t


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=root / "models" / "llama-tiny")
    ap.add_argument("--seed", type=int, default=20260301)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(CONFIG, indent=2, sort_keys=True) + "\n")
    (args.out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2) + "\n")
    save_file(random_llama(CONFIG, args.seed), str(args.out / "model.safetensors"), metadata={"format": "pt"})
    shutil.copyfile(root / "models" / "gpt2-tiny" / "tokenizer.json", args.out / "tokenizer.json")
    print(f"wrote {args.out}: config.json, generation_config.json, model.safetensors "
          f"({(args.out / 'model.safetensors').stat().st_size / 1e6:.1f} MB), tokenizer.json")


if __name__ == "__main__":
    main()
