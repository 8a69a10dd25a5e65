r"""Compare an implementation's response with a case's expected output: pass, near-tie or fail.

Contract: ``compare(case_type, case, output)`` -> ``(verdict, message)``. The rules (docs page
"Checking your implementation against refdecode"):

- token ids, beam indices, lengths, booleans, strings: **exactly equal** (shapes included);
- floats: the same positions non-finite (``-inf`` where refdecode has ``-inf``), and every finite
  value within ``TOLERANCE`` x the scale of its row: :math:`|a - e| \le 10^{-4} \max(1, \max_{row}|e|)`
  (a row is the last axis of an array: one step's scores of one sequence; a scalar is its own row);
- a **near-tie** is a difference in a *choice* (which tokens survive top-k / top-p, which token
  or candidate a decode picks) where refdecode's own margin for that choice -- the case's
  ``margins`` entry, already divided by the row's scale -- is above 0 but at most ``TOLERANCE``:
  float drift, not a different algorithm. It is reported, and counted as passed. A margin of
  exactly 0 is a tie, decided by the case's ``tie_rule``: breaking it is a failure;
- textbook cases (``cases_textbook.compare_textbook``) have no tolerance: a differing row is "last-bit" when a
  float32 softmax / cumsum differing from torch's in the last bit gives it (``check`` fails it unless told to
  tolerate it), else a failure "on the rule".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .kinds import F32, I64, Kind, ListOf, Nullable, Obj, Scalar
from .registry import CaseType

__all__ = ["TOLERANCE", "compare", "compare_decode", "Difference", "first_difference", "is_near_tie"]

TOLERANCE = 1e-4


@dataclass
class Difference:
    """Where a response first differs: a JSON-ish path, a message, and the array index (row first)."""
    path: str
    message: str
    index: tuple = ()


def _fmt_index(index: tuple) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _array_difference(kind: Kind, expected: np.ndarray, got: Any, path: str) -> Difference | None:
    try:
        value = kind.decode(got)
    except (TypeError, ValueError, KeyError) as err:
        return Difference(path, f"{path}: cannot be read as {type(kind).__name__}({kind.ndim}) ({err})")
    if value.shape != expected.shape:
        return Difference(path, f"{path}: shape {list(value.shape)}, expected {list(expected.shape)}")
    if isinstance(kind, I64):
        bad = np.argwhere(value != expected)
        if bad.size:
            i = tuple(int(x) for x in bad[0])
            return Difference(path, f"{path}{_fmt_index(i)} = {value[i]!s}, expected {expected[i]!s} "
                                    f"({len(bad)} of {expected.size} differ)", i)
        return None
    finite_e, finite_v = np.isfinite(expected), np.isfinite(value)
    same_nonfinite = (value == expected) | (np.isnan(value) & np.isnan(expected))
    bad = np.argwhere((finite_e != finite_v) | (~finite_e & ~same_nonfinite))
    if bad.size:
        i = tuple(int(x) for x in bad[0])
        return Difference(path, f"{path}{_fmt_index(i)} = {value[i]!s}, expected {expected[i]!s} "
                                f"({len(bad)} of {expected.size} entries differ in being finite)", i)
    rows = expected.reshape(-1, expected.shape[-1]) if expected.ndim else expected.reshape(1, 1)
    scale = np.maximum(1.0, np.max(np.where(np.isfinite(rows), np.abs(rows), 0.0), axis=-1, initial=0.0))  # (rows,)
    diff = np.abs(np.where(finite_e, value, 0.0).astype(np.float64) - np.where(finite_e, expected, 0.0))
    err = diff.reshape(rows.shape) / scale[:, None]
    if err.size and err.max() > TOLERANCE:
        flat = int(np.argmax(err))
        i = tuple(int(x) for x in np.unravel_index(flat, expected.shape)) if expected.ndim else ()
        return Difference(path, f"{path}{_fmt_index(i)} = {value[i]!s}, expected {expected[i]!s} "
                                f"(relative error {err.max():.2e} > {TOLERANCE:g})", i)
    return None


def first_difference(kind: Kind, expected: Any, got: Any, path: str = "output") -> Difference | None:
    """The first place where ``got`` (JSON) differs from ``expected`` (decoded) under ``kind``, or None."""
    if isinstance(kind, (F32, I64)):
        return _array_difference(kind, np.asarray(expected), got, path)
    if isinstance(kind, Nullable):
        if expected is None or got is None:
            return None if expected is got else Difference(path, f"{path} = {got!r}, expected {expected!r}")
        return first_difference(kind.inner, expected, got, path)
    if isinstance(kind, Obj):
        if not isinstance(got, dict):
            return Difference(path, f"{path}: expected an object, got {type(got).__name__}")
        for name, item in kind.fields:
            if name not in expected:
                continue
            if name not in got:
                if name in kind.may_omit:
                    continue
                return Difference(f"{path}.{name}", f"{path}: missing field {name!r}")
            diff = first_difference(item, expected[name], got[name], f"{path}.{name}")
            if diff:
                return diff
        return None
    if isinstance(kind, ListOf):
        if not isinstance(got, list) or len(got) != len(expected):
            n = len(got) if isinstance(got, list) else type(got).__name__
            return Difference(path, f"{path}: {n} items, expected {len(expected)}")
        for i, (e, g) in enumerate(zip(expected, got)):
            diff = first_difference(kind.item, e, g, f"{path}[{i}]")
            if diff:
                diff.index = (i,) + diff.index
                return diff
        return None
    if isinstance(kind, Scalar) and kind.json_type == "number":
        try:
            value = kind.decode(got)
        except (TypeError, ValueError, KeyError):
            return Difference(path, f"{path} = {got!r}, expected a number")
        if np.isfinite(expected) != np.isfinite(value) or (not np.isfinite(expected) and value != expected):
            return Difference(path, f"{path} = {value!r}, expected {expected!r}")
        if np.isfinite(expected) and abs(value - expected) > TOLERANCE * max(1.0, abs(expected)):
            return Difference(path, f"{path} = {value!r}, expected {expected!r} (relative error "
                                    f"{abs(value - expected) / max(1.0, abs(expected)):.2e} > {TOLERANCE:g})")
        return None
    if got != expected or type(got) is not type(expected):
        return Difference(path, f"{path} = {got!r}, expected {expected!r}")
    return None


def is_near_tie(margin: float | None) -> bool:
    """A decision is a near-tie when refdecode's margin for it is above 0 and at most ``TOLERANCE``."""
    return margin is not None and 0.0 < margin <= TOLERANCE


