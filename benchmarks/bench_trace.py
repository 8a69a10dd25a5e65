"""What step traces cost: tracing off against a tree without the hooks, and tracing on against off.

Contract: a script, not a test (timings are never asserted in tests). It needs only refdecode (no
torch): each variant runs in its own long-lived worker process, loaded once, and the driver asks the
workers in turn for one timed ``generate`` per mode per round, flipping the order every round, so
both sides of a ratio share the machine's state. Each worker reports its own **CPU time**
(``time.process_time``, one BLAS thread), not wall time: on a shared VM other processes stretch wall
time but not the work done. Read the medians and the per-round ratios.

Variants:

- ``off``: this tree, ``trace=None`` (the default: the loops call the no-op recorder);
- ``on``: this tree, ``trace=TraceRecorder()`` (every stage summarised: top 20 + statistics per row);
- ``baseline`` (with ``--baseline DIR``): another checkout, e.g. the commit before the hooks::

      git worktree add /tmp/refdecode-base <commit-before-traces>
      python benchmarks/bench_trace.py --baseline /tmp/refdecode-base

Modes (batch 1, the prompt below, exactly ``--new-tokens`` tokens): greedy, sampling (top_k=50,
top_p=0.9, T=0.8), beam search with 4 beams. The default model is the shipped tiny-shakespeare: its
steps are short, so a fixed per-step overhead shows most there; ``--model`` takes any checkpoint
directory (e.g. benchmarks/_checkpoints/gpt2-124m-random, made by bench_generate.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "ROMEO:\nWhat light through yonder window breaks? It is the east, and Juliet is the sun."

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from refdecode import GPT2, Tokenizer, generate
model, tok = GPT2.from_pretrained(sys.argv[2]), Tokenizer(sys.argv[2])
ids, mask = tok.encode_batch([sys.argv[3]])
n = int(sys.argv[4])
modes = {"greedy": {}, "sampling": dict(do_sample=True, top_k=50, top_p=0.9, temperature=0.8, seed=0),
         "beam-4": dict(num_beams=4)}
def run(mode, trace):
    recorder = None
    if trace:
        from refdecode.reference.trace import TraceRecorder
        recorder = TraceRecorder()
    kwargs = dict(trace=recorder) if trace else {}
    start = time.process_time()
    generate(model, ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, **modes[mode], **kwargs)
    return time.process_time() - start
for mode in modes:
    run(mode, False)                                  # warm-up
print("ready", flush=True)
for line in sys.stdin:
    mode, trace = json.loads(line)
    print(json.dumps(run(mode, trace)), flush=True)
"""


def _worker(tree: Path, model: Path, new_tokens: int, threads: int) -> subprocess.Popen:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(tree), str(model), PROMPT, str(new_tokens)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(tree))
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _ask(proc: subprocess.Popen, mode: str, trace: bool) -> float:
    proc.stdin.write(json.dumps([mode, trace]) + "\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="a refdecode checkout without the trace hooks")
    ap.add_argument("--model", type=Path, default=ROOT / "models" / "tiny-shakespeare")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--modes", default="greedy,sampling,beam-4", help="comma-separated subset of the modes")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads per worker (CPU time is summed over them)")
    args = ap.parse_args()
    workers = {"off": (_worker(ROOT, args.model, args.new_tokens, args.threads), False),
               "on": (_worker(ROOT, args.model, args.new_tokens, args.threads), True)}
    if args.baseline is not None:
        workers["baseline"] = (_worker(args.baseline, args.model, args.new_tokens, args.threads), False)
    modes = args.modes.split(",")
    if not set(modes) <= {"greedy", "sampling", "beam-4"}:
        raise SystemExit(f"--modes: choose among greedy, sampling, beam-4, not {args.modes!r}")
    times = {(m, v): [] for m in modes for v in workers}
    for r in range(args.rounds):
        order = list(workers) if r % 2 == 0 else list(reversed(workers))
        for mode in modes:
            for variant in order:
                proc, trace = workers[variant]
                times[mode, variant].append(_ask(proc, mode, trace))
    print(f"model {args.model.name}, {args.new_tokens} new tokens, {args.rounds} alternating rounds, "
          f"{args.threads} thread(s) per worker; median CPU seconds per generate, ratio per round min-max")
    for mode in modes:
        med = {v: statistics.median(times[mode, v]) for v in workers}
        line = f"{mode:9s} off {med['off']:.3f} s, on {med['on']:.3f} s"
        pairs = [("on", "off")] + ([("off", "baseline")] if "baseline" in workers else [])
        for a, b in pairs:
            per_round = [x / y for x, y in zip(times[mode, a], times[mode, b])]
            line += (f" | {a}/{b} {statistics.median(per_round):.3f}x "
                     f"({min(per_round):.3f}-{max(per_round):.3f})")
        if "baseline" in workers:
            line += f", baseline {med['baseline']:.3f} s"
        print(line)
    for proc, _ in workers.values():
        proc.stdin.close()
        proc.wait()


if __name__ == "__main__":
    main()
