r"""The page "Checking the code you learn from" (docs/checking-the-code-you-learn-from.md and its Chinese twin) from
the teaching peers' folders:

    .venv/bin/python examples/peers/report.py            # write both pages
    .venv/bin/python examples/peers/report.py --check    # exit 1 if a committed page is not a fresh render

A page is: the intro below (what a teaching peer is, how it is checked, how to run the checks), each peer's
SECTION.md (SECTION.zh.md) in the order of :data:`PEERS` (then any other peer folder, by name), a table of each
peer's fresh figures from its fresh.json (``fresh_check.py --json``: cases answered, reproduced by the peer's
profile, the seed) and the times run_all.sh measured (examples/peers/times.txt: one ``step: N s`` a line). A peer
folder is examples/peers/<peer>/ with a SECTION.md; with none, the page says that none was found.

The page passes the docs' own tools as a hand-written page does: the first prose use of each glossary term links
the glossary (tools/docs/glossary_links.py), and in Chinese each section's headings carry the anchors of its
English headings (same position in SECTION.md) and the prose has the site's terms (tools/docs/zh_terms.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tools" / "docs"))
import glossary_links  # noqa: E402  (the first use of each glossary term linked, as on every page)
import zh_terms  # noqa: E402  (the Chinese pages' terms and punctuation)
PAGE = "checking-the-code-you-learn-from"
#: the peers' order on the page (a from-scratch book, a library, a model release, a one-file port)
PEERS = ("llms-from-scratch", "litgpt", "llama-models", "llama2-py")

INTRO = {"en": """# Checking the code you learn from

## The idea

Decoding is learnt from teaching code: a book's from-scratch chapter, a library's short generate loop, a model
release's reference script. Each is a **teaching peer**: code written to be read, that decodes real models. This
page checks teaching peers the way [Engines](engines.md) checks inference engines, against transformers 4.38.2:

