r"""litgpt's Llama forward pass against refdecode's, on the suite's Llama checkpoints: the largest |difference| of
the next-token logits, step by step through litgpt's KV cache as ``generate_fn`` drives it.

    env/bin/python logits_check.py [--steps 12]

For each checkpoint (models/tiny-shakespeare-llama, models/llama-tiny, tests/golden/models/llama-gqa-tied) and a
few prompts: litgpt's ``GPT`` (the adapter's conversion and loading) runs the prompt with ``input_pos`` =
arange(T), ``input_pos_maxp1`` = T, then one greedy token at a time through its KV cache; refdecode's float32
Llama (``refdecode.reference.conformance.cases_decode.model_for``, NumPy, no cache) runs the whole row each step.
Prints the largest |litgpt - refdecode| per checkpoint. Runs in litgpt's env (torch); refdecode from this checkout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from adapter import model_for as litgpt_model  # noqa: E402
from refdecode.reference.conformance.cases_decode import model_for as refdecode_model  # noqa: E402

MODELS = [ROOT / "models" / "tiny-shakespeare-llama", ROOT / "models" / "llama-tiny",
          ROOT / "tests" / "golden" / "models" / "llama-gqa-tied"]
PROMPTS = {"tiny-shakespeare-llama": [[464, 5822, 286], [5962, 22307, 25, 198, 8421, 356, 5120, 597]],
           "llama-tiny": [[5, 900, 31000], [12, 7, 44, 1000, 20000, 3]],
           "llama-gqa-tied": [[1, 5, 9], [3, 100, 7, 64, 2, 8, 11]]}


def check(path: Path, steps: int) -> float:
    spec = {"kind": "llama", "path": str(path)}
    lit, ref = litgpt_model(spec), refdecode_model(spec, {})
    worst = 0.0
    for prompt in PROMPTS[path.name]:
        T = len(prompt)
        lit.max_seq_length = T + steps
        lit.set_kv_cache(batch_size=1)
        row = list(prompt)
        with torch.inference_mode():
            x, pos, maxp1 = torch.tensor([row]), torch.arange(T), T
            for _ in range(steps):
                got = lit(x, pos, input_pos_maxp1=maxp1)[0, -1].numpy()                  # (V,) float32
                want = np.asarray(ref(np.array([row], dtype=np.int64)).logits[0, -1])     # (V,) float32
                assert got.dtype == np.float32 and want.dtype == np.float32
                worst = max(worst, float(np.abs(got - want).max()))
                row.append(int(np.argmax(got)))
                x, pos, maxp1 = torch.tensor([[row[-1]]]), torch.tensor([len(row) - 1]), len(row)
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    torch.set_num_threads(1)
    for path in MODELS:
        print(f"{path.name}: max |litgpt - refdecode| = {check(path, args.steps):.3g} over {args.steps} steps "
              f"of {len(PROMPTS[path.name])} prompts", flush=True)


if __name__ == "__main__":
    main()
