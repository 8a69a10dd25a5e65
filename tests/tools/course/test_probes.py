"""The grader against hostile submissions: each probe is what a student who wants a score they did not earn
would try, and its score is asserted (tools/course/sandbox.py, docs/course/assignment.md "Threat model").

A probe that steals the answers then uses them: if the theft worked, the function would score full marks, so a
probe's 0 shows the wall held, not that the probe's code was broken. Every probe replaces one function of the
reference submission; the functions it does not touch keep their full marks (asserted where the probe attacks
the grader itself: killing it, flooding it, forging its messages). Each probe starts sandboxes: slow.
"""

from __future__ import annotations

import importlib.util
import json
import py_compile
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from leak_checks import answer_numbers, numbers_in

COURSE = ROOT / "tools" / "course"
sys.path.insert(0, str(COURSE))
import grade  # noqa: E402
import task  # noqa: E402

HIDDEN = COURSE / "hidden" / "cases.json"
REFERENCE = ROOT / "tutorials" / "solutions" / "submission"
STARTERS = ROOT / "tutorials" / "assignment"
pytestmark = pytest.mark.slow

#: Appended before a probe: finds this call's answer in the text of cases.json (what a theft would do with it),
#: and a wrong answer to fall back on (never right: every score becomes 7).
STEAL = f'''
import json as _json
import numpy as _np
HIDDEN = {str(HIDDEN)!r}
ROOT = {str(ROOT)!r}


def _answer(text, scores, top_k):
    for case in _json.loads(text)["cases"]["top_k_filter"]:
        given, expected = case["args"], case["expected"]
        if _np.array_equal(_np.array(given[0]["array"], _np.float32), scores) and given[1] == top_k:
            return _np.array(expected["array"], dtype=expected["dtype"])
    return _wrong(scores)


def _wrong(scores):
    return _np.full_like(scores, 7.0)
'''


@dataclass(frozen=True)
class Probe:
    name: str
    function: str       # the function the probe replaces
    code: str           # appended to the file that defines it (the later def wins)
    score: float        # what the probe must score
    also: tuple = ()    # other functions graded with it: the reference's, which keep full marks
    helpers: tuple = () # other functions graded with it that the probe replaces too: they score 0
    files: tuple = ()   # (name, text) written into the submission folder


def _steal(name: str, body: str) -> Probe:
    """A probe of top_k_filter that tries ``body`` (which must return the text of cases.json)."""
    code = "def _grab():\n" + textwrap.indent(textwrap.dedent(body), "    ") + """

def top_k_filter(scores, top_k):
    try:
        return _answer(_grab(), scores, top_k)
    except BaseException:
        return _wrong(scores)
"""
    return Probe(name, "top_k_filter", STEAL + code, 0)


