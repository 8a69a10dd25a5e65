r"""Griffe extension for the docs build: read refdecode's reST-flavoured docstrings as Markdown.

The package docstrings are written to read well in ``help()`` and in the source: Sphinx-style
``.. math::`` blocks, ``:math:`x```, ``:func:`name``` roles and ``>>>`` doctest blocks. mkdocstrings
renders docstrings as Markdown, so before rendering this extension rewrites (in memory only; the
source files are not touched):

- ``.. math:: X`` (with its indented continuation lines)  ->  a ``$$ X $$`` display block (KaTeX);
- ``:math:`X```                                            ->  ``\( X \)`` inline math;
- ``:func:`x``` / ``:class:`` / ``:meth:`` / ``:mod:`` / ``:attr:``  ->  an optional autorefs link
  (resolved against the current module/class; unresolved targets render as plain code, no warning);
- ``>>>`` doctest runs (with their expected output)          ->  a fenced ``pycon`` code block;
- a paragraph ending in ``::`` (reST literal block marker)   ->  ends in ``:``;
- in ``Args:`` sections, ``a, b: text``                      ->  one entry per name;
- ``docs/<page>.md`` (how the source points at its docs page)  ->  a link to that page (an autorefs
  link to the page's title anchor; a page that does not exist fails ``mkdocs build --strict``).

Used from mkdocs.yml: ``plugins: mkdocstrings: handlers: python: options: extensions:``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe
from markdown.extensions.toc import slugify

_DOCS = Path(__file__).resolve().parents[2] / "docs"
_PAGE = re.compile(r"``?docs/([\w-]+)\.md``?|docs/([\w-]+)\.md")

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|obj|data):`(~?)([^`]+)`")
_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Attributes|Yields|Examples?|Note|Notes):\s*$")


def _link(role_target: str, tilde: bool, obj: griffe.Object) -> str:
    """``refdecode.x.y`` / ``y`` -> ``<autoref identifier=... optional><code>title</code></autoref>``."""
    target = role_target.strip()
    title = target.split(".")[-1] if tilde else target
    if target.startswith("refdecode"):
        identifier = target
    else:  # relative: a member of the current class, else of the current module
        scope = obj if obj.kind.value in ("class", "module") else obj.parent
        if obj.kind.value == "function" and obj.parent is not None and obj.parent.kind.value == "class":
            scope = obj.parent
        identifier = f"{scope.path}.{target}"
        if scope.kind.value == "class" and target not in scope.members:
            identifier = f"{scope.module.path}.{target}"
    return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'


def _page_link(match: re.Match) -> str:
    """``docs/top-p.md`` -> link to the anchor of that page's ``# Title`` (autorefs resolves it)."""
    name = match.group(1) or match.group(2)
    page = _DOCS / f"{name}.md"
    if not page.is_file():
        return f'<autoref identifier="missing-docs-page-{name}">docs/{name}.md</autoref>'  # strict build fails
    title = next((ln[2:].strip() for ln in page.read_text(encoding="utf-8").splitlines() if ln.startswith("# ")), name)
    return f'<autoref identifier="{slugify(title, "-")}">docs page: {title}</autoref>'


def _roles(text: str, obj: griffe.Object) -> str:
    text = _PAGE.sub(_page_link, text)
    text = _MATH_ROLE.sub(lambda m: rf"\({m.group(1)}\)", text)
    return _ROLE.sub(lambda m: _link(m.group(2), m.group(1) == "~", obj), text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def rewrite(text: str, obj: griffe.Object) -> str:
    """The Markdown version of one docstring."""
    lines = text.splitlines()
    out: list[str] = []
    i, section = 0, None
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _SECTION.match(line):
            section = _SECTION.match(line).group(1)
        elif stripped and _indent(line) == 0 and not _SECTION.match(line):
            section = None
        # .. math:: block
        if stripped.startswith(".. math::"):
            base = _indent(line)
            body = [stripped[len(".. math::"):].strip()]
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
                if not lines[i].strip():
                    if i + 1 < len(lines) and lines[i + 1].strip() and _indent(lines[i + 1]) > base:
                        i += 1
                        continue
                    break
                body.append(lines[i].strip())
                i += 1
            pad = " " * base
            if out and out[-1].strip():
                out.append("")
            out += [pad + "$$", *[pad + b for b in body if b], pad + "$$", ""]
            continue
        # doctest run: >>> / ... lines plus their output, up to a blank line
        if stripped.startswith(">>>"):
            base = _indent(line)
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][base:] if _indent(lines[i]) >= base else lines[i].strip())
                i += 1
            pad = " " * base
            if out and out[-1].strip():
                out.append("")
            out += [pad + "```pycon", *[pad + b for b in block], pad + "```"]
            continue
        # Args: "a, b: text" -> two entries
        if section in ("Args", "Arguments", "Parameters"):
            m = re.match(r"^(\s+)([A-Za-z_]\w*(?:, [A-Za-z_]\w*)+): (.*)$", line)
            if m:
                for name in m.group(2).split(", "):
                    out.append(f"{m.group(1)}{name}: {_roles(m.group(3), obj)}")
                i += 1
                continue
        # reST literal-block marker "text::" -> "text:"
        if stripped.endswith("::") and not stripped.startswith(".."):
            line = line[: line.rstrip().rfind("::")] + ":"
        out.append(_roles(line, obj))
        i += 1
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring of the loaded objects (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Runs once the whole package is loaded, so relative role targets can be resolved."""
        seen: set[int] = set()

        def walk(obj: griffe.Object) -> None:
            if id(obj) in seen or obj.is_alias:
                return
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, obj)
            for member in obj.members.values():
                if not member.is_alias:
                    walk(member)

        walk(pkg)
