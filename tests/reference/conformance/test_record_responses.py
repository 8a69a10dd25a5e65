"""examples/engines/common/record_responses.py against adapters that misbehave: it goes through check's process
handling (refdecode.reference.conformance.check.Implementation), so a junk line, a hang, an exit or a flood is an
``error`` record for that case only, the adapter is restarted, and the later cases keep their own answers."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from conformance_suites import python_implementation, scaled_timeout, unit_suite  # noqa: F401  (fixture)
from conftest import ROOT

SCRIPT = ROOT / "examples" / "engines" / "common" / "record_responses.py"
ADAPTER = '''
from refdecode.reference.conformance.serve import answer
for line in sys.stdin:
    n = int(json.loads(line)["id"].split("/")[1])
    if n == 0:
        print("hello", flush=True)                      # junk
    elif n == 1:
        time.sleep(3600)                                # a hang
    elif n == 2:
        sys.exit(3)                                     # an exit
    elif n == 3:
        sys.stdout.write("[" * (300 * 2**20)); sys.stdout.flush(); time.sleep(3600)  # a flood, no newline
    elif n == 4:
        print(json.dumps([1, 2]), flush=True)            # JSON, not a response object
    else:
        print(answer(line), flush=True)
'''


@pytest.mark.slow
def test_junk_hangs_exits_and_floods_are_one_error_record_each(unit_suite, tmp_path):  # noqa: F811
    """The timeout is scaled to the machine's load (a start and an answer of the adapter, measured): the healthy
    answers come within it however busy the machine, the hang (an hour) never does."""
    timeout = scaled_timeout(python_implementation(tmp_path, ADAPTER), least=3)
    out = tmp_path / "responses.jsonl"
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(SCRIPT), str(unit_suite), "--cmd",
                           python_implementation(tmp_path, ADAPTER), "--only", "min_length", "--timeout", str(timeout),
                           "-o", str(out)], capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 40 and time.monotonic() - start < 3000      # the hour-long hang was not waited out
    errors = [r["response"].get("error", "") for r in records[:5]]
    assert errors[0].startswith("not JSON") and errors[4].startswith("not a response object")
    assert f"no response within {timeout} s" in errors[1] and "exited" in errors[2]
    assert "longer than" in errors[3] or f"no response within {timeout} s" in errors[3]  # 300 MiB may take longer
    assert all("output" in r["response"] for r in records[5:])            # the later cases: their own answers
    assert [r["id"] for r in records] == [f"min_length/{i:04d}" for i in range(40)]


def test_a_bad_timeout_is_refused(unit_suite, tmp_path):  # noqa: F811
    done = subprocess.run([sys.executable, str(SCRIPT), str(unit_suite), "--cmd", "cat", "--timeout", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "--timeout must be a finite number > 0" in done.stderr
