"""``check --jobs N``: N implementation processes, the serial run's output line for line, in the suite's order.

The Ray path (``check --ray local``) is tested by ``ray_pool.py`` beside this file, which CI runs after installing the
``scale`` extra (Ray is not needed by the README's test command)."""

from __future__ import annotations

import sys

import pytest

from conformance_suites import SERVE, run_check, unit_suite  # noqa: F401  (fixture)
from refdecode.reference.conformance.pool import Counted, in_threads


@pytest.mark.slow
def test_a_planted_bug_fails_the_same_cases_with_jobs_as_serially(unit_suite):
    """top_p_boundary fails top_p cases scattered through the type; 3 jobs print them in the same order."""
    planted = SERVE + " --plant top_p_boundary"
    serial = run_check(unit_suite, planted, only="top_p,min_length")
    status, lines = serial
    assert status == 1 and lines[-1] == "76 passed, 70 failed"   # 106 top_p + 40 min_length; docs/conformance.md's plant table: top_p 70
    failing = [line.split()[1] for line in lines if line.startswith("FAIL ")]
    assert len(failing) == 70 and failing == sorted(failing) and all(f.startswith("top_p/") for f in failing)
    assert run_check(unit_suite, planted, only="top_p,min_length", jobs=2) == serial
    assert run_check(unit_suite, planted, only="top_p,min_length", jobs=3) == serial


@pytest.mark.slow
def test_the_stop_after_three_misses_in_a_row_is_the_serial_ones(unit_suite):
    exits = f'"{sys.executable}" -c "pass"'
    serial = run_check(unit_suite, exits, only="min_length")
    assert serial[1][-1] == "0 passed, 3 failed, 37 not run"
    assert run_check(unit_suite, exits, only="min_length", jobs=2) == serial


@pytest.mark.slow
def test_hanging_implementations_stop_as_serially_and_promptly(unit_suite):
    """3 timeouts in a row stop check; the case the other process still runs is ended then, not at its timeout."""
    import time

    serial = run_check(unit_suite, "sleep 600", only="top_p", timeout=2)
    assert serial[1][-1] == "0 passed, 0 failed, 3 timed out, 103 not run"
    start = time.monotonic()
    assert run_check(unit_suite, "sleep 600", only="top_p", timeout=2, jobs=2) == serial
    assert time.monotonic() - start < 30


def test_results_come_in_the_order_of_the_cases_whatever_order_they_finish_in():
    """The first case waits until the third has finished; in_threads still yields the first case first."""
    import threading

    from refdecode.reference.conformance.check import Result

    third_done = threading.Event()
    finished: list[int] = []

    class Waiter:
        def __init__(self, command, timeout, cwd=None):
            pass

        def run(self, case):
            if case["n"] == 0:
                assert third_done.wait(timeout=60)
            finished.append(case["n"])
            if case["n"] == 2:
                third_done.set()
            return Result("pass", str(case["n"]))

        def stop(self):
            pass

        def close(self):
            pass

    cases = Counted(iter([{"n": n} for n in range(4)]))
    results = list(in_threads(cases, "unused", 1.0, 4, Waiter))
    assert [case["n"] for case, _ in results] == [0, 1, 2, 3] and [r.message for _, r in results] == ["0", "1", "2", "3"]
    assert finished.index(2) < finished.index(0) and cases.taken == 4


def test_jobs_must_be_a_positive_int(unit_suite):
    for jobs in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=r"`jobs` has to be an int >= 1, but is"):
            run_check(unit_suite, "true", only="min_length", jobs=jobs)
