r"""Time OpenVINO GenAI 2026.4.1.0 on the GPT-2-124M-shaped checkpoint: greedy and beam-4, batch 1, the fixed 8-token
prompt, 64 new tokens, 1 warm-up + 5 timed runs each; prints one JSON line with the medians in new tokens per second
(64 / the wall time of one ``generate`` call; beam-4 counts 64 tokens, not 4 x 64).

    examples/engines/openvino-genai/env/bin/python examples/engines/openvino-genai/bench.py [--model DIR]

The pipeline is the adapter's (``LLMPipeline`` on the CPU, continuous batching, KV cache and inference in f32, one
thread, one stream), called with ``TokenizedInputs``. Greedy sets ``ignore_eos`` (its loop honours it); GenAI's beam
search stops on the eos whatever ``ignore_eos`` says (sampler.cpp ``GroupBeamSearcher::select_next_tokens``), so
the beam run keeps eos 50256, which this checkpoint does not reach in 64 tokens, and every run checks that all 64
tokens were generated.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import adapter  # noqa: E402

sys.path.insert(0, str(HERE.parent / "common"))
from bench_common import NEW, PROMPT, bench_args, default_model, tok_per_s  # noqa: E402  (one spec for all)


def main() -> None:
    args = bench_args(__doc__)
    model_dir = (args.model or default_model()).resolve()
    t0 = time.perf_counter()
    adapter.converted(model_dir)
    convert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pipe = adapter.pipeline_for(model_dir)
    load_s = time.perf_counter() - t0
    og, ov = adapter.og, adapter.ov
    inputs = og.TokenizedInputs(ov.Tensor(np.array([PROMPT], dtype=np.int64)),
                                ov.Tensor(np.ones((1, len(PROMPT)), dtype=np.int64)))
    out = {"engine": adapter.ENGINE, "version": adapter.VERSION, "threads": 1}
    for name, beams in (("greedy", 1), ("beam4", 4)):
        config = og.GenerationConfig()
        config.max_new_tokens = NEW
        config.eos_token_id = 50256
        config.stop_token_ids = {50256}
        config.num_beams = beams
        config.ignore_eos = beams == 1

        def once() -> None:
            tokens = pipe.generate(inputs, config).tokens
            assert all(len(t) == NEW for t in tokens), [len(t) for t in tokens]

        out[f"{name}_tok_s"] = tok_per_s(name, once, args.runs)
    out.update({"convert_s": round(convert_s, 1), "load_s": round(load_s, 2)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
