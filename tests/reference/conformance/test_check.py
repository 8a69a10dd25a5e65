"""refdecode.reference.conformance: export (deterministic, schema-valid), the protocol, the verdicts, and check vs serve.

Two exports per session keep this fast: ``unit_suite`` holds every unit case (processors,
warpers, BeamHypotheses) in full, ``decode_suite`` the first few cases of each decode type and of
BeamSearchScorer. The whole suite (>= 1,000 cases) is exported and checked against ``serve`` by
``.ci/run``; ``test_full_suite_counts`` builds it without running the decodes twice.
"""

from __future__ import annotations

import pytest

import sys


import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)
from conformance_suites import run_check

# ----------------------------------------------------------------------------------------------
# export


# ----------------------------------------------------------------------------------------------
# the toy model


# ----------------------------------------------------------------------------------------------
# protocol and verdicts


# ----------------------------------------------------------------------------------------------
# check against serve


@pytest.mark.slow
def test_check_with_serve_passes_every_unit_case(unit_suite):
    status, lines = run_check(unit_suite)
    n = sum(1 for _ in (unit_suite / "cases").glob("*.jsonl") for _ in _.read_text().splitlines())
    assert (status, lines) == (0, [f"{n} passed, 0 failed"])


@pytest.mark.slow
def test_check_with_serve_passes_every_decode_case(decode_suite):
    status, lines = run_check(decode_suite)
    assert (status, lines) == (0, [f"{len(DECODE_TYPES) * DECODE_LIMIT} passed, 0 failed"])


@pytest.mark.slow
def test_check_only_and_a_failing_implementation(unit_suite):
    """--only narrows the run; an implementation that answers nothing useful fails every case, exit 1."""
    status, lines = run_check(unit_suite, only="min_length")
    assert status == 0 and lines == ["40 passed, 0 failed"]
    liar = f'"{sys.executable}" -c "import sys, json; [print(json.dumps({{\\"id\\": json.loads(l)[\\"id\\"], ' \
           f'\\"output\\": {{}}}}), flush=True) for l in sys.stdin]"'
    status, lines = run_check(unit_suite, liar, only="min_length")
    assert status == 1 and lines[-1] == "0 passed, 40 failed" and len(lines) == 41
    assert lines[0].startswith("FAIL min_length/0000") and "missing field 'scores'" in lines[0]


def test_check_survives_an_implementation_that_exits(unit_suite):
    status, lines = run_check(unit_suite, f'"{sys.executable}" -c "pass"', only="min_length")
    assert status == 1 and lines[-1] == "0 passed, 40 failed" and "exited" in lines[0]


