"""tools/course/gradescope.py: the bundle runs a submission end to end in a fresh folder laid out as Gradescope
lays it out (/autograder/source from the zip, /autograder/submission, /autograder/results), and writes a
results.json in Gradescope's format. setup.sh (apt-get, a venv) is not run here: ``PYTHON`` points
run_autograder at this venv, which has the ``grader`` extra's packages. Grades a whole submission: slow."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT

COURSE = ROOT / "tools" / "course"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """A fresh /autograder with the bundle unzipped into source/."""
    base = tmp_path_factory.mktemp("gradescope")
    bundle = base / "autograder.zip"
    proc = subprocess.run([sys.executable, str(COURSE / "gradescope.py"), str(bundle)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(bundle) as z:
        names = z.namelist()
        assert {"setup.sh", "run_autograder", "tools/course/grade.py", "tools/course/hidden/cases.json",
                "models/tiny-shakespeare/model.safetensors", "tutorials/assignment/selfcheck.py"} <= set(names)
        assert not [n for n in names if n.startswith(("tests/", ".git")) or "__pycache__" in n]
        assert z.getinfo("run_autograder").external_attr >> 16 & 0o111
        z.extractall(base / "autograder" / "source")
    return base / "autograder"


def _run(autograder, files_in: str) -> dict:
    submission = autograder / "submission"
    shutil.rmtree(submission, ignore_errors=True)
    shutil.rmtree(autograder / "results", ignore_errors=True)
    target = submission / files_in if files_in else submission
    target.mkdir(parents=True)
    for name in ("processors.py", "decoding.py", "experiments.py"):
        shutil.copy(ROOT / "tutorials" / "solutions" / "submission" / name, target / name)
    env = {**os.environ, "AUTOGRADER": str(autograder), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(autograder / "source" / "run_autograder")], capture_output=True, text=True,
                          timeout=900, env=env, cwd=autograder)
    assert proc.returncode == 0, proc.stderr
    return json.loads((autograder / "results" / "results.json").read_text())


def test_run_autograder_grades_a_submission_end_to_end(autograder):
    results = _run(autograder, "")
    assert results["score"] == 80 and results["output"] == ""
    assert set(results) >= {"score", "execution_time", "output", "visibility", "stdout_visibility", "tests"}
    assert [t["score"] for t in results["tests"]] == [5, 5, 5, 5, 10, 20, 30, 0]
    assert all(t["status"] in ("passed", "failed") and t["visibility"] == "visible" for t in results["tests"])


def test_a_submission_uploaded_as_a_folder_is_found(autograder):
    results = _run(autograder, "my_submission")
    assert results["score"] == 80
