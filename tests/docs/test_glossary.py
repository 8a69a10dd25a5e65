"""The glossary (docs/glossary.md) is linked from the first use of each term on every page (issue 25 item 8).

``tools/docs/glossary_links.py`` finds, on each page, the first use of each term in the prose (not in code,
headings, tables, math or links) and checks that it is a link to the glossary entry; ``python
tools/docs/glossary_links.py`` adds the missing links.
"""

from __future__ import annotations

import importlib.util
import re

import pytest
from conftest import ROOT

DOCS = ROOT / "docs"
spec = importlib.util.spec_from_file_location("glossary_links", ROOT / "tools" / "docs" / "glossary_links.py")
links = importlib.util.module_from_spec(spec)
spec.loader.exec_module(links)


def test_every_term_has_an_entry():
    text = (DOCS / "glossary.md").read_text("utf-8")
    anchors = set(re.findall(r"^### .+ \{#([\w-]+)\}$", text, flags=re.M))
    assert set(links.TERMS) <= anchors, sorted(set(links.TERMS) - anchors)
    for term in ("processor", "warper", "hypothesis", "pool", "nucleus", "prefill", "logits", "scores", "beam", "group"):
        assert term in anchors, term


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_first_use_of_each_term_links_the_glossary(page):
    assert links.unlinked(page) == [], f"{page.name}: run python tools/docs/glossary_links.py"


def test_the_check_can_fail(tmp_path):
    """A page using "warper" in prose before any link fails; inside code or a heading it does not count."""
    page = tmp_path / "x.md"
    page.write_text("# A warper heading\n\n`warper` in code, then the warper in prose.\n", encoding="utf-8")
    assert links.unlinked(page) == ["warper"]
    assert links.add_links(page) == ["warper"]
    assert "then the [warper](glossary.md#warper) in prose" in page.read_text("utf-8")
    assert links.unlinked(page) == []


def test_the_index_has_a_learning_path_through_every_tutorial():
    """Issue 25 item 9: prerequisites, the order of pages and tutorials, time per lesson."""
    index = (DOCS / "index.md").read_text("utf-8")
    path = index.split("## Learning path", 1)[1].split("\n## ", 1)[0]
    assert "Prerequisites" in path
    tutorials = sorted(p.name for p in (ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
    positions = [path.index(f"`{name}`") for name in tutorials]
    assert positions == sorted(positions), "the tutorials appear in their order"
    rows = [line for line in path.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows and all(re.search(r"\| [^|]*\bmin\b[^|]*\|$|as needed \|$", row) for row in rows), rows
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", path))
    assert {"glossary.md", "misconceptions.md", "greedy.md", "top-p.md", "beam-search.md"} <= linked


def test_implementer_detail_sits_in_a_for_implementers_box():
    """Issue 25 item 14: torch's sort stability past 16 entries is implementer detail, in a marked box."""
    text = (DOCS / "top-p.md").read_text("utf-8")
    box = re.search(r'^!!! note "For implementers[^"]*"\n((?:    .*\n|\n)+)', text, flags=re.M)
    assert box and "16 entries" in box.group(1)
    outside = text.replace(box.group(0), "")
    assert "16 entries" not in outside
    assert re.search(r"^\s*- admonition\s*$", (ROOT / "mkdocs.yml").read_text("utf-8"), flags=re.M)
