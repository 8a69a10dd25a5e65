"""Grade a submission of the assignment on the hidden cases; write Gradescope's results.json.

    python tools/course/grade.py SUBMISSION_DIR [--out results.json] [--timeout 300] [--memory-mb 2048]

``SUBMISSION_DIR`` holds ``processors.py`` (problem 1) and ``decoding.py`` (problems 2-4), as the starters in
``tutorials/assignment/``. Each graded function runs in its own child process (``sandbox.py``: the walls
against calling refdecode's decoding) with a wall-clock timeout, an address-space limit and a CPU limit; the
child gets the inputs over a pipe and sends its answers back; this process, which alone reads the hidden cases
(``tools/course/hidden/cases.json``, made by ``make_hidden.py``), compares them. The report says, per
function, how many cases pass and why the first ones fail, never with an expected value. A function whose
answer is refdecode's own, or that reached for refdecode's decoding, scores 0. Problem 5 is graded by hand:
it is listed with 0 points out of its maximum, pending. A submission whose text is close to refdecode's
decoding source is flagged (not zeroed): see docs/course/assignment.md.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import resource
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task import HIDDEN_DIR, MANUAL, ROOT, TESTS, Test, decode, encode, harness  # noqa: E402

SANDBOX = Path(__file__).resolve().parent / "sandbox.py"
MAX_OUTPUT = 20_000_000            # bytes a child may send back before it is stopped
SHOWN_FAILURES = 3                 # failing cases described per function
SIMILARITY_FLAG = 0.8              # difflib ratio from which a function is flagged as close to refdecode's


# ---- running one function in its sandbox ---------------------------------------------------------------------


def _limits(memory_mb: int, cpu_s: int) -> Any:
    def apply() -> None:   # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (10 * 2**20, 10 * 2**20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_sandboxed(submission: Path, test: Test, inputs: list, timeout: float, memory_mb: int,
                  denied: list[Path]) -> tuple[list[dict], str | None]:
    """The child's messages (decoded JSON lines) and why it was stopped (timeout, crash, flood), or None."""
    with tempfile.TemporaryDirectory(prefix="grade-") as home:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "PYTHONDONTWRITEBYTECODE": "1",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LC_ALL": "C.UTF-8"}
        proc = subprocess.Popen(
            [sys.executable, "-I", str(SANDBOX), str(submission), test.module, test.function, *map(str, denied)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=home, env=env,
            start_new_session=True, preexec_fn=_limits(memory_mb, int(timeout) + 5))
        payload = json.dumps(encode(inputs)).encode()
        threading.Thread(target=_feed, args=(proc, payload), daemon=True).start()
        deadline = time.monotonic() + timeout
        try:
            data, stopped = _read(proc, deadline)
            if stopped is None:  # EOF: it closed its stdout, but may go on running (sleeping costs no CPU)
                try:
                    if proc.wait(timeout=max(0.1, deadline - time.monotonic())) != 0:
                        stopped = f"the process ended with status {proc.returncode} (out of memory or a crash)"
                except subprocess.TimeoutExpired:
                    stopped = "stopped: over the time limit"
        finally:
            _kill_session(proc)  # whatever it left running (a grandchild, a process still sleeping)
    messages = []
    for line in data.decode(errors="replace").splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue                                    # not the sandbox's: ignored
        if isinstance(message, dict):
            messages.append(message)
    return messages, stopped


def _feed(proc: subprocess.Popen, payload: bytes) -> None:
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except OSError:                                     # the child died or closed its stdin
        pass


def _kill_session(proc: subprocess.Popen) -> None:
    """SIGKILL the child's session (it was started in its own) and reap the child."""
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _read(proc: subprocess.Popen, deadline: float) -> tuple[bytes, str | None]:
    """stdout until EOF, the deadline or MAX_OUTPUT bytes; kills the child's session on the last two."""
    chunks, size, stopped = [], 0, None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                stopped = "stopped: over the time limit"
                break
            if not sel.select(timeout=left):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_OUTPUT:
                stopped = "stopped: too much output"
                break
    if stopped:
        _kill_session(proc)
    proc.stdout.close()
    return b"".join(chunks), stopped


# ---- scoring -----------------------------------------------------------------------------------------------


def grade_test(submission: Path, test: Test, cases: list[dict], timeout: float, memory_mb: int,
               denied: list[Path]) -> dict:
    """One results.json test entry for ``test``."""
    head = f"{test.name} ({test.points} points)"
    if not (submission / f"{test.module}.py").is_file():
        return _entry(test, 0.0, f"{head}: no {test.module}.py in the submission")
    messages, stopped = run_sandboxed(submission, test, [c["args"] for c in cases], timeout, memory_mb, denied)
    refused = [m["refused"] for m in messages if isinstance(m.get("refused"), str)]
    if refused:
        return _entry(test, 0.0, f"{head}: 0 points, refused: {refused[0]}")
    failures, passed, answered = [], 0, set()
    for m in messages:
        i = m.get("case")
        if not isinstance(i, int) or not 0 <= i < len(cases) or i in answered:
            continue
        answered.add(i)
        if "error" in m:
            problem = str(m["error"])[:300]
        else:
            try:
                prompt_len = np.shape(cases[i]["args"][0])[-1] if test.needs_model else 0
                problem = harness.compare(test.kind, cases[i]["expected"], decode(m.get("answer")), prompt_len)
            except Exception as err:  # noqa: BLE001 -- an answer of the wrong kind is a failed case
                problem = f"an answer of the wrong kind ({type(err).__name__})"
        if problem is None:
            passed += 1
        else:
            failures.append(f"case {i + 1} ({cases[i]['label']}): {problem}")
    missing = len(cases) - len(answered)
    if missing:
        failures.append(f"{missing} case(s) without an answer" + (f" ({stopped})" if stopped else ""))
    if not messages and stopped:
        failures = [stopped]
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


# ---- flagging text copied from refdecode (a plagiarism question, so flagged, not zeroed) ------------------------


def _functions(path: Path) -> dict[str, str]:
    """name -> source text of every function defined in ``path`` (nested ones too)."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return {}
    return {f"{path.name}:{node.name}": ast.get_source_segment(text, node) or ""
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _code_only(source: str) -> str:
    """A function's text without docstrings, comments and blank lines (what copying keeps)."""
    try:
        tree = ast.parse(source.strip())
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def similar_to_refdecode(submission: Path, threshold: float = SIMILARITY_FLAG) -> list[str]:
    """Functions of the submission whose code (docstrings and comments removed) is close to one of refdecode's
    decoding or processor functions: ``"decoding.py:beam_search ~ refdecode/decoding/...:beam_search (0.93)"``."""
    package = ROOT / "refdecode"
    theirs = {}
    for folder in ("decoding", "processors"):
        for path in sorted((package / folder).rglob("*.py")):
            for name, text in _functions(path).items():
                theirs[f"{path.relative_to(ROOT).as_posix()}:{name.split(':')[1]}"] = _code_only(text)
    flags = []
    for path in sorted(submission.rglob("*.py")):
        for name, text in _functions(path).items():
            mine = _code_only(text)
            if len(mine) < 200:                          # a few lines say the same thing in any hand
                continue
            for where, other in theirs.items():
                matcher = difflib.SequenceMatcher(None, mine, other, autojunk=False)
                if matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold \
                        and (ratio := matcher.ratio()) >= threshold:
                    flags.append(f"{path.relative_to(submission).as_posix()}:{name.split(':')[1]} ~ {where} "
                                 f"({ratio:.2f})")
    return flags


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
    denied = [cases_path.resolve().parent]
    started = time.monotonic()
    tests = [grade_test(submission, t, cases[t.function], timeout, memory_mb, denied)
             for t in TESTS if not only or t.function in only]
    name, points = MANUAL
    tests.append({"name": name, "score": 0.0, "max_score": float(points), "status": "failed", "visibility": "visible",
                  "output": f"manual: graded by hand with the rubric, 0/{points} pending"})
    flags = similar_to_refdecode(submission)
    output = "Flagged for review (close to refdecode's own code; see the plagiarism rule of the handout):\n" + \
        "\n".join(f"  {f}" for f in flags) if flags else ""
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
    except (ValueError, OSError) as err:
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
