r"""A float32 copy of a Hugging Face GPT-2 folder, for ``TFGPT2LMHeadModel.from_pretrained(folder, from_pt=True)``.

    env/bin/python convert.py SRC_DIR OUT_DIR

The shipped checkpoints are float16 with ``torch_dtype: float16`` in config.json. transformers 4.38.2's PyTorch
model loads them as float32 (``torch_dtype=torch.float32``) and ``save_pretrained`` writes config.json +
model.safetensors in float32; the TF model then reads those PyTorch weights (``from_pt=True``), as a TF user of a
PyTorch-only checkpoint does. The values are the float16 ones widened, so nothing is rounded twice.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def convert(src: Path, out: Path) -> None:
    import torch
    from transformers import GPT2LMHeadModel

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model = GPT2LMHeadModel.from_pretrained(str(src), torch_dtype=torch.float32)
    model.save_pretrained(str(tmp), safe_serialization=True)
    tmp.rename(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
