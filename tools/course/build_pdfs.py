"""The course on paper, offline: the students' site (no answers, no "For instructors") and the handout and the
assignment as PDFs printed from it by Chromium.

    python tools/course/build_pdfs.py OUT        # needs the docs extra (mkdocs) and chromium on PATH
        # -> OUT/student-site/ (open OUT/student-site/index.html), OUT/handout.pdf, OUT/assignment.pdf

The students' site is this repository's docs without the instructors' course pages (the guide, the lecture,
the questions with their answers, the slides' source) and with ``assignment.md`` cut before "For instructors",
as tools/course/student_copy.py cuts it; the nav loses those pages and links to them stay unresolved (mkdocs
reports them, not strict). Each PDF is Chromium's print-to-PDF of the built page (``--headless``, from
``file://``, no network), then checked as the slides are: a PDF, a page count within bounds, and, for the site,
no instructor-only text anywhere (:func:`instructor_text`). Standard library only besides mkdocs and Chromium.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_copy import INSTRUCTOR_HEADING, STUDENT_PAGES, student_page  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: page -> (fewest, most) printed pages
PAPERS = {"handout": (1, 6), "assignment": (3, 12)}
#: Phrases only the instructors' pages hold: the questions' answers and the assignment's instructors' part.
INSTRUCTOR_PHRASES = ("For instructors", "Expected results of problem 5", "make_hidden.py --seed",
                      "<summary>Answer</summary>")


def student_docs(out: Path, docs: Path = ROOT / "docs") -> None:
    """``docs`` into ``out`` without the instructors' course pages, ``assignment.md`` cut before its
    instructors' part."""
    shutil.copytree(docs, out, ignore=shutil.ignore_patterns("__pycache__"))
    course = out / "course"
    for page in course.glob("*.md"):
        if page.name not in STUDENT_PAGES:
            page.unlink()
    assignment = course / "assignment.md"
    assignment.write_text(student_page(assignment.read_text(encoding="utf-8")), encoding="utf-8")


def student_config(config: str, docs_dir: Path) -> str:
    """mkdocs.yml for the students' site: ``docs_dir`` its own, not strict, the repository's paths (hooks,
    snippets, mkdocstrings) absolute, and the nav without the pages student_docs removed."""
    kept = {f"course/{name}" for name in STUDENT_PAGES}
    lines = []
    for line in config.splitlines():
        target = re.search(r":\s*(course/[\w.-]+\.md)\s*$", line)
        if target and target.group(1) not in kept:
            continue
        line = line.replace("tools/docs/", f"{ROOT}/tools/docs/").replace('["."]', f'["{ROOT}"]')  # from elsewhere
        if line.startswith("docs_dir:"):
            line = f"docs_dir: {docs_dir}"
        elif line.startswith("strict:"):
            line = "strict: false"
        lines.append(line)
    return "\n".join(lines) + "\n"


def build_student_site(out: Path) -> Path:
    """The students' site in ``out/student-site`` (mkdocs, offline)."""
    work = out / "student-docs"
    shutil.rmtree(work, ignore_errors=True)
    student_docs(work / "docs")
    config = work / "mkdocs.yml"
    config.write_text(student_config((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), work / "docs"),
                      encoding="utf-8")
    site = out / "student-site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config), "--site-dir", str(site)],
                   check=True, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    return site


def instructor_text(site: Path) -> list[str]:
    """Pages of ``site`` that hold instructor-only text or are instructor pages: "path: phrase"."""
    found = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if rel in ("course/index.html", "course/lecture.html", "course/questions.html"):
            found.append(f"{rel}: an instructors' page")
            continue
        text = page.read_text(encoding="utf-8", errors="ignore")
        found += [f"{rel}: {phrase}" for phrase in INSTRUCTOR_PHRASES if phrase in text]
    return found


def print_pdf(page: Path, pdf: Path, chromium: str = "chromium") -> None:
    """Chromium's print-to-PDF of ``page`` (a file), headless, without header and footer."""
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                    f"--print-to-pdf={pdf}", page.as_uri()], check=True, capture_output=True, timeout=300)


def pdf_pages(data: bytes) -> int:
    """Pages of a PDF (its page objects: ``/Type /Page``, not ``/Pages``); ValueError if it is not a PDF."""
    if not data.startswith(b"%PDF-"):
        raise ValueError("not a PDF")
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write the students' site and the PDFs into")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    site = build_student_site(args.out.resolve())
    problems = instructor_text(site)
    for name, (fewest, most) in PAPERS.items():
        pdf = args.out / f"{name}.pdf"
        print_pdf(site / "course" / f"{name}.html", pdf, args.chromium)
        pages = pdf_pages(pdf.read_bytes())
        if not fewest <= pages <= most:
            problems.append(f"{pdf}: {pages} pages, expected {fewest} to {most}")
        print(f"wrote {pdf}: {pages} pages")
    if problems:
        print("error: " + "; ".join(problems), file=sys.stderr)
        return 2
    print(f"wrote {site}: the students' site, no instructor-only page or text ({INSTRUCTOR_HEADING!r} cut)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
