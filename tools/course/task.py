"""The graded assignment's definition: its tests and points, and the answers' JSON form over the pipe.

Contract: shared by ``grade.py`` (the parent, which holds the hidden answers), ``sandbox.py`` (the child
process that runs a submission) and ``make_hidden.py``. It imports numpy and nothing of refdecode at module
level: the sandbox imports it before it loads the model, and must never load refdecode's decoding.

A submission is a folder with ``processors.py`` (problem 1) and ``decoding.py`` (problems 2-4); the
starters are ``tutorials/assignment/``, the handout ``docs/course/assignment.md``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HIDDEN_DIR = Path(__file__).resolve().parent / "hidden"
MODEL_DIR = ROOT / "models" / "tiny-shakespeare"

__all__ = ["Test", "TESTS", "MANUAL", "harness", "encode", "decode"]


def _load_harness() -> Any:
    """``tutorials/assignment/selfcheck.py``, the students' own harness: the model callable (NextTokenModel), the
    adapter refdecode's generate runs on (FullPrefixModel, reference) and the comparisons (compare). One copy, so
    the public check, the hidden cases and the grader agree; loaded under a name a submission cannot shadow."""
    spec = importlib.util.spec_from_file_location("_assignment_selfcheck",
                                                  ROOT / "tutorials" / "assignment" / "selfcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


harness = _load_harness()


@dataclass(frozen=True)
class Test:
    """One graded function: where it lives in the submission, its points, and how its answers compare."""

    name: str        # shown in the report and results.json
    module: str      # the submission file (without .py)
    function: str    # the function in it
    points: int
    kind: str        # how answers compare: "scores", "ids", "tokens", "beams"

    @property
    def needs_model(self) -> bool:
        return self.module == "decoding"


TESTS = [
    Test("1a repetition_penalty", "processors", "repetition_penalty", 5, "scores"),
    Test("1b no_repeat_ngram_banned", "processors", "no_repeat_ngram_banned", 5, "ids"),
    Test("1c top_k_filter", "processors", "top_k_filter", 5, "scores"),
    Test("1d llama_top_p", "processors", "llama_top_p", 5, "scores"),
    Test("2 greedy", "decoding", "greedy", 10, "tokens"),
    Test("3 sample", "decoding", "sample", 20, "tokens"),
    Test("4 beam_search", "decoding", "beam_search", 30, "beams"),
]
#: Problem 5 (the experiments and the written analysis) is graded by hand with the handout's rubric.
MANUAL = ("5 experiments and analysis (graded by hand)", 20)


# ---- answers over the pipe: plain JSON (the parent never unpickles what a submission sends) --------------


def encode(value: Any) -> Any:
    """numpy arrays and scalars, tuples and lists -> JSON-able values ({"array": ..., "dtype": ...})."""
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def decode(value: Any) -> Any:
    """encode's inverse; dtypes other than numpy's numeric ones are refused."""
    if isinstance(value, dict) and set(value) == {"array", "dtype"}:
        dtype = np.dtype(str(value["dtype"]))
        if dtype.kind not in "biuf":
            raise ValueError(f"unexpected dtype {dtype}")
        return np.array(value["array"], dtype=dtype)
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    return value


