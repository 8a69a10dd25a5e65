"""docs/engines.md is what examples/engines/report.py writes from examples/engines/report.json (both made by
examples/engines/run_all.sh), and report.json holds what the engines page promises: the control passes all it answered,
every differing case has a cause and its departure, every cause a reproducer."""

from __future__ import annotations

import importlib.util
import json

from conftest import ROOT

REPORT = json.loads((ROOT / "examples" / "engines" / "report.json").read_text())


def _report_module():
    spec = importlib.util.spec_from_file_location("engines_report", ROOT / "examples" / "engines" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_the_reports():
    assert _report_module().write_markdown(REPORT) == (ROOT / "docs" / "engines.md").read_text()


def test_the_control_passes_what_it_answers_and_every_difference_has_a_cause():
    engines = {e["engine"]: e for e in REPORT["engines"]}
    assert len(engines) == 12 and REPORT["run_time"]   # the control and eleven engines; the run time, or why not
    control = engines["transformers-4.38.2"]
    assert control["differing"] == 0 and control["answered"] == sum(g["pass"] for g in control["groups"].values())
    for e in engines.values():
        assert len(e["differing_cases"]) == e["differing"]
        for case in e["differing_cases"]:
            assert case["cause"] and case["departs"], (e["engine"], case["id"])
            assert case["cause"] in e["causes"] and case["id"] in e["causes"][case["cause"]]
        assert set(e["reproducers"]) == set(e["causes"])
        for rep in e["reproducers"].values():
            assert rep["transformers-4.38.2"] != rep[e["engine"]]


def test_every_profile_reproduces_every_answered_case_and_meets_100_fresh_answers():
    """The engines page's promise: each profile gives every answer its engine gave on the suite, and on the fresh
    cases of the run each engine answered at least 100, every mismatch listed with its case and where it parts."""
    for e in REPORT["engines"]:
        assert e["reproduced"] == e["answered"], e["engine"]
    fresh = REPORT["fresh"]["engines"]
    assert {e["engine"] for e in REPORT["engines"]} <= set(fresh)
    for name, r in fresh.items():
        assert r["answered"] >= 100, name
        answered_mismatches = [m for m in r["mismatches"] if not m["why"].startswith("no answer")]
        assert r["same"] + len(answered_mismatches) == r["answered"], name
        assert all(m["id"] and m["note"] and m["why"] for m in r["mismatches"])
