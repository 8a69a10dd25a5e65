"""Write ``models/gpt2-tiny/``: a random GPT-2 with the real vocabulary, small enough to commit (~3 MB).

It exists so that everything (tests, tutorials, the CLI) runs offline on a fresh clone; its text is
gibberish (the trained model is models/tiny-shakespeare). NumPy only, fixed seed, so re-running this
script reproduces the same bytes::

    python tools/make_tiny_model.py [--out models/gpt2-tiny]

Writes config.json (a transformers 4.38.2 GPT2Config), model.safetensors (float16, in the layout
``save_pretrained`` writes: ``transformer.`` prefix, no ``lm_head.weight`` since it is tied to ``wte``) and
generation_config.json. ``tokenizer.json`` comes from ``tools/build_tokenizer.py``.
Initialisation follows ``GPT2PreTrainedModel._init_weights``: weights ~ N(0, 0.02), ``c_proj`` weights
~ N(0, 0.02 / sqrt(2 * n_layer)); biases and LayerNorms are perturbed around 0 and 1 (instead of exactly
0 and 1) so that a loader mixing up bias and weight, or dropping them, changes the logits.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

CONFIG = {
    "activation_function": "gelu_new",
    "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1,
    "bos_token_id": 50256,
    "embd_pdrop": 0.1,
    "eos_token_id": 50256,
    "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2",
    "n_embd": 32,
    "n_head": 2,
    "n_inner": None,
    "n_layer": 2,
    "n_positions": 256,
    "reorder_and_upcast_attn": False,
    "resid_pdrop": 0.1,
    "scale_attn_by_inverse_layer_idx": False,
    "scale_attn_weights": True,
    "summary_activation": None,
    "summary_first_dropout": 0.1,
    "summary_proj_to_labels": True,
    "summary_type": "cls_index",
    "summary_use_proj": True,
    "torch_dtype": "float16",
    "transformers_version": "4.38.2",
    "use_cache": True,
    "vocab_size": 50257,
}
GENERATION_CONFIG = {"_from_model_config": True, "bos_token_id": 50256, "eos_token_id": 50256,
                     "transformers_version": "4.38.2"}


def random_gpt2(config: dict, seed: int, dtype=np.float16) -> dict[str, np.ndarray]:
    """Random GPT-2 tensors under save_pretrained names (``transformer.h.0.ln_1.weight``, ...)."""
    rng = np.random.default_rng(seed)
    E, L, V, P = config["n_embd"], config["n_layer"], config["vocab_size"], config["n_positions"]
    F = config.get("n_inner") or 4 * E
    std, proj_std = 0.02, 0.02 / math.sqrt(2 * L)

    def normal(shape, s):
        return rng.normal(0.0, s, size=shape).astype(dtype)

    t = {"transformer.wte.weight": normal((V, E), std), "transformer.wpe.weight": normal((P, E), 0.01)}
    for i in range(L):
        p = f"transformer.h.{i}."
        t.update({
            p + "ln_1.weight": (1.0 + normal((E,), 0.1)).astype(dtype), p + "ln_1.bias": normal((E,), 0.1),
            p + "attn.c_attn.weight": normal((E, 3 * E), std), p + "attn.c_attn.bias": normal((3 * E,), 0.1),
            p + "attn.c_proj.weight": normal((E, E), proj_std), p + "attn.c_proj.bias": normal((E,), 0.1),
            p + "ln_2.weight": (1.0 + normal((E,), 0.1)).astype(dtype), p + "ln_2.bias": normal((E,), 0.1),
            p + "mlp.c_fc.weight": normal((E, F), std), p + "mlp.c_fc.bias": normal((F,), 0.1),
            p + "mlp.c_proj.weight": normal((F, E), proj_std), p + "mlp.c_proj.bias": normal((E,), 0.1),
        })
    t["transformer.ln_f.weight"] = (1.0 + normal((E,), 0.1)).astype(dtype)
    t["transformer.ln_f.bias"] = normal((E,), 0.1)
    return t


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=root / "models" / "gpt2-tiny")
    ap.add_argument("--seed", type=int, default=20240307)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(CONFIG, indent=2, sort_keys=True) + "\n")
    (args.out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2) + "\n")
    save_file(random_gpt2(CONFIG, args.seed), str(args.out / "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {args.out}: config.json, generation_config.json, model.safetensors "
          f"({(args.out / 'model.safetensors').stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
