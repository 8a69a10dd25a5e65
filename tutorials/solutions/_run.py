"""Run the checker on every exercise function of a solution file (``python labNN_x.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # tutorials/: _labs, _common

from _labs import EXERCISES, check  # noqa: E402


def check_all(namespace: dict) -> bool:
    """check() every exercise whose name is a function of ``namespace``; True if all match."""
    results = [check(name, namespace[name]) for name in EXERCISES if name in namespace]
    return bool(results) and all(results)
