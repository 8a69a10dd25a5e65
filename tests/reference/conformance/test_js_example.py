"""The JavaScript example (examples/conformance-js/) passes its share of the conformance suite and answers
``unsupported`` for the rest, so the whole suite gives 0 failures.

It implements the processors, warpers, ``BeamHypotheses``, ``BeamSearchScorer`` and greedy / sampling /
beam search over the toy model in plain Node.js, and speaks the protocol of docs/conformance.md. The
test exports those case types in full and runs ``refdecode conformance check`` on it, as a C++ or Rust
implementer would. Node.js is on every machine of this project's kind; without it the test fails
(it does not skip), because CI must run it.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import pytest
from conftest import ROOT
from conformance_suites import JS_TYPES

from refdecode.reference.conformance.check import check
from refdecode.reference.conformance.export import export

JS = ROOT / "examples" / "conformance-js" / "refdecode_conformance.js"


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    assert path, "Node.js (`node`) is needed to run examples/conformance-js (apt-get install nodejs)"
    return path


@pytest.mark.slow
def test_the_js_example_passes_its_share_of_the_suite(node, tmp_path):
    manifest = export(tmp_path, types=JS_TYPES)
    expected = sum(t["count"] for t in manifest["case_types"])
    out = io.StringIO()
    status = check(tmp_path, f'"{node}" "{JS}"', only=",".join(JS_TYPES), out=out)
    lines = out.getvalue().splitlines()
    assert lines[-1] == f"{expected} passed, 0 failed", "\n".join(lines[-20:])
    assert status == 0 and expected >= 900


def test_the_js_example_answers_unsupported_for_what_it_does_not_implement(node):
    """Any type it does not know (one added to the suite after it was written too) and GPT-2 decodes are
    ``unsupported``, which check counts apart; a case it implements but cannot read is an ``error`` (a failure)."""
    requests = [{"id": "x/1", "type": "contrastive", "input": {}},
                {"id": "x/2", "type": "a_type_added_next_year", "input": {}},
                {"id": "x/3", "type": "greedy", "input": {"model": {"kind": "gpt2"}, "config": {}}},
                {"id": "x/4", "type": "toString", "input": {}},
                {"id": "x/5", "type": "top_k", "input": {"scores": [[1.0, "-inf", 3.0]], "top_k": 1,
                                                          "min_tokens_to_keep": 1}},
                {"id": "x/6", "type": "top_k", "input": {}}]
    proc = subprocess.run([node, str(JS)], input="\n".join(json.dumps(r) for r in requests) + "\n",
                          capture_output=True, text=True, timeout=60)
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["id"] for a in answers] == [r["id"] for r in requests]
    assert all(set(a) == {"id", "unsupported"} for a in answers[:4]), answers[:4]
    assert "a_type_added_next_year" in answers[1]["unsupported"] and "gpt2" in answers[2]["unsupported"]
    assert answers[4] == {"id": "x/5", "output": {"scores": [["-inf", "-inf", 3.0]]}}
    assert set(answers[5]) == {"id", "error"}



def test_the_js_example_declines_the_textbook_group(node):
    """It has neither torch's last bit nor its tie order, so it answers ``unsupported``, never a wrong answer."""
    request = {"id": "textbook_top_p/0000", "type": "textbook_top_p",
               "input": {"scores": [[-0.5108256, -1.2039728, -2.3025851]], "top_p": 0.9, "min_tokens_to_keep": 1}}
    proc = subprocess.run([node, str(JS)], input=json.dumps(request) + "\n", capture_output=True, text=True,
                          timeout=60)
    response = json.loads(proc.stdout)
    assert response["id"] == "textbook_top_p/0000" and "last bit" in response["unsupported"]
