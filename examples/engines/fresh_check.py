r"""Profile = engine on fresh cases: new cases drawn from a seed, each installed engine's answers against its profile.

    .venv/bin/python examples/engines/fresh_check.py --fresh 100 --seed 20261126 [--engines ctranslate2,...]
                                                     [--groups greedy,beam_search,eos_heavy] [--json out.json]

Draws the cases with ``refdecode conformance fresh`` (``refdecode.reference.conformance.fresh``: prompts, batches,
settings and near-ties never in the committed suite), sends each to every installed engine's adapter
(``examples/engines/<engine>/run``; an engine is installed when its ``env/`` or ``node_modules/`` exists, or named
with ``--engines``) and compares the engine's ``sequences``, token for token, with refdecode's profile of the engine
(``decode_as``; the same as ``refdecode conformance serve --as <engine>``). Prints per engine: answered, profile =
engine, and of those the cases where the engine departs from transformers 4.38.2; then every mismatch with its case
(id, note, the row and position where the two part). Exit status 1 if any answered case is a mismatch. Runs in
refdecode's venv; the adapters in theirs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from refdecode.reference.conformance.check import Implementation, NoAnswer
from refdecode.reference.conformance.fresh import FRESH_GROUPS, write_fresh
from refdecode.reference.conformance.kinds import to_json
from refdecode.reference.conformance.registry import REGISTRY
from refdecode.reference.conformance.suite import load_suite
from refdecode.reference.engines import PROFILES, NextTokenLogits, decode_as
from refdecode.reference.engines.beam import NotSimulated
from refdecode.reference.conformance.cases_decode import model_for

HERE = Path(__file__).resolve().parent
#: profiles answered by another engine's adapter in another mode: profile -> (engine folder, environment)
VARIANTS = {"ctranslate2-per-prompt": ("ctranslate2", "CT2_PER_PROMPT=1"),
            "mlx-lm-per-prompt": ("mlx-lm", "MLX_PER_PROMPT=1")}


def command(engine: str) -> str:
    folder, env = VARIANTS.get(engine, (engine, ""))
    return f"env {env} {HERE / folder / 'run'}" if env else str(HERE / folder / "run")


def installed() -> list[str]:
    folders = {e: VARIANTS.get(e, (e, ""))[0] for e in PROFILES}
    return [e for e, f in folders.items() if (HERE / f / "run").exists()
            and any((HERE / f / d).exists() for d in ("env", "node_modules"))]


def profile_answer(engine: str, case: dict) -> list | str:
    inp = REGISTRY[case["type"]].inputs.decode(case["input"])
    try:
        out = decode_as(engine, NextTokenLogits(model_for(inp["model"], inp["config"])), inp["input_ids"],
                        inp["attention_mask"], inp["config"], inp.get("uniforms"))
    except NotSimulated as err:
        return f"not simulated: {err}"
    return to_json(out)["sequences"]


def parting(got: list, want: list) -> str:
    if len(got) != len(want):
        return f"{len(got)} rows, profile {len(want)}"
    for row, (a, b) in enumerate(zip(got, want)):
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"row {row} position {at}: engine {a[at:at + 4]}, profile {b[at:at + 4]}"
    return "equal"


def answer_sequences(response: Any, case_id: str) -> list | str | None:
    """The answer's sequences, or why it is no answer (junk, another case's id, no sequences); None: unsupported."""
    if not isinstance(response, dict) or response.get("id") != case_id:
        return f"no answer: not a response to {case_id}"
    if "output" not in response:
        return None if "unsupported" in response else f"no answer: {str(response.get('error', response))[:200]}"
    output = response["output"]
    sequences = output.get("sequences") if isinstance(output, dict) else None
    if not (isinstance(sequences, list) and all(isinstance(r, list) for r in sequences)):
        return "no answer: the output has no list of sequences"
    return sequences


def check_engine(engine: str, cases: list[dict], timeout: float, cmd: str | None = None) -> dict:
    """Each case asked of the engine's adapter (``cmd``: another command, for tests) and of its profile; three
    cases in a row without an answer end the run, as ``refdecode conformance check`` does."""
    cmd = cmd or command(engine)
    adapter, misses, result = Implementation(cmd), 0, {"answered": 0, "same": 0, "departing": 0,
                                                                     "departing_same": 0, "unsupported": 0,
                                                                     "no_answer": 0, "mismatches": []}
    try:
        for case in cases:
            try:
                response = json.loads(adapter.ask(json.dumps({"id": case["id"], "type": case["type"],
                                                              "input": case["input"]}), timeout))
            except (NoAnswer, ValueError) as err:
                adapter.close(kill=True)
                adapter = Implementation(cmd)
                response = {"id": case["id"], "error": f"{err}"}
            got = answer_sequences(response, case["id"])
            if got is None:
                result["unsupported"] += 1
                continue
            if isinstance(got, str):
                result["no_answer"] += 1
                result["mismatches"].append({"id": case["id"], "note": case["note"], "why": got})
                misses += 1
                if misses == 3:
                    result["stopped"] = "three cases in a row without an answer"
                    break
                continue
            misses = 0
            want = profile_answer(engine, case)
            departs = got != to_json(case["expected"]["sequences"])
            result["answered"] += 1
            result["departing"] += departs
            if got == want:
                result["same"] += 1
                result["departing_same"] += departs
            else:
                result["mismatches"].append({"id": case["id"], "note": case["note"],
                                             "why": want if isinstance(want, str) else parting(got, want)})
    finally:
        adapter.close()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", type=int, default=100, metavar="N", help="number of fresh cases")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--groups", default=",".join(FRESH_GROUPS))
    ap.add_argument("--engines", default=None, help="comma-separated (default: the installed ones)")
    ap.add_argument("--suite", type=Path, default=None, help="where to write the cases (default: a temporary folder)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--json", type=Path, default=None, help="write the per-engine results here")
    args = ap.parse_args()
    suite = args.suite or Path(tempfile.mkdtemp(prefix="refdecode-fresh-"))
    write_fresh(suite, args.fresh, args.seed, tuple(g for g in args.groups.split(",") if g))
    _, cases = load_suite(suite)
    engines = args.engines.split(",") if args.engines else installed()
    print(f"{len(cases)} fresh cases, seed {args.seed}, in {suite}")
    results = {}
    # another selection of groups than the default is named with the engine (report.py merges --json files by name)
    label = "" if args.groups == ",".join(FRESH_GROUPS) else f" [{args.groups}]"
    for engine in engines:
        r = results[engine + label] = check_engine(engine, cases, args.timeout)
        print(f"{engine}{label}: profile = engine on {r['same']} of {r['answered']} answered ({r['departing_same']} of "
              f"the {r['departing']} departing from 4.38.2), {r['unsupported']} unsupported, {r['no_answer']} no answer")
        for m in r["mismatches"]:
            print(f"  MISMATCH {m['id']} ({m['note']}): {m['why']}")
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "cases": len(cases), "engines": results}, indent=1) + "\n")
    return 1 if any(r["mismatches"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
