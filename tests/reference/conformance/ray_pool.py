"""``check --ray local``: the cases as Ray tasks on a local Ray runtime (loopback), the serial run's output.

Needs the ``scale`` extra (Ray), so a plain ``pytest`` does not collect this file (its name is not ``test_*.py``); CI
runs it after installing the extra::

    .venv/bin/pip install -e ".[scale]" && .venv/bin/python -m pytest tests/reference/conformance/ray_pool.py

It starts one Ray runtime (about 20 s on a busy 2-core machine) on 127.0.0.1, with usage reporting off.
"""

from __future__ import annotations

import subprocess
import sys

from conformance_suites import SERVE, run_check, unit_suite  # noqa: F401  (fixture)


def test_a_planted_bug_fails_the_same_cases_on_ray_as_serially_and_with_jobs(unit_suite):
    """Two Ray tasks at once, shards of 16 cases: the same lines as the serial run and as --jobs 2, in order."""
    planted = SERVE + " --plant top_p_boundary"
    serial = run_check(unit_suite, planted, only="top_p,min_length")
    assert serial[0] == 1 and serial[1][-1] == "76 passed, 70 failed"   # the plant table's top_p 70
    assert run_check(unit_suite, planted, only="top_p,min_length", ray="local", jobs=2) == serial
    assert run_check(unit_suite, planted, only="top_p,min_length", jobs=2) == serial


def test_the_command_line_on_ray_passes_with_refdecodes_own_serve(unit_suite):
    run = subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", "check", str(unit_suite), "--cmd",
                          SERVE, "--only", "min_length,top_k", "--ray", "local", "--jobs", "2"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0 and run.stdout == "130 passed, 0 failed\n"   # 40 min_length + 90 top_k cases
    assert run_check(unit_suite, only="min_length,top_k") == (0, ["130 passed, 0 failed"])
