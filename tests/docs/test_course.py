"""The instructor's material (docs/course/): it is reachable, its numbers are the package's, its demos run.

An instructor prepares a lecture from these pages the evening before and types the demos in front of a class:
a command that fails or prints something else than the outline says is a lecture that goes wrong. So every
``refdecode`` command of the lecture outline is run here as printed (in a fresh folder) and the output the
outline quotes is checked; every ``>>>`` answer of the questions page runs; every figure and exercise the
pages name exists; and the course is linked from the docs index, the README and the nav.
"""

from __future__ import annotations

import doctest
import re
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT

COURSE = ROOT / "docs" / "course"
PAGES = ["index.md", "lecture.md", "syllabus.md", "handout.md", "questions.md"]
LECTURE = (COURSE / "lecture.md").read_text("utf-8")


def test_the_course_is_linked_from_the_index_the_readme_and_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text("utf-8").split("\nnav:", 1)[1]
    index = (ROOT / "docs" / "index.md").read_text("utf-8")
    for page in PAGES:
        assert (COURSE / page).is_file(), page
        assert re.search(rf":\s*course/{re.escape(page)}\s*$", nav, flags=re.M), f"course/{page} is not in the nav"
        assert f"](course/{page})" in index, f"docs/index.md does not link course/{page}"
    assert "docs/course/index.md" in (ROOT / "README.md").read_text("utf-8")
    assert "course/slides.md" in (ROOT / "mkdocs.yml").read_text("utf-8")     # the source is excluded, not a page


@pytest.mark.slow
@pytest.mark.parametrize("page", ["questions.md", "handout.md", "lecture.md", "syllabus.md", "index.md"])
def test_course_examples_run(page, monkeypatch):
    """The answers' ``>>>`` lines (cwd = repo root, as the docs pages' examples)."""
    monkeypatch.chdir(ROOT)
    text = (COURSE / page).read_text("utf-8")
    test = doctest.DocTestParser().get_doctest(text, {"__name__": f"course_{page}"}, page, str(COURSE / page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    if page == "questions.md":
        assert len(test.examples) >= 20


def lecture_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", LECTURE, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip().startswith("refdecode ")]


@pytest.fixture(scope="module")
def demo_outputs(tmp_path_factory):
    """Every demo command of the lecture, in order, in one fresh folder (the trace demo writes files there)."""
    cwd = tmp_path_factory.mktemp("lecture")
    outputs = {}
    for command in lecture_commands():
        argv = shlex.split(command)
        run = subprocess.run([sys.executable, "-m", "refdecode", *argv[1:], *(["--no-progress"] if
                              argv[1] not in ("diff", "explain") else [])],
                             capture_output=True, text=True, cwd=cwd, timeout=300)
        outputs[command] = run
    return outputs


@pytest.mark.slow
def test_every_lecture_demo_runs_as_printed(demo_outputs):
    assert len(demo_outputs) >= 12
    for command, run in demo_outputs.items():
        expected = 1 if command.startswith("refdecode diff") else 0    # diff: 1 = "found a divergence"
        assert run.returncode == expected, f"{command}: exit {run.returncode}\n{run.stderr}"


@pytest.mark.slow
@pytest.mark.parametrize("command, quoted", [
    ('refdecode "ROMEO:" --max-new-tokens 20', "I'll not be so.\n\nCOUNTESS:\nI'll not, my lord"),
    ('refdecode explain "ROMEO:" --max-new-tokens 3 --top 5', "\\n     10.8707"),
    ('refdecode explain "ROMEO:" --max-new-tokens 3 --top 5', "I      9.4985\n    And    8.4638\n    The    8.3427"),
    ('refdecode explain "ROMEO:" --do-sample --temperature 0.7 --top-k 50 --top-p 0.9 --max-new-tokens 2 --top 6 '
     '--seed 0', "nucleus: 1 of 50257 tokens can be drawn"),
    ('refdecode explain "ROMEO:" --do-sample --temperature 0.7 --top-k 50 --top-p 0.9 --max-new-tokens 2 --top 6 '
     '--seed 0', "nucleus: 31 of 50257"),
    ('refdecode "ROMEO:" --max-new-tokens 16', "COUNTESS:\nI'll\n"),
    ('refdecode "ROMEO:" --max-new-tokens 16 --no-repeat-ngram-size 2', "COUNTESS: I'll go"),
    ('refdecode "ROMEO:" --max-new-tokens 16 --repetition-penalty 1.3', "COUNTESS:\nThe king"),
    ('refdecode explain "ROMEO:" --num-beams 3 --max-new-tokens 3 --top 4',
     "rows 1, 2: copies of the prompt at running score -1e9"),
    ('refdecode explain "ROMEO:" --num-beams 3 --max-new-tokens 3 --top 4', "not needed (beams filled)"),
    ('refdecode "ROMEO:" --num-beams 4 --num-return-sequences 2 --no-repeat-ngram-size 3 --max-new-tokens 16',
     "--- sequence 1\nROMEO:\nI will not be so."),
    ('refdecode "ROMEO:" --num-beams 4 --num-beam-groups 2 --diversity-penalty 1.0 --num-return-sequences 4 '
     '--max-new-tokens 12', "I am glad to my lord;"),
    ('refdecode "ROMEO:" --stop "." --max-new-tokens 30', "ROMEO:\nI'll not be so."),
    ("refdecode diff golden.json other.json", "first divergence: step 0, stage RepetitionPenaltyLogitsProcessor"),
    ("refdecode diff golden.json other.json", "algorithmic: one engine applies RepetitionPenaltyLogitsProcessor here "
                                             "and the other does not"),
])
def test_the_outline_quotes_what_the_demo_prints(demo_outputs, command, quoted):
    assert command in demo_outputs, f"the lecture no longer has the demo {command}"
    assert quoted in demo_outputs[command].stdout, demo_outputs[command].stdout[:2000]


@pytest.mark.slow
def test_the_stop_string_demo_stops_early(demo_outputs):
    assert demo_outputs['refdecode "ROMEO:" --stop "." --max-new-tokens 30'].stdout.strip() == "ROMEO:\nI'll not be so."


def test_every_figure_and_exercise_named_exists():
    named = set(re.findall(r"`([\w-]+\.svg)`", LECTURE + (COURSE / "questions.md").read_text("utf-8")))
    assert len(named) >= 14
    for name in named:
        assert (ROOT / "docs" / "img" / name).is_file(), name
    tutorials = "".join(p.read_text("utf-8") for p in sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py")))
    exercises = set(re.findall(r'check\("(\w+)"', tutorials))
    scheduled = set(re.findall(r"`(\w+)`", (COURSE / "syllabus.md").read_text("utf-8")))
    assert len(exercises) >= 17 and exercises <= scheduled, sorted(exercises - scheduled)   # every exercise has a week


def test_the_lecture_adds_up_to_90_minutes():
    rows = re.findall(r"^\| (\d+)-(\d+) \|", LECTURE, flags=re.M)
    spans = [(int(a), int(b)) for a, b in rows]
    assert spans[0][0] == 0 and spans[-1][1] == 90
    assert all(b1 == a2 for (_, b1), (a2, _) in zip(spans, spans[1:])), spans
