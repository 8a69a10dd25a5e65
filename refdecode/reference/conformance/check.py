r"""``refdecode conformance check DIR --cmd COMMAND``: run an implementation through the suite and judge it.

Contract: starts ``COMMAND`` (through the shell, in the current directory), sends it one request per case on
standard input and reads one response per request from its standard output (lock-step: the next request is
written after the response to the previous one arrived, so an implementation may be a plain read-line /
write-line loop). Its standard error is passed through. Each response is compared with ``compare.py``'s rules;
one line is printed per failing case (``FAIL id (note): where and how``; for a decode, also the first step, row
and stage where it departs from refdecode's own trace, with the verdict of ``refdecode diff``), per near-tie
(``NEAR-TIE id: ...``), per case without a response in time (``TIMEOUT id (note): ...``) and, with
``list_unsupported``, per case the implementation declined (``{"id", "unsupported": reason}``), then the closing line
``N passed, M failed`` (``, T timed out``, ``, U unsupported``, ``, K not run`` when there are any; near-ties count
as passed, unsupported cases as neither).

At scale (``pool.py``): ``jobs`` processes answer at once (threads, or Ray tasks with ``ray``), each one request at
a time, and the lines come out in the suite's order, those of the serial run; the suite is streamed
(``suite.open_suite``), so only the cases in flight are in memory.

An implementation that misbehaves costs a bounded time and memory and never shifts the answers of later cases:

- a response has to arrive within :func:`case_timeout` (``timeout`` seconds, scaled up for a decode larger than 64
  token positions of GPT-2 124M) and be at most :data:`MAX_RESPONSE_BYTES` long; a late one is a TIMEOUT, counted
  apart from the wrong answers;
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
import functools
import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .compare import compare
from .export import dumps
from .kinds import to_json
from ...text.files import read_json_file
from .progress import Progress
from .registry import REGISTRY
from .suite import MODEL_FIELDS, open_suite

__all__ = ["check", "case_timeout", "Implementation", "NoAnswer", "Result", "Worker", "MAX_RESPONSE_BYTES",
           "MAX_CONSECUTIVE_MISSES", "SIZE_UNIT"]

MAX_RESPONSE_BYTES = 256 * 2**20  # one response line; a longer one is a flood: the case fails, the process restarts
MAX_CONSECUTIVE_MISSES = 3        # cases in a row without an answer before check stops
SIZE_UNIT = 124_000_000 * 64      # a case's size (parameters x token positions) that --timeout covers unscaled


class NoAnswer(Exception):
    """A case got no usable response line (the implementation is restarted); ``timed_out``: for want of time
    (no response, or the request not read, within the case's timeout), not for a misbehaviour."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


class Implementation:
    """The implementation's process: write a request, read one bounded line, say why there is none."""

    def __init__(self, command: str, cwd: str | None = None):
        # its own process group: a kill reaches what the shell started too (``sh -c "sleep 600"``)
        self.proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                     start_new_session=True, cwd=cwd)
        self.lines: queue.Queue = queue.Queue()
        # bufsize=0 makes stdout a raw pipe, whose readline reads one byte per system call (a 10 MB answer: ten
        # million calls, most of check's CPU time); a buffer in front reads it in 64 KiB pieces
        stdout = io.BufferedReader(self.proc.stdout, buffer_size=1 << 16)
        threading.Thread(target=self._read, args=(stdout, self.lines), daemon=True).start()

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
            except (BrokenPipeError, OSError, ValueError) as e:   # ValueError: closed by check's stop meanwhile
                error.append(e)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(timeout)
        if writer.is_alive():
            raise NoAnswer(f"the implementation did not read the request within {timeout:g} s", timed_out=True)
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
            raise NoAnswer(f"no response within {timeout:g} s", timed_out=True) from None
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


# ----------------------------------------------------------------------------------------------
# one case: the time it may take, and its verdict


def case_timeout(case: dict, timeout: float) -> float:
    """The longest wait for this case's response: ``timeout`` x max(1, size / SIZE_UNIT).

    A decode's size is the parameters of its model(s) (GPT-2: 12 n_layer n_embd^2 + (vocab + n_positions) n_embd,
    from the checkpoint's config.json) times the token positions it computes, rows x (prompt + new tokens), rows =
    batch x max(num_beams, num_return_sequences). SIZE_UNIT is 64 positions of GPT-2 124M (8e9), so a
    124M-shaped beam case of 3 prompts x 5 beams x (10 + 20) tokens waits 7 x ``timeout``; every case of the
    default suite (toy and tiny models, processors) waits ``timeout``.
    """
    inp = case.get("input", {})
    config = inp.get("config")
    ids = inp.get("input_ids")
    if not isinstance(config, dict) or not hasattr(ids, "shape") or ids.ndim != 2:
        return timeout
    batch, prompt = ids.shape
    new = config.get("max_new_tokens") or max(0, int(config.get("max_length") or 0) - prompt)
    rows = batch * max(int(config.get("num_beams") or 1), int(config.get("num_return_sequences") or 1))
    parameters = sum(_parameters(inp.get(key)) for key in MODEL_FIELDS)
    return timeout * max(1.0, parameters * rows * (prompt + int(new)) / SIZE_UNIT)


def _parameters(model: Any) -> int:
    """A GPT-2 checkpoint's parameter count from its config.json (0 for the toy model or an unreadable config)."""
    if not isinstance(model, dict) or model.get("kind") != "gpt2" or not isinstance(model.get("path"), str):
        return 0
    return _config_parameters(model["path"])


