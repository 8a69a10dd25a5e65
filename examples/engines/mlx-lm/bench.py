r"""Time mlx-lm on the GPT-2-124M-shaped checkpoint: greedy, batch 1, a fixed 8-token prompt, 64 new tokens
(``generate_step``, which does not stop on eos by itself, so every run makes 64), 1 warm-up + 5 timed runs; prints
one JSON line with the median in new tokens per second. ``beam4_tok_s`` is null: mlx-lm has no beam search.
mlx's CPU build for Linux (its bundled reference BLAS, single-threaded; OMP_NUM_THREADS=1), float32 weights.

    examples/engines/mlx-lm/env/bin/python examples/engines/mlx-lm/bench.py [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import mlx.core as mx  # noqa: E402
from mlx_lm.generate import generate_step  # noqa: E402
from mlx_lm.sample_utils import make_sampler  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
from bench_common import NEW, PROMPT, default_model, tok_per_s  # noqa: E402

sys.path.insert(0, str(HERE))
from adapter import converted, converted_llama  # noqa: E402  (the adapter's cache: one conversion per checkpoint)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs (after one warm-up)")
    ap.add_argument("--model", type=Path, default=None,
                    help="a HF GPT-2 or Llama folder (default: the 124M-shaped GPT-2)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    src = args.model or default_model()
    llama = json.loads((src / "config.json").read_text()).get("model_type") == "llama"
    model, _ = load_model((converted_llama if llama else converted)(src))
    prepare = time.perf_counter() - t0
    prompt, sampler = mx.array(PROMPT), make_sampler(temp=0.0)

    def once() -> None:
        tokens = [t for t, _ in generate_step(prompt, model, max_tokens=NEW, sampler=sampler)]
        assert len(tokens) == NEW, len(tokens)

    out = {"engine": "mlx-lm", "version": f"{version('mlx-lm')} (mlx {version('mlx')} cpu)", "threads": 1,
           "convert_or_hash_s": round(prepare, 2), "greedy_tok_s": tok_per_s("greedy", once, args.runs),
           "beam4_tok_s": None}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
