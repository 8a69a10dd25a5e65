"""The edges a reader meets stay swept: no path of the machine a file was written on, no repository path
that does not exist, no issue number of this project.

The three rules, as this test applies them to every tracked text file:

1. **Machine paths.** paths under ``/work``, ``/root``, ``/home/<user>`` or ``/Users/<user>`` name one
   machine and mean nothing on a reader's. A command that needs a scratch directory uses ``/tmp/<name>``
   (a generic temporary directory, the same on every Unix), so ``/tmp/`` is allowed.
2. **Repository paths** named in README.md, CONTRIBUTING.md and the Markdown of docs/, tutorials/, benchmarks/,
   examples/ and models/ exist: a backticked word or a link target that starts with a top-level folder of the
   repository (``refdecode/``, ``tests/``, ``tools/``, ...), or a relative link (``../docs/x.md``) resolved from
   the page. Paths a reader creates (``models/gpt2/``, ``suite/``) are the ones .gitignore lists or that a
   command on the same line makes; placeholders (``<engine>``, ``*``) are matched as globs.
3. **Issue numbers.** "issue 16", "(issue 23)", "stop 27", "wave 3" name a step of this project's history,
   which lives in git, not in the code or the docs. transformers' own issues are cited as links
   (``https://github.com/huggingface/transformers/issues/N``), which this rule leaves alone.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

from conftest import ROOT

TOP_FOLDERS = ("refdecode", "tests", "tools", "docs", "tutorials", "benchmarks", "examples", "models")
PROSE = ("README.md", "CONTRIBUTING.md", "docs/", "tutorials/", "benchmarks/", "examples/", "models/")

MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|home/[a-z_][\w-]*|Users/\w+)/")
OWN_ISSUE = re.compile(r"\b(?:issues?|stops?|waves?)\s+#?\d+\b", re.I)
UPSTREAM_LINK = re.compile(r"https?://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")


def tracked_files() -> list[Path]:
    """Every file git tracks (or, outside a git checkout, every file below ROOT but the ignored folders)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = (".git", ".venv", "site", ".hypothesis", ".pytest_cache", "__pycache__")
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not any(part.startswith(skip) for part in p.relative_to(ROOT).parts)]
    return [ROOT / n for n in sorted(names) if (ROOT / n).is_file()]


def text_of(path: Path) -> str | None:
    """The file as text, or None for a binary file (weights, images, fonts)."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def text_files() -> list[tuple[str, str]]:
    files = []
    for path in tracked_files():
        text = text_of(path)
        if text is not None:
            files.append((path.relative_to(ROOT).as_posix(), text))
    return files


# ---- rule 1: machine paths

def machine_paths(files: list[tuple[str, str]]) -> list[str]:
    return [f"{name}:{i}: {line.strip()[:120]}" for name, text in files
            for i, line in enumerate(text.splitlines(), 1) if MACHINE_PATH.search(line)]


# ---- rule 2: repository paths

MADE_UP = {"models/no-such-model"}  # named by a worked example because it does not exist
BACKTICKED = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")  # a span may wrap once
LINK = re.compile(r"\]\(([^)\s]+)\)")
EXTERNAL_LINK = re.compile(r"\[[^\]]*\]\([a-z]+://[^)]*\)")
TOP_PATH = re.compile(r"(?<![\w./-])((?:%s)/(?:[\w./*<>\[\]-]|\{[^}\s]*\})*)" % "|".join(TOP_FOLDERS))


def gitignore_patterns() -> list[tuple[str, str]]:
    """(folder, pattern) of every tracked .gitignore: the paths a reader's set-up creates."""
    patterns = []
    for path in tracked_files():
        if path.name == ".gitignore":
            folder = path.parent.relative_to(ROOT).as_posix()
            folder = "" if folder == "." else folder + "/"
            patterns += [(folder, line.strip()) for line in path.read_text(encoding="utf-8").splitlines()
                         if line.strip() and not line.startswith("#")]
    return patterns


IGNORED = gitignore_patterns()


def ignored(rel: str) -> bool:
    """rel (a path a reader creates) is under a pattern of a .gitignore (git's rules, simplified)."""
    for folder, pattern in IGNORED:
        if not rel.startswith(folder):
            continue
        parts = rel[len(folder):].strip("/").split("/")
        prefixes = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
        anchored = "/" in pattern.strip("/")
        candidates = prefixes if anchored else parts
        if any(fnmatch.fnmatch(c, pattern.strip("/")) for c in candidates):
            return True
    return False


def exists(rel: str, tree: set[str]) -> bool:
    rel = rel.rstrip("/.,:;")
    rel = re.sub(r"::.*$", "", rel)                      # tests/x.py::test_name
    rel = re.sub(r":\d+(-\d+)?$", "", rel)               # refdecode/x.py:74-75
    rel = re.sub(r"#.*$", "", rel)                       # docs/x.md#anchor
    if not rel or rel in MADE_UP or ignored(rel):
        return True
    if any(c in rel for c in "*<>[]{}"):                 # a placeholder or a glob: some tracked file matches it
        glob = re.sub(r"<[^>]*>|\{[^}]*\}", "*", rel)
        return any(fnmatch.fnmatch(p, glob) or fnmatch.fnmatch(p, glob + "/*") for p in tree)
    return rel in tree or any(p.startswith(rel + "/") for p in tree)


