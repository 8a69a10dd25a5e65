"""Bring a Chinese page to the site's terms and punctuation (what tests/docs/test_zh.py checks).

    python tools/docs/zh_terms.py docs/x.zh.md ...     # rewrite the pages in place; then read the diff

In the prose only (not in code, math, link targets, quotations, English titles or > block quotes, which the test
leaves alone too): the terms of docs/glossary.zh.md's 统一用词 table (token → 词元, logits → 对数几率, 温度系数 → 温度,
beam search → 束搜索, greedy search / 贪心解码 → 贪心搜索), the space between two Chinese characters dropped, and
half-width ( ) ? ! next to Chinese text made full-width. A gloss in full-width parentheses after its Chinese
term (束搜索（beam search）) is kept. Mechanical: read the result (a sentence may want rewording, and a quotation
that is not marked as one would be changed).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zh_sync  # noqa: E402  (the shared parts: code, math, diagrams)

HAN = "\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
_PROTECT = re.compile(r"(`[^`\n]*`|\]\([^)\n]*\)|“[^”]*”|「[^」]*」|《[^》\n]*》|\"[^\"]*\"|\\\(.*?\\\)|https?://[!-~]+"
                      r"|\{#[\w-]+\}|<[^>\n]+>|(?<!\*)\*[A-Z][^*\u4e00-\u9fff]*\*(?!\*)|\$[^$\n]+\$"
                      r"|（[A-Za-z][A-Za-z -]*）|/ [A-Za-z][^\n{]*)", re.S)
TERMS = [(r"温度系数", "温度"), (r"\bbeam search\b", "束搜索"), (r"\bgreedy search\b", "贪心搜索"), (r"贪心解码", "贪心搜索"),
         (r"\blogits?\b", "对数几率"), (r"\btokens?\b", "词元")]


def _prose(text: str) -> str:
    for pattern, term in TERMS:
        text = re.sub(pattern, term, text)
    return text


def _squeeze(text: str) -> str:
    """No space between two Chinese characters, also across ** / * and a link's brackets."""
    return re.sub(rf"(?<=[{HAN}])((?:\*\*|\*|\])?(?:\([^)\s]*\))?) (?=(?:\*\*|\*|\[)?[{HAN}])", r"\1", text)


def _parentheses(line: str) -> str:
    """( ) next to Chinese text (or holding it) made full-width; f(x) notation and code are left alone."""
    saved: list[str] = []
    protect = re.compile(r"`[^`\n]*`|\]\([^)\n]*\)|https?://[!-~]+|\{#[\w-]+\}|<[^>\n]+>|\\\(.*?\\\)|\$[^$\n]+\$"
                         r"|\"[^\"\n]*\"")
    text = protect.sub(lambda m: saved.append(m.group(0)) or f"\x00{len(saved) - 1}\x01", line)
    han = re.compile(rf"[{HAN}]")

    def convert(m):
        before, content, after = text[:m.start()], m.group(1), text[m.end():]
        left, right = before.rstrip(" ")[-1:], after.lstrip(" ")[:1]
        if re.match(r"[A-Za-z0-9_]", before[-1:] or " ") and not han.search(content):
            return m.group(0)
        if han.search(content) or han.match(left or " ") or han.match(right or " "):
            return "\x02（" + content + "）\x03"
        return m.group(0)
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\(([^()\n]*)\)", convert, text)
    text = re.sub(r"(?<=\S) +\x02|\x02", "", text)          # a space before （ goes, the indentation stays
    text = re.sub(r"\x03 +|\x03", "", text)
    text = re.sub(rf"(?<=[{HAN}])\?", "？", text)
    text = re.sub(rf"(?<=[{HAN}])!", "！", text)
    return re.sub(r"\x00(\d+)\x01", lambda m: saved[int(m.group(1))], text)


def convert(text: str, glossary: bool = False) -> str:
    """The page with its prose brought to the terms and punctuation (see the module docstring)."""
    lines = text.split("\n")
    in_block = {i for _, first, end in zh_sync.parts_with_lines(text) if first >= 0 for i in range(first, end)}
    keep = [i in in_block or line.startswith(":::") or line.lstrip().startswith(">")
            or (glossary and (line.startswith("|") or line.startswith("### "))) for i, line in enumerate(lines)]
    out, i = [], 0
    while i < len(lines):
        if keep[i]:
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and not keep[j] and (j == i or lines[j].strip()):
            j += 1
        pieces = _PROTECT.split("\n".join(lines[i:j]))
        paragraph = _squeeze("".join(p if n % 2 else _prose(p) for n, p in enumerate(pieces)))
        out.extend(_parentheses(line) for line in paragraph.split("\n"))
        i = j
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    pages = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if not pages:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    for page in pages:
        text = page.read_text("utf-8")
        new = convert(text, glossary=page.name == "glossary.zh.md")
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"{page}: rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
