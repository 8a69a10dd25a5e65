"""tools/course/build_pdfs.py: the students' docs lose the instructors' pages and part, their nav follows, a PDF's
pages are counted, and instructor-only text in a built site is found. (The build itself needs mkdocs and
Chromium, which the test extra does not install: CI runs ``build_pdfs.py`` after building the docs.)"""

from __future__ import annotations

import importlib.util
import re

from conftest import ROOT

SCRIPT = ROOT / "tools" / "course" / "build_pdfs.py"
spec = importlib.util.spec_from_file_location("build_pdfs", SCRIPT)
build_pdfs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_pdfs)


def test_the_students_docs_have_no_instructor_page_nor_part(tmp_path):
    build_pdfs.student_docs(tmp_path / "docs")
    course = sorted(p.name for p in (tmp_path / "docs" / "course").glob("*.md"))
    assert course == sorted(build_pdfs.STUDENT_PAGES) == ["assignment.md", "handout.md", "syllabus.md"]
    assignment = (tmp_path / "docs" / "course" / "assignment.md").read_text()
    assert "## Problem 4" in assignment and "For instructors" not in assignment
    assert "Threat model" not in assignment and "make_hidden" not in assignment
    assert (tmp_path / "docs" / "index.md").is_file()


def test_the_students_nav_keeps_the_student_pages_only(tmp_path):
    config = (ROOT / "mkdocs.yml").read_text()
    student = build_pdfs.student_config(config, tmp_path / "docs")
    assert len(re.findall(r":\s*course/\S+\.md\s*$", config, flags=re.M)) == 6
    assert re.findall(r":\s*(course/\S+\.md)\s*$", student, flags=re.M) == [
        "course/syllabus.md", "course/handout.md", "course/assignment.md"]
    assert f"docs_dir: {tmp_path / 'docs'}" in student and "strict: false" in student
    assert f"  - {ROOT}/tools/docs/mkdocs_hooks.py" in student and f'base_path: ["{ROOT}"]' in student
    assert student.count("\n") == config.count("\n") - 3


def test_pdf_pages_counts_page_objects_not_the_page_tree():
    pdf = b"%PDF-1.4\n1 0 obj <</Type /Pages /Kids [2 0 R 3 0 R]>>\n2 0 obj <</Type /Page>>\n3 0 obj <</Type/Page >>"
    assert build_pdfs.pdf_pages(pdf) == 2
    try:
        build_pdfs.pdf_pages(b"<html>")
    except ValueError as err:
        assert "not a PDF" in str(err)
    else:
        raise AssertionError("a non-PDF was counted")


def test_instructor_text_finds_the_pages_and_the_answers(tmp_path):
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "handout.html").write_text("<h1>Handout</h1>")
    (tmp_path / "course" / "questions.html").write_text("<details><summary>Answer</summary>42</details>")
    (tmp_path / "course" / "assignment.html").write_text("<h2>For instructors</h2>")
    assert build_pdfs.instructor_text(tmp_path) == ["course/assignment.html: For instructors",
                                                    "course/questions.html: an instructors' page"]
