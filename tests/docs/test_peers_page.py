"""docs/checking-the-code-you-learn-from.md and its Chinese twin are what examples/peers/report.py renders from the
teaching peers' folders (examples/peers/<peer>/: SECTION.md, SECTION.zh.md, fresh.json) and run_all.sh's times:
the committed pages cannot drift from a fresh render, and a peer's section and figures reach the page."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import ROOT


def _report_module():
    spec = importlib.util.spec_from_file_location("peers_report", ROOT / "examples" / "peers" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPORT = _report_module()


def test_the_committed_pages_are_a_fresh_render():
    """Run examples/peers/report.py after changing a peer's SECTION, fresh.json or times.txt."""
    page = ROOT / "docs" / f"{REPORT.PAGE}"
    assert REPORT.render(ROOT / "examples" / "peers") == page.with_suffix(".md").read_text("utf-8")
    assert REPORT.render(ROOT / "examples" / "peers", "zh") == page.with_suffix(".zh.md").read_text("utf-8")


def _peer(folder, name, section, zh=None, fresh=None):
    peer = folder / name
    peer.mkdir(parents=True)
    (peer / "SECTION.md").write_text(section)
    if zh is not None:
        (peer / "SECTION.zh.md").write_text(zh, "utf-8")
    if fresh is not None:
        (peer / "fresh.json").write_text(json.dumps({"seed": fresh[2], "cases": 100, "answered_target": 100,
                                                     "engines": {name: {"answered": fresh[0], "same": fresh[1]}}}))


def test_each_peers_section_and_fresh_figures_reach_the_page(tmp_path):
    _peer(tmp_path, "litgpt", "## litgpt\n\nIts loop stops at the first eos.\n", "## litgpt\n\n它在第一个 eos 处停止。\n",
          fresh=(104, 103, 20261129))
    _peer(tmp_path, "llms-from-scratch", "## LLMs from scratch\n\nChapter 5's generate.\n")
    (tmp_path / "notes").mkdir()                                    # no SECTION.md: not a peer
    (tmp_path / "times.txt").write_text("cpu: AMD EPYC (AVX2, no AVX-512)\nsetup litgpt: 41 s\nfresh litgpt: 300 s\n")
    en, zh = REPORT.render(tmp_path), REPORT.render(tmp_path, "zh")
    # PEERS' order, whatever the folders' names sort to; each section whole
    assert en.index("## LLMs from scratch\n\nChapter 5's generate.") < en.index("## litgpt\n\nIts loop stops")
    assert "| litgpt | 104 | 103 | 20261129 |" in en and "| llms-from-scratch | not yet run |  |  |" in en
    assert "- setup litgpt: 41 s" in en and "- fresh litgpt: 300 s" in en and "AVX2, no AVX-512" in en
    assert "notes" not in en.split("## Fresh cases")[1]
    assert "它在第一个 eos 处停止。" in zh and "Chapter 5's generate." in zh      # no SECTION.zh.md: the English one
    assert "| litgpt | 104 | 103 | 20261129 |" in zh and "- setup litgpt: 41 s" in zh
    assert en.startswith(REPORT.INTRO["en"].rstrip("\n")) and zh.startswith(REPORT.INTRO["zh"].rstrip("\n"))


def test_without_peers_the_page_is_the_intro_and_says_so(tmp_path):
    en = REPORT.render(tmp_path / "absent")
    assert en.startswith("# Checking the code you learn from") and "No teaching peer was found" in en
    assert "## Fresh cases" not in en and "has not been run yet" in en


def test_a_bad_times_line_or_language_is_refused(tmp_path):
    (tmp_path / "times.txt").write_text("setup litgpt took a while\n")
    with pytest.raises(ValueError, match="is not a `step: N s`"):
        REPORT.render(tmp_path)
    with pytest.raises(ValueError, match="`lang` must be one of"):
        REPORT.render(tmp_path, "fr")


def test_the_page_gets_the_docs_tools_glossary_links_anchors_and_chinese_terms(tmp_path):
    """What tools/docs/ would do to a hand-written page, the renderer does: the first prose use of a glossary term
    linked; a Chinese heading given the anchor of the English heading at its position (a heading in code is none);
    the Chinese prose in the site's terms (zh_terms)."""
    code = "```python\n## not a heading\n```"
    _peer(tmp_path, "litgpt", f"## litgpt 0.5\n\n{code}\n\n### Its fix {{#fix}}\n\nThe KV cache, then the KV cache.\n",
          f"## litgpt 0.5（库）\n\n{code}\n\n### 修复\n\n每个 token 的 logits 放进 KV cache。\n")
    en, zh = REPORT.render(tmp_path), REPORT.render(tmp_path, "zh")
    assert "The [KV cache](glossary.md#kv-cache), then the KV cache." in en
    assert "## litgpt 0.5（库） {#litgpt-05}" in zh and "### 修复 {#fix}" in zh and f"\n{code}\n" in zh
    assert "每个词元的对数几率放进 [KV cache](glossary.md#kv-cache)。" in zh