def named_paths(name: str, text: str) -> list[tuple[int, str]]:
    """(line, repository-relative path) for each path the page names: in a code block, in backticks (which may
    wrap to the next line) or as a link."""
    found = []
    prose = []                                            # the page with its code blocks blanked out
    in_code = False
    for i, line in enumerate(text.splitlines(), 1):
        fence = line.lstrip().startswith("```")
        if in_code and not fence:
            found += [(i, m) for m in TOP_PATH.findall(EXTERNAL_LINK.sub("", line))]
        prose.append("" if in_code or fence else EXTERNAL_LINK.sub("", line))  # a link elsewhere names a path there
        in_code ^= fence
    page = "\n".join(prose)
    line_of = lambda offset: page.count("\n", 0, offset) + 1  # noqa: E731
    for m in BACKTICKED.finditer(page):
        found += [(line_of(m.start()), p) for p in TOP_PATH.findall(m.group(1))]
    for m in LINK.finditer(page):
        target = m.group(1)
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        target = target.split("#")[0]
        if target:
            found.append((line_of(m.start()), normalise((Path(name).parent / target).as_posix())))
    return found


def normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
            else:
                parts.append("..")
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def missing_paths(files: list[tuple[str, str]]) -> list[str]:
    tree = {name for name, _ in files} | {p.relative_to(ROOT).as_posix() for p in tracked_files()}
    hits = []
    for name, text in files:
        if not name.endswith(".md") or not name.startswith(PROSE):
            continue
        for line, rel in named_paths(name, text):
            site_page = name.startswith("docs/") and rel.startswith("docs/")
            if not exists(rel, tree) and not (site_page and exists(rel[len("docs/"):], tree)):
                hits.append(f"{name}:{line}: {rel}")
    return hits


# ---- rule 3: this project's issue numbers

def own_issue_numbers(files: list[tuple[str, str]]) -> list[str]:
    hits = []
    for name, text in files:
        if name == "tests/docs/test_edges.py":
            continue
        for i, line in enumerate(text.splitlines(), 1):
            if OWN_ISSUE.search(UPSTREAM_LINK.sub("", line)):
                hits.append(f"{name}:{i}: {line.strip()[:120]}")
    return hits


def bare_upstream_numbers(files: list[tuple[str, str]]) -> list[str]:
    """Lines of docs/ that cite transformers' issues as plain "#29680" instead of a link a reader can follow."""
    bare = re.compile(r"(?<![\w/&\[\"'#])#\d{4,6}\b(?!\])")
    hits = []
    for name, text in files:
        if not (name.startswith("docs/") and name.endswith(".md")):
            continue
        in_code = False
        for i, line in enumerate(text.splitlines(), 1):
            in_code ^= line.lstrip().startswith("```")
            if not in_code and bare.search(line):
                hits.append(f"{name}:{i}: {line.strip()[:120]}")
    return hits


# ---- the tests

FILES = text_files()


def test_no_machine_paths():
    hits = machine_paths(FILES)
    assert not hits, f"{len(hits)} lines name a path of one machine:\n" + "\n".join(hits)


def test_every_named_repository_path_exists():
    hits = missing_paths(FILES)
    assert not hits, f"{len(hits)} repository paths do not exist:\n" + "\n".join(hits)


def test_no_issue_numbers_of_this_project():
    hits = own_issue_numbers(FILES)
    assert not hits, f"{len(hits)} lines cite this project's issue numbers (history lives in git):\n" + "\n".join(hits)


def nav_pages() -> list[str]:
    """The pages of mkdocs.yml's nav, in order."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    nav = re.split(r"\n(?=\S)", nav, maxsplit=1)[0]
    return re.findall(r":\s*([\w-]+\.md)\s*$", nav, flags=re.M)


def test_the_learning_path_reads_the_pages_in_the_order_of_the_nav():
    """A student who follows the index's learning path and one who clicks "next" meet the pages in the same
    order: no page is read before the pages it builds on (greedy search after the processors it uses)."""
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    table = [line for line in index.split("## Learning path", 1)[1].split("\n## ", 1)[0].splitlines()
             if line.startswith("| ") and line[2].isdigit()]
    order = nav_pages()
    path = [page for row in table for page in re.findall(r"\]\(([\w-]+\.md)\)", row)]
    assert len(path) == len(set(path)) and set(path) <= set(order), path
    assert path == sorted(path, key=order.index), f"learning path {path}\nnav {order}"
    assert order.index("processors.md") < order.index("greedy.md") < order.index("beam-search.md")


def test_transformers_issues_are_links_in_the_docs():
    hits = bare_upstream_numbers(FILES)
    assert not hits, f"{len(hits)} lines cite a transformers issue without a link:\n" + "\n".join(hits)


# ---- the detectors find what they are for

def test_the_detectors_find_planted_offenders():
    machine = "/" + "work/main/.venv-oracle/bin/python"  # written in two parts so that this file holds none
    planted = [("docs/x.md", f"Run `{machine}` or ~/.venv; `/tmp/suite` is fine.\n"
                             "See `tests/test_tutorials.py` and [the page](../tutorials/README.md) (issue 16).\n"
                             "Fixed in stop 27, [#123](https://github.com/huggingface/transformers/issues/123).\n")]
    assert machine_paths(planted) == [f"docs/x.md:1: Run `{machine}` or ~/.venv; `/tmp/suite` is fine."]
    missing = missing_paths(planted)
    assert missing == ["docs/x.md:2: tests/test_tutorials.py"], missing
    assert [h.split(":")[1] for h in own_issue_numbers(planted)] == ["2", "3"]
    assert not own_issue_numbers([("a.md", "[#29680](https://github.com/huggingface/transformers/pull/29680)")])
    assert bare_upstream_numbers([("docs/a.md", "out-of-place since #29680, see\n[#123](https://x/issues/123)")]) == [
        "docs/a.md:1: out-of-place since #29680, see"]
    assert exists("models/gpt2/", set()) and exists("tests/docs/test_edges.py::test_x", {"tests/docs/test_edges.py"})
    assert exists("examples/engines/<engine>/run", {"examples/engines/llama-cpp/run"})
