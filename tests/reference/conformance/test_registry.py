"""refdecode.reference.conformance.registry: selecting types and groups, registering a new type, every type documented."""

from __future__ import annotations

import json
import re
import numpy as np
import pytest
from conftest import ROOT
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.suite import load_suite
from refdecode.reference.conformance.compare import compare
from refdecode.reference.conformance.export import export
from refdecode.reference.conformance.kinds import F32
from refdecode.reference.conformance.registry import REGISTRY, Case, CaseType, case_count, register, select
from refdecode.reference.conformance.serve import answer
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


def test_full_suite_counts():
    """>= 1,000 cases in all, counted without exporting (docs/conformance.md says "more than 1,000")."""
    gpt2 = [name for name in REGISTRY if name.startswith("gpt2_")]
    counts = {name: sum(1 for _ in REGISTRY[name].build()) for name in UNIT_TYPES + gpt2}
    assert counts["gpt2_beam_search"] == 45 and counts["gpt2_greedy"] == 40
    assert case_count(select(None)) >= sum(counts.values()) + 300  # the toy decodes, the engines' cases
    assert case_count(select(None)) >= 1000


@pytest.mark.slow
def test_a_declared_count_is_what_the_build_yields():
    """``count()`` stands in for building (the suite's count in the docs reads it); here the cases are built. The
    engines' types are checked by test_cases_engines.py, which builds them anyway."""
    declared = [name for name in select(None) if REGISTRY[name].count and "engines" not in REGISTRY[name].groups]
    assert {"greedy", "beam_search", "constrained_beam_search", "beam_search_ties"} <= set(declared)
    for name in declared:
        assert REGISTRY[name].count() == sum(1 for _ in REGISTRY[name].build()), name


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


NEW_TYPES = ["forced_decoder_ids", "stop_strings", "constraint_states", "constrained_beam_search",
             "contrastive_ranking", "gpt2_contrastive_search"]


def test_the_new_types_are_registered_with_their_groups():
    assert set(NEW_TYPES) <= set(REGISTRY)
    assert "processors_and_warpers" in REGISTRY["forced_decoder_ids"].groups
    assert {"decode", "toy", "beam"} <= set(REGISTRY["constrained_beam_search"].groups)
    assert {"decode", "gpt2"} <= set(REGISTRY["gpt2_contrastive_search"].groups)
