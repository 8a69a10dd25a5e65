r"""A bench's JSON line (stdin) with the machine it was measured on, written to a file: the speed table's Llama columns.

    ENGINE/env/bin/python ENGINE/bench.py --model benchmarks/_checkpoints/llama-124m-random | tail -n 1 \
        | .venv/bin/python examples/engines/common/stamp_bench.py examples/engines/ENGINE/bench-llama.json

Adds ``"note"``: the date and time (UTC), the 1-minute load average at the end of the bench and the CPU (lscpu's model
name, its core count, whether /proc/cpuinfo has AVX2 / AVX-512 flags), so each figure of the page says where and when
it was measured. Writes nothing (exit 1) when the line is not a JSON object (the bench failed). Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def cpu() -> str:
    """"AMD EPYC, 2 cores, AVX2, no AVX-512" (lscpu's model name and /proc/cpuinfo's flags)."""
    lines = subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
    name = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Model name")), "unknown CPU")
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    simd = ("AVX2" if " avx2" in flags else "no AVX2") + (", AVX-512" if " avx512f" in flags else ", no AVX-512")
    return f"{name}, {os.cpu_count()} cores, {simd}"


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    text = sys.stdin.read().strip()
    try:
        row = json.loads(text.splitlines()[-1]) if text else None
    except json.JSONDecodeError:
        row = None
    if not isinstance(row, dict):
        print(f"stamp_bench.py: not a bench line: {text[-200:]!r}", file=sys.stderr)
        return 1
    row["note"] = (f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average {os.getloadavg()[0]:.1f}, "
                   f"{cpu()}")
    Path(sys.argv[1]).write_text(json.dumps(row) + "\n")
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
