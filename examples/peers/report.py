r"""The page "Checking the code you learn from" (docs/checking-the-code-you-learn-from.md and its Chinese twin) from
the teaching peers' folders:

    .venv/bin/python examples/peers/report.py            # write both pages
    .venv/bin/python examples/peers/report.py --check    # exit 1 if a committed page is not a fresh render

A page is: the intro below (what a teaching peer is, how it is checked, how to run the checks), each peer's
SECTION.md (SECTION.zh.md) in the order of :data:`PEERS` (then any other peer folder, by name), a table of each
peer's fresh figures from its fresh.json (``fresh_check.py --json``: cases answered, reproduced by the peer's
profile, the seed) and the times run_all.sh measured (examples/peers/times.txt: one ``step: N s`` a line). A peer
folder is examples/peers/<peer>/ with a SECTION.md; with none, the page says that none was found.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAGE = "checking-the-code-you-learn-from"
#: the peers' order on the page (a from-scratch book, a library, a model release, a one-file port)
PEERS = ("llms-from-scratch", "litgpt", "llama-models", "llama2-py")

INTRO = {"en": """# Checking the code you learn from

Decoding is learnt from teaching code: a book's from-scratch chapter, a library's short generate loop, a model
release's reference script. Each is a **teaching peer**: code written to be read, that decodes real models. This
page checks teaching peers the way [Engines](engines.md) checks inference engines, against transformers 4.38.2:

- **the peer's own code**, unmodified, runs behind an adapter (the `adapter.py` of the peer's folder in
  `examples/peers/`, started by its `run`) that answers the conformance protocol ([Checking your
  implementation](conformance.md#the-protocol)): the suite's greedy, sampling and beam cases, each on the peer's
  own functions;
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
""", "zh": """# 检查你学习用的代码

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


def render(folder: Path = HERE, lang: str = "en") -> str:
    """The page in ``lang`` ("en" or "zh") from the peer folders under ``folder``."""
    if lang not in WORDS:
        raise ValueError(f"`lang` must be one of {sorted(WORDS)}, got {lang!r}")
    w, found = WORDS[lang], peers(folder)
    parts = [INTRO[lang].rstrip("\n")]
    if not found:
        parts.append(w["none"])
    for peer in found:
        section = peer / ("SECTION.zh.md" if lang == "zh" else "SECTION.md")
        parts.append((section if section.is_file() else peer / "SECTION.md").read_text("utf-8").strip("\n"))
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
    return "\n\n".join(parts) + "\n"


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
