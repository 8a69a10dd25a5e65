r"""``refdecode conformance check DIR --cmd COMMAND``: run an implementation through the suite and judge it.

Contract: starts ``COMMAND`` (through the shell, in the current directory), sends it one request per case on
standard input and reads one response per request from its standard output (lock-step: the next request is
written after the response to the previous one arrived, so an implementation may be a plain read-line /
write-line loop). Its standard error is passed through. Each response is compared with ``compare.py``'s rules;
one line is printed per failing case (``FAIL id (note): where and how``; for a decode, also the first step, row
and stage where it departs from refdecode's own trace, with the verdict of ``refdecode diff``), per near-tie
(``NEAR-TIE id: ...``) and, with ``list_unsupported``, per case the implementation declined
(``{"id", "unsupported": reason}``), then the closing line ``N passed, M failed`` (``, U unsupported``, ``, K
not run`` when there are any; near-ties count as passed, unsupported cases as neither).

An implementation that misbehaves costs a bounded time and memory and never shifts the answers of later cases:

- a response has to arrive within ``timeout`` seconds and be at most :data:`MAX_RESPONSE_BYTES` long;
- when a case gets no answer (a timeout, an exit, a closed standard output, a flood, a request it does not
  read), the implementation is **killed and started again** for the next case, so a late answer can never be
  taken for another case's; after :data:`MAX_CONSECUTIVE_MISSES` cases in a row without an answer, ``check``
  stops and counts the remaining cases as not run;
- an answer that is not JSON, holds numbers that cannot be compared (``1e400``, ``10**400``) or nests too
  deeply fails its case, with the reason.

Returns 1 when any case failed or was not run, else 0. A suite that cannot be read raises ``ValueError``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from .compare import compare
from .export import dumps
from .kinds import to_json
from .registry import REGISTRY
from .suite import load_suite

__all__ = ["check", "Implementation", "NoAnswer", "MAX_RESPONSE_BYTES", "MAX_CONSECUTIVE_MISSES"]

MAX_RESPONSE_BYTES = 256 * 2**20  # one response line; a longer one is a flood: the case fails, the process restarts
MAX_CONSECUTIVE_MISSES = 3        # cases in a row without an answer before check stops


class NoAnswer(Exception):
    """A case got no usable response line (the implementation is restarted)."""


class Implementation:
    """The implementation's process: write a request, read one bounded line, say why there is none."""

    def __init__(self, command: str):
        # its own process group: a kill reaches what the shell started too (``sh -c "sleep 600"``)
        self.proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                     start_new_session=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()

    @staticmethod
    def _read(stream: Any, lines: queue.Queue) -> None:
        """Lines of at most MAX_RESPONSE_BYTES; a longer one is reported as such and its rest discarded unread."""
        while True:
            line = stream.readline(MAX_RESPONSE_BYTES + 1)
            if not line:
                lines.put(None)
                return
            if len(line) > MAX_RESPONSE_BYTES and not line.endswith(b"\n"):
                lines.put(OverflowError())
                while (rest := stream.readline(2**20)) and not rest.endswith(b"\n"):
                    pass
                continue
            lines.put(line)

    def _write(self, data: bytes, timeout: float) -> None:
        """Write a request, without blocking forever on an implementation that does not read its input."""
        error: list[BaseException] = []

        def write() -> None:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:
                error.append(e)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(timeout)
        if writer.is_alive():
            raise NoAnswer(f"the implementation did not read the request within {timeout:g} s")
        if error:
            raise NoAnswer("the implementation closed its standard input")

    def ask(self, request: str, timeout: float) -> bytes:
        """Send one request line; the response line, or NoAnswer saying why there is none."""
        if self.proc.poll() is not None:
            raise NoAnswer(f"the implementation has exited (code {self.proc.returncode})")
        self._write((request + "\n").encode("utf-8"), timeout)
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise NoAnswer(f"no response within {timeout:g} s") from None
        if isinstance(line, OverflowError):
            raise NoAnswer(f"the response is longer than {MAX_RESPONSE_BYTES} bytes")
        if line is None:
            try:
                code = self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                raise NoAnswer("the implementation closed its standard output but keeps running") from None
            raise NoAnswer(f"the implementation has exited (code {code}) without answering")
        return line

    def close(self, kill: bool = False) -> None:
        """End the process: close its input and give it 2 s to exit (none with ``kill``), then kill its group."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=0 if kill else 2)
        except (subprocess.TimeoutExpired, OSError):
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the shell's children too; nothing left behind
        self.proc.wait()


def _judge(case: dict, line: bytes) -> tuple[str, str]:
    """(verdict, message) of one response line: pass, near-tie, fail or unsupported."""
    try:
        response = json.loads(line.decode("utf-8"), parse_constant=_no_literal)
    except UnicodeDecodeError:
        return "fail", "the response is not UTF-8 text"
    except (json.JSONDecodeError, RecursionError, ValueError) as err:
        return "fail", f"the response is not JSON ({err}): {line[:80]!r}"
    if not isinstance(response, dict) or response.get("id") != case["id"]:
        got = response.get("id") if isinstance(response, dict) else response
        return "fail", f"the response answers id {str(got)[:40]!r}, expected {case['id']!r} (one response per " \
                       "request, in order)"
    if "unsupported" in response:
        return "unsupported", str(response["unsupported"])[:300]
    if "error" in response:
        return "fail", f"the implementation reported an error: {str(response['error'])[:500]}"
    if "output" not in response:
        return "fail", "the response has neither `output`, `error` nor `unsupported`"
    case_type = REGISTRY[case["type"]]
    try:
        expected = dict(case, expected=case_type.outputs.decode(case["expected"]))
        return compare(case_type, expected, response["output"])
    except (OverflowError, ValueError, TypeError, KeyError, IndexError, RecursionError) as err:
        return "fail", f"the output could not be compared ({type(err).__name__}: {str(err)[:200]})"


def _no_literal(name: str) -> Any:
    raise ValueError(f"{name} is not JSON: write the strings \"-inf\", \"inf\", \"nan\"")


def _where_it_departs(case: dict, line: bytes) -> str:
    """For a failing decode, where it departs from refdecode's trace of the case: the first step, row and stage
    (``refdecode diff`` on the token ids), or, when the tokens agree, the stage whose output its scores match."""
    from ..diff import first_divergence  # only for failing decodes
    from .tracing import trace_case

    try:
        output = json.loads(line)["output"]
        trace = trace_case(case)
        found = (first_divergence(trace, output["sequences"], same_draws=True)  # the case's uniforms, on both sides
                 if trace["mode"] in ("greedy_search", "sample") else None)
        text = found.report() if found is not None else _scores_stage(trace, output.get("scores"))
    except Exception:  # noqa: BLE001 -- a best-effort hint: the FAIL line has said what differs
        return ""
    return "" if not text else "\n" + "\n".join("    " + row for row in text.splitlines())


def _scores_stage(trace: dict, scores: Any) -> str:
    """The tokens agree but the scores differ: the first step and row that differ, and which of refdecode's stages
    of that step (if any) the response's row equals. Greedy / sample / contrastive traces, small vocabularies."""
    if not scores or trace["mode"] not in ("greedy_search", "sample", "contrastive_search"):
        return ""
    from ..trace import decode_float

    for step, got in zip(trace["steps"], scores):
        stages = step["stages"]
        for row, row_got in enumerate(got):
            values = [[decode_float(v) for v in stage["values"][row]["values"]] for stage in stages]
            row_got = [decode_float(v) for v in row_got]
            if _close(values[-1], row_got):
                continue
            names = " -> ".join(stage["name"] for stage in stages)
            equal = [stage["name"] for stage, v in zip(stages, values) if _close(v, row_got)]
            why = (f"they equal refdecode's output of {equal[-1]}: what follows it ({names.split(equal[-1])[1][4:]}) "
                   "is missing or does nothing" if equal else "they equal none of refdecode's stages: the first stage "
                   "whose output differs needs your trace (docs/traces.md)")
            return (f"the tokens agree; the scores first differ at step {step['step']}, row {row}, where refdecode "
                    f"computed {names}; {why}")
    return ""


