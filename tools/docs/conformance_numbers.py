"""The numbers docs/conformance.md states about the whole suite, computed: cases and types, and for every
planted bug how many cases fail and where.

Exports the suite (default selection) to a temporary folder, answers every case in this process with
refdecode (as ``serve`` does) and with each plant of refdecode/reference/conformance/plants.py, judges the
answers as ``check`` does, and prints the transcript's counts and the plant table's rows in markdown. Run it
after adding case types or plants and paste what changed into docs/conformance.md::

    .venv/bin/python tools/docs/conformance_numbers.py            # about 10 minutes on 2 cores shared with other jobs

tests/docs/test_numbers.py checks the totals and the number of types (from the registry, without exporting) and that
each row of the plant table adds up.
"""

from __future__ import annotations

import collections
import json
import sys
import tempfile
import time

from refdecode.reference.conformance import plants
from refdecode.reference.conformance.check import _judge
from refdecode.reference.conformance.export import export
from refdecode.reference.conformance.kinds import to_json
from refdecode.reference.conformance.registry import select
from refdecode.reference.conformance.serve import answer
from refdecode.reference.conformance.suite import load_suite


def failing(cases: list[dict]) -> collections.Counter:
    """Case type -> number of cases whose in-process answer ``check`` would fail."""
    fails: collections.Counter = collections.Counter()
    for case in cases:
        request = json.dumps({"id": case["id"], "type": case["type"], "input": to_json(case["input"])})
        verdict, _ = _judge(case, answer(request).encode())
        fails[case["type"]] += verdict == "fail"
    return fails


def main() -> int:
    with tempfile.TemporaryDirectory() as root:
        start = time.perf_counter()
        export(root, types=select(None))
        _, cases = load_suite(root)
        types = len({c["type"] for c in cases})
        print(f"wrote {len(cases)} cases of {types} types in {time.perf_counter() - start:.1f} s")
        base = failing(cases)
        print(f"refdecode itself: {sum(base.values())} failed", flush=True)
        for name in plants.PLANTS:
            with plants.planted(name):
                fails = failing(cases)
            where = ", ".join(f"{t} {n}" for t, n in fails.most_common() if n)
            print(f"| `{name}` | {sum(fails.values())} | {where} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
