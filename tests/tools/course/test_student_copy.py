"""tools/course/student_copy.py: the students' copy has the tutorials, the exercises, the handout and the
build-the-loop starter, and no solution, no hidden case, no grader and no line of a solution's body."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

COURSE = ROOT / "tools" / "course"
SOLUTIONS = ROOT / "tutorials" / "solutions"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student") / "course"
    proc = subprocess.run([sys.executable, str(COURSE / "student_copy.py"), str(out)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _solution_bodies() -> list[str]:
    """Each solution function's body without its docstring, as written (dedented), when it is 2+ lines long."""
    bodies = []
    for path in sorted(SOLUTIONS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("check_all"):
                body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
                lines = text.splitlines()[body[0].lineno - 1:node.end_lineno] if body else []
                code = [line.strip() for line in lines if line.strip()]
                if len(code) >= 2:
                    bodies.append("\n".join(code))
    return bodies


def test_the_copy_has_the_course_and_the_starter(copy):
    for rel in ("README.md", "pyproject.toml", "refdecode/__init__.py", "models/tiny-shakespeare/model.safetensors",
                "tutorials/04_sampling.py", "tutorials/_labs.py", "tutorials/assignment/decoding.py",
                "tutorials/assignment/processors.py", "tutorials/assignment/selfcheck.py", "docs/course/assignment.md"):
        assert (copy / rel).is_file(), rel
    starter = (copy / "tutorials" / "assignment" / "decoding.py").read_text()
    for name in ("def greedy(", "def sample(", "def beam_search("):
        assert name in starter
    assert starter.count("raise NotImplementedError") >= 5


def test_no_solution_no_hidden_case_no_grader(copy):
    rel = [p.relative_to(copy).as_posix() for p in _files(copy)]
    assert not [r for r in rel if r.startswith(("tutorials/solutions", "tools/", "tests/"))]
    assert not [r for r in rel if "hidden" in r or r.endswith("cases.json") or "__pycache__" in r]
    handout = (copy / "docs" / "course" / "assignment.md").read_text()
    assert "For instructors" not in handout and "make_hidden" not in handout and "## Problem 4" in handout


def test_no_line_of_a_solution_body_is_in_the_copy(copy):
    bodies = _solution_bodies()
    assert len(bodies) > 15
    texts = {p: "\n".join(line.strip() for line in p.read_text(encoding="utf-8", errors="ignore").splitlines()
                          if line.strip())
             for p in _files(copy) if p.suffix in (".py", ".md", ".txt", ".json", ".cfg", ".toml", ".yml")}
    for body in bodies:
        found = [p.relative_to(copy).as_posix() for p, text in texts.items() if body in text]
        assert not found, (body, found)


def test_the_copys_checkers_run_and_show_no_answer(copy):
    """The tutorials' checker and the starter's selfcheck run in the copy (stubs: nothing attempted yet)."""
    proc = subprocess.run([sys.executable, str(copy / "tutorials" / "assignment" / "selfcheck.py")],
                          capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(copy), "PATH": ""})
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("not attempted yet") == 7, proc.stdout
    assert "expected" not in proc.stdout


def test_out_must_be_new_and_outside_the_repository(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    for out in (tmp_path / "full", ROOT / "student-copy"):
        proc = subprocess.run([sys.executable, str(COURSE / "student_copy.py"), str(out)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and "`OUT` must be" in proc.stderr
    assert not (ROOT / "student-copy").exists()


def test_the_grader_gives_the_copys_blanks_zero(copy):
    sys.path.insert(0, str(COURSE))
    import grade
    results = grade.grade(copy / "tutorials" / "assignment")
    assert results["score"] == 0 and sum(t["max_score"] for t in results["tests"]) == 100
    assert all("not attempted yet" in t["output"] for t in results["tests"][:-1])


def test_an_untracked_file_and_a_link_are_not_copied(tmp_path):
    """A scratch solution left in tutorials/ (not in git) and a link that points at the hidden cases stay out."""
    scratch, link = ROOT / "tutorials" / "zz_my_scratch_solution.py", ROOT / "tutorials" / "zz_link_to_hidden"
    try:
        scratch.write_text("ANSWER = 42\n")
        link.symlink_to(COURSE / "hidden")
        out = tmp_path / "copy"
        proc = subprocess.run([sys.executable, str(COURSE / "student_copy.py"), str(out)], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert (out / "tutorials").is_dir()
        assert not (out / "tutorials" / scratch.name).exists() and not (out / "tutorials" / link.name).exists()
    finally:
        scratch.unlink(missing_ok=True)
        link.unlink(missing_ok=True)


def test_no_helper_of_the_copy_solves_a_graded_problem(copy):
    """Problem 1's exercises keep their rules and first hint in the copy, not the mimics (parameterised
    near-solutions: ``_ban_after(row, n - 1)`` is no_repeat_ngram_banned) nor the hints that give the answer."""
    assert not (copy / "tutorials" / "_graded_guide.py").exists()
    proc = subprocess.run([sys.executable, "-c", "from _lab_guide import GUIDES\n"
                           "for name in ('repetition_penalty', 'no_repeat_ngram_banned', 'top_k_filter', "
                           "'llama_top_p'):\n"
                           "    g = GUIDES[name]\n"
                           "    print(name, len(g.hints), sum(m.mimic is not None for m in g.mistakes))"],
                          capture_output=True, text=True, timeout=120, cwd=copy / "tutorials",
                          env={"PYTHONPATH": str(copy / "tutorials") + ":" + str(copy), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["repetition_penalty", "1", "0", "no_repeat_ngram_banned", "1", "0",
                                   "top_k_filter", "1", "0", "llama_top_p", "1", "0"]
    text = "\n".join(p.read_text(encoding="utf-8") for p in (copy / "tutorials").rglob("*.py"))
    for helper in ("def _penalty(", "def _ban_after(", "def _keep_top(", "def _gather_top_p("):
        assert helper not in text, helper
