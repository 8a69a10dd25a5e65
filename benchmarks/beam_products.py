"""How fast can NumPy multiply K rows (beams) by GPT-2 124M's weight matrices? Experiments for speeding up beam search.

Not a test, no torch needed. A beam-K decoding step multiplies K rows by every weight matrix; it still
reads each matrix once, so a kernel that streams the weight once for the K rows would cost about one
row's time. This script times the products of one decoding step of GPT-2 124M (per layer: c_attn
768->2304, attn c_proj 768->768, c_fc 768->3072, mlp c_proj 3072->768, x12; then the tied LM head
768->50257) for K = 1 and K = 4 rows, with several ways of calling NumPy/OpenBLAS:

* ``gemv_1row``   one row, ``W^T @ x`` (what greedy does; the baseline, K = 1);
* ``gemm_T``      ``(W^T @ X^T).T`` with W^T row-major (refdecode's fast path for a few rows today);
* ``gemm_plain``  ``X @ W`` on the same column-major W (OpenBLAS's small-M GEMM path);
* ``gemm_C``      ``X @ W`` with a C-contiguous copy of W;
* ``gemv_each``   one gemv per row (reads each weight K times);
* ``chunk_gemv``  the weight in row blocks of ~``--chunk-kb`` KB (cache-sized), K gemvs per block:
  the block is read from memory once and then K-1 times from cache;
* ``blocks_1t``   blocks of output columns small enough (K * cols * E_in <= 262144, OpenBLAS's
  ``SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD``) that OpenBLAS runs each single-threaded and its packed
  copy of the block stays in cache; one small GEMM per block, in the calling thread;
* ``blocks_2t``   the same blocks, the first half computed by a second Python thread (NumPy releases the GIL
  inside matmul), so both cores stream weights;
* ``split2``      two Python threads, each multiplying half of the output columns (``gemm_T`` on its half),
  OpenBLAS single-threaded inside (run in a worker with ``OPENBLAS_NUM_THREADS=1``).

Each strategy runs in its own process (``OPENBLAS_NUM_THREADS`` 2, or 1 for ``split2``), strategies
alternate over ``--rounds`` rounds and the minimum and median per strategy are printed, with the ratio to
the 1-row time of the same round. Run::

    .venv/bin/python benchmarks/beam_products.py [--rounds 5] [--rows 4] [--in-cache]

``--in-cache`` multiplies one 9.4 MB matrix 49 times instead (it stays in the caches), so the time is the
arithmetic's and the GFLOP/s column shows how fast OpenBLAS computes a few rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

SHAPES = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]  # (E_in, E_out) per layer, x 12
N_LAYER, VOCAB, E = 12, 50257, 768
STRATEGIES = ("gemv_1row", "gemm_T", "gemm_plain", "gemm_C", "gemv_each", "chunk_gemv", "blocks_1t", "blocks_2t",
              "split2")
SINGLE_THREAD_MNK = 262144  # OpenBLAS interface/gemm.c: below this M*N*K a GEMM runs in the calling thread


def weights():
    """GPT-2 124M's matrices, as refdecode stores them: W^T row-major (E_out, E_in) (= column-major W)."""
    import numpy as np

    rng = np.random.default_rng(0)
    mats = [rng.standard_normal((o, i), dtype=np.float32) * np.float32(0.02) for _ in range(N_LAYER)
            for i, o in SHAPES]
    mats.append(rng.standard_normal((VOCAB, E), dtype=np.float32) * np.float32(0.02))  # wte, the LM head
    return mats


