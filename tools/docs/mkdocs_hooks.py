"""mkdocs hooks (mkdocs.yml ``hooks:``; outside docs/, so not published).

The i18n plugin builds the English site, then the Chinese one, then merges both languages' search
entries into one ``search/search_index.json`` (dropping the zh/ copies of untranslated pages). Material's
``offline`` plugin had already inlined the index of the last build into ``search/search_index.js``, the
file a page opened from disk reads, so that copy would hold the Chinese build's entries only. This hook
runs after the i18n plugin (lower priority) and inlines the merged index again.
(tools/docs/check_search.py tests the result in Chromium.)

Every page's HTML also goes through tools/docs/zh_text.py: a line break between two Chinese characters would
show as a space ("一个阶段， 每一页"), so it is joined, and a page that still has such a space is a warning
(``mkdocs build --strict`` fails). The Chinese pages show the Chinese edition of a figure (docs/img/zh/x.svg,
``make_pictures.py --lang zh``) where a page links the English one (img/x.svg): the sources keep the same
targets in both languages (tools/docs/zh_sync.py), the built zh/ page the Chinese figure.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

from mkdocs.plugins import event_priority

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zh_text  # noqa: E402  (tools/docs/zh_text.py)

log = logging.getLogger("mkdocs.hooks.zh_text")
DOCS = Path(__file__).resolve().parents[2] / "docs"
#: a picture or its click-through link on a page: ``src="../img/x.svg"`` / ``href="../img/x.svg"``
_FIGURE = re.compile(r'((?:src|href)="(?:\.\./)*)img/([\w-]+\.svg)"')


def chinese(page) -> bool:
    """A translated page (x.zh.md, built to zh/x.html); not the English fallback copy of an untranslated page."""
    return page.file.dest_uri.startswith("zh/") and page.file.src_uri.endswith(".zh.md")


def on_page_content(html, page, **kwargs):
    html = zh_text.join_lines(html)
    if chinese(page):
        html = _FIGURE.sub(lambda m: f'{m.group(1)}img/zh/{m.group(2)}"' if (DOCS / "img" / "zh" / m.group(2)).is_file()
                           else m.group(0), html)
    return html


def on_post_page(output, page, **kwargs):
    english_figures = [m.group(2) for m in _FIGURE.finditer(output)] if chinese(page) else []
    if english_figures:
        log.warning(f"{page.file.src_uri}: the Chinese page shows English figures {sorted(set(english_figures))}: run "
                    "python tools/pictures/make_pictures.py --lang zh (docs/img/zh/)")
    spots = zh_text.stray_spaces(output)
    if spots:
        log.warning(f"{page.file.src_uri} ({page.file.dest_uri}): {len(spots)} spaces between Chinese characters "
                    f"that a reader sees as stray, e.g. {spots[:3]} (tools/docs/zh_text.py)")
    return output


@event_priority(-110)  # the i18n plugin's on_post_build, which merges the indexes, runs at -100
def on_post_build(config, **kwargs):
    for name in ("material/offline", "offline"):
        plugin = config.plugins.get(name)
        if plugin is not None:
            plugin.on_post_build(config=config)
            return
