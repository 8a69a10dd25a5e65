"""Chinese text of the built pages: no stray space between Chinese characters (tools/docs/mkdocs_hooks.py).

Markdown keeps a line break inside a paragraph as a newline, and a browser shows a newline as a space. Between
two Latin words that is what the writer meant; between two Chinese characters ("一个阶段，\\n每一页") it is a
stray space in the middle of a sentence ("一个阶段， 每一页"). The hook joins such lines (and drops a space
typed there, "的 [词元](...)") in the HTML of every page (a source may wrap its lines anywhere), outside
``<pre>``, ``<code>``, ``<script>`` and ``<style>``, and then checks the page: a stray space left over is a
warning, so ``mkdocs build --strict`` fails.

    python tools/docs/zh_text.py SITE_DIR      # checks the built zh/ pages of a site (exit 1 on a stray space)

A space between a Chinese character and a Latin word or a number ("逐 token 一致") is kept: the pages set
Latin text apart that way. After full-width punctuation (，。：；！？、）」) no space is wanted either, so a
line break there is joined whatever follows.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

#: CJK punctuation and ideographs (U+2E80..U+9FFF), compatibility ideographs, vertical forms, full-width forms
HAN = "\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
#: full-width punctuation after which nothing is set apart by a space
FULL_STOPS = "，。：；！？、）」』》】"
_INLINE = r"(?:strong|em|a|b|i|span|mark|abbr|sup|sub|del|ins|small)"
_CLOSE = rf"(?:</{_INLINE}>)*"
_OPEN = rf"(?:<{_INLINE}(?:\s[^>]*)?>)*"
#: white space (a line break with the indentation around it, or spaces) between two Chinese characters, or
#: after full-width punctuation, with inline tags on either side
_SPACE = r"(?:[ \t]+|[ \t]*\n[ \t]*)"
_JOIN = re.compile(rf"((?:[{HAN}]){_CLOSE}){_SPACE}(?={_OPEN}[{HAN}])"
                   rf"|([{FULL_STOPS}]{_CLOSE}){_SPACE}(?=\S|\Z)")
#: the parts of a page whose text is not prose
_RAW = re.compile(r"(<(pre|code|script|style|textarea)\b.*?</\2>)", re.S | re.I)


def join_lines(html: str) -> str:
    """The page with the white space between two Chinese characters (or after ，。 etc.) removed, outside code."""
    pieces = _RAW.split(html)
    out = []
    for n, piece in enumerate(pieces):
        kind = n % 3  # re.split with two groups: text, whole raw element, its tag name
        if kind == 0:
            out.append(_JOIN.sub(lambda m: m.group(1) or m.group(2), piece))
        elif kind == 1:
            out.append(piece)
    return "".join(out)


class _Prose(HTMLParser):
    """The article's text as a reader sees it: code replaced by a placeholder word, a block element as a break."""

    BLOCKS = {"p", "div", "li", "ul", "ol", "table", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "br",
              "blockquote", "details", "summary", "figure", "figcaption", "dt", "dd", "dl", "hr", "img", "nav",
              "header", "footer", "section", "label", "input", "form", "button"}
    SKIP = {"pre", "script", "style", "svg", "textarea"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip, self.code = [], 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag == "code":
            self.code += 1
            self.parts.append("CODE")
        elif tag in self.BLOCKS:
            self.parts.append("\u2029")
        elif tag == "span" and any(k == "class" and "arithmatex" in (v or "") for k, v in attrs):
            self.parts.append("MATH")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "code":
            self.code = max(0, self.code - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\u2029")

    def handle_data(self, data):
        if not self.skip and not self.code:
            self.parts.append(data)


def article(html: str) -> str:
    """The page's article (Material's ``<article class="md-content__inner ...">``), or the whole page."""
    start = html.find('<article class="md-content__inner')
    end = html.rfind("</article>")
    return html[start:end] if start >= 0 and end > start else html


def stray_spaces(html: str) -> list[str]:
    """Each place in the article's prose where white space stands between two Chinese characters (with the
    text around it), or right after full-width punctuation; code and math do not count."""
    parser = _Prose()
    parser.feed(article(html))
    text = re.sub(r"\\\(.*?\\\)|\\\[.*?\\\]", "MATH", "".join(parser.parts), flags=re.S)
    spots = re.finditer(rf"(?<=[{HAN}])[ \t\n\u3000]+(?=[{HAN}])|(?<=[{FULL_STOPS}])[ \t\n]+(?=[^\s\u2029])", text)
    return [text[max(0, m.start() - 8): m.end() + 8].replace("\n", "⏎").replace("\u2029", "¶") for m in spots]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.split("\n\n")[2].strip(), file=sys.stderr)
        return 2
    pages = sorted((Path(args[0]) / "zh").rglob("*.html"))
    if not pages:
        print(f"no zh/ pages under {args[0]}", file=sys.stderr)
        return 1
    bad = {p: stray_spaces(p.read_text("utf-8")) for p in pages}
    bad = {p: s for p, s in bad.items() if s}
    for page, spots in bad.items():
        print(f"{page}: {len(spots)} stray spaces, e.g. {spots[:3]}")
    print(f"{len(pages)} Chinese pages, {sum(map(len, bad.values()))} stray spaces between Chinese characters")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
