"""Write the students' copy of the course: the package, the model, the tutorials with their exercises, the
assignment's handout and starters; no solution, no hidden case, no grader.

    python tools/course/student_copy.py OUT          # OUT must not exist yet (or be an empty folder)

What goes in: ``README.md``, ``pyproject.toml``, ``refdecode/`` (students run it; the assignment forbids
calling its decoding in the graded part, and the grader enforces it), the two shipped models of ``models/``,
``tutorials/`` without ``tutorials/solutions/`` (the exercises are stubs there; the checker prints no expected
value) and without ``tutorials/_graded_guide.py`` (problem 1's mimics and last hints, which nearly solve it),
``tutorials/assignment/`` (the starters and ``selfcheck.py``), and ``docs/`` without the instructors'
course pages: of ``docs/course/`` only the student pages in STUDENT_PAGES, and ``assignment.md`` cut before its
"For instructors" part. What stays out: ``tutorials/solutions/``, ``tools/`` (the grader and the hidden cases
``tools/course/hidden/``), ``tests/``, ``benchmarks/``, ``examples/``, git history, virtual environments,
caches and ``tutorials/.hints.json``. Install the copy as the repository: ``pip install -e OUT``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Top-level entries copied (everything else stays out).
INCLUDED = ("README.md", "pyproject.toml", "LICENSE", "refdecode", "models/README.md", "models/tiny-shakespeare",
            "models/gpt2-tiny", "tutorials", "docs")
#: Paths (relative to the root) never copied, with everything under them.
#: tutorials/_graded_guide.py: the mimics and last hints of problem 1's exercises, near-solutions of a graded problem.
EXCLUDED = ("tutorials/solutions", "tutorials/_graded_guide.py", "docs/course")  # (dot-files never go)
#: The course pages a student reads (the others hold answers: the instructor guide, the questions' answers).
STUDENT_PAGES = ("assignment.md", "handout.md", "syllabus.md")
#: The heading from which docs/course/assignment.md is for instructors only.
INSTRUCTOR_HEADING = "## For instructors"
SKIPPED_NAMES = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".hypothesis"}


def _tracked() -> set[str] | None:
    """The files git tracks (a scratch solution left in tutorials/ is not shipped), or None outside a checkout."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.decode().split("\0")) - {""}


def _skip(path: Path, tracked: set[str] | None) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return (path.is_symlink()  # a link could point at the hidden cases or the solutions
            or path.name in SKIPPED_NAMES or path.name.startswith(".") or path.suffix in (".pyc", ".ipynb")
            or any(rel == e or rel.startswith(e + "/") for e in EXCLUDED)
            or (tracked is not None and path.is_file() and rel not in tracked))


def _copy(src: Path, dst: Path, tracked: set[str] | None) -> int:
    """Copy ``src`` (a file or a tree) to ``dst`` minus the skipped paths; the number of files copied."""
    if _skip(src, tracked):
        return 0
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        return 1
    return sum(_copy(child, dst / child.name, tracked) for child in sorted(src.iterdir()))


def student_page(text: str) -> str:
    """assignment.md without its instructors' part (from INSTRUCTOR_HEADING on)."""
    head, _, _ = text.partition("\n" + INSTRUCTOR_HEADING)
    return head.rstrip() + "\n"


def write_copy(out: Path) -> int:
    """Write the students' copy into ``out``; returns the number of files."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"`OUT` must be a new or empty folder, got {out}")
    out = out.resolve()
    if out.is_relative_to(ROOT.resolve()):
        raise ValueError(f"`OUT` must be outside the repository, got {out}")
    out.mkdir(parents=True, exist_ok=True)
    tracked = _tracked()
    count = sum(_copy(ROOT / name, out / name, tracked) for name in INCLUDED if (ROOT / name).exists())
    course = ROOT / "docs" / "course"
    for name in STUDENT_PAGES:
        if (course / name).is_file():
            text = (course / name).read_text(encoding="utf-8")
            (out / "docs" / "course").mkdir(parents=True, exist_ok=True)
            (out / "docs" / "course" / name).write_text(student_page(text) if name == "assignment.md" else text,
                                                        encoding="utf-8")
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write (new or empty, outside the repository)")
    args = parser.parse_args(argv)
    try:
        count = write_copy(args.out)
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {count} files to {args.out}: the handout is docs/course/assignment.md, the starters "
          "tutorials/assignment/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
