r"""refdecode against refdecode: ``bench_generate.py``'s refdecode worker run from two checkouts in one driver.

For a change that should not cost speed (a restructure): each checkout's own ``benchmarks/bench_generate.py``
answers as a worker with that checkout first on ``PYTHONPATH``, on the same checkpoints, the two alternating
every round (the order flips), and the script prints tokens/s per mode (median of the rounds) and the
after/before ratio with its spread over the rounds. No transformers worker runs; torch is needed only to create
the random checkpoint the first time (bench_generate's ``make_checkpoint``)::

    git worktree add /tmp/before <commit>
    .venv-bench/bin/python benchmarks/before_after.py /tmp/before --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_generate import CHECKPOINT, COPY_CHECKPOINT, COPY_MODES, MODES, PREFILL_LEN, Worker, _new_tokens, make_checkpoint  # noqa: E402

HERE = Path(__file__).resolve().parent.parent


def worker(checkout: Path, threads: int, checkpoint: Path) -> Worker:
    """bench_generate's refdecode worker from ``checkout``, importing that checkout's refdecode."""
    os.environ["PYTHONPATH"] = str(checkout)
    try:
        return Worker("refdecode", threads, ("--forward", "fast", "--checkpoint", str(checkpoint)),
                      script=str(checkout / "benchmarks" / "bench_generate.py"))
    finally:
        del os.environ["PYTHONPATH"]


def main(args: argparse.Namespace) -> None:
    make_checkpoint(COPY_CHECKPOINT)
    modes = [m for m in MODES if m in args.modes.split(",")]
    trees = {"before": Path(args.before).resolve(), "after": HERE}
    workers = {(tree, kind): worker(path, args.threads, COPY_CHECKPOINT if kind == "copy" else CHECKPOINT)
               for tree, path in trees.items() for kind in ("random", "copy")}
    seconds: dict[tuple[str, str], list[float]] = {(m, t): [] for m in modes for t in trees}
    tokens = {}
    for mode in modes:  # warm-up
        for tree in trees:
            tokens[mode, tree] = workers[tree, "copy" if mode in COPY_MODES else "random"].ask(mode)["tokens"]
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for mode in modes:
            for tree in order:
                answer = workers[tree, "copy" if mode in COPY_MODES else "random"].ask(mode)
                seconds[mode, tree].append(answer["cpu_seconds" if args.cpu else "seconds"])
    for w in workers.values():
        w.close()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, {args.threads} threads, {args.rounds} "
          f"alternating rounds; before = {trees['before']}, after = {trees['after']}; forward='fast'; "
          f"{'CPU time (--cpu)' if args.cpu else 'wall time'}; load average "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end\n")
    print("| mode | before tok/s | after tok/s | after / before | per round (min-max) | same tokens |")
    print("|---|---:|---:|---:|---:|---|")
    for mode in modes:
        n = PREFILL_LEN if mode == "prefill512" else _new_tokens(mode)
        b, a = (n / statistics.median(seconds[mode, t]) for t in ("before", "after"))
        per_round = [x / y for x, y in zip(seconds[mode, "before"], seconds[mode, "after"])]
        same = str(tokens[mode, "before"] == tokens[mode, "after"])  # sampling: seed=0 on both sides
        print(f"| {mode} | {b:.1f} | {a:.1f} | {a / b:.2f}x | {min(per_round):.2f}-{max(per_round):.2f}x | {same} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="the other checkout (e.g. a git worktree of the commit before the change)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--cpu", action="store_true", help="time each run by its process's CPU time (a shared machine)")
    main(ap.parse_args())
