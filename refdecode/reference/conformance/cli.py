"""``refdecode conformance export|check|serve|trace``: the command line of the conformance suite.

Contract: parses the arguments after ``refdecode conformance`` and calls ``export.export``,
``check.check``, ``serve.serve`` or ``tracing.trace_case``; returns the exit status (0 agree / done, 1 cases
failed, 2 the input or the arguments are wrong: one line, no traceback). Registered in ``refdecode/cli.py``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from . import fresh

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
`refdecode conformance trace suite/ CASE_ID -o trace.json` writes refdecode's step trace of a decode case,
for `refdecode diff trace.json yours.json` (docs/traces.md).

exit status (every subcommand): 0 agree / done, 1 cases failed, 2 the input or the arguments are wrong
(one line on stderr, no traceback).
"""

CHECK_EPILOG = """\
tolerances: token ids, beam indices and lengths must be equal; -inf where refdecode has -inf;
floats within 1e-4 x max(1, largest |value| of the row). A different choice (top-k/top-p survivors,
a decoded token) where refdecode's own margin for it is at most 1e-4 is reported as NEAR-TIE and
counts as passed (float drift, not a different algorithm).

output: one line per failing case, "FAIL <id> (<what the case exercises>): <where and how>" (for a
decode, followed by the first step, row and stage where it departs from refdecode's trace, as `refdecode
diff` reports it), one per near-tie, "NEAR-TIE <id> ...", then "N passed, M failed" (", U unsupported",
", K not run" when there are any). An implementation answers {"id": ..., "unsupported": "why"} for a case it
cannot express: counted apart, never as passed (listed with --list-unsupported).

timeouts: a case waits --timeout SECONDS for its response, times max(1, size / 8e9), where a decode's size
is its model's parameters x the token positions it computes (rows x (prompt + new tokens), rows = batch x
max(num_beams, num_return_sequences)): SECONDS covers 64 positions of a GPT-2 124M; every toy, tiny-model and
processor case waits SECONDS. A case without a response by then is "TIMEOUT <id> ...", counted apart
(", T timed out"), not as a wrong answer.

misbehaving implementations: a case without an answer (a timeout, an exit, a closed stdout, a response over
256 MiB) does not pass, and the implementation is killed and started again for the next case, so a late
answer never counts for another case; after 3 such cases in a row, check stops and the remaining cases are
not run. Exit status 0 if none failed, timed out or was not run, 1 otherwise, 2 for a broken suite or argument.

at scale (docs/checking-at-scale.md): --jobs N runs N implementation processes at once (one request at a time
each); the output is the serial run's, line for line, in the suite's order. --ray ADDRESS|local runs the cases
as Ray tasks of 16 cases, each starting its own implementation (pip install "refdecode[scale]"). The suite is
streamed, never held whole. On a terminal, a progress bar on stderr (cases done of total, rate, time left;
tqdm, from the scale extra); none when stderr is not a terminal.

--only takes case types (top_p, beam_search, ...; all are listed in DIR/manifest.json) or groups:
beam, beam_bookkeeping, constrained, contrastive, decode, engines, engines_124m, engines_llama, gpt2, llama, model,
processors, processors_and_warpers, sampling, speculative, stopping, textbook, toy, warpers. Without --only: every group
but engines_124m (its checkpoint is not committed: tools/engines/make_gpt2_124m_shaped.py makes it) and
textbook (torch's last bit on round rows: a textbook row that departs only there is "departs on the LAST BIT",
one that departs on the rule "departs on the RULE"; --tolerate-last-bit counts the first kind as passed).
"""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="refdecode conformance", description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, metavar="{export,check,serve,trace,fresh}")
    ex = sub.add_parser("export", help="write the suite to DIR", description="Write the conformance suite to DIR "
                        "(manifest.json, cases/*.jsonl, arrays/*.npy, models/*): deterministic, byte-identical on "
                        "every run of the same refdecode version.")
    ex.add_argument("dir", metavar="DIR", help="directory to write (empty, or a previous export)")
    ex.add_argument("--only", metavar="TYPES", help="comma-separated case types or groups (default: all)")
    ch = sub.add_parser("check", help="run an implementation through the suite in DIR",
                        description="Start COMMAND once (N times with --jobs N), send it every case of the suite in DIR as one JSON request "
                                    "per line on its stdin, read one JSON response per line from its stdout, and "
                                    "compare with refdecode's expected values.",
                        epilog=CHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ch.add_argument("dir", metavar="DIR", help="a suite written by `refdecode conformance export`")
    ch.add_argument("--cmd", required=True, metavar="COMMAND",
                    help='the implementation, a shell command, e.g. "node my_decoder.js" or "./build/decoder"')
    ch.add_argument("--only", metavar="TYPES", help="comma-separated case types or groups, e.g. top_p,beam")
    ch.add_argument("--timeout", type=_seconds, default=60.0, metavar="SECONDS",
                    help="longest wait for one response, a finite number > 0 (default %(default)s), times max(1, "
                         "the case's size / 8e9) for a decode larger than 64 token positions of GPT-2 124M (see "
                         "below)")
    ch.add_argument("--jobs", type=_count, default=None, metavar="N",
                    help="implementation processes at once, an int >= 1 (default 1; with --ray, the cluster's CPUs); "
                         "the output of 1, sooner")
    ch.add_argument("--ray", metavar="ADDRESS", default=None,
                    help='run the cases as Ray tasks: "local" (a Ray runtime here, --jobs CPUs) or a cluster\'s '
                         'address (--jobs shards at once, default: its CPUs); needs pip install "refdecode[scale]"')
    ch.add_argument("--list-unsupported", action="store_true",
                    help="print a line for each case the implementation answered as unsupported")
    ch.add_argument("--tolerate-last-bit", action="store_true",
                    help="textbook cases: count a row that departs on the last bit of softmax (not on the rule) as "
                         "passed, printed as LAST-BIT")
    sv = sub.add_parser("serve", help="answer the protocol with refdecode itself (stdin -> stdout)",
                        description="Answer conformance requests with refdecode: one JSON request per line on stdin, "
                                    "one JSON response per line on stdout, until stdin ends.")
    sv.add_argument("--plant", action="append", default=[], metavar="BUG",
                    help="serve a deliberately broken refdecode (repeatable), to see `check` catch it; "
                         "`--plant list` lists the bugs")
    sv.add_argument("--as", dest="as_engine", default=None, metavar="ENGINE",
                    help="answer greedy, sampling and beam decodes as ENGINE does (its profile in "
                         "refdecode.reference.engines: transformers-4.38.2, transformers-5, ctranslate2, "
                         "onnxruntime-genai, transformers-js, llama-cpp, keras-hub, mlx-lm, openvino-genai, "
                         "transformers-4.38.2-tf, vllm; docs/engines.md)")
    tr = sub.add_parser("trace", help="write refdecode's step trace of one decode case of DIR",
                        description="Run one decode case of the suite in DIR through refdecode with a step trace "
                                    "(docs/traces.md) and write it: compare it with your implementation's trace, or "
                                    "just its token ids, with `refdecode diff`.")
    tr.add_argument("dir", metavar="DIR", help="a suite written by `refdecode conformance export`")
    tr.add_argument("case_id", metavar="CASE_ID", help="the case's id, e.g. gpt2_greedy/0003")
    tr.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the trace (JSON)")
    fresh.add_parser(sub)
    return ap


def _seconds(text: str) -> float:
    """``--timeout``: a finite number of seconds > 0 (inf, nan, 0 and negatives are refused before anything runs)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"has to be a number of seconds, but is {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"has to be a finite number of seconds > 0, but is {text}")
    return value


def _count(text: str) -> int:
    """``--jobs``: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"has to be an int >= 1, but is {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"has to be an int >= 1, but is {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    from . import check, export, plants, serve, suite, tracing  # after parsing: --help stays instant

    try:
        if args.command == "export":
            from .registry import select

            start = time.perf_counter()
            manifest = export.export(args.dir, types=select(args.only))
            print(f"wrote {manifest['case_count']} cases of {len(manifest['case_types'])} types to {args.dir} "
                  f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
            return 0
        if args.command == "fresh":
            return fresh.main(args)
        if args.command == "check":
            return check.check(args.dir, args.cmd, only=args.only, timeout=args.timeout,
                               list_unsupported=args.list_unsupported, tolerate_last_bit=args.tolerate_last_bit,
                               jobs=args.jobs, ray=args.ray)
        if args.command == "trace":
            _, cases = suite.load_suite(args.dir)
            from ..trace import save_trace

            trace = tracing.trace_case(tracing.find_case(cases, args.case_id))
            save_trace(trace, args.output)
            print(f"wrote the trace of {args.case_id} ({len(trace['steps'])} steps) to {args.output}", file=sys.stderr)
            return 0
        if "list" in args.plant:
            for name, (summary, _) in plants.PLANTS.items():
                print(f"{name:24s} {summary}")
            return 0
        for name in args.plant:
            plants.apply(name)
        return serve.serve(profile=args.as_engine)
    except BrokenPipeError:  # `... check ... | head`: the reader left; stop quietly, as the main command does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, OSError) as err:  # a broken suite, a missing file, a folder that cannot be written
        print(f"refdecode conformance {args.command}: {err}", file=sys.stderr)
        return 2
