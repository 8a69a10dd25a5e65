"""tools/course/make_hidden.py: the committed hidden cases are what the script writes for --seed 0 from today's
refdecode (so a change of refdecode's answers cannot leave stale answers in the grader), and another seed gives
other cases."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

COURSE = ROOT / "tools" / "course"
pytestmark = pytest.mark.slow


def _make(seed: int, out) -> dict:
    proc = subprocess.run([sys.executable, str(COURSE / "make_hidden.py"), "--seed", str(seed), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_the_committed_cases_are_the_scripts_and_seeds_differ(tmp_path):
    committed = json.loads((COURSE / "hidden" / "cases.json").read_text())
    remade = _make(0, tmp_path / "cases.json")
    assert remade == committed, "rerun: python tools/course/make_hidden.py --seed 0"
    assert committed["format"] == 1 and committed["seed"] == 0
    assert {name: len(found) for name, found in committed["cases"].items()} == {
        "repetition_penalty": 7, "no_repeat_ngram_banned": 8, "top_k_filter": 7, "llama_top_p": 7, "greedy": 8,
        "sample": 12, "beam_search": 13}
    sys.path.insert(0, str(COURSE))
    import make_hidden
    import numpy as np
    other = make_hidden.processor_cases(np.random.default_rng(1))["top_k_filter"][-1]["args"][0]
    assert other.tolist() != committed["cases"]["top_k_filter"][-1]["args"][0]["array"]
