"""Check the built docs site's search and language switch from disk (file://) in a real headless Chromium.

Material's search runs in a web worker over ``search/search_index.json``. Opened from disk, a browser
refuses both (no worker from file://, no fetch of a local file), so mkdocs.yml turns on Material's
``offline`` plugin: the index is inlined as ``search/search_index.js`` and the worker runs in an iframe
(the vendored ``assets/iframe-worker/shim.js``). Chinese has no spaces between words; the index is
segmented with jieba at build time (``search: lang: [en, zh]``), so 束搜索 is a word the browser-side
search can match. On the Chinese pages no result may show Material's "missing terms" line (缺少: 束): the
browser splits a Chinese query differently from jieba, so that line names a character the result does
contain (docs/assets/extra.css hides it). This script types each query into the search box of a page opened from disk and
fails unless the expected page is among the results:

    python tools/docs/check_search.py SITE_DIR     # e.g. site/ or /tmp/refdecode-site-ci

It also follows the header's language switch (English → 中文 → English) on every page the Chinese
edition must have, and checks that the index holds jieba-segmented Chinese.

It drives Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``: requests on fd 3,
answers on fd 4, each a JSON object ended by a NUL byte), so it needs only the standard library and
``chromium`` on PATH (Debian: ``apt-get install -y chromium``). No network: the flags keep Chromium
from reaching out, and the site loads nothing remote.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: (page opened, query typed, the page that must be among the results, relative to the site root)
QUERIES = [
    ("zh/index.html", "束搜索", "zh/beam-search.html"),
    ("zh/index.html", "核采样", "zh/top-p.html"),
    ("zh/index.html", "提前停止", "zh/beam-search.html"),
    ("index.html", "beam search", "beam-search.html"),
    # one word of code: lunr's token set broke on such a vocabulary once (mkdocs.yml, search separator)
    ("index.html", "BeamSearchScorer", "beam-search.html"),
]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_site_file_urls import FLAGS, find_chromium  # noqa: E402  (the same offline Chromium flags)
from zh_sync import REQUIRED  # noqa: E402  (the pages the Chinese edition must have)

#: Types the query the way a reader does (focus, value, input/keyup events), then waits for result links.
SEARCH_JS = """
(async (query) => {
  const input = document.querySelector("input.md-search__input");
  if (!input) return {error: "no search box on the page"};
  input.focus();
  input.value = query;
  for (const type of ["focus", "input", "keyup", "change"])
    input.dispatchEvent(new Event(type, {bubbles: true}));
  for (let i = 0; i < 100; i++) {
    const links = [...document.querySelectorAll(".md-search-result__list a.md-search-result__link, " +
                                                ".md-search-result__list a")].map(a => a.href);
    // Material's "missing terms" line under a result (缺少: 束): hidden on the Chinese pages (extra.css)
    const terms = [...document.querySelectorAll(".md-search-result__terms")];
    const shown = terms.filter(e => getComputedStyle(e).display !== "none").map(e => e.textContent);
    if (links.length) return {links, meta: document.querySelector(".md-search-result__meta")?.textContent,
                              terms: terms.length, terms_shown: shown};
    await new Promise(r => setTimeout(r, 100));
  }
  return {links: [], meta: document.querySelector(".md-search-result__meta")?.textContent};
})
"""


class Browser:
    """A headless Chromium spoken to over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # moved above 3 and 4 first, so that placing one end on 3 or 4 cannot close the other
        to_chrome_r, from_chrome_w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (to_chrome_r, from_chrome_w))
        self._profile = tempfile.TemporaryDirectory()
        self._targets: dict[str, str] = {}  # session id -> its tab
        # Chromium reads the protocol on fd 3 and writes on fd 4.
        self._proc = subprocess.Popen(
            [binary, *FLAGS, "--allow-file-access-from-files", "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}", "about:blank"],
            pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: (os.dup2(to_chrome_r, 3), os.dup2(from_chrome_w, 4)))
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)
        self._buffer = b""
        self._next_id = 0

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60) -> dict:
        """Send one command and return its result (events that arrive meanwhile are dropped)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" not in self._buffer:
                if not select.select([self._from_chrome], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    raise TimeoutError(method)
                chunk = os.read(self._from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError("Chromium closed the pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
        raise TimeoutError(method)

    def open(self, url: str) -> str:
        """A new tab on ``url``, loaded; returns its session id (:meth:`close_tab` closes it)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self._targets[session] = target
        self.send("Page.navigate", {"url": url}, session)
        self.wait_for(session, "document.readyState === 'complete' && !!document.querySelector('input.md-search__input')")
        return session

    def close_tab(self, session: str) -> None:
        self.send("Target.closeTarget", {"targetId": self._targets.pop(session)})

    def evaluate(self, session: str, expression: str, timeout: float = 60):
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, session, timeout)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def wait_for(self, session: str, condition: str, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.evaluate(session, condition):
                return
            time.sleep(0.1)
        raise TimeoutError(condition)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._profile.cleanup()


def search(browser: Browser, site: Path, page: str, query: str) -> dict:
    """Open ``page`` from disk, type ``query`` in its search box; the result links as paths under ``site``."""
    session = browser.open((site / page).as_uri())
    found = browser.evaluate(session, f"{SEARCH_JS}({json.dumps(query)})")
    browser.close_tab(session)
    root = site.as_uri() + "/"
    found["pages"] = sorted({link.split("#")[0][len(root):] for link in found.get("links", []) if link.startswith(root)})
    return found


#: Pages whose Chinese edition the language switch must reach.
SWITCHED = REQUIRED


def switch_target(browser: Browser, site: Path, page: str, lang: str) -> dict:
    """Open ``page`` from disk, follow its language switch's link to ``lang`` as a click would; what opened."""
    session = browser.open((site / page).as_uri())
    href = browser.evaluate(session, f"document.querySelector('a.md-select__link[hreflang={lang}]')?.href")
    browser.close_tab(session)
    if not href:
        return {"page": None}
    target = browser.open(href)
    opened = browser.evaluate(target, "({h1: document.querySelector('h1')?.textContent, "
                                      "lang: document.documentElement.lang, url: location.href})")
    browser.close_tab(target)
    return {"page": opened["url"][len(site.as_uri()) + 1:], **opened}


def segmented(site: Path) -> bool:
    """jieba ran: the index's Chinese text is cut into words by zero-width spaces (Material's segmentation)."""
    index = json.loads((site / "search" / "search_index.json").read_text("utf-8"))
    return any("\u200b" in doc["text"] for doc in index["docs"] if doc["location"].startswith("zh/"))


def main(site_dir: str) -> int:
    binary = find_chromium()
    if binary is None:
        return 2
    site = Path(site_dir).resolve()
    browser = Browser(binary)
    failed = 0
    try:
        for page, query, expected in QUERIES:
            found = search(browser, site, page, query)
            ok = expected in found["pages"]
            # on a Chinese page no result shows Material's "missing terms" line (缺少: 束), which misleads there
            shown = found.get("terms_shown", []) if page.startswith("zh/") else []
            ok = ok and not shown
            failed += not ok
            print(f"{'ok' if ok else 'FAIL'}: {page} from disk, search {query!r}: {found.get('meta')!r}, "
                  f"{len(found['pages'])} pages, {found.get('terms', 0)} missing-terms lines"
                  f"{f' ({len(shown)} shown: {shown[:2]})' if page.startswith('zh/') else ''}"
                  f"{'' if ok else f' without {expected}: {found}'}")
        for name in SWITCHED:
            there = switch_target(browser, site, f"{name}.html", "zh")
            back = switch_target(browser, site, f"zh/{name}.html", "en")
            ok = (there["page"] == f"zh/{name}.html" and there["lang"] == "zh"
                  and any("\u4e00" <= c <= "\u9fff" for c in there.get("h1") or "") and back["page"] == f"{name}.html")
            failed += not ok
            if not ok:
                print(f"FAIL: the language switch of {name}.html does not lead to its Chinese page and back: {there} {back}")
        print(f"language switch: {len(SWITCHED)} pages open their Chinese edition (a Chinese <h1>) and switch back")
    finally:
        browser.close()
    if not segmented(site):
        print("FAIL: the search index holds no segmented Chinese (is jieba installed?)")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "site"))
