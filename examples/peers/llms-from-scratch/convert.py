r"""A Hugging Face checkpoint folder as the weights llms-from-scratch 1.0.19's own loaders take, float32, cached.

    env/bin/python convert.py SRC_DIR OUT_DIR

The package loads weights with its own helpers, and this file only hands them what they read:

* GPT-2 (``config.json`` ``model_type`` gpt2): ``ch05.load_weights_into_gpt(gpt, params)`` reads OpenAI's
  TensorFlow checkpoint layout (what ``ch05.load_gpt2_params_from_tf_ckpt`` builds, ch05.py:327-355):
  ``params["wte"]``, ``["wpe"]``, ``["g"]`` / ``["b"]`` (the final LayerNorm) and ``params["blocks"][i]`` with
  ``attn.c_attn.{w,b}``, ``attn.c_proj.{w,b}``, ``mlp.c_fc.{w,b}``, ``mlp.c_proj.{w,b}``, ``ln_1.{g,b}``,
  ``ln_2.{g,b}``. Hugging Face's GPT-2 names are those of OpenAI's checkpoint (``h.0.attn.c_attn.weight`` is
  ``model/h0/attn/c_attn/w``, the Conv1D weight (in, out) in both), so the names are mapped, nothing transposed:
  the loader transposes (ch05.py:127-178) and ties the head to ``wte`` (ch05.py:181).
* Llama (``model_type`` llama): ``llama3.load_weights_into_llama(model, cfg, params)`` and
  ``qwen3.load_weights_into_qwen(model, cfg, params)`` read Hugging Face's own names
  (``model.layers.{l}.self_attn.q_proj.weight`` ...; the embedding as the head when ``lm_head.weight`` is absent,
  llama3.py:569-573), so the tensors are kept under their names.

Out: ``OUT_DIR/params.pt`` (``torch.save`` of those params, float32: the shipped checkpoints are float16 and
transformers 4.38.2 loads them as float32) and ``OUT_DIR/config.json`` (the checkpoint's config). The adapter
keys OUT_DIR by the checkpoint's sha256 (``cache/<folder name>-<12 hex>``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file


def gpt2_params(weights: dict[str, np.ndarray], n_layer: int) -> dict:
    """OpenAI's GPT-2 parameter tree (ch05 ``load_gpt2_params_from_tf_ckpt``'s result) from HF's flat names."""
    w = {k.removeprefix("transformer."): v for k, v in weights.items()}

    def pair(prefix: str, a: str, b: str) -> dict:
        return {a: w[f"{prefix}.weight"], b: w[f"{prefix}.bias"]}

    blocks = [{"attn": {"c_attn": pair(f"h.{i}.attn.c_attn", "w", "b"),
                        "c_proj": pair(f"h.{i}.attn.c_proj", "w", "b")},
               "mlp": {"c_fc": pair(f"h.{i}.mlp.c_fc", "w", "b"), "c_proj": pair(f"h.{i}.mlp.c_proj", "w", "b")},
               "ln_1": pair(f"h.{i}.ln_1", "g", "b"), "ln_2": pair(f"h.{i}.ln_2", "g", "b")}
              for i in range(n_layer)]
    return {"wte": w["wte.weight"], "wpe": w["wpe.weight"], "g": w["ln_f.weight"], "b": w["ln_f.bias"],
            "blocks": blocks}


def convert(src: Path, out: Path) -> None:
    config = json.loads((src / "config.json").read_text())
    weights = {k: np.ascontiguousarray(v, dtype=np.float32)
               for k, v in load_file(str(src / "model.safetensors")).items()}
    if config["model_type"] == "gpt2":
        params = gpt2_params(weights, int(config["n_layer"]))
    else:
        params = {k: torch.from_numpy(v) for k, v in weights.items()}
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    torch.save(params, tmp / "params.pt")
    (tmp / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    tmp.rename(out)


if __name__ == "__main__":
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
