"""``refdecode conformance export|check|serve``: the command line of the conformance suite.

Contract: parses the arguments after ``refdecode conformance`` and calls ``export.export``,
``check.check`` or ``serve.serve``; returns the exit status. Registered in ``refdecode/cli.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

DESCRIPTION = """\
Check a decoder written in any language (C++, Rust, JavaScript, CUDA, ...) against refdecode,
case by case: logits processors and warpers, BeamHypotheses, BeamSearchScorer, and whole decodes
(greedy, sampling, beam search, beam sample, group beam search) on a toy model and on tiny GPT-2s.

  1. refdecode conformance export suite/                 write the cases (JSON Lines + .npy + models)
  2. write a program that answers the requests (one JSON object per line on stdin, one per line on
     stdout; protocol and schemas: docs/conformance.md, "Checking your implementation against refdecode")
  3. refdecode conformance check suite/ --cmd "node my_decoder.js" --only top_k,top_p
     prints one line per failing case and "N passed, M failed"; exit status 1 if any failed

`refdecode conformance serve` is refdecode's own answer to the protocol:
  refdecode conformance check suite/ --cmd "refdecode conformance serve"      (100% passed)
"""

CHECK_EPILOG = """\
tolerances: token ids, beam indices and lengths must be equal; -inf where refdecode has -inf;
floats within 1e-4 x max(1, largest |value| of the row). A different choice (top-k/top-p survivors,
a decoded token) where refdecode's own margin for it is at most 1e-4 is reported as NEAR-TIE and
counts as passed (float drift, not a different algorithm).

output: one line per failing case, "FAIL <id> (<what the case exercises>): <where and how>", one per
near-tie, "NEAR-TIE <id> ...", then "N passed, M failed". Exit status 0 if none failed, 1 otherwise.

--only takes case types (top_p, beam_search, ...; all are listed in DIR/manifest.json) or groups:
processors, warpers, processors_and_warpers, beam, beam_bookkeeping, decode, toy, gpt2, sampling.
"""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="refdecode conformance", description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, metavar="{export,check,serve}")
    ex = sub.add_parser("export", help="write the suite to DIR", description="Write the conformance suite to DIR "
                        "(manifest.json, cases/*.jsonl, arrays/*.npy, models/*): deterministic, byte-identical on "
                        "every run of the same refdecode version.")
    ex.add_argument("dir", metavar="DIR", help="directory to write (empty, or a previous export)")
    ex.add_argument("--only", metavar="TYPES", help="comma-separated case types or groups (default: all)")
    ch = sub.add_parser("check", help="run an implementation through the suite in DIR",
                        description="Start COMMAND once, send it every case of the suite in DIR as one JSON request "
                                    "per line on its stdin, read one JSON response per line from its stdout, and "
                                    "compare with refdecode's expected values.",
                        epilog=CHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ch.add_argument("dir", metavar="DIR", help="a suite written by `refdecode conformance export`")
    ch.add_argument("--cmd", required=True, metavar="COMMAND",
                    help='the implementation, a shell command, e.g. "node my_decoder.js" or "./build/decoder"')
    ch.add_argument("--only", metavar="TYPES", help="comma-separated case types or groups, e.g. top_p,beam")
    ch.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                    help="longest wait for one response (default %(default)s)")
    sv = sub.add_parser("serve", help="answer the protocol with refdecode itself (stdin -> stdout)",
                        description="Answer conformance requests with refdecode: one JSON request per line on stdin, "
                                    "one JSON response per line on stdout, until stdin ends.")
    sv.add_argument("--plant", action="append", default=[], metavar="BUG",
                    help="serve a deliberately broken refdecode (repeatable), to see `check` catch it; "
                         "`--plant list` lists the bugs")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    from . import check, export, plants, serve  # after parsing: --help stays instant

    try:
        if args.command == "export":
            from .registry import select

            start = time.perf_counter()
            manifest = export.export(args.dir, types=select(args.only))
            print(f"wrote {manifest['case_count']} cases of {len(manifest['case_types'])} types to {args.dir} "
                  f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
            return 0
        if args.command == "check":
            return check.check(args.dir, args.cmd, only=args.only, timeout=args.timeout)
        if "list" in args.plant:
            for name, (summary, _) in plants.PLANTS.items():
                print(f"{name:24s} {summary}")
            return 0
        for name in args.plant:
            plants.apply(name)
        return serve.serve()
    except ValueError as err:
        print(f"refdecode conformance {args.command}: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... check ... | head`: the reader left; stop quietly, as the main command does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