- **the peer's own code**, unmodified, runs behind an adapter (the `adapter.py` of the peer's folder in
  `examples/peers/`, started by its `run`) that answers the conformance protocol ([Checking your
  implementation](conformance.md#the-protocol)): the suite's greedy, sampling and [beam](glossary.md#beam)
  cases, each on the peer's own functions;
- **draws with the case's uniforms**: where the peer samples, the adapter draws from the distribution the peer's
  code leaves with the case's uniforms instead of the peer's generator, so a sampled answer is compared token for
  token, as a greedy one is;
- **a profile of named rules**: where a peer departs from 4.38.2 (which tokens a penalty sees, where it stops, how
  it ranks beams), the departure is a named switch of a profile (`refdecode.reference.engines`, `EngineRules`),
  each with the peer's source line in the peer's `FINDINGS.md`, and the profile reproduces the peer's answers;
- **fresh cases**: new cases, drawn from a seed printed with the figures, that nobody fitted the profile to
  ([Fresh cases](conformance.md#fresh-cases-new-on-every-run)); the peer answers at least 100 of them and its
  profile has to give the same tokens.

To run it all (every peer's `setup.sh`, its answers to the suite's cases it takes, 100 fresh cases, this page):

```text
examples/peers/run_all.sh
```

One peer by hand: the `setup.sh` of its folder, then `refdecode conformance check SUITE --cmd` with the folder's
`run` as the command.

## Worked example

A teaching loop often runs for `max_new_tokens` steps and never looks for the [eos](glossary.md#eos) token:
llama2-py's `while pos < steps` and llms-from-scratch's KV-cache loop both do (the switch `eos_ignored=True` of
their profiles). On a bigram stand-in model (1 -> 2 -> 0 = eos -> 3), 4.38.2 stops at the eos; the two peers'
profiles run past it, as the peers do:

```python
>>> import numpy as np
>>> from refdecode.model.stand_ins import TableModel
>>> from refdecode.reference.engines import PROFILES, decode_as
>>> table = np.log(np.array([[.1, .1, .1, .7], [.1, .1, .7, .1], [.7, .1, .1, .1], [.1, .1, .1, .7]],
...                         dtype=np.float32))
>>> model, ids = TableModel(table), np.array([[1]])
>>> config = {"max_new_tokens": 4, "eos_token_id": [0], "pad_token_id": 0}
>>> decode_as("transformers-4.38.2", model, ids, None, config)["sequences"].tolist()
[[1, 2, 0]]
>>> decode_as("llama2-py", model, ids, None, config)["sequences"].tolist()
[[1, 2, 0, 3, 3]]
>>> decode_as("llms-from-scratch-kv", model, ids, None, config)["sequences"].tolist()
[[1, 2, 0, 3, 3]]
>>> PROFILES["llama2-py"].eos_ignored, PROFILES["transformers-4.38.2"].eos_ignored
(True, False)

```

A reader who learnt from either loop and checks their own against 4.38.2 finds this departure first; each peer's
section below names the others.
""", "zh": """# 检查你学习用的代码

## 思路 {#the-idea}

解码是从教学代码里学来的：一本书里从零写起的章节、一个库里简短的 generate 循环、一次模型发布附带的参考脚本。它们都是**教学同行**（teaching peer）：为了让人读懂而写、又真能给真实模型解码的代码。本页像[推理引擎](engines.md)一页检查推理引擎那样，以 transformers 4.38.2 为准检查这些教学同行：

- **同行自己的代码**：不加修改，在一个适配器（同行在 `examples/peers/` 中的文件夹里的 `adapter.py`，由该文件夹的 `run` 启动）后面运行，适配器回答一致性协议（[用 refdecode 检查你的实现](conformance.md#the-protocol)）：测试集中的贪心、采样和束搜索用例，每个都在同行自己的函数上运行；
- **用用例的均匀随机数抽样**：同行采样的地方，适配器用用例的均匀随机数，而不是同行自己的随机数生成器，从同行代码留下的分布中抽样，所以采样的回答也像贪心的回答一样逐词元比较；
- **由命名规则组成的档案**：同行与 4.38.2 不同的地方（惩罚看到哪些词元、在哪里停止、怎样给束排序），每处不同都是档案中一个命名的开关（`refdecode.reference.engines`，`EngineRules`），在同行的 `FINDINGS.md` 中附有同行的源码位置，档案能重现同行的回答；
- **新鲜用例**：从一个随结果一起打印的种子抽出的新用例，没有人按它们调过档案（[新鲜用例](conformance.md#fresh-cases-new-on-every-run)）；同行至少回答其中 100 个，它的档案必须给出相同的词元。

全部运行一遍（每个同行的 `setup.sh`、它对测试集中它支持的用例的回答、100 个新鲜用例、本页）：

```text
examples/peers/run_all.sh
```

手动检查一个同行：先运行它文件夹中的 `setup.sh`，再运行 `refdecode conformance check SUITE --cmd`，命令用该文件夹的 `run`。

## 示例 {#worked-example}

教学代码的循环常常只跑 `max_new_tokens` 步，从不检查 [eos](glossary.md#eos) 词元：llama2-py 的 `while pos < steps` 和 llms-from-scratch 带 KV 缓存的循环都是这样（它们档案中的开关 `eos_ignored=True`）。在一个二元语法替身模型上（1 -> 2 -> 0 = eos -> 3），4.38.2 在 eos 处停止；两个同行的档案像同行本身一样越过它继续生成：

```python
>>> import numpy as np
>>> from refdecode.model.stand_ins import TableModel
>>> from refdecode.reference.engines import PROFILES, decode_as
>>> table = np.log(np.array([[.1, .1, .1, .7], [.1, .1, .7, .1], [.7, .1, .1, .1], [.1, .1, .1, .7]],
...                         dtype=np.float32))
>>> model, ids = TableModel(table), np.array([[1]])
>>> config = {"max_new_tokens": 4, "eos_token_id": [0], "pad_token_id": 0}
>>> decode_as("transformers-4.38.2", model, ids, None, config)["sequences"].tolist()
[[1, 2, 0]]
>>> decode_as("llama2-py", model, ids, None, config)["sequences"].tolist()
[[1, 2, 0, 3, 3]]
>>> decode_as("llms-from-scratch-kv", model, ids, None, config)["sequences"].tolist()
[[1, 2, 0, 3, 3]]
>>> PROFILES["llama2-py"].eos_ignored, PROFILES["transformers-4.38.2"].eos_ignored
(True, False)

```

从这两个循环之一学会解码、再拿自己的代码与 4.38.2 对照的读者，最先遇到的就是这处不同；下面每个同行的一节列出其余的不同。
"""}

WORDS = {
    "en": {"none": "No teaching peer was found in `examples/peers/` (a peer is a folder there with a SECTION.md).",
           "fresh": "## Fresh cases",
           "fresh_intro": "Each peer's answers to fresh cases against its profile (the `fresh.json` of its folder, "
                          "written by `examples/engines/fresh_check.py --fresh 100 --answered 100`):",
           "head": "| Peer | Fresh cases answered | Reproduced by its profile | Seed |",
           "no_fresh": "not yet run",
           "times": "## Run time",
           "times_intro": "Measured by `examples/peers/run_all.sh` (`examples/peers/times.txt`):",
           "no_times": "`examples/peers/run_all.sh` has not been run yet: no times are measured."},
    "zh": {"none": "在 `examples/peers/` 中没有找到教学同行（同行是那里一个带 SECTION.md 的文件夹）。",
           "fresh": "## 新鲜用例 {#fresh-cases}",
           "fresh_intro": "每个同行对新鲜用例的回答与它的档案对照（它文件夹中的 `fresh.json`，由 "
                          "`examples/engines/fresh_check.py --fresh 100 --answered 100` 写出）：",
           "head": "| 同行 | 回答的新鲜用例 | 档案重现的 | 种子 |",
           "no_fresh": "尚未运行",
           "times": "## 运行时间 {#run-time}",
           "times_intro": "由 `examples/peers/run_all.sh` 测得（`examples/peers/times.txt`）：",
           "no_times": "`examples/peers/run_all.sh` 尚未运行：还没有测得的时间。"},
}


def peers(folder: Path) -> list[Path]:
    """The peer folders (those with a SECTION.md): PEERS' order first, then the others by name."""
    found = {p.name: p for p in folder.iterdir() if (p / "SECTION.md").is_file()} if folder.is_dir() else {}
    return [found[n] for n in PEERS if n in found] + [found[n] for n in sorted(found) if n not in PEERS]


def fresh_figures(peer: Path) -> tuple[int, int, int] | None:
    """(answered, reproduced by the profile, seed) from the peer's fresh.json (fresh_check.py --json), or None."""
    path = peer / "fresh.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    r = data["engines"][peer.name]
    return int(r["answered"]), int(r["same"]), int(data["seed"])


def times(folder: Path) -> list[str]:
    """The lines of run_all.sh's times file (``step: N s``, a ``cpu: ...`` line), or [] before a run."""
    path = folder / "times.txt"
    if not path.is_file():
        return []
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    for line in lines:
        if not (re.fullmatch(r"[^:]+: \d+ s", line) or line.startswith("cpu: ")):
            raise ValueError(f"{path}: `{line}` is not a `step: N s` or `cpu: ...` line")
    return lines


def slugify(heading: str) -> str:
    """Python-Markdown's toc slug: the anchor mkdocs gives a heading without ``{#id}``."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _headings(text: str) -> list[tuple[int, str]]:
    """(line number, heading text) of the ``##``/``###`` headings outside fenced code."""
    found, fenced = [], False
    for i, line in enumerate(text.split("\n")):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{2,3} (.+?)\s*$", line)):
            found.append((i, m.group(1)))
    return found


def with_english_anchors(zh: str, en: str) -> str:
    """The Chinese section ``zh`` with each heading given the anchor ``{#id}`` of the English section's heading at
    the same position (its own ``{#id}``, else its slug), so a link to a section lands in either language; a
    heading that has an anchor keeps it."""
    lines, english = zh.split("\n"), _headings(en)
    for n, (i, heading) in enumerate(_headings(zh)):
        if n < len(english) and not re.search(r"\{#[\w-]+\}$", heading):
            given = re.search(r"\{#([\w-]+)\}$", english[n][1])
            lines[i] = f"{lines[i].rstrip()} {{#{given.group(1) if given else slugify(english[n][1])}}}"
    return "\n".join(lines)


def section(peer: Path, lang: str) -> str:
    """The peer's SECTION.md, or in Chinese its SECTION.zh.md (with the English headings' anchors) if it has one."""
    en = (peer / "SECTION.md").read_text("utf-8").strip("\n")
    zh = peer / "SECTION.zh.md"
    if lang == "zh" and zh.is_file():
        return with_english_anchors(zh.read_text("utf-8").strip("\n"), en)
    return en


def render(folder: Path = HERE, lang: str = "en") -> str:
    """The page in ``lang`` ("en" or "zh") from the peer folders under ``folder``."""
    if lang not in WORDS:
        raise ValueError(f"`lang` must be one of {sorted(WORDS)}, got {lang!r}")
    w, found = WORDS[lang], peers(folder)
    parts = [INTRO[lang].rstrip("\n")]
    if not found:
        parts.append(w["none"])
    parts += [section(peer, lang) for peer in found]
    if found:
        rows = [w["head"], "|---|---:|---:|---:|"]
        for peer in found:
            figures = fresh_figures(peer)
            cells = [str(f) for f in figures] if figures else [w["no_fresh"], "", ""]
            rows.append("| " + " | ".join([peer.name, *cells]) + " |")
        parts += [w["fresh"], w["fresh_intro"], "\n".join(rows)]
    measured = times(folder)
    parts += [w["times"], (w["times_intro"] + "\n\n" + "\n".join(f"- {t}" for t in measured)) if measured
              else w["no_times"]]
    page = "\n\n".join(parts) + "\n"
    if lang == "zh":                   # the site's terms and punctuation (tools/docs/zh_terms.py), before and
        page = zh_terms.convert(page)  # after linking, so the page is a fixed point of both tools
        return zh_terms.convert(glossary_links.link_terms(page))
    return glossary_links.link_terms(page)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a committed page differs from a fresh render")
    args = ap.parse_args()
    stale = []
    for lang, name in (("en", f"{PAGE}.md"), ("zh", f"{PAGE}.zh.md")):
        path, page = ROOT / "docs" / name, render(HERE, lang)
        if args.check:
            if not path.is_file() or path.read_text("utf-8") != page:
                stale.append(name)
        else:
            path.write_text(page, "utf-8")
            print(f"wrote docs/{name}")
    if stale:
        print(f"stale: {', '.join(stale)} (run examples/peers/report.py)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
