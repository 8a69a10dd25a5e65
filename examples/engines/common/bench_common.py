"""What every engine's bench times, in one place (examples/engines/common/bench.json): the prompt (8 token ids), the
number of new tokens and the checkpoint (GPT-2 124M's shape, made by tools/engines/make_gpt2_124m_shaped.py).
Standard library only: each bench imports it in its engine's own environment; the JavaScript benches read the
same JSON file."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

SPEC = json.loads((Path(__file__).resolve().parent / "bench.json").read_text())
ROOT = Path(__file__).resolve().parents[3]
PROMPT: list[int] = SPEC["prompt"]
NEW: int = SPEC["new_tokens"]


def default_model() -> Path:
    """The checkout's models/gpt2-124m-shaped, or an exit saying how to make it."""
    path = ROOT / SPEC["model"]
    if not (path / "model.safetensors").exists():
        raise SystemExit(f"no {path}: make it with tools/engines/make_gpt2_124m_shaped.py")
    return path


def bench_args(doc: str) -> argparse.Namespace:
    """A bench's command line: ``--model DIR`` (default: the checkout's 124M-shaped checkpoint) and ``--runs N``."""
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=5)
    return ap.parse_args()


def tok_per_s(name: str, generate_once: Callable[[], None], runs: int = 5) -> float:
    """NEW / the median time of ``runs`` calls of ``generate_once`` (one decode of NEW tokens, which checks its own
    length), after one warm-up call; the times go to stderr as ``[bench] name: ...``."""
    times = []
    for run in range(1 + runs):
        t0 = time.perf_counter()
        generate_once()
        if run:
            times.append(time.perf_counter() - t0)
    print(f"[bench] {name}: {', '.join(f'{t:.3f}' for t in times)} s", file=sys.stderr)
    return round(NEW / statistics.median(times), 2)


def bench_args(doc: str):
    """The options every bench takes: ``--model DIR`` (default: the 124M-shaped checkpoint) and ``--runs N``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=5)
    return ap.parse_args()
