"""refdecode.reference.conformance.export: the suite on disk is deterministic, versioned, schema-checked, and says what it needs."""

from __future__ import annotations

import json
import numpy as np
import pytest
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.suite import load_suite
from refdecode.reference.conformance.export import case_schema, export
from refdecode.reference.schema import validate
from refdecode.reference.conformance.registry import REGISTRY
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


def files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_export_twice_gives_identical_bytes(decode_suite, tmp_path):
    """Determinism: exporting again gives the same bytes (no timestamps, no set order, no unseeded randomness);
    checked on the types with the most moving parts (sampling uniforms, GPT-2 models, recorded scorer calls)."""
    types = ["beam_sample", "gpt2_beam_search", "beam_scorer"]
    export(tmp_path, types=types, limit=DECODE_LIMIT)
    again, first = files(tmp_path), files(decode_suite)
    assert len(again) > 5
    assert [name for name in again if name != "manifest.json" and again[name] != first.get(name)] == []
    entries = {e["name"]: e for e in json.loads(first["manifest.json"])["case_types"]}
    assert json.loads(again["manifest.json"])["case_types"] == [entries[t] for t in types]


@pytest.mark.slow
def test_export_of_units_is_deterministic_too(unit_suite, tmp_path):
    export(tmp_path, types=UNIT_TYPES)
    assert files(unit_suite) == files(tmp_path)


def test_manifest_is_versioned_and_has_a_schema_per_type(unit_suite, decode_suite):
    for root, types in [(unit_suite, UNIT_TYPES), (decode_suite, DECODE_TYPES)]:
        manifest = json.loads((root / "manifest.json").read_text())
        assert manifest["suite_version"] and manifest["refdecode_version"] == refdecode.__version__
        assert manifest["transformers_version"] == "4.38.2"
        assert [e["name"] for e in manifest["case_types"]] == types
        for entry in manifest["case_types"]:
            assert entry["schema"]["properties"]["type"] == {"const": entry["name"]}
            assert entry["count"] == len((root / entry["file"]).read_text().splitlines()) > 0


@pytest.mark.slow
def test_every_case_validates_against_its_schema(unit_suite, decode_suite):
    for root in (unit_suite, decode_suite):
        manifest = json.loads((root / "manifest.json").read_text())
        for entry in manifest["case_types"]:
            for line in (root / entry["file"]).read_text().splitlines():
                case = json.loads(line)
                assert validate(case, entry["schema"]) == [], case["id"]


def test_a_wrong_case_does_not_validate(unit_suite):
    """The validator is not vacuous: a missing field, a wrong type and a bad float string are reported."""
    schema = case_schema(REGISTRY["top_k"])
    case = json.loads((unit_suite / "cases" / "top_k.jsonl").read_text().splitlines()[0])
    assert validate(case, schema) == []
    broken = json.loads(json.dumps(case))
    del broken["input"]["top_k"]
    broken["expected"]["scores"][0][0] = "minus infinity"
    broken["extra"] = 1
    errors = validate(broken, schema)
    assert any("missing required field 'top_k'" in e for e in errors)
    assert any("'minus infinity' is not a number" in e for e in errors)
    assert any("unexpected field 'extra'" in e for e in errors)


def test_big_arrays_go_to_npy_and_load_back(unit_suite):
    """GPT-2-sized top-p rows are stored as .npy (float32) and come back identical through load_suite."""
    _, cases = load_suite(unit_suite, only="top_p")
    big = [c for c in cases if "GPT-2-sized" in c["note"]]
    assert big and all(isinstance(c["input"]["scores"], np.ndarray) for c in big)
    assert big[0]["input"]["scores"].dtype == np.float32 and big[0]["input"]["scores"].shape == (1, 50257)
    line = next(x for x in (unit_suite / "cases" / "top_p.jsonl").read_text().splitlines() if "GPT-2-sized" in x)
    assert '"scores":{"npy":"arrays/top_p/' in line


def test_gpt2_cases_without_the_golden_files_say_what_to_do(monkeypatch, tmp_path):
    from refdecode.reference.conformance import cases_decode

    monkeypatch.setattr(cases_decode, "GOLDEN", tmp_path)
    with pytest.raises(ValueError, match="only a checkout of the refdecode repository has.*--only"):
        list(REGISTRY["gpt2_greedy"].build())


# ---- an export replaces only what it can prove it wrote


def test_an_export_into_a_folder_of_other_files_refuses_and_deletes_nothing(tmp_path):
    """Before: any folder holding a manifest.json lost its cases/, arrays/ and models/, whatever they held."""
    (tmp_path / "manifest.json").write_text('{"mine": true}')
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "notes.txt").write_text("my notes")
    with pytest.raises(ValueError, match="refusing to write into .* not an earlier export"):
        export(tmp_path, types=["min_length"])
    assert (tmp_path / "cases" / "notes.txt").read_text() == "my notes"
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(ValueError, match="refusing to write into"):
        export(tmp_path, types=["min_length"])


def test_a_re_export_deletes_the_files_it_listed_and_keeps_the_others(tmp_path):
    export(tmp_path, types=["min_length", "top_p"])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert "cases/top_p.jsonl" in manifest["files"] and any(f.startswith("arrays/top_p/") for f in manifest["files"])
    (tmp_path / "cases" / "mine.txt").write_text("keep me")
    export(tmp_path, types=["min_length"])
    assert (tmp_path / "cases" / "mine.txt").read_text() == "keep me"
    assert not (tmp_path / "cases" / "top_p.jsonl").exists() and not (tmp_path / "arrays").exists()
    (tmp_path / "cases" / "top_p.jsonl").write_text("someone else's")   # not in the manifest: never overwritten
    with pytest.raises(ValueError, match="refusing to overwrite .*top_p.jsonl"):
        export(tmp_path, types=["min_length", "top_p"])
    assert (tmp_path / "cases" / "top_p.jsonl").read_text() == "someone else's"


def test_a_manifest_listing_paths_outside_the_suite_deletes_nothing_outside(tmp_path):
    outside = tmp_path / "precious.txt"
    outside.write_text("do not delete")
    suite = tmp_path / "suite"
    export(suite, types=["min_length"])
    manifest = json.loads((suite / "manifest.json").read_text())
    manifest["files"].append("../precious.txt")
    (suite / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="leads outside the suite folder"):
        export(suite, types=["min_length"])
    assert outside.read_text() == "do not delete"


def test_each_case_is_written_as_it_is_run_and_a_failed_export_leaves_no_manifest(tmp_path):
    """Streamed: the cases built before a builder fails are on disk already; without a manifest the folder is no
    suite (and a later export may not delete it)."""
    import dataclasses

    top_k = REGISTRY["top_k"]

    def build():
        yield from top_k.build()[:2]
        raise RuntimeError("the third case cannot be built")

    with pytest.raises(RuntimeError, match="third case"):
        export(tmp_path, case_types=[dataclasses.replace(top_k, build=build)])
    lines = (tmp_path / "cases" / "top_k.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["top_k/0000", "top_k/0001"]
    assert not (tmp_path / "manifest.json").exists()
