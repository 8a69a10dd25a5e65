"""Timing of top-p and typical on one GPT-2-sized row (1, 50257), with and without ties at the cut.

    .venv/bin/python benchmarks/bench_sort_ties.py [--repeat 50]

Rows: GPT-2-like logits (normal, scale 3; no ties at the cut), the same after top-k 50 (50,207 -inf,
the case generate's defaults give), logits rounded to 0.01, to 1 (ties everywhere; top-p 0.9's cut
falls in a tie group of 50 and of 5,000), rounded to 0.1 then top-k 200 (a tie group at the cut among
the finite scores, which torch sorts with the 50,057 -inf), and an all-equal row (one tie group of
50,257).
Top-p runs through ``TopPLogitsWarper`` (what ``generate`` builds). Prints the best time per call in
milliseconds (the machine is shared: the minimum is the stable figure), and the same with torch's tie order
switched off (``torch_order_at_cut``, which ``scatter_with_torch_ties`` calls, replaced by a no-op:
the stable order refdecode used before), timed alternately in one process, and the ratio. The
goal: top-p on the first two rows stays within 1.5x of the time before.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from refdecode.numerics import torch_cpu
from refdecode.processors.logits_warp import TopPLogitsWarper, top_k_warp
from refdecode.processors.truncation_warpers import typical_warp

V = 50257


def rows() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(1, V)) * 3).astype(np.float32)
    return {
        "logits": logits,
        "logits after top-k 50": top_k_warp(logits, 50),
        "logits rounded to 0.01": np.round(logits, 2).astype(np.float32),
        "rounded to 1": np.round(logits).astype(np.float32),
        "rounded to 0.1, top-k 200": top_k_warp(np.round(logits, 1).astype(np.float32), 200),
        "all equal": np.zeros((1, V), np.float32),
    }


def best_ms(f, repeat: int) -> tuple[float, float]:
    """(best time of ``f`` with torch's tie order, best time with the stable order), runs alternated."""
    now, before = [], []
    exact = torch_cpu.torch_order_at_cut  # what scatter_with_torch_ties calls
    for _ in range(repeat):
        for stable, times in ((False, now), (True, before)):
            if stable:
                torch_cpu.torch_order_at_cut = lambda *a, **k: None
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
            torch_cpu.torch_order_at_cut = exact
    return 1e3 * min(now), 1e3 * min(before)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    print(f"{'row (1, 50257), best ms':28s} {'top_p 0.9':>10s} {'before':>8s} {'ratio':>6s}   "
          f"{'typical 0.9':>11s} {'before':>8s} {'ratio':>6s}")
    top_p = TopPLogitsWarper(0.9)  # what generate builds: the rule on the finite scores where that is exact
    for name, row in rows().items():
        tp, tp0 = best_ms(lambda: top_p(None, row), args.repeat)
        ty, ty0 = best_ms(lambda: typical_warp(row, 0.9), max(args.repeat // 3, 3))
        print(f"{name:28s} {tp:10.2f} {tp0:8.2f} {tp / tp0:6.2f}   {ty:11.2f} {ty0:8.2f} {ty / ty0:6.2f}")


if __name__ == "__main__":
    main()
