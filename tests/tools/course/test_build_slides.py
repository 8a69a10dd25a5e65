"""The lecture slides (tools/course/build_slides.py): one self-contained HTML file built from docs/course/slides.md.

The slides are projected from a laptop, maybe without network, opened as a file. So the built page must carry
everything: every slide has a title, every figure the source names exists and is inlined (its bytes are in the
page as a data URI), and nothing is loaded from http(s) (no CDN script, stylesheet, font or image). A broken
source (a slide without a title, a missing figure, a remote image) is an error naming the slide, not a page with
a hole in it.
"""

from __future__ import annotations

import base64
import importlib.util
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from conftest import ROOT

SCRIPT = ROOT / "tools" / "course" / "build_slides.py"
SOURCE = ROOT / "docs" / "course" / "slides.md"


def load():
    spec = importlib.util.spec_from_file_location("build_slides", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Page(HTMLParser):
    """Sections (with their first heading), every src / href, every data-file figure."""

    def __init__(self):
        super().__init__()
        self.slides: list[dict] = []
        self.loads: list[str] = []
        self._heading = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and "slide" in (attrs.get("class") or ""):
            self.slides.append({"id": attrs.get("id"), "title": "", "images": []})
        if tag in ("h1", "h2") and self.slides and not self.slides[-1]["title"]:
            self._heading = True
        if tag == "img" and self.slides:
            self.slides[-1]["images"].append(attrs)
        for key in ("src", "href"):
            if key in attrs and tag in ("img", "script", "link", "iframe", "source", "video", "audio"):
                self.loads.append(attrs[key])

    def handle_endtag(self, tag):
        if tag in ("h1", "h2"):
            self._heading = False

    def handle_data(self, data):
        if self._heading and self.slides:
            self.slides[-1]["title"] += data


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides") / "slides.html"
    run = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    html = out.read_text("utf-8")
    page = Page()
    page.feed(html)
    return html, page, run.stdout


def test_every_slide_has_a_title(built):
    html, page, stdout = built
    source_slides = [b for b in re.split(r"^---[ \t]*$", SOURCE.read_text("utf-8"), flags=re.M) if b.strip()]
    assert len(page.slides) == len(source_slides) >= 15
    assert f"wrote {len(page.slides)} slides" in stdout
    for n, slide in enumerate(page.slides, start=1):
        assert slide["id"] == f"slide-{n}" and slide["title"].strip(), f"slide {n} has no title"


def test_every_figure_exists_and_is_inlined(built):
    """Each ![...](path) of the source is a file of docs/img/ and its exact bytes are in the page."""
    html, page, _ = built
    named = re.findall(r"^!\[[^\]]*\]\(([^)\s]+)\)\s*$", SOURCE.read_text("utf-8"), flags=re.M)
    assert len(named) >= 12
    images = [img for slide in page.slides for img in slide["images"]]
    assert len(images) == len(named)
    for target, img in zip(named, images):
        path = (SOURCE.parent / target).resolve()
        assert path.is_file() and path.parent == ROOT / "docs" / "img", target
        assert img["data-file"] == path.name
        prefix = "data:image/svg+xml;base64,"
        assert img["src"].startswith(prefix), f"{target} is not inlined"
        assert base64.b64decode(img["src"][len(prefix):]) == path.read_bytes(), f"{target}: inlined bytes differ"


def test_nothing_is_loaded_from_the_network(built):
    html, page, _ = built
    assert page.loads and all(src.startswith("data:") for src in page.loads), page.loads
    assert not re.search(r"<(?:link|iframe)\b", html)
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"@import|url\(\s*['\"]?(?:https?:)?//", html)
    assert not re.search(r"""(?:src|href)=["'](?:https?:)?//""", html)


def test_the_page_navigates_with_keys_and_a_slide_number(built):
    """The few lines of JavaScript: arrow keys, #N in the address, n for the notes; one slide shown at a time."""
    html, _, _ = built
    script = re.search(r"<script>(.*?)</script>", html, flags=re.S).group(1)
    for needle in ('"ArrowRight"', '"ArrowLeft"', "location.hash", '"n"', "show-notes", "hashchange"):
        assert needle in script, needle
    assert "section.slide.current { display: flex; }" in html and "section.slide { display: none;" in html
    assert html.count('<aside class="notes">') >= 10     # speaker notes for the demos


@pytest.mark.parametrize("source, message", [
    ("## A\ntext\n---\nno title here\n", "slide 2 has no title"),
    ("## A\n![x](missing.svg)\n", "figure missing.svg does not exist"),
    ("## A\n![x](https://example.org/a.svg)\n", "is remote"),
    ("## A\n![x](outside.svg)\n", "is outside docs/"),
])
def test_a_broken_source_is_an_error_naming_the_slide(source, message, tmp_path, capsys):
    src = tmp_path / "s.md"
    src.write_text(source, encoding="utf-8")
    (tmp_path / "outside.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    assert load().main(["--src", str(src), "--out", str(tmp_path / "o.html")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o.html").exists()


def test_markdown_subset(tmp_path):
    """Bullets (two levels), numbered lists, code, emphasis and notes come out as the HTML a reader expects."""
    module = load()
    slides = module.parse("## T *it* `x<y`\n- a **b**\n  - c\n1. d\n\n```\nz < 1\n```\nNote: say `e`\n", tmp_path)
    (slide,) = slides
    body = re.sub(r"\s*\n\s*", "", slide["body"])
    assert slide["title"] == "T *it* `x<y`"
    assert body == ("<ul><li>a <strong>b</strong><ul><li>c</li></ul></li></ul><ol><li>d</li></ol>"
                    "<pre><code>z &lt; 1</code></pre>")
    assert slide["notes"] == "<p>say <code>e</code></p>"
    assert "<em>it</em> <code>x&lt;y</code>" in module.render(slides, "t")


def test_links_are_escaped_once_and_scripts_are_not_links():
    slides = load()
    text = slides.inline("[a](https://x.org/?a=1&b=2) and [b](javascript:alert(1))")
    assert 'href="https://x.org/?a=1&amp;b=2"' in text and "&amp;amp;" not in text
    assert "javascript" not in text and "b" in text
