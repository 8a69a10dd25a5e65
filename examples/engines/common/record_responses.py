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
from refdecode.reference.conformance.pool import in_threads
from refdecode.reference.conformance.progress import Progress
from refdecode.reference.conformance.suite import open_suite


class Recorder:
    """One adapter process (``pool.in_threads``' worker): the raw response to a case, restarted after no answer."""

    def __init__(self, command: str, timeout: float, rename: dict[str, str]):
        self.command, self.timeout, self.rename = command, timeout, rename
        self.adapter = Implementation(command)
        self.stopped = False

    def run(self, case: dict) -> dict:
        sent = self.rename.get(case["type"], case["type"])
        try:
            return _parsed(self.adapter.ask(json.dumps({"id": case["id"], "type": sent, "input": case["input"]}),
                                            self.timeout))
        except NoAnswer as err:
            self.adapter.close(kill=True)
            if not self.stopped:
                self.adapter = Implementation(self.command)
            return {"error": f"no answer: {err}"}

    def stop(self) -> None:
        """Stopped early (Ctrl-C): kill the adapter now; the case it runs ends as no answer."""
        self.stopped = True
        self.adapter.close(kill=True)

    def close(self) -> None:
        self.adapter.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("--cmd", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("-o", "--out", default="-")
    ap.add_argument("--timeout", type=float, default=300.0, help="longest wait for one response (s)")
    ap.add_argument("--jobs", type=int, default=1, help="adapter processes at once (the lines stay in the suite's "
                                                        "order; check's pool)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the adapter's environment")
    ap.add_argument("--rename", action="append", default=[],
                    help="OLD=NEW: send cases of type OLD as type NEW (e.g. gpt2_beam_search=engines_beam_search, "
                         "to see an engine's beams on cases whose beam_indices it cannot give)")
    args = ap.parse_args()
    if not (args.timeout > 0 and args.timeout < float("inf")):
        raise SystemExit(f"--timeout must be a finite number > 0, got {args.timeout}")
    if args.jobs < 1:
        raise SystemExit(f"--jobs must be an int >= 1, got {args.jobs}")
    _, total, cases = open_suite(args.suite, args.only)   # streamed: the cases in flight only
    os.environ.update(dict(e.split("=", 1) for e in args.env))  # the adapter inherits it
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    rename = dict(r.split("=", 1) for r in args.rename)
    # check's process handling (a bounded line per request, a timeout, a restart after a miss) and check's pool
    answers = in_threads(cases, args.cmd, args.timeout, args.jobs,
                         lambda command, timeout: Recorder(command, timeout, rename))
    with Progress(total, "record") as bar:
        for case, response in answers:
            expected = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in case["expected"].items()
                        if k in ("sequences", "sequences_scores")}
            out.write(json.dumps({"id": case["id"], "type": case["type"], "input": case["input"],
                                  "expected": expected, "response": response}, default=_plain) + "\n")
            out.flush()
            bar.advance()


def _plain(value: object) -> object:
    """NumPy arrays of a loaded case as lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


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
