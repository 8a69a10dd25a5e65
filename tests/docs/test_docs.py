"""The docs site (docs/*.md): every number on a page comes from code this test runs.

Each page writes its worked examples as ``>>>`` doctest lines inside ```` ```pycon ```` fences;
this test runs them with the stdlib ``doctest`` (cwd = repo root, a fresh namespace per page),
so a change in the package that moves a number breaks the test instead of silently making the
page wrong (the drift *labml*'s ``top_k=5`` label suffered). It also checks that the nav of
``mkdocs.yml`` and the files in ``docs/`` agree, that every ``::: refdecode.x.y`` block names an
object that exists, and that no page loads anything from the network. It needs neither mkdocs
nor PyYAML (CI builds the site separately with ``mkdocs build --strict``).
"""

from __future__ import annotations

import doctest
import importlib
import re

import pytest
from conftest import ROOT

DOCS = ROOT / "docs"
#: The English pages (the structure, nav and citation checks below are about them).
PAGES = sorted(p for p in DOCS.glob("*.md") if not p.name.endswith(".zh.md"))
#: The Chinese edition (docs/x.zh.md): the same examples, run here too (tests/docs/test_zh.py ties them to x.md).
ZH_PAGES = sorted(DOCS.glob("*.zh.md"))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def nav_pages() -> list[str]:
    """The ``*.md`` files named in the ``nav:`` section of mkdocs.yml, in order."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:", 1)[1]
    return re.findall(r":\s*([\w./-]+\.md)\s*$", nav, flags=re.M)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES + ZH_PAGES, ids=[p.name for p in PAGES + ZH_PAGES])
def test_page_examples_run(page, monkeypatch):
    """Run the page's doctest examples; on failure doctest prints the expected and the actual output."""
    monkeypatch.chdir(ROOT)
    text = page.read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, {"__name__": f"docs_{page.stem}"}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{page.name}: {result.failed} of {result.attempted} examples failed (see above)"


FIVE_PARTS = ["The idea", "The equation", "Worked example", "The code", "transformers 4.38.2 and the source documents"]
#: Pages that are not a pipeline stage (reference tables, the references), with the parts they do have;
#: they still run worked examples, but pull no code from the source.
OTHER_PAGES = {"parity.md": FIVE_PARTS[:3], "references.md": ["The idea", "Worked example"],
               "source-documents.md": [], "glossary.md": ["The idea", "Worked example"],
               "misconceptions.md": ["The idea", "Worked example"], "engines.md": ["The idea", "Worked example"],
               "checking-the-code-you-learn-from.md": ["The idea", "Worked example"],
               "choosing-a-strategy.md": ["The idea", "Worked example", "transformers 4.38.2 and the source documents"]}


def test_every_page_has_the_five_parts():
    """Idea, equation, worked example (a doctest), the code pulled from the source (``:::``), transformers/pitfalls.

    The parity and references pages are not stages: they have some of the parts (``OTHER_PAGES``) and their own sections.
    """
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        headings = re.findall(r"^## (.+?)\s*$", text, flags=re.M)
        wanted = OTHER_PAGES.get(page.name, FIVE_PARTS)
        assert [h for h in headings if h in FIVE_PARTS] == wanted, f"{page.name}: sections {headings}"
        assert ">>> " in text, f"{page.name}: no worked example"
        if page.name not in OTHER_PAGES:
            assert re.search(r"^::: refdecode\.", text, flags=re.M), f"{page.name}: no code block from the source"


def test_nav_and_docs_folder_agree():
    nav = nav_pages()
    assert nav, "mkdocs.yml has no nav"
    assert len(nav) == len(set(nav)), f"a page is listed twice in the nav: {nav}"
    missing = [p for p in nav if not (DOCS / p).is_file()]
    assert not missing, f"nav lists pages that do not exist: {missing}"
    orphans = sorted({p.name for p in PAGES} - set(nav))
    assert not orphans, f"pages in docs/ that the nav does not list: {orphans}"


def test_mkdocstrings_identifiers_exist():
    """``::: refdecode.module.name`` must name a real module attribute (mkdocs would fail on it too)."""
    for page in PAGES:
        for ident in re.findall(r"^::: (refdecode[\w.]*)", page.read_text(encoding="utf-8"), flags=re.M):
            parts = ident.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:cut]))
                except ModuleNotFoundError:
                    continue
                for attr in parts[cut:]:
                    assert hasattr(obj, attr), f"{page.name}: {ident} does not exist"
                    obj = getattr(obj, attr)
                break


def test_nothing_is_loaded_from_the_network():
    """Offline site: scripts and styles are vendored files; no page pulls a remote asset."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"font:\s*false", config), "Material would load Google Fonts"
    for section in ("extra_javascript", "extra_css"):
        block = re.split(r"\n\S", config.split(f"\n{section}:", 1)[1], maxsplit=1)[0] if f"\n{section}:" in config else ""
        for asset in re.findall(r"^\s*-\s*(\S+)", block, flags=re.M):
            assert not asset.startswith(("http:", "https:", "//")), f"{section} loads {asset}"
            assert (DOCS / asset).is_file(), f"{section}: {asset} is not in docs/"
    for page in PAGES:
        remote = re.findall(r"<(?:script|img|link|iframe)[^>]+(?:src|href)=\"(?:https?:)?//", page.read_text("utf-8"))
        assert not remote, f"{page.name} loads a remote asset"


#: A source document cited by its seed-file number instead of its short name (docs/references.md).
BY_NUMBER = re.compile(r"\b(?:[Ss]ource |[Ss]eed )?[Dd]ocuments? 00[0-4]\b|\b(?:doc|[Ss]eeds?) 00[0-4]\b")


def test_source_documents_are_cited_by_short_name():
    """A seed-file number tells a reader nothing; "the neural-speed article" is explained on the references page.

    Docs pages, tutorials and the package's docstrings and comments.
    """
    files = (PAGES + ZH_PAGES + sorted((ROOT / "tutorials").glob("*.py")) + sorted((ROOT / "tutorials").glob("*.md"))
             + sorted((ROOT / "refdecode").rglob("*.py")))
    cited = [f"{p.relative_to(ROOT)}:{m.group(0)}" for p in files for m in BY_NUMBER.finditer(p.read_text("utf-8"))]
    assert not cited, f"cite the source documents by their short names (docs/references.md): {cited[:10]}"
    references = (DOCS / "references.md").read_text("utf-8")
    for short in ("4.26 walkthrough", "top-p article", "pipeline post", "neural-speed article", "sampling note"):
        assert f"**Short name:** *{short}*" in references, f"references.md does not explain {short!r}"
