r"""Hugging Face GPT-2 folder -> the folder keras-hub 0.32's Hugging Face loader reads, float32.

``convert(model_dir, out_dir)`` writes ``out_dir/config.json`` (the model's, unchanged) and
``out_dir/model.safetensors`` with every tensor as float32 and its name without the ``transformer.`` prefix of
``GPT2LMHeadModel`` (keras-hub's ``convert_gpt2.convert_weights`` asks for ``wte.weight``, ``h.{i}.attn.c_attn.weight``,
... as ``GPT2Model`` names them; the tied ``lm_head.weight``, when stored, is dropped: keras-hub ties the output
projection to ``wte``). Then ``GPT2Backbone.from_preset(out_dir, dtype="float32")`` loads it through keras-hub's
own converter (``keras_hub/src/utils/transformers/convert_gpt2.py``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file


def convert(model_dir: str | Path, out_dir: str | Path) -> Path:
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    tensors = load_file(str(model_dir / "model.safetensors"))
    renamed: dict[str, np.ndarray] = {}
    for name, value in tensors.items():
        if name == "lm_head.weight":
            continue
        short = name[len("transformer."):] if name.startswith("transformer.") else name
        if short.endswith((".attn.bias", ".attn.masked_bias")):
            continue  # causal-mask buffers, not weights
        renamed[short] = np.ascontiguousarray(value.astype(np.float32))
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(renamed, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((model_dir / "config.json").read_text())
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return out_dir


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: convert.py MODEL_DIR OUT_DIR")
    print(convert(sys.argv[1], sys.argv[2]))
