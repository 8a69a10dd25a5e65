"""refdecode.reference.conformance: export (deterministic, schema-valid), the protocol, the verdicts, and check vs serve.

Two exports per session keep this fast: ``unit_suite`` holds every unit case (processors,
warpers, BeamHypotheses) in full, ``decode_suite`` the first few cases of each decode type and of
BeamSearchScorer. The whole suite (>= 1,000 cases) is exported and checked against ``serve`` by
``.ci/run``; ``test_full_suite_counts`` builds it without running the decodes twice.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import GOLDEN, ROOT

import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.check import check, load_suite
from refdecode.reference.conformance.compare import TOLERANCE, compare
from refdecode.reference.conformance.export import case_schema, export
from refdecode.reference.conformance.kinds import F32, I64, to_json, validate
from refdecode.reference.conformance.registry import REGISTRY, Case, CaseType, register, select
from refdecode.reference.conformance.serve import answer
from refdecode.reference.conformance.toy_model import ToyModel, toy_hash
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)

SERVE = f'"{sys.executable}" -m refdecode.cli conformance serve'


def files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_check(root, command: str = SERVE, only: str | None = None) -> tuple[int, list[str]]:
    out = io.StringIO()
    status = check(root, command, only=only, out=out)
    return status, out.getvalue().splitlines()


# ----------------------------------------------------------------------------------------------
# export


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


def test_full_suite_counts():
    """>= 1,000 cases in all (counted from the builders; exporting them all is .ci/run's job)."""
    gpt2 = [name for name in REGISTRY if name.startswith("gpt2_")]
    counts = {name: sum(1 for _ in REGISTRY[name].build()) for name in UNIT_TYPES + gpt2}
    toy = {"greedy": 60, "sample": 60, "beam_search": 90, "beam_sample": 40, "group_beam_search": 50,
           "beam_scorer": 70}  # the builders' counts (a generator each: building them all takes ~10 s)
    assert sum(counts.values()) + sum(toy.values()) >= 1000
    assert counts["gpt2_beam_search"] == 45 and counts["gpt2_greedy"] == 40


def test_gpt2_cases_expect_what_transformers_returned(decode_suite):
    """The GPT-2 decode cases' expected sequences equal transformers 4.38.2's, recorded in the golden file
    (so the suite's expected values are not only refdecode's say-so)."""
    golden = np.load(GOLDEN / "decode_search.npz")
    _, cases = load_suite(decode_suite, only="gpt2_greedy,gpt2_beam_search,gpt2_group_beam_search")
    assert len(cases) == 3 * DECODE_LIMIT
    for case in cases:
        golden_id = re.search(r"decode_search.npz:(c\d+)", case["note"]).group(1)
        assert np.array_equal(np.array(case["expected"]["sequences"]), golden[f"{golden_id}/sequences"]), case["id"]


def test_gpt2_contrastive_cases_expect_what_transformers_returned(decode_suite):
    golden = np.load(GOLDEN / "decode_contrastive.npz")
    _, cases = load_suite(decode_suite, only="gpt2_contrastive_search")
    assert len(cases) == DECODE_LIMIT
    for case in cases:
        golden_id = re.search(r"decode_contrastive.npz:(c\d+)", case["note"]).group(1)
        assert case["input"]["config"]["penalty_alpha"] > 0
        assert np.array_equal(np.array(case["expected"]["sequences"]), golden[f"{golden_id}/sequences"]), case["id"]


def _holds(row: list[int], phrase: list[int]) -> bool:
    return any(row[i : i + len(phrase)] == phrase for i in range(len(row) - len(phrase) + 1))


def test_constrained_decodes_return_sequences_holding_every_constraint(decode_suite):
    _, cases = load_suite(decode_suite, only="constrained_beam_search")
    assert len(cases) == DECODE_LIMIT
    for case in cases:
        for row in np.array(case["expected"]["sequences"]).tolist():  # prompt included, as transformers checks
            for entry in case["input"]["config"]["force_words_ids"]:
                phrases = entry if isinstance(entry[0], list) else [entry]
                assert any(_holds(row, p) for p in phrases), (case["id"], row, entry)
        assert (np.array(case["expected"]["beam_indices"])[:, 0] >= 0).all()


def test_the_new_unit_cases_have_margins_away_from_ties(decode_suite):
    """Ranking cases are drawn at least 1e-3 from a flip, except the deliberate exact ties (margin None: tie rule)."""
    _, cases = load_suite(decode_suite, only="contrastive_ranking")
    for case in cases:
        margins = [m for m in case["margins"] if m is not None]
        assert "tie" in case["note"] or min(margins) > 1e-3, case["id"]


# ----------------------------------------------------------------------------------------------
# the toy model


def test_toy_model_state_is_the_fnv_hash_of_the_row():
    """logits = bigram[last] + mix[h mod M], h = FNV-1a over every token; checked by hand for [2, 0]."""
    bigram = np.arange(9, dtype=np.float32).reshape(3, 3)
    mix = np.array([[0.5, 0, 0], [0, 0.25, 0], [0, 0, 0.125]], dtype=np.float32)
    h = ((((2166136261 ^ 2) * 16777619) % 2**32) ^ 0) * 16777619 % 2**32
    assert toy_hash([2, 0]) == h
    logits = ToyModel(bigram, mix)(np.array([[2, 0]])).logits
    assert logits.dtype == np.float32
    np.testing.assert_array_equal(logits[0, -1], bigram[0] + mix[h % 3])


def test_toy_model_cache_gives_the_same_logits_as_the_whole_row():
    """Incremental (cached) calls equal one call on the whole row; reorder moves the state with the rows."""
    rng = np.random.default_rng(0)
    model = ToyModel(rng.standard_normal((5, 5)).astype(np.float32), rng.standard_normal((7, 5)).astype(np.float32))
    rows = np.array([[1, 2, 3, 4], [4, 3, 2, 1]])
    cache = model.new_cache(2, 8)
    model(rows[:, :2], past_key_values=cache)
    step = model(rows[:, 2:], past_key_values=cache).logits
    np.testing.assert_array_equal(step, model(rows).logits[:, 2:])
    cache.reorder(np.array([1, 1]))
    np.testing.assert_array_equal(model(np.array([[0], [0]]), past_key_values=cache).logits[:, 0],
                                  model(np.array([[4, 3, 2, 1, 0]])).logits[[0, 0], -1])


# ----------------------------------------------------------------------------------------------
# protocol and verdicts


def test_answer_reports_errors_as_responses():
    assert json.loads(answer("not json"))["error"].startswith("JSONDecodeError")
    response = json.loads(answer('{"id": "x/1", "type": "top_k", "input": {"scores": [[1.0]], "top_k": 0, '
                                 '"min_tokens_to_keep": 1}}'))
    assert response["id"] == "x/1" and "top_k" in response["error"]


def _top_k_case(scores, k) -> dict:
    case_type = REGISTRY["top_k"]
    inp = {"scores": np.array(scores, dtype=np.float32), "top_k": k, "min_tokens_to_keep": 1}
    return {"id": "t/0", "type": "top_k", "note": "", "input": inp, "expected": case_type.run(inp),
            "margins": case_type.margins(inp, None)}


def test_tolerance_is_relative_to_the_row_scale():
    case = _top_k_case([[1000.0, 3.0, -2.0]], 3)
    close = [[1000.0 + 0.09, 3.0, -2.0]]   # 0.09 / 1000 < 1e-4
    far = [[1000.0, 3.0 + 0.2, -2.0]]      # 0.2 / 1000 > 1e-4
    assert compare(REGISTRY["top_k"], case, {"scores": close})[0] == "pass"
    verdict, message = compare(REGISTRY["top_k"], case, {"scores": far})
    assert verdict == "fail" and "output.scores[0, 1]" in message and "relative error" in message


def test_a_choice_within_the_tolerance_is_a_near_tie_and_a_clear_one_a_failure():
    """top-k=1 on [1, 1 + 5e-5]: keeping token 0 instead of 1 is float drift (margin 5e-5 <= 1e-4);
    on [1, 2] the same mistake is a different algorithm."""
    near = _top_k_case([[1.0, 1.00005, -3.0]], 1)
    assert 0 < near["margins"][0] <= TOLERANCE
    assert compare(REGISTRY["top_k"], near, {"scores": [[1.0, "-inf", "-inf"]]})[0] == "near-tie"
    clear = _top_k_case([[1.0, 2.0, -3.0]], 1)
    assert compare(REGISTRY["top_k"], clear, {"scores": [[1.0, "-inf", "-inf"]]})[0] == "fail"


def test_breaking_a_stated_tie_rule_fails_and_says_the_rule():
    case = _top_k_case([[2.0, 2.0, 1.0]], 1)  # both 2.0 tie with the 1st largest: both kept
    verdict, message = compare(REGISTRY["top_k"], case, {"scores": [[2.0, "-inf", "-inf"]]})
    assert verdict == "fail" and "tie" in message and "equals the k-th largest is kept" in message


def test_missing_fields_wrong_shapes_and_wrong_ids_fail():
    case = _top_k_case([[2.0, 1.0]], 1)
    assert "missing field 'scores'" in compare(REGISTRY["top_k"], case, {})[1]
    assert "shape [1, 3], expected [1, 2]" in compare(REGISTRY["top_k"], case, {"scores": [[2.0, 1.0, 0.0]]})[1]


def _greedy_with_a_wrong_first_token(decode_suite) -> tuple[dict, dict, np.ndarray]:
    """The first greedy case, its decoded expected output, and its sequences with the first new token changed."""
    _, cases = load_suite(decode_suite, only="greedy")
    case = cases[0]
    expected = REGISTRY["greedy"].outputs.decode(case["expected"])
    wrong = expected["sequences"].copy()
    prompt = np.asarray(case["input"]["input_ids"]).shape[1]
    wrong[0, prompt] = (wrong[0, prompt] + 1) % np.asarray(case["input"]["model"]["bigram"]).shape[0]
    return case, expected, wrong


def test_decode_divergence_reports_step_and_verdict(decode_suite):
    case, expected, wrong = _greedy_with_a_wrong_first_token(decode_suite)
    verdict, message = compare(REGISTRY["greedy"], dict(case, expected=expected), {"sequences": to_json(wrong)})
    assert verdict == "fail" and "departs at step 0" in message and "not a near-tie" in message


def test_a_decode_departing_at_a_tiny_margin_is_a_near_tie(decode_suite):
    """The same wrong token as above, but refdecode's margin at that step is 5e-5 (<= 1e-4): float drift."""
    case, expected, wrong = _greedy_with_a_wrong_first_token(decode_suite)
    margins = [[5e-5] + row[1:] for row in case["margins"][:1]] + case["margins"][1:]
    verdict, message = compare(REGISTRY["greedy"], dict(case, expected=expected, margins=margins),
                               {"sequences": to_json(wrong)})
    assert verdict == "near-tie" and "5.00e-05" in message


def test_select_types_and_groups():
    assert select("top_p,beam_search") == ["top_p", "beam_search"]
    assert set(select("beam")) >= {"beam_search", "beam_sample", "group_beam_search", "beam_hypotheses",
                                   "beam_scorer", "gpt2_beam_search"}
    with pytest.raises(ValueError, match="unknown: top_q"):
        select("top_q")


def test_registering_a_case_type_takes_a_few_lines(tmp_path):
    """The registry's promise: a new type is exported, schema-checked and served with no other change."""
    from refdecode.reference.conformance.kinds import FLOAT, obj

    name = "test_scale_by_two"
    register(CaseType(name=name, groups=("test",), summary="scores * factor", inputs=obj(scores=F32(2), factor=FLOAT),
                      outputs=obj(scores=F32(2)),
                      build=lambda: [Case("one", {"scores": np.ones((1, 3), np.float32), "factor": 2.0})],
                      run=lambda inp: {"scores": inp["scores"] * np.float32(inp["factor"])}))
    try:
        manifest = export(tmp_path, types=[name])
        assert manifest["case_count"] == 1 and manifest["case_types"][0]["schema"]["properties"]["type"]["const"] == name
        _, (case,) = load_suite(tmp_path, only=name)
        assert case["expected"] == {"scores": [[2.0, 2.0, 2.0]]}
        response = json.loads(answer(json.dumps({"id": case["id"], "type": name, "input": case["input"]})))
        expected = dict(case, expected=REGISTRY[name].outputs.decode(case["expected"]))
        assert compare(REGISTRY[name], expected, response["output"]) == ("pass", "")
    finally:
        del REGISTRY[name]


def test_every_case_type_is_documented():
    """docs/conformance.md lists every registered type with its input and output fields."""
    text = (ROOT / "docs" / "conformance.md").read_text()
    for name, case_type in REGISTRY.items():
        row = re.search(rf"^\| `{name}` \|.*$", text, flags=re.M)
        assert row, f"{name} missing from the request-types table"
        for field, _ in case_type.inputs.fields + case_type.outputs.fields:
            assert f"`{field}`" in row.group(0), f"{name}: field {field} not in its docs row"


# ----------------------------------------------------------------------------------------------
# check against serve


def test_check_with_serve_passes_every_unit_case(unit_suite):
    status, lines = run_check(unit_suite)
    n = sum(1 for _ in (unit_suite / "cases").glob("*.jsonl") for _ in _.read_text().splitlines())
    assert (status, lines) == (0, [f"{n} passed, 0 failed"])


def test_check_with_serve_passes_every_decode_case(decode_suite):
    status, lines = run_check(decode_suite)
    assert (status, lines) == (0, [f"{len(DECODE_TYPES) * DECODE_LIMIT} passed, 0 failed"])


def test_check_only_and_a_failing_implementation(unit_suite):
    """--only narrows the run; an implementation that answers nothing useful fails every case, exit 1."""
    status, lines = run_check(unit_suite, only="min_length")
    assert status == 0 and lines == ["40 passed, 0 failed"]
    liar = f'"{sys.executable}" -c "import sys, json; [print(json.dumps({{\\"id\\": json.loads(l)[\\"id\\"], ' \
           f'\\"output\\": {{}}}}), flush=True) for l in sys.stdin]"'
    status, lines = run_check(unit_suite, liar, only="min_length")
    assert status == 1 and lines[-1] == "0 passed, 40 failed" and len(lines) == 41
    assert lines[0].startswith("FAIL min_length/0000") and "missing field 'scores'" in lines[0]


def test_check_survives_an_implementation_that_exits(unit_suite):
    status, lines = run_check(unit_suite, f'"{sys.executable}" -c "pass"', only="min_length")
    assert status == 1 and lines[-1] == "0 passed, 40 failed" and "exited" in lines[0]


def test_cli_help_and_exit_status(unit_suite):
    help_text = subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", "check", "--help"],
                               capture_output=True, text=True, timeout=60).stdout
    assert "--cmd COMMAND" in help_text and "--only" in help_text and "NEAR-TIE" in help_text
    out = subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", "check", str(unit_suite), "--cmd",
                          SERVE, "--only", "temperature"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "60 passed, 0 failed\n"
    bad = subprocess.run([sys.executable, "-m", "refdecode.cli", "conformance", "check", str(unit_suite / "nope"),
                          "--cmd", SERVE], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "manifest.json" in bad.stderr


def test_array_kinds_round_trip():
    a = np.array([[0.1, -np.inf, 3.4028235e38]], dtype=np.float32)
    assert np.array_equal(F32(2).decode(json.loads(json.dumps(to_json(a)))), a)
    assert I64(1).decode([1, 2]).dtype == np.int64


def test_non_finite_values_must_match_exactly():
    """nan where refdecode has nan passes; -inf for +inf, or a finite value for nan, fails."""
    from refdecode.reference.conformance.compare import first_difference

    expected = np.array([[np.nan, np.inf, -np.inf, 1.0]], dtype=np.float32)
    assert first_difference(F32(2), expected, [["nan", "inf", "-inf", 1.0]]) is None
    assert "differ in being finite" in first_difference(F32(2), expected, [["nan", "-inf", "-inf", 1.0]]).message
    assert "differ in being finite" in first_difference(F32(2), expected, [[0.0, "inf", "-inf", 1.0]]).message


def test_gpt2_cases_without_the_golden_files_say_what_to_do(monkeypatch, tmp_path):
    from refdecode.reference.conformance import cases_decode

    monkeypatch.setattr(cases_decode, "GOLDEN", tmp_path)
    with pytest.raises(ValueError, match="only a checkout of the refdecode repository has.*--only"):
        list(REGISTRY["gpt2_greedy"].build())
