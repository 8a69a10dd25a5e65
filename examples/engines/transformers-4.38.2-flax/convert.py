r"""A float32 copy of a Hugging Face GPT-2 folder, for ``FlaxGPT2LMHeadModel.from_pretrained(copy, from_pt=True)``.

    env/bin/python convert.py SRC_DIR [OUT_DIR]      # OUT_DIR default: cache/<name>-<first 12 hex of sha256>

Runs in this engine's env (torch 2.13.0 + transformers 4.38.2 are there for ``from_pt=True``). The shipped
tiny-shakespeare weights are float16 with ``torch_dtype: float16`` in config.json; transformers' PyTorch-to-Flax
loader keeps a checkpoint's dtype in the Flax params (``modeling_flax_pytorch_utils.py``), so the Flax model would
hold float16 weights. The copy is ``GPT2LMHeadModel.from_pretrained(src, torch_dtype=torch.float32)
.save_pretrained(out)``: every float16 value widened exactly (the values refdecode computes with), the config's
``torch_dtype`` float32. Nothing else changes (the same config fields, the tied lm_head).
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / "cache"


def digest(src: Path) -> str:
    h = hashlib.sha256()
    with open(src / "model.safetensors", "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()[:12]


def float32_folder(src: Path, out: Path | None = None) -> Path:
    """The cached float32 copy of ``src``, made on first use."""
    src = Path(src).resolve()
    out = out or CACHE / f"{src.name}-{digest(src)}"
    if (out / "config.json").exists():
        return out
    import torch
    from transformers import AutoModelForCausalLM   # GPT2LMHeadModel or LlamaForCausalLM, by config.json

    t0 = time.perf_counter()
    tmp = out.with_name(out.name + ".tmp")
    AutoModelForCausalLM.from_pretrained(str(src), torch_dtype=torch.float32).save_pretrained(str(tmp))
    tmp.rename(out)
    print(f"transformers-4.38.2-flax: float32 copy {src} -> {out} in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    return out


if __name__ == "__main__":
    print(float32_folder(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None))
