r"""Fresh cases vLLM can take: refdecode's fresh draws, moved to a checkpoint vLLM runs, against the profile ``vllm``.

    .venv/bin/python examples/engines/vllm/fresh_vllm.py --fresh 100 --seed 20261126 [--json out.json]

``fresh_check.py`` answers few cases for vLLM: two thirds of its draws are on the tiny suite models, whose heads
(8 and 16) vLLM's CPU attention does not take (FINDINGS.md V5), and most of the rest ask for a no-repeat n-gram or,
with beams, a repetition penalty or a minimum length, which vLLM has no option for. This draws the same way
(``refdecode.reference.conformance.fresh.fresh_cases``, groups greedy and beam_search: new prompts, left-padded
batches of 1-3, one or two eos ids, pads that are not eos, lengths, penalties, beams, length penalties, early
stopping, returned sequences), then makes each case one vLLM can take: every case on ``models/tiny-shakespeare``
(the tiny models' prompt and eos ids, all below 96, are tokens of its vocabulary too), no n-gram ban, and for beams
no repetition penalty and no minimum length. The expected answers and the near-tie notes are recomputed on the
moved case (``export``), then ``fresh_check.check_engine`` asks the adapter and compares with the profile.
Runs in refdecode's venv (the adapter runs in vLLM's). Exit status 1 if any answered case is a mismatch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from fresh_check import check_engine  # noqa: E402

from refdecode.reference.conformance.cases_decode import decode, smallest  # noqa: E402
from refdecode.reference.conformance.cases_engines import SHIPPED  # noqa: E402
from refdecode.reference.conformance.export import export  # noqa: E402
from refdecode.reference.conformance.fresh import NEAR_TIE, fresh_cases  # noqa: E402
from refdecode.reference.conformance.registry import REGISTRY  # noqa: E402
from refdecode.reference.conformance.suite import load_suite  # noqa: E402


def for_vllm(inp: dict) -> dict:
    """The drawn input moved to the shipped model, without the options vLLM lacks (see the module doc)."""
    config = dict(inp["config"], no_repeat_ngram_size=0)
    if int(config.get("num_beams") or 1) > 1:
        config.update(repetition_penalty=1.0, min_length=0, min_new_tokens=0)
    return {**inp, "model": {"kind": "gpt2", "path": str(SHIPPED)}, "config": config}


def moved_case(case):
    """The case for vLLM, its note saying so and labelling a near-tie of the moved decode (4.38.2's margin)."""
    inp = for_vllm(case.input)
    margin = smallest(decode(inp)[1])
    note = (case.note.split(":")[0] + ", moved to tiny-shakespeare for vLLM"
            + (f"; near-tie: margin {margin:.2g}" if margin <= NEAR_TIE else ""))
    return dataclasses.replace(case, input=inp, note=note)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", type=int, default=100, metavar="N")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--suite", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    suite = args.suite or Path(tempfile.mkdtemp(prefix="refdecode-fresh-vllm-"))
    drawn = fresh_cases(args.fresh, args.seed, ("greedy", "beam_search"))
    moved = {name: [moved_case(c) for c in found] for name, found in drawn.items()}
    export(suite, case_types=[dataclasses.replace(REGISTRY[name], build=lambda found=found: found)
                              for name, found in moved.items() if found])
    _, cases = load_suite(suite)
    print(f"{len(cases)} fresh cases for vLLM, seed {args.seed}, in {suite}")
    r = check_engine("vllm", cases, args.timeout)
    print(f"vllm: profile = engine on {r['same']} of {r['answered']} answered ({r['departing_same']} of the "
          f"{r['departing']} departing from 4.38.2), {r['unsupported']} unsupported, {r['no_answer']} no answer")
    for m in r["mismatches"]:
        print(f"  MISMATCH {m['id']} ({m['note']}): {m['why']}")
    if args.json:
        # the key says how these cases were drawn (report.py merges it with fresh_check.py's own "vllm" row)
        args.json.write_text(json.dumps({"seed": args.seed, "cases": len(cases),
                                         "engines": {"vllm [fresh_vllm.py: moved to tiny-shakespeare]": r}},
                                        indent=1) + "\n")
    return 1 if r["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
