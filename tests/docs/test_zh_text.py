"""tools/docs/zh_text.py, which the mkdocs hook (tools/docs/mkdocs_hooks.py) runs on every built page: a line
break between two Chinese characters is joined (a browser would show it as a space), and a page that still
shows such a space fails the build (``mkdocs build --strict``). The same check runs on a built site with
``python tools/docs/zh_text.py SITE_DIR``."""

from __future__ import annotations

import importlib.util

from conftest import ROOT

spec = importlib.util.spec_from_file_location("zh_text", ROOT / "tools" / "docs" / "zh_text.py")
zh_text = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zh_text)

PAGE = ('<html><nav>概览\n术语表</nav><article class="md-content__inner md-typeset">'
        "<p>一个阶段，\n每一页都有<strong>五个</strong>\n部分：连乘、\n对数和 softmax。逐 token 一致。\n"
        "见 <a href=\"x.html\">束搜索</a>\n的例子。</p><pre><code>中文\n注释</code></pre>"
        "<p>代码 <code>x</code>\n之后，\n<code>y</code> 也是。</p></article></html>")


def test_a_line_break_between_chinese_characters_is_a_stray_space_and_is_joined():
    spots = zh_text.stray_spaces(PAGE)
    assert any("一个阶段，" in s and "每一页" in s for s in spots), spots
    assert any("五个" in s and "部分" in s for s in spots), spots   # across </strong>
    joined = zh_text.join_lines(PAGE)
    assert "一个阶段，每一页都有<strong>五个</strong>部分：连乘、对数和 softmax" in joined
    assert "<a href=\"x.html\">束搜索</a>的例子" in joined
    assert "逐 token 一致" in joined and "。见<a" in joined           # Chinese next to Latin keeps its space
    assert "<pre><code>中文\n注释</code></pre>" in joined            # code is left alone
    assert "之后，<code>y</code>" in joined                           # nothing after full-width punctuation
    assert zh_text.stray_spaces(joined) == []


def test_the_check_reads_the_article_only_and_skips_code():
    """The navigation's labels are separate elements; code may hold anything."""
    page = '<nav>概览\n术语表</nav><article class="md-content__inner"><p>好的</p><pre>中 文</pre></article>'
    assert zh_text.stray_spaces(page) == []
    assert zh_text.stray_spaces('<article class="md-content__inner"><p>中 文</p></article>')


def test_the_command_checks_a_built_site(tmp_path, capsys):
    (tmp_path / "zh").mkdir()
    (tmp_path / "zh" / "a.html").write_text(zh_text.join_lines(PAGE), encoding="utf-8")
    assert zh_text.main([str(tmp_path)]) == 0
    (tmp_path / "zh" / "b.html").write_text(PAGE, encoding="utf-8")
    assert zh_text.main([str(tmp_path)]) == 1
    assert "b.html" in capsys.readouterr().out


def test_the_hook_is_configured():
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    hooks = (ROOT / "tools" / "docs" / "mkdocs_hooks.py").read_text("utf-8")
    assert "tools/docs/mkdocs_hooks.py" in config
    assert "zh_text.join_lines(html)" in hooks and "zh_text.stray_spaces(output)" in hooks
