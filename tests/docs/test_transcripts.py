"""Shell transcripts in the docs (a ```console block after a ``<!-- transcript -->`` line) run as written.

Each ``$ command`` runs through the shell in one temporary folder, with the venv's ``refdecode`` first on
PATH; what it prints (stdout and stderr) must match the lines up to the next ``$``, where ``...`` matches
anything (doctest's ELLIPSIS), so timings and long stretches can be left out.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"<!-- transcript -->\n```console\n(.*?)\n```", re.S)


def transcripts() -> list:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for n, block in enumerate(BLOCK.findall(page.read_text())):
            found.append(pytest.param(block, id=f"{page.name}#{n}"))
    return found


def steps(block: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a transcript."""
    pairs: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        else:
            pairs[-1][1].append(line)
    return [(command, "\n".join(lines) + "\n" if lines else "") for command, lines in pairs]


@pytest.mark.slow
@pytest.mark.parametrize("block", transcripts())
def test_transcript_runs_as_written(block, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    checker = doctest.OutputChecker()
    for command, expected in steps(block):
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        got = done.stdout + done.stderr
        assert checker.check_output(expected, got, doctest.ELLIPSIS), f"$ {command}\nexpected:\n{expected}\ngot:\n{got}"


def test_the_conformance_page_has_its_transcript():
    assert any("conformance.md" in p.id for p in transcripts())
    assert steps("$ a\nx\n$ b") == [("a", "x\n"), ("b", "")]
