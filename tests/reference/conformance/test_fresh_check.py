"""examples/engines/fresh_check.py against an adapter that misbehaves: junk, an output without sequences, a hang;
three misses in a row end the run (as ``conformance check`` does); an answer to another case is no answer."""

from __future__ import annotations

import importlib.util
import json
import sys

from conformance_suites import python_implementation
from conftest import ROOT

from refdecode.reference.conformance.fresh import write_fresh
from refdecode.reference.conformance.suite import load_suite


def _fresh_check():
    sys.path.insert(0, str(ROOT / "examples" / "engines"))
    try:
        spec = importlib.util.spec_from_file_location("fresh_check", ROOT / "examples" / "engines" / "fresh_check.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "examples" / "engines"))


def _cases(tmp_path, n: int) -> list[dict]:
    """Fresh greedy cases, written and loaded as fresh_check.main does."""
    write_fresh(tmp_path / "suite", n, 5, ("greedy",))
    return load_suite(tmp_path / "suite")[1]


ADAPTER = '''
from refdecode.reference.conformance.serve import answer
n = 0
for line in sys.stdin:
    request = json.loads(line)
    n += 1
    if n == 1:
        print("junk", flush=True)
    elif n == 2:
        print(json.dumps({"id": request["id"], "output": "no sequences"}), flush=True)
    elif n == 3:
        time.sleep(600)
    else:
        print(answer(line), flush=True)
'''


def test_junk_and_hangs_are_no_answers_and_three_in_a_row_stop_the_run(tmp_path):
    fresh_check = _fresh_check()
    cases = _cases(tmp_path, 6)
    result = fresh_check.check_engine("transformers-4.38.2", cases, 3.0, python_implementation(tmp_path, ADAPTER))
    assert result["no_answer"] == 3 and result.get("stopped") == "three cases in a row without an answer"
    assert [m["why"][:9] for m in result["mismatches"]] == ["no answer"] * 3
    assert result["answered"] == 0


def test_an_adapter_that_answers_is_compared_with_the_profile(tmp_path):
    fresh_check = _fresh_check()
    cases = _cases(tmp_path, 4)
    adapter = "from refdecode.reference.conformance.serve import answer\nfor line in sys.stdin:\n" \
              "    print(answer(line), flush=True)\n"
    result = fresh_check.check_engine("transformers-4.38.2", cases, 30.0, python_implementation(tmp_path, adapter))
    assert (result["answered"], result["same"], result["no_answer"]) == (4, 4, 0), result


def test_an_answer_to_another_case_or_without_sequences_is_no_answer():
    answer_sequences = _fresh_check().answer_sequences
    assert answer_sequences({"id": "b/1", "output": {"sequences": [[1]]}}, "a/1").startswith("no answer")
    assert answer_sequences([1, 2], "a/1").startswith("no answer")
    assert answer_sequences({"id": "a/1", "output": {"sequences": "x"}}, "a/1").startswith("no answer")
    assert answer_sequences({"id": "a/1", "unsupported": "no beams"}, "a/1") is None
    assert answer_sequences({"id": "a/1", "output": {"sequences": [[1, 2]]}}, "a/1") == [[1, 2]]
