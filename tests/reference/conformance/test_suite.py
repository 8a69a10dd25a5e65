"""refdecode.reference.conformance.suite: a suite is read as untrusted input.

Before: a FIFO named as a case file or .npy blocked ``check`` until killed; broken manifests, cases without ``id``,
structured or object .npy files and an .npy header declaring 373 GiB gave tracebacks; ``model.path`` and ``npy``
references resolved anywhere on the machine.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.export import export
from refdecode.reference.conformance.suite import load_npy, load_suite


@pytest.fixture
def suite(tmp_path):
    export(tmp_path, types=["min_length", "top_p", "gpt2_greedy"], limit=3)
    return tmp_path


def _edit_first_case(root, case_type, change):
    path = root / "cases" / f"{case_type}.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = json.dumps(change(json.loads(lines[0])))
    path.write_text("\n".join(lines) + "\n")


def test_a_good_suite_loads(suite):
    manifest, cases = load_suite(suite)
    assert len(cases) == 9 and manifest["case_count"] == 9


@pytest.mark.parametrize("manifest, match", [
    ("[]", "not the manifest of a refdecode conformance suite"),
    ('{"suite": "refdecode conformance suite"}', "`case_types` has to be a list"),
    ('{"suite": "refdecode conformance suite", "case_types": [{"name": "min_length"}]}', "with `name` and `file`"),
    ("{", "not valid JSON"),
    ("[" * 100000 + "]" * 100000, "not valid JSON"),
])
def test_a_broken_manifest_is_one_value_error(suite, manifest, match):
    (suite / "manifest.json").write_text(manifest)
    with pytest.raises(ValueError, match=match):
        load_suite(suite)


def test_broken_cases_name_the_file_and_the_line(suite):
    (suite / "cases" / "min_length.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="min_length"):
        load_suite(suite, only="min_length")
    (suite / "cases" / "min_length.jsonl").write_text('{"id": "x", "type": "min_length"}\n')
    with pytest.raises(ValueError, match=r"min_length.jsonl, line 1 is not a case: .*`expected`"):
        load_suite(suite, only="min_length")
    (suite / "cases" / "min_length.jsonl").write_text("[" * 100000 + "\n")
    with pytest.raises(ValueError, match="line 1 is not a JSON case"):
        load_suite(suite, only="min_length")


def test_a_fifo_is_refused_not_waited_on(suite):
    path = suite / "cases" / "min_length.jsonl"
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ValueError, match="is a FIFO"):
        load_suite(suite, only="min_length")


def test_npy_files_are_checked_before_they_are_read(tmp_path):
    np.save(tmp_path / "structured.npy", np.zeros(3, dtype=[("a", "<f4"), ("b", "<i8")]))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    huge = tmp_path / "huge.npy"
    with open(huge, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (10**11,)})
    (tmp_path / "junk.npy").write_bytes(b"not an npy file at all")
    for name, match in [("structured", "plain numbers"), ("objects", "plain numbers"), ("huge", "372.5 GiB"),
                        ("junk", "not an .npy file")]:
        with pytest.raises(ValueError, match=match):
            load_npy(tmp_path / f"{name}.npy", "array")
    np.save(tmp_path / "good.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    assert load_npy(tmp_path / "good.npy", "array").tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.npy", "arrays/../../outside.npy"])
def test_references_stay_inside_the_suite(suite, path):
    _edit_first_case(suite, "top_p", lambda c: c | {"input": c["input"] | {"scores": {"npy": path}}})
    with pytest.raises(ValueError, match="relative to the suite folder|leads outside the suite folder"):
        load_suite(suite, only="top_p")


def test_a_model_path_stays_inside_the_suite(suite):
    _edit_first_case(suite, "gpt2_greedy", lambda c: c | {"input": c["input"] | {"model": {"kind": "gpt2",
                                                                                          "path": "/tmp"}}})
    with pytest.raises(ValueError, match="model path"):
        load_suite(suite, only="gpt2_greedy")


# ---- streamed: a suite of any size, one case at a time


def test_cases_are_streamed_one_at_a_time(suite):
    """A broken last line is met only when the stream reaches it: the cases before it have been handed out."""
    from refdecode.reference.conformance.suite import open_suite

    path = suite / "cases" / "min_length.jsonl"
    path.write_text(path.read_text() + "{broken\n")
    manifest, announced, cases = open_suite(suite, only="min_length")
    assert announced == 3 and manifest["case_count"] == 9
    assert [next(cases)["id"] for _ in range(3)] == ["min_length/0000", "min_length/0001", "min_length/0002"]
    with pytest.raises(ValueError, match=r"min_length.jsonl, line 4 is not a JSON case"):
        next(cases)


def test_a_case_line_is_bounded_not_the_file(suite, monkeypatch):
    """Before: a cases file over 512 MiB was refused whole (about 380k beam cases); now the file may be any size
    and one line is bounded (a small bound here)."""
    from refdecode.reference.conformance import suite as suite_module

    longest = max(len(line) for line in (suite / "cases" / "top_p.jsonl").read_bytes().splitlines(keepends=True))
    monkeypatch.setattr(suite_module, "MAX_CASE_LINE_BYTES", longest)
    assert len(load_suite(suite, only="top_p")[1]) == 3
    monkeypatch.setattr(suite_module, "MAX_CASE_LINE_BYTES", longest - 1)
    with pytest.raises(ValueError, match=r"top_p.jsonl, line \d is longer than"):
        load_suite(suite, only="top_p")


def test_a_missing_cases_file_is_refused_before_any_case_runs(suite):
    from refdecode.reference.conformance.suite import open_suite

    (suite / "cases" / "top_p.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="the cases of 'top_p' not found"):
        open_suite(suite)