PROBES = [
    # ---- file system: the hidden cases and refdecode are not in the sandbox, by any path
    _steal("absolute path", "return open(HIDDEN).read()"),
    _steal("relative path", "import os\nreturn open(os.path.relpath(HIDDEN, os.getcwd())).read()"),
    _steal("dir_fd", "import os\nfd = os.open('/', os.O_RDONLY)\n"
                     "return os.read(os.open(HIDDEN.lstrip('/'), os.O_RDONLY, dir_fd=fd), 10**8).decode()"),
    _steal("a symlink made in /tmp", "import os\nos.symlink(HIDDEN, '/tmp/c')\nreturn open('/tmp/c').read()"),
    _steal("/proc/1/root", "return open('/proc/1/root' + HIDDEN).read()"),
    _steal("/proc/<parent>/mem and environ", """
        import os
        for pid in [os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:
            for leaf in ('environ', 'cmdline', 'mem'):
                try:
                    data = open(f'/proc/{pid}/{leaf}', 'rb').read(10**7)
                except OSError:
                    continue
                if b'"expected"' in data:
                    return data.decode(errors='ignore')
        raise OSError('nothing')
        """),
    _steal("the grader's open files in /proc/*/fd", """
        import os
        for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
            for fd in os.listdir(f'/proc/{pid}/fd'):
                try:
                    text = open(f'/proc/{pid}/fd/{fd}').read()
                except OSError:
                    continue
                if '"expected"' in text:
                    return text
        raise OSError('nothing')
        """),
    _steal("refdecode's source, to compute the answer", """
        import importlib
        warp = importlib.import_module('refdecode.processors.logits_warp')
        raise OSError(str(warp))
        """),
    # ---- imports and introspection: nothing in the process holds an answer or refdecode
    _steal("gc: every object of the process", """
        import gc
        for obj in gc.get_objects():
            if isinstance(obj, dict) and 'expected' in obj:
                return _json.dumps({'cases': {'top_k_filter': [obj]}})
        raise OSError('nothing')
        """),
    _steal("frames: the caller's locals", """
        import sys
        frame = sys._getframe()
        while frame:
            for value in frame.f_locals.values():
                if isinstance(value, (list, dict)) and 'expected' in repr(value)[:10**6]:
                    return repr(value)
            frame = frame.f_back
        raise OSError('nothing')
        """),
    _steal("meta_path and audit hooks removed, then refdecode imported", """
        import sys
        sys.meta_path[:] = [f for f in sys.meta_path if 'Path' in type(f).__name__]
        sys.audit = lambda *a: None
        import refdecode
        raise OSError(str(refdecode))
        """),
    # ---- processes: another process has the same walls
    _steal("subprocess: another Python", """
        import subprocess, sys
        return subprocess.run([sys.executable, '-c', f'print(open({HIDDEN!r}).read())'], capture_output=True,
                              text=True, check=True).stdout
        """),
    _steal("_posixsubprocess.fork_exec, no audit event", """
        import _posixsubprocess, os, sys
        r, w = os.pipe()
        args = [sys.executable.encode(), b'-c', f'print(open({HIDDEN!r}).read())'.encode()]
        _posixsubprocess.fork_exec(args, [args[0]], True, (), None, None, -1, -1, -1, w, -1, -1, r, w, True, False,
                                   0, None, None, None, -1, None, False)
        os.close(w)
        data = b''.join(iter(lambda: os.read(r, 65536), b''))
        if not data:
            raise OSError('nothing')
        return data.decode()
        """),
    _steal("os.fork, then read in the child", """
        import os
        r, w = os.pipe()
        if os.fork() == 0:
            try:
                os.write(w, open(HIDDEN, 'rb').read())
            finally:
                os._exit(0)
        os.close(w)
        data = b''.join(iter(lambda: os.read(r, 65536), b''))
        if not data:
            raise OSError('nothing')
        return data.decode()
        """),
    _steal("a socket to the outside", """
        import socket
        socket.create_connection(('pypi.org', 443), timeout=3)
        raise OSError('connected')
        """),
    # ---- persistence: what one sandbox writes, a later one does not see
    Probe("a .pth, a sitecustomize and a module written for the next sandbox", "llama_top_p", STEAL + """
_reference_llama_top_p = llama_top_p


def top_k_filter(scores, top_k):
    import os, sys
    for folder in sys.path + ['/tmp', '/submission', '/sandbox/site', os.path.expanduser('~')]:
        for name, text in (('zz_evil.pth', 'import zz_evil\\n'), ('zz_evil.py', 'RAN = True\\n'),
                           ('sitecustomize.py', 'import zz_evil\\n')):
            try:
                with open(os.path.join(folder, name), 'w') as f:
                    f.write(text)
            except OSError:
                pass
    return _wrong(scores)


def llama_top_p(probs, p):
    import os, sys
    if 'zz_evil' in sys.modules or any(os.path.exists(os.path.join(d, 'zz_evil.py'))
                                       for d in sys.path + ['/tmp', os.path.expanduser('~')]):
        return _reference_llama_top_p(probs, p)
    return _wrong(probs)
""", 0, helpers=("top_k_filter",)),
    # ---- leaks: nothing the submission prints, raises or chooses reaches the report
    Probe("prints every input", "top_k_filter", """
def top_k_filter(scores, top_k):
    import os, sys
    print('INPUT', scores.tolist(), top_k)
    print('INPUT', scores.tolist(), top_k, file=sys.stderr)
    for fd in range(1, 30):
        try:
            os.write(fd, ('INPUT %r\\n' % scores.tolist()).encode())
        except OSError:
            pass
    return scores * 0.5
""", 0),
    Probe("raises with the inputs in the message", "top_k_filter", """
def top_k_filter(scores, top_k):
    raise ValueError(f'INPUT {scores.tolist()} {top_k}')
""", 0),
    Probe("an exception class named after the input", "top_k_filter", """
def top_k_filter(scores, top_k):
    name = 'E' + '_'.join(str(int(abs(v) * 1000)) for v in scores.reshape(-1)[:8])
    raise type(name, (Exception,), {})()
""", 0),
    Probe("import-time exception with stdin's hidden inputs", "top_k_filter", "", 0, files=(("processors.py", """
raise RuntimeError(os.read(0, 10**6).decode(errors='ignore'))
"""),)),
    Probe("the exit status and the answer's shape as channels", "top_k_filter", """
def top_k_filter(scores, top_k):
    if top_k == 2:
        import numpy as np
        return np.zeros((int(abs(scores[0, 0]) * 100) + 3, 1))
    import os
    os._exit(int(abs(scores[0, 0]) * 100) % 256)
""", 0),
    # ---- the protocol: what the submission writes on the grader's pipe
    Probe("deeply nested JSON on the protocol pipe", "top_k_filter", """
def top_k_filter(scores, top_k):
    import os
    for fd in range(3, 30):
        try:
            os.write(fd, b'[' * 200000 + b']' * 200000 + b'\\n')
        except OSError:
            pass
    return scores
""", 0, also=("repetition_penalty", "llama_top_p")),
    Probe("a huge line on the protocol pipe", "top_k_filter", """
def top_k_filter(scores, top_k):
    import os
    for fd in range(3, 30):
        try:
            os.write(fd, b'"' + b'1' * (8 * 2**20))
        except OSError:
            pass
    return scores
""", 0, also=("llama_top_p",)),
    Probe("forged messages: a refusal that carries the input, an unknown key", "top_k_filter", """
def top_k_filter(scores, top_k):
    import json, os
    for fd in range(3, 30):
        try:
            os.write(fd, (json.dumps({'refused': 'load', 'kind': f'INPUT {scores.tolist()}'}) + '\\n').encode())
            os.write(fd, (json.dumps({'case': 0, 'answer': [], 'score': 5}) + '\\n').encode())
        except OSError:
            pass
    return scores
""", 0),
    # ---- processes that attack the grader
    Probe("kills its parent and every process it can", "top_k_filter", """
def top_k_filter(scores, top_k):
    import os, signal
    for pid in (os.getppid(), 1, -1):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return _wrong(scores)
""", 0, also=("repetition_penalty", "llama_top_p")),
    # ---- resources
    Probe("10 GB of memory", "top_k_filter", """
def top_k_filter(scores, top_k):
    return bytearray(10 * 2**30)
""", 0),
    Probe("a fork bomb and 10,000 threads", "top_k_filter", """
def top_k_filter(scores, top_k):
    import os, threading, time
    for _ in range(10000):
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    while True:
        os.fork()
""", 0, also=("llama_top_p",)),
    Probe("fills the disk", "top_k_filter", """
def top_k_filter(scores, top_k):
    with open('/tmp/big', 'wb') as f:
        for _ in range(1000):
            f.write(b'0' * 2**20)
    return _wrong(scores)
""", 0),
    # ---- stale bytecode: a pyc of the reference beside the starter's source
    Probe("an unchecked-hash .pyc of the reference beside the starter", "top_k_filter", "", 0,
          also=("repetition_penalty", "no_repeat_ngram_banned", "llama_top_p"), files=(("STARTER+PYC", ""),)),
    # ---- degenerate answers
    Probe("identity", "top_k_filter", "def top_k_filter(scores, top_k):\n    return scores\n", 0),
    Probe("identity (problem 1a)", "repetition_penalty",
          "def repetition_penalty(input_ids, scores, penalty):\n    return scores\n", 0),
    Probe("identity (problem 1d)", "llama_top_p", "def llama_top_p(probs, p):\n    return probs\n", 0),
    Probe("[] (problem 1b)", "no_repeat_ngram_banned", "def no_repeat_ngram_banned(row, n):\n    return []\n", 0),
    Probe("the prompt plus eos (problem 2)", "greedy", """
def greedy(model, input_ids, max_new_tokens, eos_token_id=None):
    import numpy as np
    return np.concatenate([input_ids, np.full((len(input_ids), 1), eos_token_id or 0)], axis=1)
""", 0),
]


