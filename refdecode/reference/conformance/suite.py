r"""The suite on disk, read as untrusted input: every failure is one ``ValueError`` naming the file and the rule.

Contract: :func:`open_suite` streams an exported suite (``manifest.json``, ``cases/*.jsonl``, ``arrays/**.npy``,
``models/*``) one case at a time for ``check`` (a suite of any size: only the cases in flight are in memory);
:func:`load_suite` reads it whole for ``trace`` and the tests; :func:`read_manifest` is what ``export`` trusts before
replacing an earlier export. A suite may come from anybody (an implementation is run on suites other people wrote),
so:

- only regular files are opened, each line and array with a size limit (a FIFO is refused, not waited on);
- every path a suite names (``{"npy": ...}``, a model's ``path``) must stay inside the suite folder;
- an ``.npy`` file is read only after its header: a plain numeric dtype, a shape whose bytes fit the file;
- the manifest and every case are checked for the fields ``check`` reads (a case needs ``id``, ``type``,
  ``input``, ``expected``), and JSON nesting is bounded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...text.files import open_regular_file, read_text_file
from ...validation import format_bytes
from .registry import REGISTRY, select

__all__ = ["load_suite", "open_suite", "read_manifest", "load_npy", "inside", "SUITE_NAME", "MAX_CASE_LINE_BYTES",
           "MAX_NPY_BYTES", "MODEL_FIELDS"]

SUITE_NAME = "refdecode conformance suite"  # the manifest's "suite": what makes a folder an export
MAX_CASE_LINE_BYTES = 64 * 2**20           # one case of a cases/<type>.jsonl (a file is streamed: any size)
MAX_NPY_BYTES = 256 * 2**20                # one arrays/...npy (the largest a suite writes: a few MB)
MODEL_FIELDS = ("model", "assistant")      # input fields that may name a GPT-2 checkpoint folder


def inside(root: Path, relative: Any, what: str) -> Path:
    """``root / relative`` resolved, refusing an absolute path or one that leaves ``root`` (``..``, a symlink)."""
    if not isinstance(relative, str) or not relative or Path(relative).is_absolute():
        raise ValueError(f"{what} has to be a path relative to the suite folder, but is {relative!r}")
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ValueError(f"{what} {relative!r} leads outside the suite folder {root}")
    return path


def read_manifest(root: Path) -> dict:
    """``root/manifest.json`` if it is a refdecode suite's manifest (``suite`` and a list of ``case_types``)."""
    path = root / "manifest.json"
    try:
        manifest = json.loads(read_text_file(path, "the suite's manifest"))
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{path} is not valid JSON ({e.__class__.__name__})") from None
    if not isinstance(manifest, dict) or manifest.get("suite") != SUITE_NAME:
        raise ValueError(f"{path} is not the manifest of a refdecode conformance suite (an object with "
                         f"\"suite\": \"{SUITE_NAME}\")")
    entries = manifest.get("case_types")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str)
                                                and isinstance(e.get("file"), str) for e in entries):
        raise ValueError(f"{path}: `case_types` has to be a list of objects with `name` and `file`")
    return manifest


def load_npy(path: Path, what: str) -> np.ndarray:
    """A plain numeric ``.npy`` array, its header checked before any data is read."""
    fd = open_regular_file(path, what)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        try:
            version = np.lib.format.read_magic(f)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
            if version not in read_header:
                raise ValueError(f"format version {version} (1.0 and 2.0 are read)")
            shape, fortran, dtype = read_header[version](f)
        except (ValueError, SyntaxError, TypeError) as e:
            raise ValueError(f"{what} {path} is not an .npy file: {e}") from None
        if dtype.kind not in "biuf" or dtype.hasobject or dtype.fields is not None:
            raise ValueError(f"{what} {path} holds dtype {dtype}; a suite's arrays are plain numbers")
        nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if nbytes > min(size, MAX_NPY_BYTES):
            raise ValueError(f"{what} {path} declares {shape} {dtype} ({format_bytes(nbytes)}), more than the file "
                             f"holds ({format_bytes(size)})" if nbytes > size else
                             f"{what} {path} is {format_bytes(nbytes)}, more than {format_bytes(MAX_NPY_BYTES)}")
        data = np.fromfile(f, dtype=dtype, count=int(np.prod(shape)))
    return data.reshape(shape, order="F" if fortran else "C")


