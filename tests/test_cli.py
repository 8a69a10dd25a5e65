"""refdecode.cli: the README's main command, and a reader that leaves early (``refdecode ... | head``)."""

from __future__ import annotations

import subprocess
import sys

from conftest import MODELS


def test_cli_prints_the_prompt_and_a_continuation():
    out = subprocess.run([sys.executable, "-m", "refdecode.cli", "ROMEO:", "--model", str(MODELS / "tiny-shakespeare"),
                          "--max-new-tokens", "8"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ROMEO:") and len(out.stdout) > len("ROMEO:\n")


def test_a_closed_pipe_ends_the_cli_without_a_traceback():
    proc = subprocess.Popen([sys.executable, "-m", "refdecode.cli", "ROMEO:", "--model",
                             str(MODELS / "tiny-shakespeare")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is printed (loading the model takes longer)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err.decode(), err.decode()
    assert proc.returncode == 1


_SEEN: list[list[str]] = []


def _record_argv(argv):
    _SEEN.append(argv)
    return 3


def test_a_registered_subcommand_gets_the_remaining_arguments(monkeypatch):
    """``refdecode NAME args`` calls the registered ``module:function`` with ``args`` and returns its status."""
    from refdecode import cli

    _SEEN.clear()
    monkeypatch.setitem(cli.SUBCOMMANDS, "echo-test", "test_cli:_record_argv")
    assert cli.main(["echo-test", "a", "--b"]) == 3
    assert _SEEN == [["a", "--b"]]
