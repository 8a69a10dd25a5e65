r"""Send a suite's cases to an adapter and keep its raw responses (for diagnosis; `check` does the judging).

    .venv/bin/python examples/engines/common/record_responses.py SUITE --cmd examples/engines/ENGINE/run \
        [--only TYPES] [-o responses.jsonl] [--env NAME=VALUE ...]

One JSON line per case: {"id", "type", "input", "expected" (sequences, sequences_scores), "response"} (response = the adapter's line, parsed).
Runs in refdecode's venv (it reads the suite with refdecode's loader); the adapter runs in its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from refdecode.reference.conformance.suite import load_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("--cmd", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("-o", "--out", default="-")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the adapter's environment")
    ap.add_argument("--rename", action="append", default=[],
                    help="OLD=NEW: send cases of type OLD as type NEW (e.g. gpt2_beam_search=engines_beam_search, "
                         "to see an engine's beams on cases whose beam_indices it cannot give)")
    args = ap.parse_args()
    _, cases = load_suite(args.suite, args.only)
    env = dict(os.environ, **dict(e.split("=", 1) for e in args.env))
    proc = subprocess.Popen(args.cmd, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    assert proc.stdin is not None and proc.stdout is not None
    rename = dict(r.split("=", 1) for r in args.rename)
    for case in cases:
        sent = rename.get(case["type"], case["type"])
        proc.stdin.write(json.dumps({"id": case["id"], "type": sent, "input": case["input"]}) + "\n")
        proc.stdin.flush()
        response = json.loads(proc.stdout.readline())
        expected = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in case["expected"].items()
                    if k in ("sequences", "sequences_scores")}
        out.write(json.dumps({"id": case["id"], "type": case["type"], "input": case["input"],
                              "expected": expected, "response": response}) + "\n")
        out.flush()
    proc.stdin.close()
    proc.wait()


if __name__ == "__main__":
    main()
