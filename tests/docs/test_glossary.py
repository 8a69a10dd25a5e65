"""The glossary (docs/glossary.md) is linked from the first use of each term on every page.

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
    """prerequisites, the order of pages and tutorials, time per lesson."""
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


IMPLEMENTER_DETAIL = [  # (page, a phrase of implementer detail: torch's sorts and ties, float32 rounding)
    ("top-p.md", "16 entries"), ("greedy.md", "1.17e-38"), ("beam-search.md", "flat index"),
    ("beam-sample.md", "`torch.sort` is not stable"), ("entropy-sampling.md", "up to 16 entries"),
    ("contrastive-search.md", "gaps below 1e-5"), ("constrained-beam-search.md", "than its resolution tie"),
    ("gpt2.md", "finfo(float32).min"), ("gpt2.md", "gemv-vs-gemm"), ("gpt2.md", "without an upcast"),
    ("speculative-decoding.md", "different\n    grouping"), ("speculative-decoding.md", "0 < gap < 1e-4"),
    ("temperature.md", "1.0000001")]


@pytest.mark.parametrize("page, phrase", IMPLEMENTER_DETAIL, ids=[f"{p}:{w[:12]}" for p, w in IMPLEMENTER_DETAIL])
def test_implementer_detail_sits_in_a_for_implementers_box(page, phrase):
    """pages that mix beginner and implementer detail (torch's sort stability past 16
    entries, float32 accumulation, tie orders) keep the latter in a marked "For implementers" box."""
    text = (DOCS / page).read_text("utf-8")
    boxes = [m.group(0) for m in re.finditer(r'^(?:!!!|\?\?\?\+?) note "For implementers[^"]*"\n((?:    .*\n|\n)+)', text,
                                             flags=re.M)]
    assert any(phrase in box for box in boxes), f"docs/{page}: {phrase!r} is not in a 'For implementers' box"
    outside = text
    for box in boxes:
        outside = outside.replace(box, "")
    assert phrase not in outside, f"docs/{page}: {phrase!r} also appears outside the box"
    assert re.search(r"^\s*- admonition\s*$", (ROOT / "mkdocs.yml").read_text("utf-8"), flags=re.M)


def test_the_speculative_page_still_says_greedy_is_exact_only_in_exact_arithmetic():
    """Moving the float32 detail into the box keeps the learner's statement qualified."""
    text = (DOCS / "speculative-decoding.md").read_text("utf-8")
    idea = text.split("!!! note", 1)[0]
    assert "exact arithmetic" in idea and "near-tie" in idea
