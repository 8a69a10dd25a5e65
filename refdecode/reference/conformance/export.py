r"""``refdecode conformance export DIR``: write the suite -- manifest, cases, arrays, model checkpoints.

Contract: every registered case type's ``build()`` inputs, run through refdecode (``run``), written
as JSON Lines, one case per line, in a layout any language can read::

    DIR/manifest.json                  suite and refdecode versions, transformers version matched,
                                       tolerance, and per case type: file, count, groups, tie rule,
                                       JSON Schema of one case
    DIR/cases/<type>.jsonl             {"id", "type", "note", "input", "expected", "margins"?}
    DIR/arrays/<type>/<n>.<field>.npy  arrays of more than NPY_THRESHOLD values ({"npy": path} in the case)
    DIR/models/<name>/                 config.json + model.safetensors of the GPT-2 cases

Deterministic: seeded builders, no timestamps, keys in a fixed order, so two exports are
byte-identical. Paths inside the suite are relative to DIR.

An export replaces only what it can prove it wrote: ``DIR`` must be empty, missing, or an earlier export,
whose manifest (``"suite": "refdecode conformance suite"``) lists every file it wrote (``files``); those
files are deleted and nothing else. A folder with any other content is refused, and so is a file the new
export would overwrite that the old manifest does not list.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

import refdecode

from .kinds import to_json
from .registry import REGISTRY, CaseType
from .suite import MODEL_FIELDS, SUITE_NAME, inside, read_manifest

__all__ = ["export", "case_schema", "SUITE_VERSION", "TRANSFORMERS_VERSION", "NPY_THRESHOLD", "dumps"]

SUITE_VERSION = "1.0.0"
TRANSFORMERS_VERSION = "4.38.2"
NPY_THRESHOLD = 4096  # arrays with more values than this go to .npy files


def dumps(value: Any) -> str:
    """One JSON line: standard JSON (no NaN/Infinity literals), compact, keys in insertion order."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=True)


def case_schema(case_type: CaseType) -> dict:
    """The JSON Schema of one case of this type (the manifest carries one per type)."""
    properties = {
        "id": {"type": "string"}, "type": {"const": case_type.name}, "note": {"type": "string"},
        "input": case_type.inputs.schema(), "expected": case_type.outputs.schema(),
        "margins": {"description": "how far each decision is from flipping (per row, or per step and row), "
                                   "divided by the row's scale; null where there is no decision"},
        "last_bit": {"description": "textbook cases, per row: cut_ulps (torch's float32 value at the cut minus the "
                                    "threshold, in ulps) and alternatives (the token ids transformers' rule keeps "
                                    "with a softmax / cumsum differing from torch's in the last bit)"},
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"conformance case: {case_type.name}",
            "type": "object", "properties": properties, "required": ["id", "type", "note", "input", "expected"],
            "additionalProperties": False}


def _store_arrays(values: dict, root: Path, stem: str, written: list[str]) -> dict:
    """Top-level arrays larger than NPY_THRESHOLD -> .npy files under root, replaced by {"npy": relative path}."""
    out = {}
    for name, value in values.items():
        if isinstance(value, np.ndarray) and value.size > NPY_THRESHOLD:
            rel = f"arrays/{stem}.{name}.npy"
            _refuse_foreign(root, [rel])
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            if value.dtype.hasobject:  # only plain numeric arrays go to .npy files
                raise TypeError(f"`{name}` holds Python objects; a conformance array must be numeric")
            np.save(root / rel, value)
            written.append(rel)
            out[name] = {"npy": rel}
        else:
            out[name] = to_json(value)
    return out


def _copy_model(model: dict, root: Path, written: list[str]) -> dict:
    """A checkpoint input {"kind": "gpt2" or "llama", "path": source dir} -> copied to DIR/models/<name> (config.json
    and the weights: model.safetensors, or a sharded checkpoint's index and shards), path made relative."""
    if not isinstance(model, dict) or model.get("kind") not in ("gpt2", "llama"):
        return model
    source = Path(model["path"])
    target = root / "models" / source.name
    if target.exists() and f"models/{source.name}/config.json" not in written:
        raise ValueError(f"refusing to use {target}: an earlier export did not write it")
    if not target.exists():
        target.mkdir(parents=True)
        index = source / "model.safetensors.index.json"
        weights = (["model.safetensors.index.json"] + sorted(set(json.loads(index.read_text())["weight_map"].values()))
                   if index.is_file() else ["model.safetensors"])
        for name in ["config.json"] + weights:
            shutil.copyfile(source / name, target / name)
            written.append(f"models/{source.name}/{name}")
    return {**model, "path": f"models/{source.name}"}


