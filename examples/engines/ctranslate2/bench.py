r"""Time CTranslate2 on the GPT-2-124M-shaped checkpoint: greedy and beam-4, batch 1, a fixed 8-token prompt, 64 new
tokens (min_length = max_length = 64 with include_prompt_in_result=False, so eos never ends a row early), 1 warm-up
+ 5 timed runs each; prints one JSON line with the medians in new tokens per second.
Single-threaded: Generator(inter_threads=1, intra_threads=1), compute_type float32, device cpu.

    examples/engines/ctranslate2/env/bin/python examples/engines/ctranslate2/bench.py [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import ctranslate2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from adapter import converted, tok  # noqa: E402

sys.path.insert(0, str(HERE.parent / "common"))
from bench_common import NEW, PROMPT, default_model, tok_per_s  # noqa: E402  (one prompt, length and checkpoint for all)




def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    path = converted(args.model or default_model())
    prepare = time.perf_counter() - t0
    gen = ctranslate2.Generator(str(path), device="cpu", compute_type="float32", inter_threads=1, intra_threads=1)
    prompt = [[tok(t) for t in PROMPT]]
    out = {"engine": "ctranslate2", "version": ctranslate2.__version__, "threads": 1,
           "convert_or_hash_s": round(prepare, 2)}
    for name, beams in (("greedy", 1), ("beam4", 4)):

        def once() -> None:
            [res] = gen.generate_batch(prompt, beam_size=beams, max_length=NEW, min_length=NEW,
                                       include_prompt_in_result=False, end_token=[50256])
            assert len(res.sequences_ids[0]) == NEW, len(res.sequences_ids[0])

        out[f"{name}_tok_s"] = tok_per_s(name, once, args.runs)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
