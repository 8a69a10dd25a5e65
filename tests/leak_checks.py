"""Checking that a report gives no answer away: the numbers a text shows against the numbers of an answer.

Used by the tutorials' checker tests (tests/docs/test_labs.py) and the course grader's (tests/tools/course/).
Numbers are compared as written, rounded to ``decimals`` (ints as ints), so "-2.1840" in a report matches an
answer of -2.18403.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np


def _key(value: float, decimals: int) -> str:
    return str(int(value)) if value.is_integer() else f"{value:.{decimals}f}"


def numbers_in(text: str, decimals: int = 3) -> set[str]:
    """Every number written in ``text``."""
    return {_key(float(token), decimals) for token in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)}


def answer_numbers(answer: Any, decimals: int = 3, above: int = 9) -> set[str]:
    """The numbers of ``answer`` (arrays, lists of them, scalars) a report must not show: non-integer floats and
    ints above ``above`` (small ints are also case numbers, steps, rows and counts). Bools and strings give none."""
    if callable(answer) or isinstance(answer, (bool, str, np.bool_)):
        return set()
    out = set()
    for part in (answer if isinstance(answer, (list, tuple)) else [answer]):
        try:
            values = np.asarray(part, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            continue
        out |= {_key(float(v), decimals) for v in values
                if np.isfinite(v) and (not float(v).is_integer() or abs(v) > above)}
    return out
