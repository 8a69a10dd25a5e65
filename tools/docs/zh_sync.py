"""Keep the Chinese edition's code, math, pictures and examples those of the English pages (docs/x.zh.md vs x.md).

A Chinese page translates the prose only; its *shared parts* are the English page's, byte for byte and in
order: fenced code blocks (the ``pycon`` examples tests/docs/test_docs.py runs in both languages), ``$$``
math blocks, ``<pre class="diagram">`` blocks, ``:::`` lines (code pulled from the source), picture and data
file targets (``img/...``) and ``--8<--`` includes. tests/docs/test_zh.py fails when they differ.

    python tools/docs/zh_sync.py          # list the Chinese pages whose shared parts differ from the English
    python tools/docs/zh_sync.py --fix    # copy the English blocks into the Chinese pages, where the two pages
                                          # have the same number and kinds of parts (the prose around a changed
                                          # example still needs a translator's look: the tool says which)

A page whose parts were added, removed or reordered is reported, not touched: translate the new part.

One exception to "byte for byte": the words of a math block's ``\\text{...}`` (prose set inside a formula, such
as ``\\text{done}``) are translated; identifiers there (``\\text{cur\\_len}``, with a backslash) are not. Parts
are compared through :func:`comparable`, which blanks those words.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: The pages the Chinese edition must have: the overview and learning path, the glossary, the audit,
#: choosing a strategy, misconceptions, and the algorithms the source documents name (test_zh.py, check_search.py).
REQUIRED = ["index", "glossary", "source-documents", "choosing-a-strategy", "misconceptions", "greedy",
            "temperature", "top-k", "top-p", "repetition-penalty", "no-repeat-ngram", "min-length",
            "beam-search", "group-beam-search", "tokens"]
_BLOCK_START = re.compile(r"^\s*(```|\$\$|<pre class=\"diagram\">)")
_CLOSES = {"```": lambda s: s.startswith("```"), "$$": lambda s: s.endswith("$$"),
           '<pre class="diagram">': lambda s: s.endswith("</pre>")}


def parts_with_lines(text: str) -> list[tuple[str, int, int]]:
    """(part, first line, last line + 1) for every shared part, in page order; line spans only for blocks."""
    parts, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        line, start = lines[i], _BLOCK_START.match(lines[i])
        if start:
            opener = start.group(1)
            j = i
            if not (opener == "$$" and line.strip().endswith("$$") and len(line.strip()) > 2):
                j = i + 1
                while j < len(lines) and not _CLOSES[opener](lines[j].strip()):
                    j += 1
            parts.append(("\n".join(lines[i:j + 1]), i, j + 1))
            i = j + 1
            continue
        if line.startswith(":::"):
            parts.append((line.strip(), -1, -1))
        parts += [(f"file {target}", -1, -1) for target in re.findall(r"\]\(((?:img|assets)/[^)#\s]+)\)", line)]
        parts += [(f"include {target}", -1, -1) for target in re.findall(r"--8<--\s*\"([^\"]+)\"", line)]
        i += 1
    return parts


def shared_parts(text: str) -> list[str]:
    """What must be equal in both languages, in page order (see the module docstring)."""
    return [part for part, _, _ in parts_with_lines(text)]


_MATH_WORDS = re.compile(r"\\text\{[^{}\\]*\}")


def comparable(part: str) -> str:
    """The part as the two languages must agree on it: a math block's ``\\text{words}`` blanked (translated prose)."""
    return _MATH_WORDS.sub(r"\\text{…}", part) if part.startswith("$$") else part


def kind(part: str) -> str:
    return part.split("\n", 1)[0].split(" ", 1)[0] if not part.startswith(("file ", "include ")) else part


def sync(zh_page: Path, fix: bool) -> str | None:
    """None when the page agrees with its English page; else what differs (and, with ``fix``, what was copied)."""
    en_page = zh_page.with_name(zh_page.name.replace(".zh.md", ".md"))
    en, zh = parts_with_lines(en_page.read_text("utf-8")), parts_with_lines(zh_page.read_text("utf-8"))
    changed = [n for n, (a, b) in enumerate(zip(en, zh)) if comparable(a[0]) != comparable(b[0])]
    if len(en) == len(zh) and not changed:
        return None
    if len(en) != len(zh) or any(kind(en[n][0]) != kind(zh[n][0]) or zh[n][1] < 0 for n in changed):
        return (f"{zh_page.name}: {len(zh)} shared parts, {en_page.name} {len(en)}, or a changed picture/code "
                f"reference: edit it by hand (first difference: part {changed[0] if changed else min(len(en), len(zh))})")
    if not fix:
        return f"{zh_page.name}: parts {changed} differ from {en_page.name} (--fix copies them)"
    lines = zh_page.read_text("utf-8").split("\n")
    for n in reversed(changed):                       # from the end, so earlier line numbers stay valid
        _, first, end = zh[n]
        lines[first:end] = en[n][0].split("\n")
    zh_page.write_text("\n".join(lines), encoding="utf-8")
    return f"{zh_page.name}: copied parts {changed} from {en_page.name}; check the Chinese prose around them"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="copy the English blocks into the Chinese pages")
    args = parser.parse_args(argv)
    reports = [r for page in sorted(DOCS.glob("*.zh.md")) if (r := sync(page, args.fix))]
    print("\n".join(reports) if reports else "every Chinese page's code, math and pictures are its English page's")
    return 1 if reports and not args.fix else 0


if __name__ == "__main__":
    sys.exit(main())
