"""Grade a submission of the assignment on the hidden cases; write Gradescope's results.json.

    python tools/course/grade.py SUBMISSION_DIR [--out results.json] [--timeout 300] [--memory-mb 2048]

``SUBMISSION_DIR`` holds ``processors.py`` (problem 1) and ``decoding.py`` (problems 2-4), as the starters in
``tutorials/assignment/``. Each graded function runs in its own bubblewrap sandbox (``sandbox.py``; nothing runs
without bubblewrap) with a wall-clock timeout, an address-space limit and a CPU limit; the sandbox gets the
inputs over a pipe, asks this process for the model's logits, and sends its answers back; this process, which
alone reads the hidden cases (``tools/course/hidden/cases.json``, made by ``make_hidden.py``), compares them and
writes ``results.json`` once every sandbox is gone. The report says, per function, how many cases pass and why
the first ones fail: the case's label, the verdict and where (step, row), an exception's built-in type; never an
expected value, nor anything the submission chose (its output, its exception's text, its class names). A
protocol breach scores that function 0 ("malformed answer"). Problem 5 is graded by hand: it is listed with 0
points out of its maximum, pending. Code close to refdecode's, the tutorials' or transformers' is flagged (not
zeroed): ``similarity.py``; the threat model is in docs/course/assignment.md.
"""

from __future__ import annotations

import argparse
import builtins
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sandbox import Sandbox, SandboxUnavailable  # noqa: E402
from similarity import similar  # noqa: E402
from task import HIDDEN_DIR, MANUAL, ROOT, TESTS, Test, case_model, decode, harness  # noqa: E402

SHOWN_FAILURES = 3                 # failing cases described per function


# ---- what a student is shown of a hidden case ------------------------------------------------------------------

#: Type names a report may show: the built-in ones and NumPy's. Any other name is the submission's to choose,
#: so it could spell out a hidden input.
SHOWN_TYPES = {name for name, obj in vars(builtins).items() if isinstance(obj, type)} | {
    "LinAlgError", "AxisError", "ComplexWarning", "CalledProcessError", "TimeoutExpired", "JSONDecodeError",
    "UnpicklingError", "error", "partial", "function", "builtin_function_or_method", "method", "ufunc",
    "_ArrayFunctionDispatcher", "method-wrapper", "module", "NoneType", "ndarray", "generator"}


def shown_type(name: object, what: str = "an exception of a class of your own") -> str:
    return name if isinstance(name, str) and name in SHOWN_TYPES else what


def refusal_text(test: Test, message: dict) -> str:
    kind = message["kind"]
    if message["refused"] == "load":
        return f"{test.module}.py could not be loaded: {shown_type(kind)} (selfcheck.py shows the message)"
    if message["refused"] == "not_a_function":
        return (f"{test.function} must be a function defined with def in your file "
                f"(it is a {shown_type(kind, 'object of a class of your own')})")
    return f"{test.function} is defined outside your submission folder"


def case_problem(test: Test, case: dict, message: dict) -> str | None:
    """None if the answer is right, else where it departs, in words that hold no value the submission chose."""
    if "raised" in message:
        return f"raised {shown_type(message['raised'])}"
    if "unencodable" in message:
        return "returned something that is not arrays or numbers"
    try:
        prompt_len = np.shape(case["args"][0])[-1] if test.needs_model else 0
        problem = harness.compare(test.kind, case["expected"], decode(message["answer"]), prompt_len)
    except Exception as err:  # noqa: BLE001 -- an answer of the wrong kind is a failed case
        return f"an answer of the wrong kind ({type(err).__name__})"
    return None if problem is None else re.sub(r"shape \([^)]*\)", "the shape", problem)


# ---- scoring -----------------------------------------------------------------------------------------------


