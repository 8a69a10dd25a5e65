"""The child process that runs one graded function of a submission, and the walls around it.

    python -I sandbox.py SUBMISSION_DIR MODULE FUNCTION [DENIED_DIR ...]    (started by grade.py, not by hand)

Contract: reads the cases' inputs (JSON, task.encode) on stdin, writes one JSON line per case on the
protocol pipe (the original stdout): ``{"case": i, "answer": ...}`` or ``{"case": i, "error": "..."}``, and
``{"refused": "..."}`` when the function may not be graded. The expected answers never enter this process:
the parent compares. What the submission prints goes to stderr, which the parent discards.

Walls, in the order they go up (docs/course/assignment.md, "What the grader stops and what it does not"):

1. ``refdecode`` is a bare package object: its ``__init__`` (which imports every decoding loop) never runs.
   The model is loaded through ``refdecode.model`` before anything of the submission runs.
2. An import blocker on ``sys.meta_path`` refuses refdecode's decoding, processors and request modules
   (and transformers / torch, another reference implementation).
3. An audit hook (``sys.addaudithook``: it cannot be removed from Python) refuses, whatever the route
   (import, importlib, open, os.open, runpy, a symlink): opening any file of the repository except the
   submission's and the model-side files of refdecode, any git history, the hidden cases' folder; starting a
   process; ctypes; sockets; and the blocked imports again (so removing the meta-path blocker does not help).
4. The function must be a plain function defined in a file of the submission folder (its code object's file),
   with a ``__module__`` that is not refdecode's.
The parent adds the time limit (a timeout, then kill), the memory limit (RLIMIT_AS) and a CPU limit.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import types
from pathlib import Path

#: refdecode modules a submission may use: the model, the tokenizer, softmax / log_softmax and what they import.
ALLOWED = ("refdecode.model", "refdecode.text", "refdecode.numerics", "refdecode.validation",
           "refdecode.generation_config", "refdecode.generation_rules", "refdecode.recorder")
#: Top-level packages that hold a decoding implementation.
FORBIDDEN_PACKAGES = ("transformers", "torch")
#: Audit events that start a process, load native code by hand, or talk to the network.
DENIED_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                 "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function",
                 "socket.connect", "socket.bind", "socket.getaddrinfo", "os.link", "os.symlink", "shutil.copyfile")


def blocked(name: str) -> bool:
    """Is module ``name`` out of bounds for a submission?"""
    top = name.split(".")[0]
    if top in FORBIDDEN_PACKAGES:
        return True
    if top != "refdecode" or name == "refdecode":
        return False
    return not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED)


class Blocker(importlib.abc.MetaPathFinder):
    """Refuses the blocked modules with a message that says why, and records the attempt in ``refusals``."""

    def __init__(self, refusals: list[str]):
        self.refusals = refusals

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 -- importlib's protocol
        if blocked(name):
            self.refusals.append(f"importing {name}")
            raise ImportError(f"{name} is not available in the graded part of the assignment (write it yourself)")
        return None


def bare_refdecode() -> types.ModuleType:
    """``refdecode`` as a namespace for its submodules, without running its ``__init__``; it offers ``GPT2``,
    ``softmax`` and ``log_softmax`` by name, as the real package does."""
    spec = importlib.util.find_spec("refdecode")          # finds, does not execute
    package = types.ModuleType("refdecode", "refdecode (the model, the tokenizer and numerics only)")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["refdecode"] = package
    from refdecode.model.modeling import GPT2
    from refdecode.numerics import log_softmax, softmax
    package.GPT2, package.softmax, package.log_softmax = GPT2, softmax, log_softmax
    return package


class Walls:
    """The audit hook's rules: readable paths, refused events; records every refusal."""

    def __init__(self, repo: Path, package: Path, submission: Path, denied: list[Path]):
        self.repo, self.package, self.submission, self.denied = repo, package, submission, denied
        self.python = {Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
        self.allowed_files = [package / name.removeprefix("refdecode.").replace(".", "/") for name in ALLOWED]
        self.refusals: list[str] = []

    def readable(self, path: str) -> bool:
        real = Path(os.path.realpath(path))
        if real.is_relative_to(self.submission):
            return True
        if ".git" in real.parts or any(real.is_relative_to(d) for d in self.denied):   # history, the hidden cases
            return False
        if real.is_relative_to(self.package):
            stem = real.parent / real.name.split(".")[0]                # numerics.py, __pycache__/numerics.cpython-...
            if real.parent.name == "__pycache__":
                stem = real.parent.parent / real.name.split(".")[0]
            return any(stem == f or stem.is_relative_to(f) for f in self.allowed_files)
        if any(real.is_relative_to(prefix) for prefix in self.python):       # the interpreter and its packages
            return True
        return not real.is_relative_to(self.repo)

    def refuse(self, what: str) -> None:
        self.refusals.append(what)
        raise PermissionError(f"not allowed in the graded part: {what}")

    def __call__(self, event: str, args: tuple) -> None:
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.fsdecode(args[0])
            if not self.readable(path):
                self.refuse(f"opening {os.path.relpath(os.path.realpath(path), self.repo)}")
        elif event == "import" and blocked(str(args[0])):
            self.refuse(f"importing {args[0]}")
        elif event in DENIED_EVENTS or event.startswith("os.exec") or event.startswith("os.spawn"):
            self.refuse(event)


def check_function(fn: object, name: str, submission: Path) -> str | None:
    """Why ``fn`` may not be graded, or None: a plain function whose code lives in the submission."""
    if not isinstance(fn, types.FunctionType):
        return f"{name} must be a function defined with def in your file (it is a {type(fn).__name__})"
    if str(getattr(fn, "__module__", "")).split(".")[0] in ("refdecode", *FORBIDDEN_PACKAGES):
        return f"{name} is {fn.__module__}'s function, not yours"
    code_file = Path(os.path.realpath(fn.__code__.co_filename))
    if not code_file.is_relative_to(submission):
        return f"{name} is defined outside your submission folder"
    return None


def main() -> None:
    submission, module_name, function_name = Path(os.path.realpath(sys.argv[1])), sys.argv[2], sys.argv[3]
    denied = [Path(os.path.realpath(d)) for d in sys.argv[4:]]
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                                           # the submission's prints go to stderr
    import numpy as np

    import task
    cases = task.decode(json.loads(sys.stdin.read()))
    sys.stdin.close()
    package = Path(bare_refdecode().__path__[0]).resolve()
    model = task.harness.NextTokenModel.load() if module_name == "decoding" else None
    walls = Walls(task.ROOT.resolve(), package, submission, denied)
    sys.meta_path.insert(0, Blocker(walls.refusals))
    sys.addaudithook(walls)
    sys.path.insert(0, str(submission))

    def send(message: dict) -> None:
        protocol.write(json.dumps(message) + "\n")

    try:
        spec = importlib.util.spec_from_file_location(f"submission_{module_name}", submission / f"{module_name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        fn = getattr(module, function_name)
    except BaseException as err:  # noqa: BLE001 -- anything the submission does on import is its problem
        send({"refused": f"{module_name}.py could not be loaded: {type(err).__name__}: {err}"})
        return
    problem = check_function(fn, function_name, submission)
    if problem:
        send({"refused": problem})
        return
    for i, args in enumerate(cases):
        args = [model, *args] if model is not None else args
        try:
            with np.errstate(all="ignore"):
                answer = fn(*args)
        except BaseException as err:  # noqa: BLE001 -- a student's bug is a failed case
            send({"case": i, "error": f"raised {type(err).__name__}: {str(err)[:200]}"})
        else:
            try:
                send({"case": i, "answer": task.encode(answer)})
            except (TypeError, ValueError):
                send({"case": i, "error": f"returned a {type(answer).__name__}, not arrays or numbers"})
        if walls.refusals:
            break
    if walls.refusals:
        send({"refused": walls.refusals[0]})


if __name__ == "__main__":
    main()
