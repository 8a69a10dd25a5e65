"""Link each glossary term to docs/glossary.md at its first use on every page.

    python tools/docs/glossary_links.py          # add the missing links (first prose use of each term)
    python tools/docs/glossary_links.py --check  # list the pages where a first use is not linked

"Prose" is the text a reader reads as words: fenced code, headings, tables, inline code, math, HTML,
images and existing links are skipped, so a link is never put inside code or another link.
``tests/docs/test_glossary.py`` runs :func:`unlinked` on every page.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: pages another workstream owns (reference use): checked and linked separately
EXCLUDED = {"glossary.md", "conformance.md", "traces.md", "parity.md", "engines.md"}

#: glossary anchor -> the words that use the term (case-insensitive, whole words)
TERMS: dict[str, str] = {
    "logits": r"logits?\b(?![ _-]?(?:processor|warper))",
    "processor": r"(?:logits )?processors?",
    "warper": r"(?:logits )?warpers?",
    "nucleus": r"nucleus",
    "hypothesis": r"hypothes[ie]s",
    "pool": r"pool",
    "prefill": r"prefill(?:s|ed)?",
    "kv-cache": r"KV cache",
    "left-padding": r"left[ -]pad(?:ding|ded)",
    "length-penalty": r"length penalty",
    "eos": r"eos",
    "beam": r"beams?(?![ -](?:search|sample|scorer))",
    "rmsnorm": r"RMSNorm",
    "rope": r"RoPE",
    "swiglu": r"SwiGLU",
    "gqa": r"GQA",
}

_PROTECTED = re.compile(
    r"`[^`]*`"                       # inline code
    r"|!?\[[^\]]*\]\([^)]*\)"        # links and images
    r"|\\\(.*?\\\)|\$[^$]*\$"        # math
    r"|<[^>]+>"                      # HTML tags
    r"|https?://\S+"                 # bare URLs
    r"|\{[#.][^}]*\}"                # attribute lists
)


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) for the lines that are prose: no fence, heading, table, math block or HTML block."""
    out, fenced, html, math = [], False, False, False
    for i, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if stripped.startswith("<pre") or stripped.startswith("<div"):
            html = True
        if html:
            html = not (stripped.endswith("</pre>") or stripped.endswith("</div>"))
            continue
        if stripped.startswith("$$"):
            if stripped == "$$" or not stripped.endswith("$$"):
                math = not math          # a display-math block opens or closes; "$$ ... $$" on one line stays
            continue
        if fenced or math or stripped.startswith(("#", "|", ":::", "[![", ">>>", "...")):
            continue
        out.append((i, line))
    return out


def _free_matches(line: str, pattern: str) -> list[re.Match]:
    """Matches of ``pattern`` in ``line`` outside the protected spans."""
    spans = [m.span() for m in _PROTECTED.finditer(line)]
    found = re.finditer(rf"(?<![\w-]){pattern}(?![\w-])", line, flags=re.I)
    return [m for m in found if not any(a <= m.start() < b for a, b in spans)]


def _first(text: str, anchor: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(where the term is first used unlinked, where it is first linked to the glossary), as (line, column)."""
    link = re.compile(rf"\]\((?:\./)?glossary\.md#{re.escape(anchor)}\)")
    first_plain = first_link = None
    for i, line in _prose_lines(text):
        if first_link is None and (m := link.search(line)):
            first_link = (i, m.start())
        if first_plain is None and (free := _free_matches(line, TERMS[anchor])):
            first_plain = (i, free[0].start())
        if first_plain and first_link:
            break
    return first_plain, first_link


def unlinked_terms(text: str) -> list[str]:
    """The terms whose first prose use in the page text ``text`` is not a link to the glossary."""
    missing = []
    for anchor in TERMS:
        plain, link = _first(text, anchor)
        if plain is not None and (link is None or link > plain):
            missing.append(anchor)
    return missing


def unlinked(path: Path) -> list[str]:
    """The terms whose first prose use on the page ``path`` is not a link to the glossary."""
    if path.name.replace(".zh.md", ".md") in EXCLUDED:    # the Chinese edition (x.zh.md) follows x.md
        return []
    return unlinked_terms(path.read_text(encoding="utf-8"))


def link_terms(text: str) -> str:
    """``text`` with the first prose use of each term that is not linked yet made a link to its glossary entry
    (what :func:`add_links` writes to a page; examples/peers/report.py renders its page through it)."""
    for anchor in unlinked_terms(text):
        lines = text.split("\n")
        (i, col), _ = _first(text, anchor)
        m = _free_matches(lines[i], TERMS[anchor])[0]
        assert m.start() == col
        lines[i] = f"{lines[i][:m.start()]}[{m.group(0)}](glossary.md#{anchor}){lines[i][m.end():]}"
        text = "\n".join(lines)
    return text


def add_links(path: Path) -> list[str]:
    """Link the first prose use of each term that is not linked yet; return the anchors linked."""
    done = unlinked(path)
    if done:
        path.write_text(link_terms(path.read_text(encoding="utf-8")), encoding="utf-8")
    return done


def main(argv: list[str]) -> int:
    pages = sorted(DOCS.glob("*.md"))
    if "--check" in argv:
        bad = {p.name: unlinked(p) for p in pages if unlinked(p)}
        for name, anchors in bad.items():
            print(f"{name}: first use not linked: {', '.join(anchors)}")
        return 1 if bad else 0
    skip = {a.split("=", 1)[1] for a in argv if a.startswith("--skip=")}
    for page in pages:
        if page.name not in skip and (linked := add_links(page)):
            print(f"{page.name}: linked {', '.join(linked)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
