"""refdecode.reference.conformance.cli: help, exit statuses (0 done, 1 cases failed, 2 bad input: one line, no
traceback), and the ``trace`` subcommand."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conformance_suites import SERVE, decode_suite, unit_suite  # noqa: F401  (fixtures)

from refdecode.reference.conformance.cli import main
from refdecode.reference.diff import first_divergence


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_cli_help_and_exit_status(unit_suite):
    help_text = _cli("check", "--help").stdout
    assert "--cmd COMMAND" in help_text and "--only" in help_text and "NEAR-TIE" in help_text
    assert "killed and started again" in help_text and "unsupported" in help_text
    out = _cli("check", str(unit_suite), "--cmd", SERVE, "--only", "temperature")
    assert out.returncode == 0 and out.stdout == "60 passed, 0 failed\n"
    bad = _cli("check", str(unit_suite / "nope"), "--cmd", SERVE)
    assert bad.returncode == 2 and "is not a folder" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("timeout", ["inf", "nan", "-1", "0", "soon"])
def test_a_bad_timeout_is_refused_before_the_implementation_starts(unit_suite, timeout, tmp_path, capsys):
    """Before: --timeout nan was accepted, --timeout inf crashed, -1 was refused only after starting the program."""
    started = tmp_path / "started"
    with pytest.raises(SystemExit) as done:
        main(["check", str(unit_suite), "--cmd", f"touch {started}", "--timeout", timeout])
    assert done.value.code == 2 and "--timeout" in capsys.readouterr().err and not started.exists()


@pytest.mark.parametrize("broken", ["no manifest", "manifest a list", "no case_types"])
def test_a_broken_suite_is_status_2_and_one_line(tmp_path, broken, capsys):
    if broken != "no manifest":
        (tmp_path / "manifest.json").write_text('[]' if broken == "manifest a list" else
                                                '{"suite": "refdecode conformance suite"}')
    assert main(["check", str(tmp_path), "--cmd", "true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("refdecode conformance check: ")


@pytest.mark.slow
def test_trace_writes_refdecodes_trace_of_a_decode_case(decode_suite, tmp_path):
    """a porter gets refdecode's trace of any decode case without Python (toy and GPT-2 cases)."""
    for case_id in ("greedy/0000", "gpt2_greedy/0000", "sample/0001", "beam_search/0002"):
        out = tmp_path / "t.json"
        result = _cli("trace", str(decode_suite), case_id, "-o", str(out))
        assert result.returncode == 0, result.stderr
        trace = json.loads(out.read_text())
        expected = [json.loads(line) for line in (decode_suite / "cases" / f"{case_id.split('/')[0]}.jsonl")
                    .read_text().splitlines() if json.loads(line)["id"] == case_id][0]["expected"]["sequences"]
        assert trace["final"]["sequences"] == expected
        if trace["mode"] in ("greedy_search", "sample"):
            assert first_divergence(trace, expected) is None
    missing = _cli("trace", str(decode_suite), "greedy/9999", "-o", str(tmp_path / "x.json"))
    assert missing.returncode == 2 and "no case 'greedy/9999'" in missing.stderr
    not_a_decode = _cli("trace", str(decode_suite), "beam_scorer/0000", "-o", str(tmp_path / "x.json"))
    assert not_a_decode.returncode == 2 and "not a decode" in not_a_decode.stderr


def test_the_groups_named_in_help_and_docs_are_the_registrys():
    """The group lists in ``--help`` and docs/conformance.md are written out (help stays instant without loading
    the case builders): they must name exactly the registered groups, and the opt-in ones as opt-in."""
    import re
    from pathlib import Path

    from refdecode.reference.conformance.cli import CHECK_EPILOG as DESCRIPTION
    from refdecode.reference.conformance.registry import OPT_IN_GROUPS, REGISTRY

    groups = {g for t in REGISTRY.values() for g in t.groups}
    listed = DESCRIPTION.split("or groups:\n", 1)[1].split(". Without --only", 1)[0]
    assert {g.strip() for g in listed.replace("\n", " ").split(",")} == groups
    assert all(g in DESCRIPTION.split("Without --only", 1)[1] for g in OPT_IN_GROUPS)
    docs = (Path(__file__).resolve().parents[3] / "docs" / "conformance.md").read_text()
    sentence = docs.split("The groups are ", 1)[1].split(";", 1)[0]
    assert set(re.findall(r"`(\w+)`", sentence)) == groups
