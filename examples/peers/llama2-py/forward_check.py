r"""llama2-py 0.0.6's forward pass against refdecode's Llama: the logits at every position of a prompt.

    .venv/bin/python examples/peers/llama2-py/forward_check.py [--json out.json]     (refdecode's venv)

For each Llama checkpoint (the shipped tiny-shakespeare-llama, llama-tiny, llama-gqa-tied) the file convert.py
wrote (``cache/``; run the adapter once, or convert.py, first) is read with llama2-py's readers and run with its
``transformer(token, pos, ...)`` (loaded from ``env/`` by file path: llama2-py is one standard-library file), one
token at a time; refdecode's Llama runs the same ids in one call, with its RMSNorm epsilon at the checkpoint's
``rms_norm_eps`` and at llama2-py's hard-coded 1e-5 (the profile's ``rms_norm_eps="1e-5"``, FINDINGS P2). Printed per
checkpoint and epsilon: the largest |difference| over the largest |logit| (relative), over all positions.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
from refdecode.model.llama_modeling import Llama  # noqa: E402
from refdecode.reference.engines.steps import _rms_norm_eps  # noqa: E402

MODELS = [ROOT / "models" / "tiny-shakespeare-llama", ROOT / "models" / "llama-tiny",
          ROOT / "tests" / "golden" / "models" / "llama-gqa-tied"]
PROMPTS = {50257: [15496, 995, 11, 314, 716, 257], 128: [1, 17, 99, 3, 64, 120]}


def peer():
    """llama2_py (env/) and convert.load, imported by path."""
    file = next((HERE / "env" / "lib").glob("python3*/site-packages/llama2_py.py"))
    spec = importlib.util.spec_from_file_location("llama2_py", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["llama2_py"] = module
    sys.path.insert(0, str(HERE))
    import convert
    return module, convert


def peer_logits(l2, conf, weights, ids: list[int]) -> np.ndarray:
    """(T, V) float64: llama2-py's logits after each token, positions 0 .. T-1."""
    state = l2.RunState()
    l2.init_run_state(state, conf)
    rows = []
    for pos, token in enumerate(ids):
        l2.transformer(token, pos, conf, state, weights)
        rows.append(list(state.logits))
    return np.array(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    l2, convert = peer()
    sys.path.insert(0, str(HERE))
    from adapter import weights_key
    out = {}
    for folder in MODELS:
        conf, weights, _ = convert.load(HERE / "cache" / weights_key(folder))
        ids = PROMPTS[conf.vocab_size]
        theirs = peer_logits(l2, conf, weights, ids)
        model = Llama.from_pretrained(folder)
        for eps in ("checkpoint", "1e-5"):
            with _rms_norm_eps(model, eps):
                mine = model(np.array([ids])).logits[0].astype(np.float64)          # (T, V) float32 -> float64
            rel = float(np.abs(mine - theirs).max() / np.abs(mine).max())
            out[f"{folder.name} rms_norm_eps={eps} (checkpoint {model.config.rms_norm_eps:g})"] = rel
            print(f"{folder.name:24s} refdecode eps {eps:10s} (checkpoint {model.config.rms_norm_eps:g}): "
                  f"max |diff| / max |logit| = {rel:.2e} over {len(ids)} positions", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
