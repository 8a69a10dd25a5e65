r"""mlx-lm's sampling distribution (FINDINGS.md M3) against refdecode's profile chain and 4.38.2's warpers.

    examples/engines/mlx-lm/env/bin/python examples/engines/mlx-lm/rule_check.py [--rows 200]

mlx draws with its own RNG (``mx.random.categorical``), so the adapter keeps mlx-lm's sampler chain and takes only
the draw with the case's uniforms. This script checks that chain itself, on many rows of logits and settings: the
logits ``categorical_sampling`` receives from ``make_sampler(temp, top_p, min_p, top_k=...)`` (mlx-lm's own code,
captured), their float32 softmax (what the adapter draws from: ``mx.random.categorical`` samples the logits by
Gumbel-max, so the exact softmax is its distribution), against

* refdecode's profile: ``refdecode.reference.engines.sampling.mlx_chain`` (``warpers="mlx"``), then softmax;
* transformers 4.38.2's warpers (temperature -> top-k -> top-p; refdecode's, exact to 4.38.2), then softmax.

It prints, per comparison, in how many (row, setting) pairs the kept set (the tokens with a probability > 0) is the
same and the largest probability difference. Rows: next-token logits of the shipped model on the engines cases'
prompts and their prefixes, and Gaussian rows (V = 1000, scales 1 to 6). Runs in mlx-lm's environment with the
checkout on ``sys.path`` (refdecode needs only NumPy there).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

import mlx.core as mx  # noqa: E402
from mlx_lm import sample_utils  # noqa: E402

from refdecode import GPT2  # noqa: E402
from refdecode.generation_config import GenerationConfig  # noqa: E402
from refdecode.numerics import softmax  # noqa: E402
from refdecode.pipeline import logits_warpers  # noqa: E402
from refdecode.reference.conformance.cases_engines import PROMPTS  # noqa: E402
from refdecode.reference.engines.sampling import mlx_chain  # noqa: E402

SETTINGS = [dict(temp=t, top_k=k, top_p=p, min_p=m) for t, k, p, m in
            itertools.product((0.7, 1.0, 1.5), (0, 5, 50), (1.0, 0.95, 0.8, 0.5), (0.0, 0.05))]
_captured: list = []


def _capture(logits: mx.array, temp: float) -> mx.array:
    _captured.append(logits * (1.0 / temp))      # what mx.random.categorical would sample from
    return mx.array([0], dtype=mx.uint32)


def mlx_probs(row: np.ndarray, s: dict) -> np.ndarray:
    """mlx-lm's distribution: its chain on the log-probabilities generate_step hands the sampler."""
    sampler = sample_utils.make_sampler(temp=s["temp"], top_p=s["top_p"], min_p=s["min_p"], top_k=s["top_k"])
    logits = mx.array(row[None])
    sampler(logits - mx.logsumexp(logits, keepdims=True))
    return softmax(np.array(_captured.pop(), dtype=np.float32))[0]    # the adapter's draw distribution


def hf_probs(row: np.ndarray, s: dict) -> np.ndarray:
    cfg = GenerationConfig(do_sample=True, temperature=s["temp"], top_k=s["top_k"], top_p=s["top_p"])
    return softmax(np.asarray(logits_warpers(cfg)(np.zeros((1, 1), dtype=np.int64), row[None]), dtype=np.float32))[0]


def rows(n: int) -> list[np.ndarray]:
    model = GPT2.from_pretrained(ROOT / "models" / "tiny-shakespeare")
    out = []
    for ids in PROMPTS.values():
        for end in range(2, len(ids) + 1):
            out.append(np.asarray(model(np.array([ids[:end]])).logits[0, -1], dtype=np.float32))
    rng = np.random.default_rng(0)
    while len(out) < n:
        out.append((rng.standard_normal(1000) * rng.uniform(1, 6)).astype(np.float32))
    return out[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200)
    args = ap.parse_args()
    sample_utils.categorical_sampling = _capture
    data = rows(args.rows)
    result = {"rows": len(data), "settings": len(SETTINGS)}
    for name, other in (("profile", lambda r, s: softmax(mlx_chain(r, s["temp"], s["top_k"], s["top_p"],
                                                                    s["min_p"])[None])[0]),
                        ("transformers-4.38.2", hf_probs)):
        same = total = 0
        worst = 0.0
        for row, s in itertools.product(data, SETTINGS):
            if name != "profile" and s["min_p"]:
                continue          # 4.38.2 has no min-p
            a, b = mlx_probs(row, s), other(row, s)
            total += 1
            if np.array_equal(a > 0, b > 0):
                same += 1
                worst = max(worst, float(np.abs(a - b).max()))
        result[name] = {"pairs": total, "same_kept_set": same, "max_prob_diff_where_same": worst}
    print(json.dumps(result))
    return 0 if result["profile"]["same_kept_set"] == result["profile"]["pairs"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