def compare(case_type: CaseType, case: dict, output: Any) -> tuple[str, str]:
    """(verdict, message): verdict "pass", "near-tie" or "fail"; the message says where and why."""
    if case_type.compare is not None:
        return case_type.compare(case, output)
    diff = first_difference(case_type.outputs, case["expected"], output)
    if diff is None:
        return "pass", ""
    margins = case.get("margins")
    row = diff.index[0] if diff.index else None
    if isinstance(margins, list) and row is not None and row < len(margins) and is_near_tie(margins[row]):
        return "near-tie", f"{diff.message}; refdecode's margin for this row is {margins[row]:.2e} (near-tie)"
    if case_type.tie_rule and row is not None and _on_a_boundary(case, row):
        return "fail", (f"{diff.message}; refdecode's margin for this row is exactly 0: a value sits on the boundary "
                        f"(for top-p, a cumulative probability equals 1 - top_p in float32), and the rule is: "
                        f"{case_type.tie_rule}")
    if case_type.tie_rule and row is not None and _row_has_tie(case, row):
        return "fail", f"{diff.message}; this row holds a tie, and the rule is: {case_type.tie_rule}"
    return "fail", diff.message


def _on_a_boundary(case: dict, row: int) -> bool:
    """Is refdecode's margin for row ``row`` exactly 0 (a decision on its boundary, not a tie between scores)?"""
    margins = case.get("margins")
    return isinstance(margins, list) and row < len(margins) and margins[row] == 0


def _row_has_tie(case: dict, row: int) -> bool:
    """Does row ``row`` of the case's input ``scores`` hold equal finite values?"""
    scores = case["input"].get("scores")
    if scores is None:
        return False
    values = np.asarray(F32(2).decode(scores))[row]
    finite = values[np.isfinite(values)]
    return np.unique(finite).size < finite.size

def _divergence_step(case: dict, output: Any) -> int | None:
    """The first decoding step at which the response's sequences depart from the expected ones (None if equal)."""
    expected = np.asarray(case["expected"]["sequences"])
    try:
        got = np.asarray(output["sequences"], dtype=np.int64)
    except (KeyError, TypeError, ValueError):
        return 0
    if got.ndim != 2 or got.shape[0] != expected.shape[0]:
        return 0
    width = min(got.shape[1], expected.shape[1])
    columns = np.flatnonzero((got[:, :width] != expected[:, :width]).any(axis=0))
    first = int(columns[0]) if columns.size else (width if got.shape[1] != expected.shape[1] else None)
    if first is None:
        return None
    return max(0, first - np.asarray(case["input"]["input_ids"]).shape[1])


def compare_decode(case: dict, output: Any) -> tuple[str, str]:
    """A whole decode: sequences and beam indices exact, scores within tolerance; a departure at step t is a
    near-tie when some decision at or before step t had a margin in (0, TOLERANCE]."""
    from .registry import REGISTRY

    case_type = REGISTRY[case["type"]]
    diff = first_difference(case_type.outputs, case["expected"], output)
    if diff is None:
        return "pass", ""
    step = _divergence_step(case, output)
    if step is not None:
        margins = [m for row in case.get("margins", [])[: step + 1] for m in row if m is not None]
        smallest = min(margins) if margins else None
        where = f"the decode departs at step {step}"
        if smallest is not None and is_near_tie(smallest):
            return "near-tie", f"{diff.message}; {where}, where refdecode's smallest margin is {smallest:.2e} (near-tie)"
        margin_text = f"; refdecode's smallest margin up to there is {smallest:.2e}" if smallest is not None else ""
        return "fail", f"{diff.message}; {where}{margin_text} (not a near-tie)"
    return "fail", diff.message
