"""Build the lecture slides: docs/course/slides.md -> ONE self-contained HTML file that opens from disk.

The source is Markdown, one slide per block, blocks separated by a line ``---``. Each slide starts with a
title (``# `` for the title slide, ``## `` for the others); then paragraphs, ``- `` bullets (two-space
indent for a second level), ``1. `` lists, fenced code, and figures on a line of their own:
``![caption](../img/top-p.svg)`` (paths relative to the source, as in the docs, so the same figure file
the pages show). A line ``Note:`` starts the speaker notes: hidden, shown with the ``n`` key.

The output has everything inline: the CSS, ~30 lines of JavaScript (arrow keys, space, Page Up/Down,
Home/End, a click, ``#N`` in the URL opens slide N, ``n`` toggles the notes), and every figure as a
``data:image/svg+xml;base64`` image. Nothing is fetched: no CDN, no font, no network; equations are
written in Unicode in the source. Printing the page (Ctrl+P) gives one slide per page.

    python tools/course/build_slides.py                      # -> site/course/slides.html (after mkdocs build)
    python tools/course/build_slides.py --out slides.html    # anywhere
    python tools/course/build_slides.py --src my.md --out my.html

Standard library only (it runs with any python3, no venv). A slide without a title, a figure that does
not exist or an http(s) image is an error (exit 2) naming the slide.
"""

from __future__ import annotations

import argparse
import base64
import html
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SOURCE = DOCS / "course" / "slides.md"
OUT = ROOT / "site" / "course" / "slides.html"


class SlideError(ValueError):
    """A slide the builder cannot turn into a self-contained page (names the slide)."""


# ---- Markdown subset -> HTML ---------------------------------------------------------------------------


def inline(text: str) -> str:
    """`code`, **bold**, *italic*, [text](target) -> HTML; everything else escaped."""
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        part = html.escape(part, quote=False)
        part = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", part)
        part = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", part)
        part = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", _link, part)  # (the text is escaped already)
        out.append(part)
    return "".join(out)


def _link(m: re.Match) -> str:
    """A Markdown link in escaped text: web, in-page and relative targets only (no ``javascript:``)."""
    target = m.group(2)
    if re.match(r"[a-zA-Z][\w+.-]*:", target) and not re.match(r"https?:", target):
        return m.group(1)
    return f'<a href="{target.replace(chr(34), "&quot;")}">{m.group(1)}</a>'


def figure(alt: str, target: str, base: Path, title: str) -> str:
    """A figure line -> <figure> with the SVG (or PNG) inlined as a data URI."""
    if re.match(r"(?:https?:)?//", target):
        raise SlideError(f"slide {title!r}: figure {target} is remote; figures must be files (no network)")
    path = (base / target).resolve()
    if not path.is_file():
        raise SlideError(f"slide {title!r}: figure {target} does not exist ({path.name} not found)")
    if not path.is_relative_to(DOCS.resolve()):
        raise SlideError(f"slide {title!r}: figure {target} is outside docs/; figures must be the docs' own")
    mime = {".svg": "image/svg+xml", ".png": "image/png"}.get(path.suffix)
    if mime is None:
        raise SlideError(f"slide {title!r}: figure {target} must be .svg or .png")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:{mime};base64,{data}" alt="{html.escape(alt)}" data-file="{path.name}">'
            f"<figcaption>{inline(alt)}</figcaption></figure>")


