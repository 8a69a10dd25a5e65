"""Write ``models/gpt2-124m-shaped/``: the shipped model's function in the shape of GPT-2 124M (12 layers,
768 wide, 12 heads, 1024 positions, the real vocabulary), float32, in Hugging Face's layout. Not committed
(~500 MB; git-ignored).

The engines report (examples/engines/) times engines and refdecode on a checkpoint of the size people run, and
checks the engines' beam search there too. The real GPT-2 weights need the network (the user downloads them:
models/README.md). Random weights of that shape were tried first and are no use for beam search: a deep random
GPT-2 gives almost the same next-token distribution whatever the prompt, flat over 50,257 tokens, so hypotheses
holding the same tokens in another order score alike and every 4- or 5-beam decode holds a near-tie (all ten
prompts of the engines group, at a margin of 1e-4).

So the 124M-shaped checkpoint computes what ``models/tiny-shakespeare`` (4 layers, 128 wide, 4 heads of 32)
computes, up to float32 rounding, with every tensor in 124M's shape (``widen``):

* the residual stream is the small one's, tiled r = 768 / 128 = 6 times. A LayerNorm over six copies of a vector
  has the copies' mean and variance, so LayerNorms (weights and biases tiled) keep the tiling;
* big head j (64 dims) is small head j mod 4, its 32 dims twice; q is scaled by sqrt(32 / 64), so that
  q.k / sqrt(64) over the doubled dims equals the small q.k / sqrt(32);
* a weight reading the tiled stream reads each copy with 1/6 of the small weight (the six copies sum back to
  one); the MLP's 3072 hidden units are the small 512, six times;
* layers 4-11 have random attention and MLP weights but zero output projections (``c_proj``, weight and bias):
  they add exactly 0 to the stream while costing what a 124M layer costs;
* ``ln_f`` is divided by 6, so that the tiled final state dotted with the tiled ``wte`` gives the small logits;
  positions past the small model's 256 repeat its position table.

NumPy only, deterministic (the random parts have a fixed seed), so re-running reproduces the same bytes::

    python tools/engines/make_gpt2_124m_shaped.py [--out models/gpt2-124m-shaped]

config.json carries ``n_ctx`` (llama.cpp's converter asks for it) and ``torch_dtype: float32``;
tokenizer.json is the shipped model's (the GPT-2 byte-level BPE).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from make_tiny_model import CONFIG, GENERATION_CONFIG, random_gpt2  # noqa: E402

SMALL = ROOT / "models" / "tiny-shakespeare"
SHAPE = {"n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "n_ctx": 1024, "torch_dtype": "float32"}


def widen(small: dict[str, np.ndarray], small_config: dict, big_config: dict, seed: int = 124) -> dict[str, np.ndarray]:
    """The tensors of a GPT-2 of ``big_config``'s shape computing what ``small`` computes (module docstring).
    Needs the big width, heads, head size and MLP width to be multiples of the small ones, and at least as many
    layers. Returns float32 tensors under save_pretrained names."""
    e, E = small_config["n_embd"], big_config["n_embd"]
    h, H = small_config["n_head"], big_config["n_head"]
    d, D = e // h, E // H
    f, F = small_config.get("n_inner") or 4 * e, big_config.get("n_inner") or 4 * E
    L_small, L = small_config["n_layer"], big_config["n_layer"]
    if E % e or H % h or D % d or F % f or L < L_small:
        raise ValueError(f"cannot widen {e} wide / {h} heads / {L_small} layers into {E} / {H} / {L}")
    r = E // e  # copies of the stream; also (H // h) * (D // d) copies of each attention dim, F // f of each unit
    s = {k: v.astype(np.float32) for k, v in small.items()}
    stream = np.arange(E) % e                                        # big stream dim -> small stream dim
    heads = (np.arange(E) // D % h) * d + np.arange(E) % D % d        # big q/k/v dim -> small q/k/v dim
    units = np.arange(F) % f                                          # big MLP unit -> small MLP unit
    q_scale = np.float32(math.sqrt(d / D))
    pad = random_gpt2({**CONFIG, **big_config}, seed, dtype=np.float32)  # the shapes, and layers past L_small

    out = {"transformer.wte.weight": s["transformer.wte.weight"][:, stream],
           "transformer.wpe.weight": s["transformer.wpe.weight"][
               np.arange(big_config["n_positions"]) % small_config["n_positions"]][:, stream],
           "transformer.ln_f.weight": s["transformer.ln_f.weight"][stream] / np.float32(r),
           "transformer.ln_f.bias": s["transformer.ln_f.bias"][stream] / np.float32(r)}
    for i in range(L):
        p = f"transformer.h.{i}."
        if i >= L_small:  # random reads, zero writes: the stream passes unchanged
            out.update({k: v for k, v in pad.items() if k.startswith(p)})
            for name in ("attn.c_proj.weight", "attn.c_proj.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"):
                out[p + name] = np.zeros_like(pad[p + name])
            continue
        w, b = s[p + "attn.c_attn.weight"], s[p + "attn.c_attn.bias"]  # (e, 3e), (3e,): q | k | v
        cols = np.concatenate([heads + k * e for k in range(3)])       # (3E,)
        scale = np.concatenate([np.full(E, q_scale), np.ones(2 * E, np.float32)]).astype(np.float32)
        out.update({
            p + "ln_1.weight": s[p + "ln_1.weight"][stream], p + "ln_1.bias": s[p + "ln_1.bias"][stream],
            p + "ln_2.weight": s[p + "ln_2.weight"][stream], p + "ln_2.bias": s[p + "ln_2.bias"][stream],
            p + "attn.c_attn.weight": w[stream][:, cols] * (scale / np.float32(r)),
            p + "attn.c_attn.bias": b[cols] * scale,
            p + "attn.c_proj.weight": s[p + "attn.c_proj.weight"][heads][:, stream] / np.float32(r),
            p + "attn.c_proj.bias": s[p + "attn.c_proj.bias"][stream],
            p + "mlp.c_fc.weight": s[p + "mlp.c_fc.weight"][stream][:, units] / np.float32(r),
            p + "mlp.c_fc.bias": s[p + "mlp.c_fc.bias"][units],
            p + "mlp.c_proj.weight": s[p + "mlp.c_proj.weight"][units][:, stream] / np.float32(F // f),
            p + "mlp.c_proj.bias": s[p + "mlp.c_proj.bias"][stream],
        })
    assert out.keys() == pad.keys() and all(out[k].shape == pad[k].shape for k in pad)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "gpt2-124m-shaped")
    ap.add_argument("--seed", type=int, default=124)
    args = ap.parse_args()
    small_config = json.loads((SMALL / "config.json").read_text())
    config = {**CONFIG, **SHAPE}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (args.out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2) + "\n")
    shutil.copyfile(SMALL / "tokenizer.json", args.out / "tokenizer.json")
    tensors = widen(load_file(SMALL / "model.safetensors"), small_config, config, args.seed)
    save_file(tensors, str(args.out / "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {args.out}: config.json, generation_config.json, tokenizer.json, model.safetensors "
          f"({(args.out / 'model.safetensors').stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