def _first(cases: Iterable, limit: int | None) -> list:
    """(index, case) pairs: all cases, or the first ``limit`` (a builder may be a generator: the rest is not built)."""
    return list(enumerate(itertools.islice(cases, limit)))


def _prepare(root: Path) -> None:
    """Make ``root`` ready for an export: missing or empty, or an earlier export whose listed files are deleted."""
    if not root.exists() or (root.is_dir() and not any(root.iterdir())):
        root.mkdir(parents=True, exist_ok=True)
        return
    if not root.is_dir():
        raise ValueError(f"`DIR` has to be a folder, but {root} is a file")
    try:
        manifest = read_manifest(root)
    except (ValueError, OSError) as e:
        raise ValueError(f"refusing to write into {root}: it is not empty and not an earlier export ({e}); an export "
                         "only replaces files an earlier export wrote") from None
    files = manifest.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError(f"refusing to write into {root}: its manifest does not list the files it wrote (an older "
                         "export?), so nothing there can be proven to be refdecode's; delete it yourself or export "
                         "into an empty folder")
    listed = [inside(root, rel, "a file the earlier manifest lists") for rel in files]  # all checked before any goes
    for path in listed:
        if path.is_file() and not path.is_symlink():
            path.unlink()
    (root / "manifest.json").unlink()
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()  # the folders the old export made, now empty; a folder holding other files stays


def _refuse_foreign(root: Path, written: list[str]) -> None:
    """The files about to be written must not exist: if one does, the earlier export did not list it."""
    for rel in written:
        if (root / rel).exists():
            raise ValueError(f"refusing to overwrite {root / rel}: an earlier export did not write it")


def export(directory: str | Path, types: list[str] | None = None, limit: int | None = None,
           case_types: list[CaseType] | None = None) -> dict:
    """Write the suite to ``directory``; returns the manifest.

    ``types`` and ``limit`` (the first ``limit`` cases of each type) export a subset, as the tests do;
    ``case_types`` (instead of ``types``): these case types as given, e.g. a registered type with other cases
    (``fresh.py``).
    """
    root = Path(directory)
    _prepare(root)
    (root / "cases").mkdir(exist_ok=True)
    entries, written = [], []
    if case_types is None:
        case_types = [REGISTRY[name] for name in (types if types is not None else list(REGISTRY))]
    for case_type in case_types:
        name = case_type.name
        lines = []
        for n, case in _first(case_type.build(), limit):
            expected = case.expected if case.expected is not None else case_type.run(case.input)
            record: dict[str, Any] = {"id": f"{name}/{n:04d}", "type": name, "note": case.note}
            stored_input = dict(case.input)
            for key in MODEL_FIELDS:
                if key in stored_input:
                    stored_input[key] = _copy_model(stored_input[key], root, written)
            record["input"] = _store_arrays(stored_input, root, f"{name}/{n:04d}.input", written)
            record["expected"] = _store_arrays(expected, root, f"{name}/{n:04d}.expected", written)
            if case_type.margins is not None:
                record["margins"] = to_json(case_type.margins(case.input, expected))
            if case.last_bit is not None:
                record["last_bit"] = to_json(case.last_bit)
            lines.append(dumps(record))
        _refuse_foreign(root, [f"cases/{name}.jsonl"])
        (root / "cases" / f"{name}.jsonl").write_text("".join(line + "\n" for line in lines))
        written.append(f"cases/{name}.jsonl")
        entries.append({"name": name, "file": f"cases/{name}.jsonl", "count": len(lines),
                        "groups": list(case_type.groups), "summary": case_type.summary,
                        "tie_rule": case_type.tie_rule, "schema": case_schema(case_type)})
    manifest = {
        "suite": SUITE_NAME,
        "suite_version": SUITE_VERSION,
        "refdecode_version": refdecode.__version__,
        "transformers_version": TRANSFORMERS_VERSION,
        "docs": "docs/conformance.md: Checking your implementation against refdecode",
        "tolerance": 1e-4,
        "case_count": sum(e["count"] for e in entries),
        "case_types": entries,
        "files": sorted(written),  # what a later export may delete: every file this one wrote, nothing else
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, allow_nan=False) + "\n")
    return manifest