def body_html(lines: list[str], base: Path, title: str) -> str:
    """The lines of one slide after its title -> HTML."""
    out: list[str] = []
    paragraph: list[str] = []
    lists: list[str] = []        # open list tags, innermost last
    i = 0

    def close_paragraph():
        if paragraph:
            out.append(f"<p>{inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    def close_lists(depth: int = 0):
        while len(lists) > depth:
            out.append(f"</li></{lists.pop()}>")

    while i < len(lines):
        line = lines[i]
        item = re.match(r"^( *)(?:([-*])|(\d+)\.) (.*)$", line)
        fig = re.match(r"^!\[([^\]]*)\]\(([^)\s]+)\)\s*$", line.strip())
        if line.strip().startswith("```"):
            close_paragraph()
            close_lists()
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
        elif fig:
            close_paragraph()
            close_lists()
            out.append(figure(fig.group(1), fig.group(2), base, title))
        elif item:
            close_paragraph()
            depth = len(item.group(1)) // 2 + 1
            tag = "ul" if item.group(2) else "ol"
            if depth <= len(lists) and lists[depth - 1] != tag:   # "- a" then "1. b": a new list
                close_lists(depth - 1)
            if depth > len(lists):
                while depth > len(lists):
                    out.append(f"<{tag}><li>")
                    lists.append(tag)
            else:
                close_lists(depth)
                out.append("</li><li>")
            out.append(inline(item.group(4)))
        elif not line.strip():
            close_paragraph()
        elif lists and line.startswith("  "):
            out.append(" " + inline(line.strip()))      # a bullet's continuation line
        else:
            close_lists()
            paragraph.append(line.strip())
        i += 1
    close_paragraph()
    close_lists()
    return "\n".join(out)


def parse(source: str, base: Path) -> list[dict]:
    """Markdown -> [{"title", "level", "body" (HTML), "notes" (HTML), "figures" (file names)}]."""
    blocks = re.split(r"^---[ \t]*$", source, flags=re.M)
    slides = []
    for n, block in enumerate(blocks, start=1):
        lines = block.strip("\n").splitlines()
        while lines and not lines[0].strip():
            lines.pop(0)
        if not lines:
            continue
        head = re.match(r"^(#{1,2}) (.+)$", lines[0])
        if head is None:
            raise SlideError(f"slide {n} has no title: it must start with '# ' or '## ', got {lines[0][:60]!r}")
        title = head.group(2).strip()
        rest = lines[1:]
        notes: list[str] = []
        for j, line in enumerate(rest):
            if line.strip().startswith("Note:"):
                notes = [line.strip()[len("Note:"):].strip()] + rest[j + 1:]
                rest = rest[:j]
                break
        body = body_html(rest, base, title)
        slides.append({"title": title, "level": len(head.group(1)), "body": body,
                       "notes": body_html(notes, base, title) if notes else "",
                       "figures": re.findall(r'data-file="([^"]+)"', body)})
    if not slides:
        raise SlideError("the source has no slides")
    return slides


# ---- the page -------------------------------------------------------------------------------------------

CSS = """
html, body { margin: 0; height: 100%; background: #222; font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; }
section.slide { display: none; box-sizing: border-box; width: 100vw; height: 100vh; padding: 4vh 5vw 6vh;
  background: #fff; color: #222; flex-direction: column; font-size: 2.9vh; line-height: 1.35; position: relative; }
section.slide.current { display: flex; }
section.slide h1 { font-size: 7vh; margin: 18vh 0 3vh; color: #1f4e79; }
section.slide h2 { font-size: 4.6vh; margin: 0 0 2vh; color: #1f4e79; border-bottom: 0.3vh solid #1f77b4; padding-bottom: 1vh; }
section.slide ul, section.slide ol { margin: 0.5vh 0; padding-left: 3vw; }
section.slide li { margin: 0.6vh 0; }
section.slide p { margin: 1vh 0; }
section.slide code { font-family: "DejaVu Sans Mono", Menlo, monospace; background: #f3f3f3; padding: 0 0.3em; border-radius: 3px; }
section.slide pre { background: #f6f6f6; border-left: 0.5vh solid #1f77b4; padding: 1vh 1vw; font-size: 2.3vh; margin: 1vh 0; overflow: hidden; }
section.slide pre code { background: none; padding: 0; }
section.slide figure { flex: 1 1 auto; min-height: 0; margin: 1vh 0 0; display: flex; flex-direction: column; align-items: center; }
section.slide figure img { flex: 1 1 auto; min-height: 0; max-width: 100%; object-fit: contain; }
section.slide figcaption { font-size: 1.9vh; color: #666; margin-top: 0.5vh; }
section.slide aside.notes { display: none; position: absolute; left: 5vw; right: 5vw; bottom: 5vh; background: #fffbe6;
  border: 1px solid #e0c060; padding: 1vh 1vw; font-size: 2.1vh; max-height: 40vh; overflow: auto; }
body.show-notes section.slide aside.notes { display: block; }
section.slide footer { position: absolute; bottom: 1.5vh; right: 3vw; font-size: 1.7vh; color: #888; }
@media print {
  html, body { background: #fff; height: auto; }
  section.slide { display: flex !important; page-break-after: always; width: 100vw; height: 100vh; }
}
"""

JS = """
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll("section.slide")), current = 0;
  function show(i) {
    current = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach(function (s, j) { s.classList.toggle("current", j === current); });
    if (location.hash !== "#" + (current + 1)) { history.replaceState(null, "", "#" + (current + 1)); }
    document.title = slides[current].getAttribute("data-title") + " (" + (current + 1) + "/" + slides.length + ")";
  }
  function fromHash() { var n = parseInt(location.hash.slice(1), 10); show(isNaN(n) ? 0 : n - 1); }
  document.addEventListener("keydown", function (e) {
    var next = ["ArrowRight", "ArrowDown", "PageDown", " ", "Enter"], prev = ["ArrowLeft", "ArrowUp", "PageUp", "Backspace"];
    if (next.indexOf(e.key) >= 0) { show(current + 1); e.preventDefault(); }
    else if (prev.indexOf(e.key) >= 0) { show(current - 1); e.preventDefault(); }
    else if (e.key === "Home") { show(0); } else if (e.key === "End") { show(slides.length - 1); }
    else if (e.key === "n" || e.key === "N") { document.body.classList.toggle("show-notes"); }
  });
  document.addEventListener("click", function (e) { if (!e.target.closest("a")) { show(current + 1); } });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
"""


def render(slides: list[dict], title: str) -> str:
    sections = []
    for n, s in enumerate(slides, start=1):
        tag = "h1" if s["level"] == 1 else "h2"
        notes = f'<aside class="notes"><b>Notes.</b> {s["notes"]}</aside>' if s["notes"] else ""
        sections.append(f'<section class="slide" id="slide-{n}" data-title="{html.escape(s["title"])}">'
                        f'<{tag}>{inline(s["title"])}</{tag}>\n{s["body"]}\n{notes}'
                        f"<footer>{n} / {len(slides)}</footer></section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head>\n<body>\n" + "\n".join(sections)
            + f"\n<script>{JS}</script>\n</body></html>\n")


def build(src: Path = SOURCE, out: Path = OUT) -> list[dict]:
    """Read ``src``, write the page to ``out``; returns the parsed slides."""
    slides = parse(src.read_text(encoding="utf-8"), src.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(slides, slides[0]["title"]), encoding="utf-8")
    return slides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=SOURCE, help="the Markdown source (default: docs/course/slides.md)")
    parser.add_argument("--out", type=Path, default=OUT, help="the HTML file (default: site/course/slides.html)")
    args = parser.parse_args(argv)
    try:
        slides = build(args.src, args.out)
    except (SlideError, OSError) as e:
        print(f"build_slides: {e}", file=sys.stderr)
        return 2
    figures = sum(len(s["figures"]) for s in slides)
    print(f"wrote {len(slides)} slides ({figures} figures inlined) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
