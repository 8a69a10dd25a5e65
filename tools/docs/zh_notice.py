"""mkdocs hook (mkdocs.yml ``hooks:``; outside docs/, so not published): a Chinese notice on English-only pages.

The Chinese site (zh/) shows a page that has no ``docs/x.zh.md`` as the English page (mkdocs-static-i18n's
``fallback_to_default``). A Chinese reader who lands there is told so, in Chinese, at the top of the page, with
the reason the page has no Chinese edition. The English site is not touched, nor is any translated page.

Every English page has its Chinese twin except those in ``ENGLISH_ONLY`` (tests/docs/test_zh.py checks both:
a page without a twin must be listed here, with its reason, and a listed page must not have a twin).
"""

from __future__ import annotations

#: English pages (paths under docs/) that have no Chinese edition, and why, in Chinese. None now: the last one,
#: the generated engines page, has its twin written by the same script (examples/engines/report.py).
ENGLISH_ONLY: dict[str, str] = {}
#: Said on an English-only page that ``ENGLISH_ONLY`` does not list (the test keeps that from happening).
UNLISTED = "本页的中文版还没有写成。"


def notice(src_uri: str) -> str:
    """The admonition a zh/ copy of the English page ``src_uri`` (a path under docs/, with ``/``) starts with."""
    reason = ENGLISH_ONLY.get(src_uri, UNLISTED)
    return f'!!! note "本页暂无中文版"\n    下面是英文原文。{reason}\n'


def with_notice(markdown: str, src_uri: str) -> str:
    """``markdown`` with the notice after its ``# title`` line (before everything when it has none)."""
    lines = markdown.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
    return "\n".join(lines[:at] + ["", notice(src_uri)] + lines[at:])


def on_page_markdown(markdown, page, **kwargs):
    """On the zh build, a page read from an English file (the i18n plugin marks its ``file.locale``) gets the notice."""
    file = page.file
    if getattr(file, "locale_alternate_of", None) == "zh" and getattr(file, "locale", None) != "zh":
        return with_notice(markdown, file.src_uri)
    return markdown
