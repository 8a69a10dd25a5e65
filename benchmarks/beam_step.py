"""Beam-K decoding steps per second over greedy steps per second, GPT-2 124M, same run: few-row products in one
OpenBLAS call against cache-sized blocks on two threads. Not a test.

``one_call`` is the fast forward pass as it is (:func:`refdecode.model.fast.forward.linear`: 2..16 rows as one
``(W^T @ x^T)^T`` OpenBLAS call; the LM head as ``x @ wte.T``); ``blocked`` replaces both by the alternative
tried and measured slower on a quiet machine (:func:`few_rows_product` below: W^T in blocks of
output columns small enough that OpenBLAS runs each GEMM in the calling thread with its packed copy in cache,
half of the blocks on a second Python thread). Each variant runs in its own process; rounds alternate::

    .venv/bin/python benchmarks/beam_step.py [--rounds 5] [--new 32]

Reported per variant: greedy and beam-K tokens/s (beam: steps/s, one token per sequence per step),
their ratio in each round (median, min-max), and prompt lookup's verification pass (11 rows) in ms against
one greedy step.
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
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-random"
_POOL: ThreadPoolExecutor | None = None


#: OpenBLAS runs a GEMM with M * N * K up to this in the calling thread (its interface/gemm.c:
#: SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD = 65536 * 4).
SINGLE_THREAD_MNK = 262144


def few_rows_product(x: np.ndarray, wt: np.ndarray) -> np.ndarray:
    """``x @ wt.T`` for a few rows, W^T (E_out, E_in) in blocks of output columns with N * cols * E_in <=
    SINGLE_THREAD_MNK, half of them on a second Python thread (NumPy releases the GIL inside matmul)."""
    N, E_in = x.shape
    step = max(8, SINGLE_THREAD_MNK // (N * E_in))  # output columns per block
    xt = np.ascontiguousarray(x.T)  # (E_in, N)
    out = np.empty((wt.shape[0], N), dtype=np.float32)  # (E_out, N)

    def blocks(start: int, stop: int) -> None:
        for s in range(start, stop, step):
            np.matmul(wt[s : min(s + step, stop)], xt, out=out[s : min(s + step, stop)])

    mid = (-(-wt.shape[0] // step) // 2) * step  # the first half of the blocks -> the second thread
    other = _POOL.submit(blocks, 0, mid)
    blocks(mid, wt.shape[0])
    other.result()
    return np.ascontiguousarray(out.T)  # (N, E_out)


def use_blocked() -> None:
    """Route 2..16-row products and the few-row LM head of the fast pass through :func:`few_rows_product`."""
    global _POOL
    import refdecode.model.fast.forward as fast

    _POOL = ThreadPoolExecutor(1)
    linear, head = fast.linear, fast.lm_head

    def blocked_linear(x, weight, bias):
        if 2 <= x.shape[0] <= fast.FEW_ROWS and weight.flags.f_contiguous:
            y = few_rows_product(x, weight.T)
            y += bias
            return y
        return linear(x, weight, bias)

    def blocked_head(x, wte):  # as it was: blocks only over a row-major wte (forward="fast" stores it column-major)
        if 2 <= x.shape[0] <= fast.FEW_ROWS and wte.flags.c_contiguous:
            return few_rows_product(x, wte)
        return head(x, wte)

    fast.linear, fast.lm_head = blocked_linear, blocked_head


def worker(variant: str, new: int, beams: int) -> None:
    from refdecode import GPT2, generate

    if variant == "blocked":
        use_blocked()
    model = GPT2.from_pretrained(CHECKPOINT, forward="fast")
    ids = np.random.default_rng(0).integers(0, model.config.vocab_size, size=(1, 32), dtype=np.int64)
    kw = dict(max_new_tokens=new, min_new_tokens=new, attention_mask=np.ones_like(ids))
    verify_ids = np.random.default_rng(1).integers(0, model.config.vocab_size, size=(1, 11), dtype=np.int64)

    def verify_ms() -> float:  # one pass over 11 tokens after a 128-token cache, as prompt lookup's verification
        best = float("inf")
        for _ in range(3):
            cache = model.new_cache(1, 160)
            model(np.zeros((1, 128), dtype=np.int64), past_key_values=cache, logits_to_keep=1)
            t0 = time.perf_counter()
            model(verify_ids, past_key_values=cache, logits_to_keep=11)
            best = min(best, time.perf_counter() - t0)
        return 1e3 * best

    print(json.dumps(dict(ready=True)), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        t0 = time.perf_counter()
        g = generate(model, ids, **kw)
        tg = time.perf_counter() - t0
        t0 = time.perf_counter()
        generate(model, ids, num_beams=beams, **kw)
        tb = time.perf_counter() - t0
        print(json.dumps(dict(greedy=new / tg, beam=new / tb, verify_ms=verify_ms(), step_ms=1e3 * tg / new,
                              tokens=g[0, 32:].tolist())), flush=True)


def main(args: argparse.Namespace) -> None:
    variants = ("one_call", "blocked")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    procs = {v: subprocess.Popen([sys.executable, __file__, "--worker", v, "--new", str(args.new), "--beams",
                                  str(args.beams)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 env=env) for v in variants}
    for p in procs.values():
        json.loads(p.stdout.readline())
    res: dict[str, list[dict]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in (variants if r % 2 == 0 else variants[::-1]):
            procs[v].stdin.write("run\n")
            procs[v].stdin.flush()
            res[v].append(json.loads(procs[v].stdout.readline()))
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    for p in procs.values():
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, {args.threads} threads, GPT-2 124M random, "
          f"prompt 32, {args.new} new tokens, {args.rounds} alternating rounds (median, min-max)\n")
    print(f"| variant | greedy tok/s | beam-{args.beams} steps/s | beam/greedy per round | 11-token verify ms | "
          f"verify / greedy step | same greedy tokens |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for v in variants:
        rs = res[v]
        ratio = [x["beam"] / x["greedy"] for x in rs]
        vr = [x["verify_ms"] / x["step_ms"] for x in rs]
        print(f"| {v} | {statistics.median(x['greedy'] for x in rs):.1f} | "
              f"{statistics.median(x['beam'] for x in rs):.1f} | {statistics.median(ratio):.2f} "
              f"({min(ratio):.2f}-{max(ratio):.2f}) | {statistics.median(x['verify_ms'] for x in rs):.1f} | "
              f"{statistics.median(vr):.2f}x | {rs[0]['tokens'] == res['one_call'][0]['tokens']} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--beams", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=("one_call", "blocked"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.new, a.beams)
    else:
        main(a)
