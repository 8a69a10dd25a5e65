r"""Times keras-hub 0.32 (GPT2CausalLM, Keras 3 on torch 2.13.0, float32) on the GPT-2-124M-shaped checkpoint:
greedy (GreedySampler) and beam-4 (BeamSampler(num_beams=4)), through GPT2CausalLM.generate, batch 1, a fixed
8-token prompt, 64 new tokens (stop_token_ids=None: all 64 are generated), 1 warm-up + 5 timed runs each, one
torch thread (torch.set_num_threads(1), KERAS_HUB_THREADS). Prints ONE JSON line with the medians.

Usage: env/bin/python bench.py [MODEL_DIR]   (default the checkout's models/gpt2-124m-shaped or $REFDECODE_BENCH_MODEL)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import engine  # sets KERAS_BACKEND=torch and the thread count first

import keras_hub
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from bench_common import NEW, PROMPT, default_model, tok_per_s  # noqa: E402  (one prompt, length and checkpoint for all)


def main() -> int:
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("REFDECODE_BENCH_MODEL") or str(default_model())
    t0 = time.perf_counter()
    lm = engine.load(model_dir)
    load_s = time.perf_counter() - t0
    token_ids = np.zeros((1, len(PROMPT) + NEW), dtype="int32")
    token_ids[0, : len(PROMPT)] = PROMPT
    mask = np.zeros_like(token_ids, dtype=bool)
    mask[0, : len(PROMPT)] = True
    result = {"engine": "keras-hub", "version": engine.VERSION}
    for name, sampler in (("greedy", keras_hub.samplers.GreedySampler()), ("beam4", keras_hub.samplers.BeamSampler(num_beams=4))):
        lm.compile(sampler=sampler)

        def once() -> None:
            out = lm.generate({"token_ids": token_ids, "padding_mask": mask}, stop_token_ids=None)
            assert np.asarray(out["token_ids"]).shape == (1, len(PROMPT) + NEW)

        result[f"{name}_tok_s"] = tok_per_s(name, once)
    print(f"[bench] load+convert {load_s:.1f} s", file=sys.stderr)
    result["threads"] = 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
