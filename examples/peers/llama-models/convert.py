r"""A Hugging Face Llama folder (config.json + model.safetensors) as a Meta checkpoint folder, float32.

    python convert.py SRC_DIR OUT_DIR

Writes what ``Llama3.build`` reads (llama-models 0.3.0, ``models/llama3/generation.py:85-95``): ``params.json``
(``ModelArgs`` fields) and ``consolidated.00.pth`` (one model-parallel shard: world size 1). The inverse of
transformers' ``convert_llama_weights_to_hf.py``:

* names: ``model.embed_tokens`` -> ``tok_embeddings``, ``self_attn.{q,k,v,o}_proj`` -> ``attention.w{q,k,v,o}``,
  ``mlp.{gate,down,up}_proj`` -> ``feed_forward.w{1,2,3}``, ``input_layernorm`` -> ``attention_norm``,
  ``post_attention_layernorm`` -> ``ffn_norm``, ``model.norm`` -> ``norm``, ``lm_head`` -> ``output`` (a tied
  head: the embedding, copied);
* RoPE layout: Meta rotates interleaved pairs (x[2i], x[2i+1]) as complex numbers (``model.py`` ``apply_rotary_emb``);
  transformers rotates halves (``rotate_half``), and its converter permutes q and k rows per head,
  ``w.view(n_heads, d // n_heads // 2, 2, dim).transpose(1, 2)``. Undone here:
  ``w.view(n_heads, 2, d // n_heads // 2, dim).transpose(1, 2)`` (k with the key/value heads);
* params: ``rope_theta`` (``ModelArgs`` defaults to 500000, Llama 3's), ``norm_eps`` = ``rms_norm_eps``,
  ``use_scaled_rope`` False (no ``rope_scaling``), and the MLP width: Meta derives it from ``dim``
  (``FeedForward``: int(2 * 4 * dim / 3), times ``ffn_dim_multiplier``, rounded up to ``multiple_of``), so the
  HF ``intermediate_size`` I is written as ``multiple_of`` = I where I >= int(8 * dim / 3), else as
  ``ffn_dim_multiplier`` = (I + 0.5) / int(8 * dim / 3) with ``multiple_of`` 1.

The float16 weights are cast to float32 (exact). Refused (ValueError): attention biases, rope_scaling, a head_dim
other than hidden_size / heads (Meta's ``Attention`` has none of them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file

NAMES = {"self_attn.q_proj": "attention.wq", "self_attn.k_proj": "attention.wk", "self_attn.v_proj": "attention.wv",
         "self_attn.o_proj": "attention.wo", "mlp.gate_proj": "feed_forward.w1", "mlp.down_proj": "feed_forward.w2",
         "mlp.up_proj": "feed_forward.w3", "input_layernorm": "attention_norm",
         "post_attention_layernorm": "ffn_norm"}


def params_of(config: dict) -> dict:
    """``ModelArgs`` fields (params.json) of a transformers LlamaConfig."""
    if config.get("attention_bias") or config.get("mlp_bias") or config.get("rope_scaling"):
        raise ValueError("attention/mlp biases and rope_scaling: Meta's llama3 Transformer has neither")
    dim, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    if int(config.get("head_dim") or dim // heads) != dim // heads:
        raise ValueError("head_dim other than hidden_size / num_attention_heads: Meta's Attention has none")
    width, derived = int(config["intermediate_size"]), int(2 * 4 * dim / 3)
    mlp = {"multiple_of": width} if width >= derived else \
        {"multiple_of": 1, "ffn_dim_multiplier": (width + 0.5) / derived}
    return {"dim": dim, "n_layers": int(config["num_hidden_layers"]), "n_heads": heads,
            "n_kv_heads": int(config.get("num_key_value_heads") or heads), "vocab_size": int(config["vocab_size"]),
            "norm_eps": float(config["rms_norm_eps"]), "rope_theta": float(config.get("rope_theta", 10000.0)),
            "use_scaled_rope": False, **mlp}


def unpermute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """(n_heads * head_dim, dim): transformers' rotate_half row order back to Meta's interleaved pairs."""
    rows, cols = w.shape
    return w.reshape(n_heads, 2, rows // n_heads // 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


def state_dict_of(weights: dict[str, np.ndarray], params: dict) -> dict[str, torch.Tensor]:
    out = {"tok_embeddings.weight": weights["model.embed_tokens.weight"], "norm.weight": weights["model.norm.weight"],
           "output.weight": weights.get("lm_head.weight", weights["model.embed_tokens.weight"])}
    for i in range(params["n_layers"]):
        for hf, meta in NAMES.items():
            w = weights[f"model.layers.{i}.{hf}.weight"]
            if hf == "self_attn.q_proj":
                w = unpermute(w, params["n_heads"])
            elif hf == "self_attn.k_proj":
                w = unpermute(w, params["n_kv_heads"])
            out[f"layers.{i}.{meta}.weight"] = w
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in out.items()}


def convert(src: Path, out: Path) -> None:
    params = params_of(json.loads((src / "config.json").read_text()))
    state = state_dict_of(load_file(str(src / "model.safetensors")), params)
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    torch.save(state, tmp / "consolidated.00.pth")
    (tmp / "params.json").write_text(json.dumps(params, indent=1) + "\n")
    tmp.rename(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
