"""Every tutorial runs top to bottom: one subprocess per ``tutorials/NN_*.py``, as a reader would run it.

The tutorials assert their own key numbers (hand arithmetic, exhaustive search, two computations
of the same thing), so a tutorial whose printed "expected output" drifted from the code exits
non-zero here. They run from a temporary directory to prove they do not depend on the current
directory, with the interpreter running the tests (``sys.executable``), offline.
The model they use is chosen in ``tutorials/_common.py`` (``MODEL_NAME``).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT

TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
TIMEOUT_S = 120  # each tutorial targets < 30 s; the margin is for a loaded CI machine


def test_tutorials_are_numbered_in_order():
    """01, 02, ... with no gap or duplicate: the numbering is the reading order (pipeline order)."""
    numbers = [int(p.name[:2]) for p in TUTORIALS]
    assert numbers == list(range(1, len(TUTORIALS) + 1)), [p.name for p in TUTORIALS]
    assert len(TUTORIALS) >= 7


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_is_percent_format_and_uses_refdecode(path):
    """jupytext percent format (so ``jupytext --to ipynb`` makes a notebook) and imports, not re-implements."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# %% [markdown]"), "start with a markdown cell: the title"
    assert re.search(r"^# %%$", text, flags=re.M), "no code cell"
    assert re.search(r"^from refdecode import", text, flags=re.M), "import the algorithms from refdecode"
    assert "# ->" in text, "show expected output next to the calls (# -> ...)"
    assert re.search(r"^\s*assert ", text, flags=re.M), "assert the key numbers so drift fails the run"


@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path, tmp_path):
    """``python tutorials/NN_x.py`` exits 0 (every assert inside holds) within the timeout."""
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0, (
        f"{path.name} exited with {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-3000:]}"
        f"\n--- stderr (tail)\n{proc.stderr[-3000:]}"
    )
