r"""llama.cpp's rules (FINDINGS.md, causes L1 and L2) applied with refdecode, checked against the adapter's answers:
the evidence that the rules are exact enough for a refdecode engine profile to reproduce llama.cpp.

Run with refdecode's venv (the adapter runs in Node through ``run``):

    .venv/bin/python examples/engines/llama-cpp/rule_check.py [--fp16-gelu] SUITE/cases/gpt2_greedy.jsonl ...

``--fp16-gelu`` also swaps refdecode's GELU for ggml's CPU one (input rounded to fp16, result looked up in an
fp16 table; exact for |x| >= 10), the one numerical difference of llama.cpp's forward pass found (FINDINGS.md,
"Numerics"): with it, the rules also reproduce the draws that land within llama.cpp's numerical noise.

Model paths in the cases are resolved against the suite folder (the parent of ``cases/``).

The rules, on top of transformers 4.38.2's generate:
  L1: the repetition penalty sees only the row's non-padding tokens: refdecode's ``semantics="5"``.
  L2 (sampling): llama.cpp's chain instead of transformers' warpers: top-k on the processed logits (k = top_k;
      0 = all), then top-p on the float32 softmax of those logits, before any temperature (sorted descending,
      keep the shortest prefix whose float32 cumulative sum reaches top_p, at least one token; top_p >= 1
      keeps all), then the logits divided by the temperature. Here: refdecode's own warpers switched off
      (temperature 1, top_k 0, top_p 1) and the chain passed as a custom logits processor, which transformers'
      order runs after the other processors, where llama.cpp runs it too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from refdecode.generate import generate
from refdecode.model.modeling import GPT2
from refdecode.reference.conformance.cases_decode import UniformStream

HERE = Path(__file__).resolve().parent


class LlamaCppChain:
    """top-k -> top-p (on the un-tempered softmax) -> temperature, as llama.cpp's sampler chain in node-llama-cpp."""

    def __init__(self, temperature: float, top_k: int, top_p: float):
        self.temperature, self.top_k, self.top_p = float(temperature), int(top_k), float(top_p)

    def __call__(self, input_ids, scores, **kwargs):
        out = np.array(scores, dtype=np.float32, copy=True)
        for row in out:
            order = np.argsort(-row, kind="stable")
            keep = np.ones(row.shape, dtype=bool)
            if 0 < self.top_k < row.size:
                keep[:] = False
                keep[order[: self.top_k]] = True
            if self.top_p < 1.0:
                kept = order[keep[order]]
                logits = row[kept]
                p = np.exp(logits - logits.max()).astype(np.float32)
                p = (p / p.sum(dtype=np.float32)).astype(np.float32)
                cum = np.cumsum(p, dtype=np.float32)
                last = int(np.argmax(cum >= np.float32(self.top_p))) + 1 if (cum >= np.float32(self.top_p)).any() else kept.size
                keep[:] = False
                keep[kept[:last]] = True
            row[~keep] = -np.inf
            row[keep] = row[keep] / np.float32(self.temperature)
        return out


def llama_cpp_decode(model, inp: dict) -> list[list[int]]:
    cfg = dict(inp["config"])
    for key in ("num_beam_groups", "diversity_penalty"):
        cfg.pop(key, None)
    extra = {}
    if cfg.get("do_sample"):
        chain = LlamaCppChain(cfg.get("temperature", 1.0), cfg.get("top_k", 0), cfg.get("top_p", 1.0))
        cfg.update(temperature=1.0, top_k=0, top_p=1.0)
        extra = {"logits_processor": [chain], "rng": UniformStream(np.asarray(inp["uniforms"], dtype=np.float64))}
    out = generate(model, np.array(inp["input_ids"]), np.array(inp["attention_mask"]), semantics="5", **cfg, **extra)
    return np.asarray(out).tolist()


def use_ggml_fp16_gelu() -> None:
    """refdecode's gelu_new -> ggml's GGML_GELU_FP16 variant (ggml/src/ggml-cpu/vec.h:987-1000)."""
    import refdecode.numerics as numerics

    exact = numerics.gelu_new

    def gelu_fp16(x):
        x = np.asarray(x, dtype=np.float32)
        y = exact(x.astype(np.float16).astype(np.float32)).astype(np.float16).astype(np.float32)
        return np.where(x <= -10, np.float32(0), np.where(x >= 10, x, y)).astype(np.float32)

    numerics.ACT2FN["gelu_new"] = gelu_fp16


def main(paths: list[str]) -> int:
    if "--fp16-gelu" in paths:
        paths = [p for p in paths if p != "--fp16-gelu"]
        use_ggml_fp16_gelu()
    adapter = subprocess.Popen([str(HERE / "run")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    models: dict[str, GPT2] = {}
    same = total = 0
    for path in paths:
        suite = Path(path).resolve().parent.parent
        for line in open(path):
            case = json.loads(line)
            inp = case["input"]
            if inp.get("model", {}).get("kind") != "gpt2":
                continue
            model_path = Path(inp["model"]["path"])
            model_path = model_path if model_path.is_absolute() else suite / model_path
            inp["model"]["path"] = str(model_path)
            adapter.stdin.write(json.dumps({"id": case["id"], "type": case["type"], "input": inp}) + "\n")
            adapter.stdin.flush()
            answer = json.loads(adapter.stdout.readline())
            if "output" not in answer:
                continue
            models.setdefault(str(model_path), GPT2.from_pretrained(model_path))
            ours = llama_cpp_decode(models[str(model_path)], inp)
            ok = ours == answer["output"]["sequences"]
            matches_hf = case["expected"]["sequences"] == answer["output"]["sequences"]
            total += 1
            same += ok
            print(f"{case['id']}: rules {'reproduce' if ok else 'DO NOT reproduce'} llama.cpp"
                  f" ({'same as' if matches_hf else 'differs from'} transformers)")
    adapter.stdin.close()
    adapter.wait()
    print(f"the L1/L2 rules reproduce llama.cpp on {same}/{total} answered cases")
    return 0 if same == total else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
