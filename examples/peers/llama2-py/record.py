r"""The suite's answers from llama2-py, asked in this process (record_responses.py's lines, without its subprocess).

    .venv/bin/python examples/peers/llama2-py/record.py SUITE -o responses-raw.jsonl [--only TYPES]
    .venv/bin/python examples/engines/common/slim_responses.py responses-raw.jsonl examples/peers/llama2-py/responses.jsonl

Each case goes through the protocol's ``respond`` to ``adapter.answer`` (llama2-py's own functions, as ``run`` serves
them), and the JSON line is record_responses.py's (``id``, ``type``, ``input``, ``expected``, ``response``). Why not
record_responses.py: it starts the adapter in a new session (``start_new_session=True``), and on a machine shared
by many jobs that session got about 2 % of a core; llama2-py's pure-Python forward pass needs about 40 s of CPU for
one 24-token case on the shipped Llama. Run in refdecode's venv (llama2_py.py, one standard-library file, is
loaded from ``env/`` by path).
"""

from __future__ import annotations

import argparse
import json
import sys

from forward_check import peer  # noqa: F401  (registers llama2_py from env/)

peer()
import adapter  # noqa: E402
from protocol import respond  # noqa: E402

from refdecode.reference.conformance.kinds import to_json  # noqa: E402
from refdecode.reference.conformance.suite import open_suite  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    _, total, cases = open_suite(args.suite, args.only)
    with open(args.out, "w") as out:
        for n, case in enumerate(cases, 1):
            request = json.dumps({"id": case["id"], "type": case["type"], "input": to_json(case["input"])})
            response = json.loads(respond(request, adapter.answer))
            expected = {k: v for k, v in to_json(case["expected"]).items() if k in ("sequences", "sequences_scores")}
            out.write(json.dumps({"id": case["id"], "type": case["type"], "input": to_json(case["input"]),
                                  "expected": expected, "response": response}) + "\n")
            out.flush()
            print(f"{n}/{total} {case['id']}: {next(k for k in ('output', 'unsupported', 'error') if k in response)}",
                  file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