def grade_test(box: Sandbox, test: Test, cases: list[dict], timeout: float, model: Any) -> dict:
    """One results.json test entry for ``test``."""
    head = f"{test.name} ({test.points} points)"
    if not (box.folder / "submission" / f"{test.module}.py").is_file():
        return _entry(test, 0.0, f"{head}: no {test.module}.py in the submission")
    models = [case_model(c, model) for c in cases] if test.needs_model else None
    outcome = box.run(test.module, test.function, [c["args"] for c in cases], models, timeout)
    if outcome.malformed:
        return _entry(test, 0.0, f"{head}: 0 points, malformed answer: {outcome.malformed}")
    refused = [m for m in outcome.messages if "refused" in m]
    if refused:
        return _entry(test, 0.0, f"{head}: 0 points, refused: {refusal_text(test, refused[0])}")
    failures, passed, answered = [], 0, set()
    for m in outcome.messages:
        i = m["case"]
        if i in answered:
            continue
        answered.add(i)
        problem = case_problem(test, cases[i], m)
        if problem is None:
            passed += 1
        else:
            failures.append(f"case {i + 1} ({cases[i]['label']}): {problem}")
    missing = len(cases) - len(answered)
    if missing:
        failures.append(f"{missing} case(s) without an answer" + (f" ({outcome.stopped})" if outcome.stopped else ""))
    if not outcome.messages and outcome.stopped:
        failures = [outcome.stopped]
    if any("NotImplementedError" in f for f in failures) and passed == 0:
        failures = ["not attempted yet (raises NotImplementedError)"]
    score = round(test.points * passed / len(cases), 2)
    lines = [f"{head}: {passed}/{len(cases)} hidden cases pass, {score:g} points"] + \
            [f"  {f}" for f in failures[:SHOWN_FAILURES]] + \
            ([f"  ... and {len(failures) - SHOWN_FAILURES} more"] if len(failures) > SHOWN_FAILURES else [])
    return _entry(test, score, "\n".join(lines))


def _entry(test: Test, score: float, output: str) -> dict:
    return {"name": test.name, "score": score, "max_score": float(test.points), "output": output,
            "status": "passed" if score == test.points else "failed", "visibility": "visible"}


# ---- the whole submission ------------------------------------------------------------------------------------


def grade(submission: Path, cases_path: Path = HIDDEN_DIR / "cases.json", timeout: float = 300.0,
          memory_mb: int = 2048, only: list[str] | None = None) -> dict:
    """Gradescope's results.json for ``submission`` (a dict)."""
    submission = submission.resolve()
    package = (ROOT / "refdecode").resolve()
    if not submission.is_dir():
        raise ValueError(f"`SUBMISSION_DIR` must be a folder, got {submission}")
    if package.is_relative_to(submission) or cases_path.resolve().is_relative_to(submission):
        raise ValueError("`SUBMISSION_DIR` must not contain refdecode or the hidden cases: grade a folder of its own")
    data = json.loads(cases_path.read_text())
    if data.get("format") != 1:
        raise ValueError(f"{cases_path}: unknown format {data.get('format')!r}; rerun tools/course/make_hidden.py")
    cases = decode(data["cases"])
    chosen = [t for t in TESTS if not only or t.function in only]
    model = harness.NextTokenModel.load() if any(t.needs_model for t in chosen) else None
    started = time.monotonic()
    with Sandbox(submission, memory_mb) as box:          # every sandbox is gone when this block ends
        tests = [grade_test(box, t, cases[t.function], timeout, model) for t in chosen]
    name, points = MANUAL
    tests.append({"name": name, "score": 0.0, "max_score": float(points), "status": "failed", "visibility": "visible",
                  "output": f"manual: graded by hand with the rubric, 0/{points} pending"})
    flags = similar(submission)
    output = "Flagged for review (close to code of refdecode, the tutorials or transformers; see the plagiarism " \
        "rule of the handout):\n" + "\n".join(f"  {f}" for f in flags) if flags else ""
    return {"score": round(sum(t["score"] for t in tests), 2), "execution_time": round(time.monotonic() - started, 1),
            "output": output, "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submission", type=Path, help="the folder with processors.py and decoding.py")
    parser.add_argument("--out", type=Path, default=Path("results.json"), help="where to write results.json")
    parser.add_argument("--cases", type=Path, default=HIDDEN_DIR / "cases.json", help="the hidden cases")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per graded function")
    parser.add_argument("--memory-mb", type=int, default=2048, help="address-space limit of each child process")
    parser.add_argument("--only", nargs="+", metavar="FUNCTION", help="grade these functions only")
    args = parser.parse_args(argv)
    try:
        results = grade(args.submission, args.cases, args.timeout, args.memory_mb, args.only)
    except (ValueError, OSError, SandboxUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for t in results["tests"]:
        print(t["output"])
    if results["output"]:
        print(results["output"])
    total = sum(t["max_score"] for t in results["tests"])
    print(f"total: {results['score']:g}/{total:g} (problem 5 pending: graded by hand); wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
