r"""``refdecode conformance check DIR --cmd COMMAND``: run an implementation through the suite and judge it.

Contract: starts ``COMMAND`` once (through the shell, in the current directory), sends it one
request per case on standard input and reads one response per request from its standard output
(lock-step: the next request is written after the response to the previous one arrived, so an
implementation may be a plain read-line / write-line loop). Its standard error is passed through.
Each response is compared with ``compare.py``'s rules; one line is printed per failing case
(``FAIL id (note): where and how``) and per near-tie (``NEAR-TIE id: ...``), then the closing line
``N passed, M failed`` (near-ties count as passed). Returns 1 when any case failed, else 0.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from .compare import compare
from .export import MODEL_FIELDS, dumps
from .kinds import load_npy_refs, to_json
from .registry import REGISTRY, select

__all__ = ["check", "load_suite"]


def load_suite(directory: str | Path, only: str | None = None) -> tuple[dict, list[dict]]:
    """(manifest, cases) of an exported suite; ``only`` as ``--only``. Arrays in .npy files are loaded."""
    root = Path(directory)
    if not (root / "manifest.json").is_file():
        raise ValueError(f"`DIR` has to be an exported suite (refdecode conformance export DIR), but "
                         f"{root / 'manifest.json'} does not exist")
    manifest = json.loads((root / "manifest.json").read_text())
    wanted = set(select(only))
    cases = []
    for entry in manifest["case_types"]:
        if entry["name"] not in wanted:
            continue
        if entry["name"] not in REGISTRY:
            raise ValueError(f"the suite has case type {entry['name']!r}, which this refdecode does not know: "
                             f"export the suite with this refdecode version ({manifest['refdecode_version']} made it)")
        for line in (root / entry["file"]).read_text().splitlines():
            case = load_npy_refs(json.loads(line), root)
            for key in MODEL_FIELDS:  # the checkpoints a case names, as absolute paths
                model = case["input"].get(key)
                if isinstance(model, dict) and "path" in model:
                    model["path"] = str((root / model["path"]).resolve())
            cases.append(case)
    return manifest, cases


class _Implementation:
    """The implementation's process: write a line, read a line (with a timeout), report how it ended."""

    def __init__(self, command: str):
        self.proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, request: str, timeout: float) -> str:
        """Send one request line; the response line, or raise RuntimeError saying why there is none."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"the implementation has exited (code {self.proc.returncode})")
        try:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise RuntimeError("the implementation closed its standard input") from None
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"no response within {timeout:g} s") from None
        if line is None:
            raise RuntimeError(f"the implementation has exited (code {self.proc.wait()}) without answering")
        return line

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait()


def _judge(case: dict, line: str) -> tuple[str, str]:
    try:
        response = json.loads(line)
    except json.JSONDecodeError as err:
        return "fail", f"the response is not JSON ({err}): {line[:80]!r}"
    if not isinstance(response, dict) or response.get("id") != case["id"]:
        got = response.get("id") if isinstance(response, dict) else response
        return "fail", f"the response answers id {got!r}, expected {case['id']!r} (one response per request, in order)"
    if "error" in response:
        return "fail", f"the implementation reported an error: {response['error']}"
    if "output" not in response:
        return "fail", "the response has neither `output` nor `error`"
    case_type = REGISTRY[case["type"]]
    expected = dict(case, expected=case_type.outputs.decode(case["expected"]))
    return compare(case_type, expected, response["output"])


def check(directory: str | Path, command: str, only: str | None = None, timeout: float = 60.0,
          out: IO[str] | None = None) -> int:
    """Run ``command`` on the suite in ``directory``; print the failures and ``N passed, M failed``; 0 if none failed."""
    out = out or sys.stdout
    _, cases = load_suite(directory, only)
    implementation = _Implementation(command)
    passed = failed = 0
    try:
        for case in cases:
            request = dumps({"id": case["id"], "type": case["type"], "input": to_json(case["input"])})
            try:
                verdict, message = _judge(case, implementation.ask(request, timeout))
            except RuntimeError as err:
                verdict, message = "fail", str(err)
            if verdict == "fail":
                failed += 1
                print(f"FAIL {case['id']} ({case['note']}): {message}", file=out, flush=True)
            else:
                passed += 1
                if verdict == "near-tie":
                    print(f"NEAR-TIE {case['id']} ({case['note']}): {message}", file=out, flush=True)
    finally:
        implementation.close()
    print(f"{passed} passed, {failed} failed", file=out, flush=True)
    return 1 if failed else 0
