r"""Time onnxruntime-genai 0.18.0 on the GPT-2-124M-shaped checkpoint: greedy and beam-4, batch 1, a fixed 8-token
prompt, 64 new tokens (min_length = max_length = 8 + 64, so eos cannot end a hypothesis early: all 64 are
generated), 1 warm-up + 5 timed runs; prints ONE JSON line with the medians in tokens per second (64 / wall time of
one generation: Generator creation, prompt, 64 steps; beam-4 counts 64 tokens, not 4 x 64).

    examples/engines/onnxruntime-genai/env/bin/python examples/engines/onnxruntime-genai/bench.py [--model DIR]

Single-threaded: the genai_config.json the converter writes sets the decoder session's intra_op_num_threads and
inter_op_num_threads to 1 (CPU provider). The model is converted (and timed) on first use, as the adapter does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import adapter  # noqa: E402

sys.path.insert(0, str(HERE.parent / "common"))
from bench_common import NEW, PROMPT, default_model  # noqa: E402  (one prompt, length and checkpoint for all)




def one_run(model, num_beams: int) -> float:
    og = adapter.og
    start = time.perf_counter()
    params = og.GeneratorParams(model)
    total = len(PROMPT) + NEW
    params.set_search_options(max_length=total, min_length=total, batch_size=1, num_beams=num_beams,
                              num_return_sequences=1, do_sample=False, early_stopping=True)
    generator = og.Generator(model, params)
    generator.append_tokens(np.array([PROMPT], dtype=np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    seq = generator.get_sequence(0)
    elapsed = time.perf_counter() - start
    if len(seq) != total:
        raise RuntimeError(f"generated {len(seq) - len(PROMPT)} tokens, expected {NEW}")
    return NEW / elapsed


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    model_dir = (args.model or default_model()).resolve()
    t0 = time.perf_counter()
    adapter.converted(model_dir)
    convert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = adapter.model_for(model_dir, [50256], 50256)
    load_s = time.perf_counter() - t0
    result = {"engine": adapter.ENGINE, "version": adapter.VERSION}
    for name, beams in (("greedy_tok_s", 1), ("beam4_tok_s", 4)):
        one_run(model, beams)  # warm-up
        result[name] = round(statistics.median(one_run(model, beams) for _ in range(args.runs)), 2)
    result.update({"threads": 1, "convert_s": round(convert_s, 1), "load_s": round(load_s, 2)})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
