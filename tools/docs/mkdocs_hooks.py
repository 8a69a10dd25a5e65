"""mkdocs hooks (mkdocs.yml ``hooks:``; outside docs/, so not published).

The i18n plugin builds the English site, then the Chinese one, then merges both languages' search
entries into one ``search/search_index.json`` (dropping the zh/ copies of untranslated pages). Material's
``offline`` plugin had already inlined the index of the last build into ``search/search_index.js``, the
file a page opened from disk reads, so that copy would hold the Chinese build's entries only. This hook
runs after the i18n plugin (lower priority) and inlines the merged index again.
(tools/docs/check_search.py tests the result in Chromium.)
"""

from __future__ import annotations

from mkdocs.plugins import event_priority


@event_priority(-110)  # the i18n plugin's on_post_build, which merges the indexes, runs at -100
def on_post_build(config, **kwargs):
    for name in ("material/offline", "offline"):
        plugin = config.plugins.get(name)
        if plugin is not None:
            plugin.on_post_build(config=config)
            return