def _close(expected: list[float], got: list[float]) -> bool:
    """Equal within the suite's tolerance (relative to the row's largest finite value), -inf where -inf."""
    import numpy as np

    e, g = np.asarray(expected, dtype=np.float64), np.asarray(got, dtype=np.float64)
    if e.shape != g.shape or not np.array_equal(np.isfinite(e), np.isfinite(g)):
        return False
    finite = np.isfinite(e)
    scale = max(1.0, float(np.abs(e[finite]).max())) if finite.any() else 1.0
    return bool(np.all(np.abs(e[finite] - g[finite]) <= 1e-4 * scale))


def check(directory: str | Path, command: str, only: str | None = None, timeout: float = 60.0,
          out: IO[str] | None = None, list_unsupported: bool = False, tolerate_last_bit: bool = False) -> int:
    """Run ``command`` on the suite in ``directory``; print the verdicts and the closing line; 0 if none failed.

    A textbook case whose row departs on the last bit of softmax (``cases_textbook.compare_textbook``) fails, unless
    ``tolerate_last_bit``: then it is printed as ``LAST-BIT id: ...`` and counted as passed (a departure on the
    rule still fails).
    """
    out = out or sys.stdout
    _, cases = load_suite(directory, only)
    counts = {"pass": 0, "fail": 0, "unsupported": 0, "not run": 0}
    implementation, misses = Implementation(command), 0
    try:
        for n, case in enumerate(cases):
            if misses >= MAX_CONSECUTIVE_MISSES:
                counts["not run"] = len(cases) - n
                print(f"STOPPED: {misses} cases in a row got no answer; the remaining {len(cases) - n} are not run",
                      file=out, flush=True)
                break
            request = dumps({"id": case["id"], "type": case["type"], "input": to_json(case["input"])})
            try:
                line = implementation.ask(request, timeout)
                verdict, message = _judge(case, line)
                misses = 0
            except NoAnswer as err:
                verdict, message, line, misses = "fail", f"{err} (the implementation is restarted)", b"", misses + 1
                implementation.close(kill=True)
                implementation = Implementation(command)
            if verdict == "last-bit":
                verdict = "tolerated" if tolerate_last_bit else "fail"
            counts["pass" if verdict in ("near-tie", "tolerated") else verdict] += 1
            if verdict == "tolerated":
                print(f"LAST-BIT {case['id']} ({case['note']}): {message}", file=out, flush=True)
            elif verdict == "fail":
                hint = _where_it_departs(case, line) if line and "config" in case["input"] else ""
                print(f"FAIL {case['id']} ({case['note']}): {message}{hint}", file=out, flush=True)
            elif verdict == "near-tie" or (verdict == "unsupported" and list_unsupported):
                print(f"{verdict.upper()} {case['id']} ({case['note']}): {message}", file=out, flush=True)
    finally:
        implementation.close()
    summary = f"{counts['pass']} passed, {counts['fail']} failed" + "".join(
        f", {counts[k]} {k}" for k in ("unsupported", "not run") if counts[k])
    print(summary, file=out, flush=True)
    return 1 if counts["fail"] or counts["not run"] else 0
