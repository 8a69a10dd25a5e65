r"""Meta's ``Transformer`` (llama-models 0.3.0, float32, the adapter's build) against refdecode's Llama: the logits
of every position of a few prompts on each Llama checkpoint the suite decodes on. Prints one JSON line per model
(largest absolute difference of the logits, and whether every position's argmax agrees).

    examples/peers/llama-models/env/bin/python examples/peers/llama-models/forward_check.py

Runs in the peer's env (torch, Meta's code) with refdecode imported from this checkout (NumPy, safetensors).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import adapter  # noqa: E402  (its build: the converted checkpoint, Meta's Transformer in float32)
from refdecode.reference.conformance.cases_decode import model_for  # noqa: E402

MODELS = [ROOT / "models" / "tiny-shakespeare-llama", ROOT / "models" / "llama-tiny",
          ROOT / "tests" / "golden" / "models" / "llama-gqa-tied"]
PROMPTS = [[464, 3290, 318, 257, 1332, 13, 198, 40], [15, 7, 99, 3, 12, 12, 40, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 3]


def main() -> int:
    worst = 0.0
    for path in MODELS:
        meta = adapter.llama_for({"kind": "llama", "path": str(path)}).model
        ours = model_for({"kind": "llama", "path": str(path)}, {})
        vocab = meta.params.vocab_size
        diff, same = 0.0, True
        for prompt in PROMPTS:
            ids = [t % vocab for t in prompt]
            with torch.inference_mode():
                a = meta.forward(torch.tensor([ids]), 0)[0].numpy()                     # (T, V) float32
            b = np.asarray(ours(np.array([ids], dtype=np.int64)).logits[0], dtype=np.float32)
            diff = max(diff, float(np.abs(a - b).max()))
            same = same and bool((a.argmax(-1) == b.argmax(-1)).all())
        worst = max(worst, diff)
        print(json.dumps({"model": path.name, "dtype": str(next(meta.parameters()).dtype),
                          "max_abs_logit_diff": diff, "argmax_agrees": same}))
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
