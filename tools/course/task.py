"""The graded assignment's definition: its tests and points, and the answers' JSON form over the pipe.

Contract: shared by ``grade.py`` (which holds the hidden answers and serves the models), ``sandbox.py`` and
``make_hidden.py``; it never enters the sandbox (``child.py`` carries its own copy of encode and decode). It
imports numpy and nothing of refdecode at module level.

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

__all__ = ["Test", "TESTS", "MANUAL", "harness", "ScriptedModel", "case_model", "encode", "decode"]


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


class ScriptedModel:
    """A model whose logits are a table, for hidden cases that reach a rule the shipped model never does (exact
    ties, an eos at a chosen rank, a top-p cut at a chosen token): ``model(input_ids) -> logits``, int (N, T)
    -> float32 (N, V), row n = ``table[T % S, input_ids[n, -1]]`` for a float32 table (S, V, V)."""

    def __init__(self, table: Any):
        self.table = np.asarray(table, dtype=np.float32)                  # (S, V, V)
        if self.table.ndim != 3 or self.table.shape[1] != self.table.shape[2]:
            raise ValueError(f"`table` must be (S, V, V), got {self.table.shape}")
        self.vocab_size, self.n_positions, self.eos_token_id = int(self.table.shape[2]), 1024, None

    def __call__(self, input_ids: Any) -> np.ndarray:
        ids = np.asarray(input_ids)
        if ids.ndim != 2 or ids.shape[0] < 1 or ids.shape[1] < 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"`input_ids` must be an integer array of shape (N, T), N, T >= 1, got {ids.dtype} "
                             f"{ids.shape}")
        return self.table[ids.shape[1] % len(self.table), ids[:, -1]].copy()     # (N, V) float32


def case_model(case: dict, shipped: Any) -> Any:
    """The model a decoding case runs on: its scripted table, or ``shipped`` (the tiny-shakespeare model)."""
    return ScriptedModel(case["model"]) if "model" in case else shipped


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


