"""refdecode.reference.conformance.cli: help and exit statuses."""

from __future__ import annotations

import pytest

import subprocess
import sys
from conformance_suites import SERVE
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


@pytest.mark.slow
def test_cli_help_and_exit_status(unit_suite):
    help_text = subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", "check", "--help"],
                               capture_output=True, text=True, timeout=60).stdout
    assert "--cmd COMMAND" in help_text and "--only" in help_text and "NEAR-TIE" in help_text
    out = subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", "check", str(unit_suite), "--cmd",
                          SERVE, "--only", "temperature"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "60 passed, 0 failed\n"
    bad = subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", "check", str(unit_suite / "nope"),
                          "--cmd", SERVE], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "manifest.json" in bad.stderr
