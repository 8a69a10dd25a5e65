"""docs/conformance.md's numbers about the whole suite are the registry's (tools/docs/conformance_numbers.py
computes the plant table; this checks the totals it is measured against)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.registry import REGISTRY, select

DOCS = Path(__file__).resolve().parents[3] / "docs" / "conformance.md"


@pytest.mark.slow
@pytest.mark.heavy  # 10 s of CPU or more: `pytest --heavy` (CI) runs it
def test_the_transcript_and_the_plant_table_count_the_suite_as_it_is():
    types = select(None)
    total = sum(1 for name in types for _ in REGISTRY[name].build())
    text = DOCS.read_text()
    wrote = re.search(r"wrote (\d+) cases of (\d+) types to suite/", text)
    assert wrote and (int(wrote.group(1)), int(wrote.group(2))) == (total, len(types))
    assert f"{total} passed, 0 failed" in text
    assert f"| failing cases (of {total}) |" in text
    passed_with_plant = [int(a) + int(b) for a, b in re.findall(r"^(\d+) passed, (\d+) failed$", text, flags=re.M)
                         if int(b) > 0 and int(a) + int(b) > 1000]
    assert passed_with_plant and set(passed_with_plant) == {total}
    readme = (DOCS.parents[1] / "README.md").read_text()
    assert f"{total:,} language-neutral cases" in readme