def _submission(tmp_path: Path, probe: Probe) -> Path:
    sub = tmp_path / "submission"
    sub.mkdir()
    for name in ("processors.py", "decoding.py"):
        shutil.copy(REFERENCE / name, sub / name)
    for name, text in probe.files:
        if name == "STARTER+PYC":      # the starter's source, the reference's bytecode where Python looks first
            shutil.copy(STARTERS / "processors.py", sub / "processors.py")
            pyc = importlib.util.cache_from_source(str(sub / "processors.py"))
            py_compile.compile(str(REFERENCE / "processors.py"), cfile=pyc, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        else:
            (sub / name).write_text(textwrap.dedent(text))
    if probe.code:
        test = next(t for t in task.TESTS if t.function == probe.function)
        with open(sub / f"{test.module}.py", "a") as f:
            f.write("\n\n" + probe.code)
    return sub


def _by_function(results: dict) -> dict[str, dict]:
    return {t.function: entry for t in task.TESTS for entry in results["tests"] if entry["name"] == t.name}


def _hidden_numbers(functions: list[str]) -> tuple[set[str], set[str]]:
    """The numbers of these functions' hidden inputs and answers, and those their labels show anyway."""
    cases = task.decode(json.loads(HIDDEN.read_text())["cases"])
    found = [c for f in functions for c in cases[f]]
    secret = set().union(*(answer_numbers(list(c["args"])) | answer_numbers(c["expected"]) for c in found))
    return secret, numbers_in(" ".join(c["label"] for c in found))


def test_there_are_at_least_25_probes_with_distinct_names():
    assert len(PROBES) >= 25 and len({p.name for p in PROBES}) == len(PROBES)


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_a_hostile_probe_scores_what_it_should_and_learns_nothing(probe, tmp_path):
    graded = [probe.function, *probe.also, *probe.helpers]
    results = _by_function(grade.grade(_submission(tmp_path, probe), timeout=30, memory_mb=1024, only=graded))
    assert results[probe.function]["score"] == probe.score, results[probe.function]["output"]
    starters = any(name == "STARTER+PYC" for name, _ in probe.files)
    for name in probe.also:                         # the grader survived the probe and graded the rest
        want = 0 if starters else results[name]["max_score"]
        assert results[name]["score"] == want, results[name]["output"]
    for name in probe.helpers:
        assert results[name]["score"] == 0, results[name]["output"]
    report = "\n".join(entry["output"] for entry in results.values())
    secret, labelled = _hidden_numbers(graded)
    assert len(secret) > 20 or graded == ["no_repeat_ngram_banned"]          # (its ids are all small)
    assert not (numbers_in(report) - labelled) & secret, report
    assert "INPUT" not in report, report


def test_the_pyc_probe_would_have_worked_without_the_copy(tmp_path):
    """The bytecode probe is a real attack: Python itself would run the reference's .pyc beside the starter."""
    probe = next(p for p in PROBES if p.name.startswith("an unchecked-hash .pyc"))
    sub = _submission(tmp_path, probe)
    spec = importlib.util.spec_from_file_location("probe_processors", sub / "processors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    scores = np.array([[1.0, 3.0, 2.0]], np.float32)
    assert module.top_k_filter(scores, 1).tolist() == [[-np.inf, 3.0, -np.inf]]   # the reference ran


def test_a_detached_process_neither_outlives_the_grader_nor_rewrites_its_results(tmp_path):
    """It forks twice, detaches, and writes results.json for 20 s; it also prints a forged total. The grader's
    results are its own, its output holds no forged line, and no process of the sandbox is left."""
    out = tmp_path / "results.json"
    code = f"""
def top_k_filter(scores, top_k):
    import os, time
    print('total: 100/100 (problem 5 pending: graded by hand); wrote forged')
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for _ in range(200):
                for path in ({str(out)!r}, '/tmp/results.json', 'results.json'):
                    try:
                        with open(path, 'w') as f:
                            f.write('{{"score": 100, "tests": []}}')
                    except OSError:
                        pass
                time.sleep(0.1)
        os._exit(0)
    return scores
"""
    sub = _submission(tmp_path, Probe("detached", "top_k_filter", code, 0))
    proc = subprocess.run([sys.executable, str(COURSE / "grade.py"), str(sub), "--out", str(out), "--only",
                           "top_k_filter", "llama_top_p"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    written = out.read_text()
    time.sleep(3)
    assert out.read_text() == written and json.loads(written)["score"] == 5
    assert "forged" not in proc.stdout and "total: 5/30 " in proc.stdout, proc.stdout
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).find("/sandbox/site") >= 0]
    assert left == []


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="ignore")
    except OSError:
        return ""