def product(strategy: str, wt, x, chunk_rows: int, pool):
    """x (K, E_in) times W (given as wt = W^T, (E_out, E_in)) -> (K, E_out)."""
    import numpy as np

    if strategy in ("gemv_1row", "gemm_T"):
        return (wt @ x.T).T
    if strategy == "gemm_plain":
        return x @ wt.T
    if strategy == "gemm_C":
        return x @ wt  # wt here is the C-contiguous W (E_in, E_out), prepared by the caller
    if strategy == "gemv_each":
        return np.stack([wt @ row for row in x])
    if strategy == "chunk_gemv":
        out = np.empty((x.shape[0], wt.shape[0]), dtype=np.float32)
        for start in range(0, wt.shape[0], chunk_rows):
            block = wt[start : start + chunk_rows]  # (chunk, E_in), stays in cache for the K rows
            for k in range(x.shape[0]):
                np.matmul(block, x[k], out=out[k, start : start + chunk_rows])
        return out
    if strategy in ("blocks_1t", "blocks_2t"):
        step = max(8, SINGLE_THREAD_MNK // (x.shape[0] * wt.shape[1]))
        xt = np.ascontiguousarray(x.T)  # (E_in, K)
        out = np.empty((wt.shape[0], x.shape[0]), dtype=np.float32)  # (E_out, K)

        def run(start: int, stop: int) -> None:
            for s in range(start, stop, step):
                np.matmul(wt[s : min(s + step, stop)], xt, out=out[s : min(s + step, stop)])
        mid = (-(-wt.shape[0] // step) // 2) * step if strategy == "blocks_2t" else 0
        other = pool.submit(run, 0, mid) if mid else None
        run(mid, wt.shape[0])
        if other is not None:
            other.result()
        return out.T
    if strategy == "split2":
        half = wt.shape[0] // 2
        parts = list(pool.map(lambda w: w @ x.T, (wt[:half], wt[half:])))  # NumPy releases the GIL in matmul
        return np.concatenate(parts, axis=0).T
    raise ValueError(strategy)


def worker(strategy: str, rows: int, chunk_kb: int, in_cache: bool) -> None:
    """Answer 'run' with the seconds of one step's products (best of 5); 'quit' ends."""
    import numpy as np

    mats = weights()
    if strategy == "gemm_C":
        mats = [np.ascontiguousarray(w.T) for w in mats]
    if in_cache:  # one 9.4 MB matrix (c_fc of layer 0) 49 times: it stays in L2/L3, so this times the arithmetic
        mats = [mats[2]] * len(mats)
    k = 1 if strategy == "gemv_1row" else rows
    xs = {m.shape: np.random.default_rng(1).standard_normal((k, m.shape[1] if strategy != "gemm_C" else m.shape[0]),
                                                          dtype=np.float32) for m in mats}
    pool = ThreadPoolExecutor(2)
    print(json.dumps(dict(ready=True)), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for w in mats:
                in_dim = w.shape[1] if strategy != "gemm_C" else w.shape[0]
                chunk_rows = max(8, chunk_kb * 1024 // (4 * in_dim))
                product(strategy, w, xs[w.shape], chunk_rows, pool)
            best = min(best, time.perf_counter() - t0)
        print(json.dumps(dict(seconds=best, flop=2.0 * k * sum(w.size for w in mats))), flush=True)


def main(args: argparse.Namespace) -> None:
    procs = {}
    for s in STRATEGIES:
        threads = "1" if s == "split2" else str(args.threads)
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        procs[s] = subprocess.Popen([sys.executable, __file__, "--worker", s, "--rows", str(args.rows),
                                     "--chunk-kb", str(args.chunk_kb)] + ["--in-cache"] * args.in_cache,
                                    stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, env=env)
        json.loads(procs[s].stdout.readline())
    times: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    ratios: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    flop: dict[str, float] = {}
    for r in range(args.rounds):
        order = STRATEGIES if r % 2 == 0 else STRATEGIES[::-1]
        this = {}
        for s in order:
            procs[s].stdin.write("run\n")
            procs[s].stdin.flush()
            answer = json.loads(procs[s].stdout.readline())
            this[s], flop[s] = answer["seconds"], answer["flop"]
        for s in STRATEGIES:
            times[s].append(this[s])
            ratios[s].append(this[s] / this["gemv_1row"])
    for p in procs.values():
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, OpenBLAS threads {args.threads} "
          f"(split2: 2 Python threads x 1), rows = {args.rows}, {args.rounds} alternating rounds, best of 5 each"
          f"{', weights in cache (--in-cache)' if args.in_cache else ''}\n")
    print("| strategy | step products ms (min) | median | x one row (median of per-round ratios) | GFLOP/s (min) |")
    print("|---|---:|---:|---:|---:|")
    for s in STRATEGIES:
        print(f"| {s}{' (1 row)' if s == 'gemv_1row' else ''} | {1e3 * min(times[s]):.1f} | "
              f"{1e3 * statistics.median(times[s]):.1f} | {statistics.median(ratios[s]):.2f}x | "
              f"{flop[s] / min(times[s]) / 1e9:.0f} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--chunk-kb", type=int, default=256)
    ap.add_argument("--in-cache", action="store_true",
                    help="multiply one 9.4 MB matrix 49 times instead of the model's 495 MB: the arithmetic alone")
    ap.add_argument("--worker", choices=STRATEGIES, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.rows, a.chunk_kb, a.in_cache)
    else:
        main(a)
