"""tools/course/grade.py: the reference submission gets full marks, the starters 0, refdecode's decoding is
not there to call, a hang or a 10 GB allocation is stopped and scored 0, and nothing the grader prints is an
expected answer. The hostile probes are tests/tools/course/test_probes.py.

Each graded function runs in a bubblewrap sandbox (tools/course/sandbox.py); these tests start many of them, so
they are marked slow. The hidden cases are the committed ones (tools/course/make_hidden.py --seed 0).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT
from leak_checks import answer_numbers, numbers_in

COURSE = ROOT / "tools" / "course"
sys.path.insert(0, str(COURSE))
import grade  # noqa: E402
import sandbox  # noqa: E402
import task  # noqa: E402

REFERENCE = ROOT / "tutorials" / "solutions" / "submission"
STARTERS = ROOT / "tutorials" / "assignment"
AUTOGRADED = sum(t.points for t in task.TESTS)
pytestmark = pytest.mark.slow


def _submission(tmp_path: Path, **replace: str) -> Path:
    """A copy of the reference submission, with functions replaced: ``name="def name(...): ..."`` is appended to
    the file that defines ``name`` (the later def wins), or a whole file given as ``processors_py=...``."""
    sub = tmp_path / "submission"
    sub.mkdir()
    for name in ("processors.py", "decoding.py"):
        shutil.copy(REFERENCE / name, sub / name)
    for name, code in replace.items():
        if name.endswith("_py"):
            (sub / f"{name[:-3]}.py").write_text(textwrap.dedent(code))
            continue
        test = next(t for t in task.TESTS if t.function == name)
        with open(sub / f"{test.module}.py", "a") as f:
            f.write("\n\n" + textwrap.dedent(code))
    return sub


def _by_function(results: dict) -> dict[str, dict]:
    """function name -> its results.json entry."""
    return {t.function: entry for t in task.TESTS for entry in results["tests"] if entry["name"] == t.name}


def test_the_reference_submission_gets_full_marks_and_results_json(tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(COURSE / "grade.py"), str(REFERENCE), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())
    assert results["score"] == AUTOGRADED == 80
    for t, entry in zip(task.TESTS, results["tests"]):
        assert entry["score"] == entry["max_score"] == t.points and entry["status"] == "passed", entry
    manual = results["tests"][-1]                     # problem 5: graded by hand, listed as pending
    assert manual["score"] == 0 and manual["max_score"] == task.MANUAL[1] and "manual" in manual["output"]
    assert sum(t["max_score"] for t in results["tests"]) == 100
    for entry in results["tests"]:                   # Gradescope's fields
        assert set(entry) >= {"name", "score", "max_score", "output", "visibility"}
    assert f"total: 80/100" in proc.stdout and results["output"] == ""        # nothing flagged


def test_the_starters_get_zero():
    results = grade.grade(STARTERS)
    assert results["score"] == 0
    assert all("not attempted yet" in t["output"] for t in results["tests"][:-1]), results


def test_refdecodes_decoding_is_not_in_the_sandbox(tmp_path):
    """Importing it through importlib, removing the import machinery's finders first, reading refdecode's source
    to exec it, spawning a python that imports it: refdecode's decoding does not exist in the sandbox, so each
    scores 0 for that function; the others keep theirs."""
    sub = _submission(
        tmp_path,
        top_k_filter="""
            def top_k_filter(scores, top_k):
                import importlib
                return importlib.import_module("refdecode.processors.logits_warp").top_k_warp(scores, top_k)
            """,
        greedy="""
            def greedy(model, input_ids, max_new_tokens, eos_token_id=None):
                import sys
                sys.meta_path[:] = [f for f in sys.meta_path if "Path" in type(f).__name__]
                from refdecode.decoding.greedy import greedy_search
                return greedy_search(model, input_ids, max_length=input_ids.shape[1] + max_new_tokens)
            """,
        sample=f"""
            def sample(model, input_ids, max_new_tokens, temperature, top_k, top_p, uniforms, eos_token_id=None):
                source = open({str(ROOT / "refdecode" / "decoding" / "sampling.py")!r}).read()
                namespace = {{}}
                exec(compile(source, "copied.py", "exec"), namespace)
                return namespace["sample"](model, input_ids)
            """,
        beam_search="""
            def beam_search(model, input_ids, max_new_tokens, num_beams, length_penalty, early_stopping,
                            eos_token_id=None):
                import subprocess, sys
                subprocess.run([sys.executable, "-c", "import refdecode.decoding"], check=True)
                return None
            """)
    results = _by_function(grade.grade(sub, timeout=120))
    assert {name: entry["score"] for name, entry in results.items()} == {
        "repetition_penalty": 5, "no_repeat_ngram_banned": 5, "top_k_filter": 0, "llama_top_p": 5,
        "greedy": 0, "sample": 0, "beam_search": 0}
    assert "raised ModuleNotFoundError" in results["top_k_filter"]["output"]
    assert "raised ModuleNotFoundError" in results["greedy"]["output"]
    assert "raised FileNotFoundError" in results["sample"]["output"]
    assert "raised CalledProcessError" in results["beam_search"]["output"]


def test_softmax_and_log_softmax_are_there_and_nothing_else_of_refdecode(tmp_path):
    """The handout allows ``from refdecode import log_softmax, softmax``: the sandbox's refdecode has those two
    (refdecode's own text) and nothing else: not the model, not the processors."""
    sub = _submission(tmp_path, sample="""
        from refdecode import log_softmax, softmax
        """, llama_top_p="""
        from refdecode import GPT2
        """)
    result = _by_function(grade.grade(sub, timeout=120, only=["sample", "beam_search", "llama_top_p"]))
    assert result["sample"]["score"] == 20 and result["beam_search"]["score"] == 30, result
    assert result["llama_top_p"]["score"] == 0
    assert "processors.py could not be loaded: ImportError" in result["llama_top_p"]["output"]


def test_aliases_and_foreign_functions_are_refused(tmp_path):
    """An alias of refdecode's function makes the file fail to load (the sandbox's refdecode has only softmax
    and log_softmax); a function that is not a def, or is defined outside the submission, is refused."""
    sub = _submission(tmp_path, processors_py="from refdecode import llama_top_p_probs as llama_top_p\n",
                      greedy="import numpy\ngreedy = numpy.argmax\n",
                      sample="import functools\nsample = functools.partial(sample)\n",
                      beam_search="import json\nbeam_search = json.dumps\n")
    results = _by_function(grade.grade(sub, timeout=120, only=["llama_top_p", "greedy", "sample", "beam_search"]))
    assert results["llama_top_p"]["score"] == 0 and "could not be loaded" in results["llama_top_p"]["output"]
    assert results["greedy"]["score"] == 0 and "must be a function defined with def" in results["greedy"]["output"]
    assert results["sample"]["score"] == 0 and "(it is a partial)" in results["sample"]["output"]
    assert results["beam_search"]["score"] == 0 and \
        "beam_search is defined outside your submission folder" in results["beam_search"]["output"]


def test_only_the_submissions_py_files_are_copied_in(tmp_path):
    """A module the submission imports from its own folder works; a link, a .pth and a __pycache__ stay out."""
    sub = _submission(tmp_path, greedy="""
        from helper_module import greedy
        """)
    (sub / "helper_module.py").write_text((REFERENCE / "decoding.py").read_text())
    (sub / "linked.py").symlink_to(COURSE / "hidden" / "cases.json")
    (sub / "evil.pth").write_text("import os\n")
    result = _by_function(grade.grade(sub, timeout=120, only=["greedy"]))["greedy"]
    assert result["score"] == 10, result
    copied = tmp_path / "copied"
    copied.mkdir()
    assert sandbox.copy_submission(sub, copied) == 3
    assert sorted(p.name for p in copied.iterdir()) == ["decoding.py", "helper_module.py", "processors.py"]


def test_the_hidden_cases_cannot_be_read_from_the_submission(tmp_path):
    sub = _submission(tmp_path, greedy=f"""
        def greedy(model, input_ids, max_new_tokens, eos_token_id=None):
            import json
            json.load(open({str(COURSE / 'hidden' / 'cases.json')!r}))
            return input_ids
        """)
    result = _by_function(grade.grade(sub, timeout=120, only=["greedy"]))["greedy"]
    assert result["score"] == 0 and "raised FileNotFoundError" in result["output"]


def test_a_hang_and_a_10_gb_allocation_are_stopped_and_scored_zero(tmp_path):
    sub = _submission(tmp_path,
                      greedy="def greedy(model, input_ids, max_new_tokens, eos_token_id=None):\n    while True:\n"
                             "        pass\n",
                      repetition_penalty="def repetition_penalty(input_ids, scores, penalty):\n"
                                         "    return bytearray(10 * 2**30)\n")
    results = _by_function(grade.grade(sub, timeout=8, memory_mb=1024, only=["greedy", "repetition_penalty"]))
    assert results["greedy"]["score"] == 0 and "over the time limit" in results["greedy"]["output"]
    assert results["repetition_penalty"]["score"] == 0 and "MemoryError" in results["repetition_penalty"]["output"]


def test_a_submission_that_closes_its_pipes_and_sleeps_is_stopped_at_the_time_limit(tmp_path):
    """End of file on the protocol pipe is not the end of the child: the grader still waits only until the
    deadline, then kills the child's session (a sleep costs no CPU, so the CPU limit would never fire)."""
    sub = _submission(tmp_path, greedy="""
                        def greedy(model, input_ids, max_new_tokens, eos_token_id=None):
                            import os, time
                            for fd in range(1, 20):
                                try:
                                    os.close(fd)
                                except OSError:
                                    pass
                            time.sleep(10**6)
                        """)
    started = time.monotonic()
    results = _by_function(grade.grade(sub, timeout=4, memory_mb=1024, only=["greedy"]))
    assert time.monotonic() - started < 60
    assert results["greedy"]["score"] == 0


def test_no_expected_value_is_printed_or_written(tmp_path):
    """Every function wrong on every case (off by a little, or other tokens): the report and results.json say
    where answers differ, and hold no number of the hidden answers that is not in the case's label."""
    sub = _submission(tmp_path,
                      repetition_penalty="def repetition_penalty(input_ids, scores, penalty):\n"
                                         "    return scores + 0.25\n",
                      top_k_filter="def top_k_filter(scores, top_k):\n    return scores * 1.5\n",
                      llama_top_p="def llama_top_p(probs, p):\n    return probs[:, ::-1].copy()\n",
                      no_repeat_ngram_banned="def no_repeat_ngram_banned(row, n):\n    return [999, 1234]\n",
                      greedy="""
                        def greedy(model, input_ids, max_new_tokens, eos_token_id=None):
                            import numpy as np
                            ids = np.asarray(input_ids)
                            for _ in range(max_new_tokens):
                                ids = np.concatenate([ids, model(ids).argmin(axis=-1)[:, None]], axis=1)
                            return ids
                        """,
                      beam_search="""
                        _reference_beam_search = beam_search
                        def beam_search(model, input_ids, max_new_tokens, num_beams, length_penalty, early_stopping,
                                        eos_token_id=None):
                            seqs, scores = _reference_beam_search(model, input_ids, max_new_tokens, num_beams,
                                                                  length_penalty, early_stopping, eos_token_id)
                            return seqs, scores * 0.5
                        """)
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(COURSE / "grade.py"), str(sub), "--out", str(out), "--only",
                           "repetition_penalty", "no_repeat_ngram_banned", "top_k_filter", "llama_top_p", "greedy",
                           "beam_search"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())
    assert results["score"] == 0, results
    cases = task.decode(json.loads((COURSE / "hidden" / "cases.json").read_text())["cases"])
    labels = " ".join(c["label"] for found in cases.values() for c in found)
    answers = set().union(*(answer_numbers(c["expected"], above=99) for found in cases.values() for c in found))
    shown = (numbers_in(proc.stdout) | numbers_in(out.read_text())) - numbers_in(labels)
    assert len(answers) > 100 and not shown & answers, shown & answers
    assert "sequence_scores differ" in proc.stdout and "token ids differ at step" in proc.stdout


def test_source_copied_from_refdecode_is_flagged_not_zeroed(tmp_path):
    """Copied text is the student's own code to Python, so it is a plagiarism question: flagged for a person."""
    import inspect

    from refdecode.processors.logits_warp import top_p_warp
    sub = _submission(tmp_path)
    with open(sub / "decoding.py", "a") as f:
        f.write("\n\n" + inspect.getsource(top_p_warp).replace("def top_p_warp", "def my_top_p"))
    results = grade.grade(sub, timeout=120, only=["top_k_filter"])
    assert results["tests"][0]["score"] == 5
    flags = results["output"].splitlines()[1:]
    assert len(flags) == 1 and flags[0].strip().startswith(
        "decoding.py:my_top_p ~ refdecode/processors/logits_warp.py:top_p_warp ("), flags
