r"""Time transformers 4.38.2 (the control) on the GPT-2-124M-shaped checkpoint: greedy and beam-4, batch 1, a fixed
8-token prompt, 64 new tokens (min_new_tokens=64 = max_new_tokens, so eos never ends a row early), 1 warm-up + 5
timed runs each; prints one JSON line with the medians in new tokens per second. torch.set_num_threads(1).

    examples/engines/transformers-4.38.2/env/bin/python examples/engines/transformers-4.38.2/bench.py [--model DIR]

transformers 5.x runs the same file in its env (examples/engines/transformers-5/bench.py); 5.x renamed
``torch_dtype`` to ``dtype``. ``--model`` a Llama folder (the speed table's Llama column:
benchmarks/make_llama_checkpoint.py's 124M-class Llama): ``AutoModelForCausalLM`` loads either by its config.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM, GenerationConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from bench_common import NEW, PROMPT, bench_modes, default_model  # noqa: E402  (one prompt, length and checkpoint for all)




def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    dtype = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(str(args.model or default_model()), **{dtype: torch.float32}).eval()
    ids = torch.tensor([PROMPT])
    mask = torch.ones_like(ids)
    out = {"engine": "transformers", "version": transformers.__version__, "torch": torch.__version__, "threads": 1,
           "model_type": model.config.model_type}

    def decode(beams: int) -> int:
        gen = GenerationConfig(max_new_tokens=NEW, min_new_tokens=NEW, num_beams=beams, do_sample=False,
                               eos_token_id=50256, pad_token_id=50256)
        with torch.no_grad():
            return model.generate(ids, attention_mask=mask, generation_config=gen).shape[1]

    out.update(bench_modes(decode, args.runs))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