@functools.lru_cache(maxsize=64)
def _config_parameters(path: str) -> int:
    try:
        c = read_json_file(Path(path) / "config.json", "the model's config")
        d = int(c["n_embd"])
        return 12 * int(c["n_layer"]) * d * d + (int(c["vocab_size"]) + int(c.get("n_positions", 0))) * d
    except (OSError, ValueError, KeyError, TypeError):
        return 0


@dataclass(frozen=True)
class Result:
    """One case's verdict (pass, near-tie, last-bit, fail, timeout, unsupported), the message, and whether the
    case got no answer (a miss: the implementation was restarted; 3 in a row stop ``check``)."""
    verdict: str
    message: str
    missed: bool = False


class Worker:
    """One implementation process, started again after a case without an answer; runs cases one at a time."""

    def __init__(self, command: str, timeout: float, cwd: str | None = None):
        self.command, self.timeout, self.cwd = command, timeout, cwd
        self.implementation = Implementation(command, cwd)
        self.stopped = False

    def run(self, case: dict) -> Result:
        """Send the case, judge the response (with where a failing decode departs)."""
        request = dumps({"id": case["id"], "type": case["type"], "input": to_json(case["input"])})
        try:
            line = self.implementation.ask(request, case_timeout(case, self.timeout))
        except NoAnswer as err:
            self.implementation.close(kill=True)
            if self.stopped:   # check is ending: no new process
                return Result("fail", "check stopped", True)
            self.implementation = Implementation(self.command, self.cwd)
            return Result("timeout" if err.timed_out else "fail", f"{err} (the implementation is restarted)", True)
        verdict, message = _judge(case, line)
        if verdict in ("fail", "last-bit") and "config" in case["input"]:
            message += _where_it_departs(case, line)
        return Result(verdict, message)

    def stop(self) -> None:
        """Kill the process now (from another thread: the case it runs ends at once) and start no other."""
        self.stopped = True
        self.implementation.close(kill=True)

    def close(self) -> None:
        self.implementation.close()


# ----------------------------------------------------------------------------------------------
# the whole run: verdicts in the suite's order, a summary


def _line(case: dict, result: Result, list_unsupported: bool, tolerate_last_bit: bool) -> tuple[str, str | None]:
    """(the verdict as counted, the line to print or None) of one case."""
    verdict, message = result.verdict, result.message
    if verdict == "last-bit":
        if tolerate_last_bit:
            return "pass", f"LAST-BIT {case['id']} ({case['note']}): {message}"
        verdict = "fail"
    if verdict in ("fail", "timeout") or verdict == "near-tie" or (verdict == "unsupported" and list_unsupported):
        line = f"{verdict.upper()} {case['id']} ({case['note']}): {message}"
    else:
        line = None
    return ("pass" if verdict == "near-tie" else verdict), line


def check(directory: str | Path, command: str, only: str | None = None, timeout: float = 60.0,
          out: IO[str] | None = None, list_unsupported: bool = False, tolerate_last_bit: bool = False,
          jobs: int | None = None, ray: str | None = None) -> int:
    """Run ``command`` on the suite in ``directory``; print the verdicts and the closing line; 0 if none failed.

    ``jobs`` implementation processes answer at once (default 1; threads here; with ``ray``, an address or
    ``"local"``, Ray tasks of :func:`pool.run_shard`, each starting its own, ``jobs`` at once, default the
    cluster's CPUs): the lines and the counts are those of ``jobs=1``, in the suite's order. The suite is streamed: only the cases in flight are in memory. A case whose response does
    not come within :func:`case_timeout` is a TIMEOUT, counted apart from the failures.

    A textbook case whose row departs on the last bit of softmax (``cases_textbook.compare_textbook``) fails, unless
    ``tolerate_last_bit``: then it is printed as ``LAST-BIT id: ...`` and counted as passed (a departure on the
    rule still fails).
    """
    from . import pool

    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ValueError(f"`jobs` has to be an int >= 1, but is {jobs!r}")
    out = out or sys.stdout
    _, total, cases = open_suite(directory, only)
    counted = pool.Counted(cases)
    counts = dict.fromkeys(("pass", "fail", "timeout", "unsupported", "not run"), 0)
    results = (pool.on_ray(counted, command, timeout, ray, jobs, Worker, MAX_CONSECUTIVE_MISSES) if ray is not None
               else pool.in_threads(counted, command, timeout, jobs or 1, Worker))
    misses = done = 0
    with Progress(total, "check") as bar:
        try:
            for case, result in results:
                if misses >= MAX_CONSECUTIVE_MISSES:
                    results.close()
                    counts["not run"] = counted.taken - done + sum(1 for _ in counted)
                    bar.say(f"STOPPED: {misses} cases in a row got no answer; the remaining {counts['not run']} are "
                            "not run", out)
                    break
                verdict, line = _line(case, result, list_unsupported, tolerate_last_bit)
                counts[verdict] += 1
                if line is not None:
                    bar.say(line, out)
                misses, done = (misses + 1 if result.missed else 0), done + 1
                bar.advance()
        finally:
            results.close()
    names = {"timeout": "timed out"}
    summary = f"{counts['pass']} passed, {counts['fail']} failed" + "".join(
        f", {counts[k]} {names.get(k, k)}" for k in ("timeout", "unsupported", "not run") if counts[k])
    print(summary, file=out, flush=True)
    return 1 if counts["fail"] or counts["timeout"] or counts["not run"] else 0
