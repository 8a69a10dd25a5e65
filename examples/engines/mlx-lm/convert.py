r"""A Hugging Face GPT-2 folder (config.json + model.safetensors) as an mlx-lm model folder, float32.

    python convert.py SRC_DIR OUT_DIR

NumPy + safetensors only (the adapter imports ``convert`` in mlx-lm's own environment). mlx-lm's GPT-2
(``mlx_lm/models/gpt2.py``) wants:

* the original GPT-2 weight names: ``h.0.attn.c_attn.weight``, ``wte.weight``, ... without transformers'
  ``transformer.`` prefix (``Model.sanitize`` only adds ``model.`` and transposes the Conv1D weights);
  ``lm_head.weight`` is dropped (mlx-lm ties the head: ``self.model.wte.as_linear``);
* ``n_ctx`` in config.json (``ModelArgs.n_ctx`` has no default): set to ``n_positions``.

The weights are cast to float32 (the shipped checkpoints are float16; mlx-lm computes in the weights' dtype), and
``torch_dtype`` is set to ``float32``. Nothing else changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file


def convert(src: Path, out: Path) -> None:
    weights = load_file(str(src / "model.safetensors"))
    renamed = {k.removeprefix("transformer."): np.ascontiguousarray(v, dtype=np.float32)
               for k, v in weights.items() if k != "lm_head.weight"}
    config = json.loads((src / "config.json").read_text())
    config.update(n_ctx=config["n_positions"], torch_dtype="float32")
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    save_file(renamed, str(tmp / "model.safetensors"), metadata={"format": "mlx"})
    (tmp / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    tmp.rename(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
