"""The README's example and commands stay true: the python block runs, and CI runs the README's commands."""

from __future__ import annotations

import pytest

import re
import runpy

from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    """Guards against an example that no longer matches the API (the one most readers copy first)."""
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(blocks) == 1
    script = tmp_path / "readme_example.py"
    script.write_text(blocks[0], encoding="utf-8")
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(script), run_name="__main__")
    lines = [ln for ln in capsys.readouterr().out.splitlines() if re.match(r"^-?\d+\.\d{3} ", ln)]
    assert [ln.split(" ", 1)[1].split(":")[0] for ln in lines] == ["ROMEO", "JULIET"]


def test_readme_shows_two_setup_commands_that_ci_runs():
    bash = re.findall(r"```bash\n(.*?)```", README.split("## Set up")[1].split("##")[0], flags=re.S)
    assert len(bash) == 2, "the README shows exactly two set-up commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert bash[1].strip() in ci, "CI runs the README's test command as written"
    main_cmd = bash[0].strip().rsplit("&&", 1)[1].strip()  # `.venv/bin/refdecode "ROMEO:"`
    assert main_cmd in ci, "CI runs the README's main command"


def test_readme_commands_run_without_an_activated_venv():
    """After the two set-up commands, every command works as written: tools are called through the venv
    (``.venv/bin/python``), never a bare ``python``/``pip``/``jupyter`` that only an activated venv provides;
    notebooks are made from the numbered tutorials only (``_common.py`` is a helper module)."""
    inline = [code for code in re.findall(r"`([^`\n]+)`", README) if " " in code]  # commands, not paths
    commands = re.findall(r"```bash\n(.*?)```", README, flags=re.S) + inline
    bare = re.compile(r"(^|&&|;|\|)\s*(python|pip|jupytext|jupyter|mkdocs|refdecode|pytest)\b(?!3 -m venv)")
    for block in commands:
        for line in block.splitlines():
            line = line.split("#")[0]
            assert not bare.search(line), f"README command needs an activated venv: {line!r}"
    assert "jupytext --to ipynb tutorials/[0-9]*.py" in README and ".[notebooks]" in README


def test_readme_does_not_list_later_rules_among_those_equal_to_4_38_2():
    """min-p is transformers 4.41's rule (docs/parity.md): the README must not put it in the list of algorithms
    equal to 4.38.2, and wherever it names min-p it says which version it is checked against."""
    intro = README.split("## Set up")[0]
    claimed = intro.split("Tokens, scores and beam")[0]          # the list the "equal to 4.38.2" sentence covers
    assert "min-p" not in claimed and "min_p" not in claimed
    for sentence in re.split(r"(?<=[.!?])\s+", README):
        if "min-p" in sentence or "min_p" in sentence:
            assert "4.41" in sentence, f"names min-p without its version: {sentence!r}"


def _collected(*args: str, env: dict | None = None) -> list[str]:
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "REFDECODE_HEAVY": "", **(env or {})})
    return [line for line in proc.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_heavy_tests_are_left_out_of_the_readme_command_but_not_of_ci():
    """The README's `pytest` deselects the tests marked heavy, whatever `-m` a user adds; `--heavy`,
    REFDECODE_HEAVY=1 or naming the file brings them back; CI runs them after the README's command."""
    folder, heavy = "tests/reference/engines", "test_widened_124m.py"
    plain = _collected(folder, "-m", "slow or not slow")
    assert plain and not any(heavy in t for t in plain)
    assert any(heavy in t for t in _collected(folder, "--heavy"))
    assert any(heavy in t for t in _collected(folder, env={"REFDECODE_HEAVY": "1"}))
    assert any(heavy in t for t in _collected(f"{folder}/{heavy}"))
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/python -m pytest --heavy -m heavy" in ci