def _resolve(value: Any, root: Path, depth: int = 0) -> Any:
    """Every ``{"npy": path}`` in a case replaced by its array; nesting bounded (a case is a few levels deep)."""
    if depth > 64:
        raise ValueError("a case nests deeper than 64 levels")
    if isinstance(value, dict):
        if set(value) == {"npy"}:
            return load_npy(inside(root, value["npy"], "an array reference"), "array")
        return {k: _resolve(v, root, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, root, depth + 1) for v in value]
    return value


def _case(line: str, path: Path, number: int, root: Path) -> dict:
    where = f"{path}, line {number}"
    try:
        case = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{where} is not a JSON case ({e.__class__.__name__})") from None
    if not isinstance(case, dict) or not all(k in case for k in ("id", "type", "input", "expected")) \
            or not isinstance(case["id"], str) or not isinstance(case["input"], dict):
        raise ValueError(f"{where} is not a case: an object with `id` (a string), `type`, `input` (an object) "
                         "and `expected` is required")
    case.setdefault("note", "")
    case = _resolve(case, root)
    for key in MODEL_FIELDS:  # the checkpoints a case names, as absolute paths inside the suite
        model = case["input"].get(key)
        if isinstance(model, dict) and "path" in model:
            model["path"] = str(inside(root, model["path"], f"{where}: the model path"))
    return case


def _entries(root: Path, manifest: dict, only: str | None) -> list[dict]:
    """The manifest's entries that ``only`` selects, each known to this refdecode."""
    wanted = set(select(only))
    entries = [entry for entry in manifest["case_types"] if entry["name"] in wanted]
    for entry in entries:
        if entry["name"] not in REGISTRY:
            raise ValueError(f"the suite has case type {entry['name']!r}, which this refdecode does not know: "
                             f"export the suite with this refdecode version ({manifest.get('refdecode_version')} "
                             "made it)")
    return entries


def _lines(path: Path, what: str):
    """(line number, text) of each non-blank line of a cases file, read one line at a time: the file may be of any
    size, a line at most MAX_CASE_LINE_BYTES."""
    fd = open_regular_file(path, what)
    with os.fdopen(fd, "rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(MAX_CASE_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_CASE_LINE_BYTES:
                raise ValueError(f"{path}, line {number} is longer than {format_bytes(MAX_CASE_LINE_BYTES)}")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path}, line {number} is not UTF-8 text") from None
            if line.strip():
                yield number, line


def open_suite(directory: str | Path, only: str | None = None) -> tuple[dict, int, Iterator[dict]]:
    """(manifest, number of cases its manifest announces, the cases one at a time): a suite of any size is streamed,
    never held whole. The manifest is checked at once; a case is checked when it is read (a broken one raises
    ``ValueError`` naming its file and line there)."""
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"`DIR` has to be an exported suite (refdecode conformance export DIR), but {root} is not "
                         "a folder")
    manifest = read_manifest(root)
    entries = _entries(root, manifest, only)
    files = [(entry["name"], inside(root, entry["file"], f"the file of case type {entry['name']!r}"))
             for entry in entries]
    for name, path in files:  # a missing file, a FIFO: refused before any case runs
        os.close(open_regular_file(path, f"the cases of {name!r}"))
    announced = sum(e["count"] for e in entries if isinstance(e.get("count"), int) and e["count"] >= 0)

    def cases() -> Iterator[dict]:
        for name, path in files:
            for number, line in _lines(path, f"the cases of {name!r}"):
                case = _case(line, path, number, root)
                if case["type"] != name:
                    raise ValueError(f"{path}, line {number}: a case of type {case['type']!r} in the file of "
                                     f"{name!r}")
                yield case

    return manifest, announced, cases()


def load_suite(directory: str | Path, only: str | None = None) -> tuple[dict, list[dict]]:
    """(manifest, cases) of an exported suite, held whole (``trace``, tests); ``only`` as ``--only``. Arrays in .npy
    files are loaded. ``check`` streams instead (:func:`open_suite`)."""
    manifest, _, cases = open_suite(directory, only)
    return manifest, list(cases)
