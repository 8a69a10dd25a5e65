"""Write ``models/gpt2-124m-shaped/``: random weights in the shape of GPT-2 124M (12 layers, 768 wide, 1024
positions, the real vocabulary), float32, in Hugging Face's layout. Not committed (~500 MB; git-ignored).

The engines report (examples/engines/) times engines and refdecode on a checkpoint of the size people run, and
checks the engines' beam search there too. Random weights, because no network: the real GPT-2 weights are
downloaded by the user (models/README.md). NumPy only, fixed seed, so re-running reproduces the same bytes::

    python tools/engines/make_gpt2_124m_shaped.py [--out models/gpt2-124m-shaped]

config.json carries ``n_ctx`` (llama.cpp's converter asks for it) and ``torch_dtype: float32``;
tokenizer.json is the shipped model's (the GPT-2 byte-level BPE).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from make_tiny_model import CONFIG, GENERATION_CONFIG, random_gpt2  # noqa: E402

SHAPE = {"n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "n_ctx": 1024, "torch_dtype": "float32"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "gpt2-124m-shaped")
    ap.add_argument("--seed", type=int, default=124)
    args = ap.parse_args()
    config = {**CONFIG, **SHAPE}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (args.out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2) + "\n")
    shutil.copyfile(ROOT / "models" / "tiny-shakespeare" / "tokenizer.json", args.out / "tokenizer.json")
    import numpy as np

    save_file(random_gpt2(config, args.seed, dtype=np.float32), str(args.out / "model.safetensors"),
              metadata={"format": "pt"})
    print(f"wrote {args.out}: config.json, generation_config.json, tokenizer.json, model.safetensors "
          f"({(args.out / 'model.safetensors').stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
