"""Check that the built docs site navigates when opened from disk (file://) in a real headless Chromium.

The README says: build the docs, then open ``site/index.html``. A browser shows a *directory listing*
for a link to a folder (mkdocs' default ``use_directory_urls: true`` writes ``tokens/index.html`` and
links to ``tokens/``), so mkdocs.yml sets ``use_directory_urls: false``. This script loads
``index.html`` in Chromium, follows every link of the page that stays inside the site (as a click
would: the href resolved against the page's file:// URL), loads each target, and fails if a target is
a directory listing, is missing, or has no ``<h1>`` of a docs page.

    python tools/docs/check_site_file_urls.py SITE_DIR     # e.g. site/ or /tmp/refdecode-site-ci

Needs ``chromium`` on PATH (Debian: ``apt-get install -y chromium``). No network: every flag below
keeps Chromium from reaching out.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse
from urllib.request import url2pathname

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def find_chromium() -> str | None:
    """The Chromium on PATH (a message on stderr when there is none; tools/docs/check_search.py uses it too)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium not found (apt-get install -y chromium)", file=sys.stderr)
    return browser


def dump_dom(browser: str, url: str) -> str:
    """The page's DOM after Chromium loaded ``url`` (scripts run)."""
    out = subprocess.run([browser, *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    return out.stdout


def internal_links(dom: str, page_url: str, site: Path) -> list[str]:
    """Links of the page that point inside ``site`` (no fragments-only, no http(s)), resolved like a click."""
    links = []
    for href in re.findall(r'<a [^>]*href="([^"]+)"', dom):
        url = urldefrag(urljoin(page_url, href)).url
        if urlparse(url).scheme == "file" and Path(url2pathname(urlparse(url).path)).resolve().is_relative_to(site):
            links.append(url)
    return sorted(set(links))


def main(site_dir: str) -> int:
    browser = find_chromium()
    if browser is None:
        return 2
    site = Path(site_dir).resolve()
    index = (site / "index.html").as_uri()
    dom = dump_dom(browser, index)
    links = internal_links(dom, index, site)
    files = [u for u in links if re.search(r"/assets/|\.(svg|json|png|woff2?|txt)$", u)]  # not pages: must exist
    missing = [u for u in files if not Path(url2pathname(urlparse(u).path)).is_file()]
    pages = [u for u in links if u not in files]
    if len(pages) < 5:
        print(f"FAIL: index.html shows {len(pages)} links into the site (is {site} a built site?)")
        return 1
    bad = []
    for url in pages:
        target = dump_dom(browser, url)
        if "Index of" in target or "<h1" not in target or 'class="md-content"' not in target:
            bad.append(url)
    for url in bad:
        print(f"FAIL: {url} does not open as a docs page from disk (directory listing or missing)")
    for url in missing:
        print(f"FAIL: {url} (a picture or data file linked from the index) is missing")
    bad += missing
    print(f"{len(pages) + len(files) - len(bad)} of {len(pages) + len(files)} links from index.html ({len(pages)} pages, "
          f"{len(files)} pictures and data files) open from file:// in Chromium")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "site"))
