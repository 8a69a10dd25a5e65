"""tools/course/make_hidden.py: the committed hidden cases are what the script writes for --seed 0 from today's
refdecode (so a change of refdecode's answers cannot leave stale answers in the grader), and another seed gives
other cases.

Inputs, token ids and labels must match exactly; the float scores the script computes through the model's BLAS
products match within the suite's tolerance, since they differ in the last bits between CPUs (AVX2 or AVX-512:
tests/numeric_checks.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT
from numeric_checks import assert_same_up_to_blas

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
    assert_same_up_to_blas(remade, committed, "cases.json")  # if not: rerun python tools/course/make_hidden.py --seed 0
    assert committed["format"] == 1 and committed["seed"] == 0
    assert {name: len(found) for name, found in committed["cases"].items()} == {
        "repetition_penalty": 7, "no_repeat_ngram_banned": 8, "top_k_filter": 7, "llama_top_p": 7, "greedy": 8,
        "sample": 12, "beam_search": 13}
    sys.path.insert(0, str(COURSE))
    import make_hidden
    import numpy as np
    other = make_hidden.processor_cases(np.random.default_rng(1))["top_k_filter"][-1]["args"][0]
    assert other.tolist() != committed["cases"]["top_k_filter"][-1]["args"][0]["array"]


def test_the_comparison_forgives_last_bits_of_scores_only():
    """What ``assert_same_up_to_blas`` lets through: a float32 score one ulp away (another CPU's BLAS), not a token
    id, nor a score off by more than the suite's tolerance."""
    import numpy as np
    case = {"label": "beam", "expected": [{"array": [[7, 11, 50256]], "dtype": "int64"},
                                          {"array": [-0.3086378574], "dtype": "float32"}]}
    last_bit = json.loads(json.dumps(case))
    last_bit["expected"][1]["array"] = [float(np.nextafter(np.float32(-0.3086378574), np.float32(0)))]
    assert_same_up_to_blas(last_bit, case)
    for broken in ([[7, 12, 50256]], None):
        other = json.loads(json.dumps(case))
        if broken is not None:
            other["expected"][0]["array"] = broken
        else:
            other["expected"][1]["array"] = [-0.3086378574 + 2e-4]
        with pytest.raises(AssertionError):
            assert_same_up_to_blas(other, case)
