"""Progress bars: on a terminal, cases done of total, rate and time left; nothing at all when the output is piped."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from conformance_suites import SERVE, unit_suite  # noqa: F401  (fixture)
from refdecode.reference.conformance import progress
from refdecode.reference.conformance.progress import INSTALL_HINT, Progress

CLI = [sys.executable, "-m", "refdecode.cli", "conformance"]


def on_a_terminal(args: list[str]) -> str:
    """Run the command with standard output and error on a pseudo-terminal of 100 columns; everything it drew."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=600) == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_check_draws_done_of_total_rate_and_time_left_on_a_terminal(unit_suite):
    screen = on_a_terminal(CLI + ["check", str(unit_suite), "--cmd", SERVE, "--only", "min_length", "--jobs", "2"])
    assert "check" in screen and "40/40" in screen and "case/s" in screen   # done of total, rate
    assert "<00:00" in screen                                                   # time left, once done
    assert "\r" in screen and "40 passed, 0 failed" in screen                  # a bar redrawn in place; the summary


@pytest.mark.slow
def test_check_export_and_fresh_are_silent_when_piped(unit_suite, tmp_path):
    run = subprocess.run(CLI + ["check", str(unit_suite), "--cmd", SERVE, "--only", "min_length", "--jobs", "2"],
                         capture_output=True, text=True, timeout=600)
    assert (run.returncode, run.stdout, run.stderr) == (0, "40 passed, 0 failed\n", "")
    run = subprocess.run(CLI + ["export", str(tmp_path / "s"), "--only", "min_length"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "" and run.stderr.startswith("wrote 40 cases of 1 types")
    assert "\r" not in run.stderr and "case/s" not in run.stderr and len(run.stderr.splitlines()) == 1
    run = subprocess.run(CLI + ["fresh", str(tmp_path / "f"), "--n", "2", "--seed", "3"], capture_output=True,
                         text=True)
    assert run.returncode == 0 and run.stdout == "" and len(run.stderr.splitlines()) == 1 and "\r" not in run.stderr


@pytest.mark.slow
def test_export_and_fresh_draw_their_bars_on_a_terminal(tmp_path):
    screen = on_a_terminal(CLI + ["export", str(tmp_path / "s"), "--only", "min_length"])
    assert "export min_length (1/1 types)" in screen and "40/40" in screen and "case/s" in screen
    screen = on_a_terminal(CLI + ["fresh", str(tmp_path / "f"), "--n", "2", "--seed", "3"])
    assert "fresh" in screen and "2/2" in screen and "wrote 2 fresh cases" in screen


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_verdict_line_goes_above_the_bar_and_a_pipe_gets_it_plain():
    err, out = Terminal(), Terminal()
    with Progress(3, "check", stream=err) as bar:
        bar.advance()
        bar.say("FAIL x/0001 (a note): why", out)
    assert "1/3" in err.getvalue() and out.getvalue() == "FAIL x/0001 (a note): why\n"
    piped, quiet = io.StringIO(), io.StringIO()
    with Progress(3, "check", stream=quiet) as bar:
        bar.advance()
        bar.say("FAIL x/0001 (a note): why", piped)
    assert bar.bar is None and quiet.getvalue() == "" and piped.getvalue() == "FAIL x/0001 (a note): why\n"


def test_without_tqdm_a_terminal_is_told_how_to_have_the_bar(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)   # `from tqdm import tqdm` raises ImportError
    err = Terminal()
    with Progress(3, "check", stream=err) as bar:
        bar.advance()
    assert bar.bar is None and err.getvalue() == INSTALL_HINT + "\n"
    assert progress.shown(err) and not progress.shown(io.StringIO())
