r"""Send a suite's cases to an adapter and keep its raw responses (for diagnosis; `check` does the judging).

    .venv/bin/python examples/engines/common/record_responses.py SUITE --cmd examples/engines/ENGINE/run \
        [--only TYPES] [-o responses.jsonl] [--timeout S] [--env NAME=VALUE ...] [--rename OLD=NEW ...]

One JSON line per case: {"id", "type", "input", "expected" (sequences, sequences_scores), "response"} (response =
the adapter's line, parsed; ``{"error": ...}`` when it gave no answer within ``--timeout``, exited, flooded, or answered junk: the adapter is
then restarted for the next case, as ``refdecode conformance check`` does).
Runs in refdecode's venv (it reads the suite with refdecode's loader); the adapter runs in its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from refdecode.reference.conformance.check import Implementation, NoAnswer
from refdecode.reference.conformance.suite import load_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("--cmd", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("-o", "--out", default="-")
    ap.add_argument("--timeout", type=float, default=300.0, help="longest wait for one response (s)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the adapter's environment")
    ap.add_argument("--rename", action="append", default=[],
                    help="OLD=NEW: send cases of type OLD as type NEW (e.g. gpt2_beam_search=engines_beam_search, "
                         "to see an engine's beams on cases whose beam_indices it cannot give)")
    args = ap.parse_args()
    if not (args.timeout > 0 and args.timeout < float("inf")):
        raise SystemExit(f"--timeout must be a finite number > 0, got {args.timeout}")
    _, cases = load_suite(args.suite, args.only)
    os.environ.update(dict(e.split("=", 1) for e in args.env))  # the adapter inherits it
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    rename = dict(r.split("=", 1) for r in args.rename)
    # check's process handling: a bounded line per request, a timeout, a restart after a miss (hang, exit, flood)
    adapter = Implementation(args.cmd)
    try:
        for case in cases:
            sent = rename.get(case["type"], case["type"])
            try:
                response = _parsed(adapter.ask(json.dumps({"id": case["id"], "type": sent, "input": case["input"]}),
                                               args.timeout))
            except NoAnswer as err:
                response = {"error": f"no answer: {err}"}
                adapter.close(kill=True)
                adapter = Implementation(args.cmd)
            expected = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in case["expected"].items()
                        if k in ("sequences", "sequences_scores")}
            out.write(json.dumps({"id": case["id"], "type": case["type"], "input": case["input"],
                                  "expected": expected, "response": response}) + "\n")
            out.flush()
    finally:
        adapter.close()


def _parsed(line: bytes) -> dict:
    """The response object, or an ``error`` record saying what the line was instead."""
    try:
        response = json.loads(line)
    except ValueError:
        return {"error": f"not JSON: {line[:80]!r}"}
    if not isinstance(response, dict) or not ({"output", "unsupported", "error"} & set(response)):
        return {"error": f"not a response object: {line[:80]!r}"}
    return response


if __name__ == "__main__":
    main()
