"""``refdecode conformance check`` at 1 and 2 jobs: cases per second, CPU seconds per case, and the same verdicts.

Not a test. Exports a suite (default: every default group, the whole suite) unless ``--suite`` names one, then runs
``check --cmd "refdecode conformance serve"`` (optionally with a planted bug, so verdict lines are compared too) with
``--jobs 1`` and ``--jobs 2``, alternating over ``--rounds`` rounds, and prints per run: wall seconds, cases per
second, CPU seconds per case (``check`` and its implementation processes together: ``RUSAGE_CHILDREN``), the load
average before and after, and whether the output equals the serial one line for line::

    .venv/bin/python benchmarks/check_scale.py [--suite DIR] [--only TYPES] [--plant BUG] [--rounds 1] [--json FILE]

On a busy machine the wall-clock ratio says little (two processes get a larger share of a contended CPU than one);
CPU seconds per case say whether the second job adds work: at equal CPU per case, N jobs on N quiet cores run N
times as fast, less check's own share (one process judging for all). The CPU model and whether it has AVX-512 are
printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["OPENBLAS_NUM_THREADS"] = "1"
REFDECODE = [sys.executable, "-m", "refdecode.cli", "conformance"]


def cpu_name() -> str:
    """The CPU's model name and whether it has AVX-512 (lscpu's flags)."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown CPU"
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name")), "?")
    return f"{name}, {os.cpu_count()} cores, {'AVX-512' if 'avx512f' in text else 'AVX2, no AVX-512'}"


def run_check(suite: str, jobs: int, plant: str | None, only: str | None, timeout: float) -> dict:
    serve = " ".join(REFDECODE + ["serve"] + (["--plant", plant] if plant else []))
    command = REFDECODE + ["check", suite, "--cmd", serve, "--jobs", str(jobs), "--timeout", str(timeout)] + (
        ["--only", only] if only else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = out.splitlines()[-1]
    cases = sum(int(part.split()[0]) for part in summary.split(", "))
    return {"jobs": jobs, "wall_s": round(wall, 2), "cases": cases, "cases_per_s": round(cases / wall, 2),
            "cpu_s_per_case": round(cpu / cases, 4), "load_before": load_before, "load_after": os.getloadavg()[0],
            "summary": summary, "output": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", help="an exported suite (default: export one to a temporary folder)")
    ap.add_argument("--only", help="case types or groups, as check's --only")
    ap.add_argument("--plant", help="serve with this planted bug (plants.py), so failing lines are compared too")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0, help="check's --timeout (a busy machine: no case should "
                                                                 "time out, so the outputs can be compared)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    suite = args.suite
    if suite is None:
        suite = tempfile.mkdtemp(prefix="check-scale-")
        start = time.perf_counter()
        subprocess.run(REFDECODE + ["export", suite] + (["--only", args.only] if args.only else []), check=True)
        print(f"export: {time.perf_counter() - start:.1f} s", flush=True)
    runs = []
    for _ in range(args.rounds):
        for jobs in (1, 2):
            run = run_check(suite, jobs, args.plant, args.only, args.timeout)
            runs.append(run)
            print(f"jobs {jobs}: {run['wall_s']} s, {run['cases_per_s']} cases/s, {run['cpu_s_per_case']} CPU s/case, "
                  f"load {run['load_before']:.1f} -> {run['load_after']:.1f}: {run['summary']}", flush=True)
    serial = runs[0]["output"]
    same = all(run["output"] == serial for run in runs)
    print(f"outputs equal to the serial one, line for line: {same}; CPU: {cpu_name()}")
    if args.json:
        figures = {"cpu": cpu_name(), "same_output": same, "plant": args.plant, "only": args.only,
                   "timeout": args.timeout,
                   "runs": [{k: v for k, v in run.items() if k != "output"} for run in runs]}
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
