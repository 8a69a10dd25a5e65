"""The Chinese edition (docs/x.zh.md beside docs/x.md, built to zh/x.html by mkdocs-static-i18n) stays one
with the English pages.

A Chinese page is a translation of the prose only: its fenced code blocks (the ``pycon`` examples that
``tests/docs/test_docs.py`` runs in both languages), its ``$$`` math blocks, its diagrams, the targets of
its pictures and the ``:::`` code it pulls from the source are those of its English page, byte for byte
and in the same order; its headings carry the English page's anchors, so a link ``beam-search.md#worked-example``
lands in either language. Change an English example and this test fails until the Chinese page has the
same change. It reads the files only (no mkdocs), like test_docs.py.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata

import pytest
from conftest import ROOT

DOCS = ROOT / "docs"
ZH_PAGES = sorted(DOCS.glob("*.zh.md"))

spec = importlib.util.spec_from_file_location("zh_sync", ROOT / "tools" / "docs" / "zh_sync.py")
zh_sync = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zh_sync)
#: fenced blocks, math blocks, diagrams (whole, byte for byte), ``:::`` lines, picture and data-file targets
#: (``img/...``), ``--8<--`` includes: what tools/docs/zh_sync.py keeps equal
shared_parts = zh_sync.shared_parts


def slugify(heading: str) -> str:
    """Python-Markdown's toc slug (what mkdocs gives an English heading without ``{#id}``)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(text: str) -> set[str]:
    """The anchors of the ``##``/``###`` headings outside code blocks: ``{#id}`` where given, else the slug."""
    found, fenced = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^#{2,3} (.+?)\s*$", line)
        if match:
            given = re.search(r"\{#([\w-]+)\}$", match.group(1))
            found.add(given.group(1) if given else slugify(match.group(1)))
    return found


def english(page):
    return page.with_name(page.name.replace(".zh.md", ".md"))


def test_every_required_page_has_a_chinese_edition():
    missing = [name for name in zh_sync.REQUIRED if not (DOCS / f"{name}.zh.md").is_file()]
    assert not missing, f"pages without docs/<name>.zh.md: {missing}"
    orphans = [p.name for p in ZH_PAGES if not english(p).is_file()]
    assert not orphans, f"Chinese pages without an English page of the same name: {orphans}"


@pytest.mark.parametrize("page", ZH_PAGES, ids=[p.name for p in ZH_PAGES])
def test_code_math_pictures_and_examples_are_those_of_the_english_page(page):
    en, zh = shared_parts(english(page).read_text("utf-8")), shared_parts(page.read_text("utf-8"))
    for n, (a, b) in enumerate(zip(en, zh)):
        assert zh_sync.comparable(a) == zh_sync.comparable(b), f"{page.name}: shared part {n} differs from {english(page).name}:\n--- en\n{a}\n--- zh\n{b}"
    assert len(en) == len(zh), (f"{page.name} has {len(zh)} code/math/picture parts, {english(page).name} "
                                f"{len(en)}: first unmatched {(en if len(en) > len(zh) else zh)[min(len(en), len(zh))]!r}")
    # (python tools/docs/zh_sync.py --fix copies changed English blocks into the Chinese page)


@pytest.mark.parametrize("page", ZH_PAGES, ids=[p.name for p in ZH_PAGES])
def test_headings_keep_the_english_anchors(page):
    """Links such as ``beam-search.md#worked-example`` land on the same section in both editions."""
    missing = anchors(english(page).read_text("utf-8")) - anchors(page.read_text("utf-8"))
    assert not missing, f"{page.name}: add {{#id}} to the heading of each of {sorted(missing)}"


@pytest.mark.parametrize("page", ZH_PAGES, ids=[p.name for p in ZH_PAGES])
def test_a_chinese_page_is_written_in_chinese(page):
    """The prose (outside the shared parts) is mostly Chinese: not a copy of the English page."""
    text = page.read_text("utf-8")
    for part in shared_parts(text):
        text = text.replace(part, "")
    han = len(re.findall(r"[\u4e00-\u9fff]", text))
    latin_words = len(re.findall(r"\b[A-Za-z]{4,}\b", re.sub(r"`[^`]*`|\([^)]*\.md[^)]*\)", "", text)))
    assert han > 200 and han > latin_words, f"{page.name}: {han} Chinese characters, {latin_words} English words"


def test_the_parts_reader_is_not_vacuous():
    """It finds each kind of part on a page that has them, and a changed example makes the pages differ."""
    text = (DOCS / "beam-search.md").read_text("utf-8")
    parts = shared_parts(text)
    assert any(p.startswith("```pycon") for p in parts) and any(p.startswith("$$") for p in parts)
    assert any(p.startswith(":::") for p in parts) and any(p.startswith("file img/") for p in parts)
    assert shared_parts(text.replace("0.0 [-0.6, -0.8]", "0.0 [-0.6, -0.9]")) != parts
    assert slugify("transformers 4.38.2 and the source documents") == "transformers-4382-and-the-source-documents"


def test_the_nav_labels_of_the_translated_pages_are_translated():
    """mkdocs.yml's i18n ``nav_translations`` for zh gives a Chinese label to each translated page's nav entry."""
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    nav = config.split("\nnav:", 1)[1]
    labels = dict((f, lab.strip().strip('"')) for lab, f in re.findall(r"^\s*-\s*(.+?):\s*([\w./-]+\.md)\s*$", nav, re.M))
    zh_block = config.split("- locale: zh", 1)[1].split("\n  - ", 1)[0]
    translations = dict((k.strip().strip('"'), v.strip().strip('"'))
                        for k, v in re.findall(r'^\s{12}("[^"]*"|[^":]+):\s+(.+)$', zh_block, re.M))
    for page in ZH_PAGES:
        label = labels.get(english(page).name)
        assert label, f"{english(page).name} is not in the nav"
        assert re.search(r"[\u4e00-\u9fff]", translations.get(label, "")) or label in ("Overview",), \
            f"nav label {label!r} has no Chinese translation in mkdocs.yml"
    assert re.search(r"[\u4e00-\u9fff]", translations.get("Overview", "")), "the overview's label is not translated"


def test_the_site_builds_both_languages_with_a_switch_and_offline_search():
    """The plugin set-up the tests above rely on (the build itself runs in CI: mkdocs build --strict)."""
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    assert re.search(r"^\s*- i18n:\s*$", config, re.M) and "docs_structure: suffix" in config
    assert "fallback_to_default: true" in config and "- locale: zh" in config
    assert re.search(r"^\s*lang: \[en, zh\]\s*$", config, re.M), "search does not segment Chinese"
    assert re.search(r"^\s*- offline\s*$", config, re.M), "search would not work from file://"
    assert (DOCS / "assets" / "iframe-worker" / "shim.js").is_file() and "assets/iframe-worker/shim.js" in config
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    docs_extra = re.search(r"^docs = \[(.*)\]$", pyproject, re.M).group(1)
    assert "mkdocs-static-i18n" in docs_extra and "jieba" in docs_extra


@pytest.mark.parametrize("page", ZH_PAGES, ids=[p.name for p in ZH_PAGES])
def test_chinese_prose_uses_full_width_punctuation(page):
    """A comma, colon or semicolon right after a Chinese character is the full-width one (，：；), as a
    Chinese reader expects; code, links and the shared parts are left alone."""
    text = page.read_text("utf-8")
    for part in shared_parts(text):
        text = text.replace(part, "")
    prose = re.sub(r"`[^`]*`|\]\([^)]*\)|^(?:>>>|\.\.\.).*$", "", text, flags=re.M)
    ascii_after_han = re.findall(r".{0,12}[\u4e00-\u9fff][,;:](?!//).{0,12}", prose)
    assert not ascii_after_han, f"{page.name}: half-width punctuation after Chinese text: {ascii_after_han[:5]}"


@pytest.mark.parametrize("name", ["source-documents.md", "source-documents.zh.md"])
def test_the_audit_runs_each_of_its_29_claims(name):
    """The audit's table lists claims 1..29, and each claim's section (from its bold number to the next claim
    or heading) holds a ``>>>`` example that test_docs.py runs: no verdict without a computation."""
    text = (DOCS / name).read_text("utf-8")
    table = [int(n) for n in re.findall(r"^\| (\d+) \|", text, flags=re.M)]
    assert table == list(range(1, 30)), f"{name}: the table numbers {table}"
    starts = [(m.start(), int(m.group(1))) for m in re.finditer(r"^\*\*(\d+)\. ", text, flags=re.M)]
    assert sorted(n for _, n in starts) == list(range(1, 30)), f"{name}: claim sections {sorted(n for _, n in starts)}"
    ends = sorted([s for s, _ in starts] + [m.start() for m in re.finditer(r"^## ", text, flags=re.M)] + [len(text)])
    for start, n in starts:
        section = text[start: next(e for e in ends if e > start)]
        assert "\n>>> " in section, f"{name}: claim {n} has no worked example"


def test_the_sync_tool_copies_a_changed_example_and_refuses_a_new_one(tmp_path, monkeypatch):
    """An English example edited in place is copied over (the prose stays); an added one is left to a translator."""
    en = "# T\n\nProse.\n\n```pycon\n>>> 1 + 1\n2\n\n```\n\n$$\nx\n$$\n"
    (tmp_path / "p.md").write_text(en.replace("1 + 1\n2", "2 + 2\n4"), encoding="utf-8")
    (tmp_path / "p.zh.md").write_text(en.replace("Prose.", "中文。"), encoding="utf-8")
    monkeypatch.setattr(zh_sync, "DOCS", tmp_path)
    assert zh_sync.main([]) == 1
    assert "copied parts [0]" in zh_sync.sync(tmp_path / "p.zh.md", fix=True)
    assert (tmp_path / "p.zh.md").read_text("utf-8") == en.replace("Prose.", "中文。").replace("1 + 1\n2", "2 + 2\n4")
    assert zh_sync.main([]) == 0
    (tmp_path / "p.md").write_text(en + "\n```python\nnew = 1\n```\n", encoding="utf-8")
    assert "edit it by hand" in zh_sync.sync(tmp_path / "p.zh.md", fix=True)


def test_every_nav_label_and_section_has_a_chinese_label():
    """A page or section added to the nav later gets its zh label too (else the Chinese site shows English there)."""
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    nav = config.split("\nnav:", 1)[1]
    labels = [lab.strip().strip('"') for lab in re.findall(r"^\s*-\s*(.+?):(?:\s*[\w./-]+\.md)?\s*$", nav, re.M)]
    zh_block = config.split("- locale: zh", 1)[1].split("\n  - ", 1)[0]
    translations = dict((k.strip().strip('"'), v.strip().strip('"'))
                        for k, v in re.findall(r'^\s{12}("[^"]*"|[^":]+):\s+(.+)$', zh_block, re.M))
    assert len(labels) > 50
    missing = [label for label in labels if label not in translations]   # ("2 · token → logits" has no CJK)
    assert not missing, missing


# Every English page has its Chinese edition; while one has none, the zh site says so in Chinese (the notice hook).

spec = importlib.util.spec_from_file_location("zh_notice", ROOT / "tools" / "docs" / "zh_notice.py")
zh_notice = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zh_notice)
#: the course pages' Chinese editions (docs/course/x.zh.md), which the tests above (docs/*.zh.md) do not see
COURSE_ZH = sorted((DOCS / "course").glob("*.zh.md"))


def english_pages() -> list[str]:
    """Every English page of the site, as a path under docs/ (mkdocs.yml's ``exclude_docs`` are not pages)."""
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    block = re.search(r"^exclude_docs: \|\n((?:  .*\n)+)", config, re.M)
    excluded = {line.strip() for line in block.group(1).splitlines()} if block else set()
    pages = (p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if not p.name.endswith(".zh.md"))
    return sorted(p for p in pages if p not in excluded)


def han_share(text: str) -> tuple[int, float]:
    """(Chinese characters, their share of the letters) in the prose: shared parts, inline code, link targets,
    ``:::`` lines, ``{#id}``, inline math, HTML tags and URLs removed."""
    for part in shared_parts(text):
        text = text.replace(part, "")
    prose = re.sub(r"`[^`\n]*`|\]\([^)]*\)|^:::.*$|\{#[\w-]+\}|\\\(.*?\\\)|<[^>]+>|https?://\S+", "", text, flags=re.M)
    han, latin = len(re.findall(r"[\u4e00-\u9fff]", prose)), len(re.findall(r"[A-Za-z]", prose))
    return han, han / max(1, han + latin)


def test_every_english_page_has_a_chinese_edition_or_a_chinese_notice():
    """A twin holds real Chinese prose (at least 200 Chinese characters, 30 % of the letters: the translated pages
    hold 41-75 %, the English ones at most 2 %); a page without one is listed in tools/docs/zh_notice.py with its
    reason, which the zh site shows in Chinese at its top."""
    pages = english_pages()
    assert len(pages) > 40 and "course/lecture.md" in pages and "course/slides.md" not in pages
    for page in pages:
        twin = DOCS / page.replace(".md", ".zh.md")
        if twin.is_file():
            han, share = han_share(twin.read_text("utf-8"))
            assert han >= 200 and share >= 0.3, f"{twin.name}: {han} Chinese characters, {share:.0%} of the letters"
        else:
            assert page in zh_notice.ENGLISH_ONLY, f"docs/{page} has neither a .zh.md twin nor a notice"
    stale = [p for p in zh_notice.ENGLISH_ONLY if p not in pages or (DOCS / p.replace(".md", ".zh.md")).is_file()]
    assert not stale, f"tools/docs/zh_notice.py lists pages that have a twin or do not exist: {stale}"
    for page in zh_notice.ENGLISH_ONLY:
        han, share = han_share(zh_notice.notice(page))
        assert han >= 20 and share >= 0.5, zh_notice.notice(page)
    assert han_share((DOCS / "greedy.md").read_text("utf-8"))[1] < 0.05    # an English page does not pass
    assert (DOCS / "engines.zh.md").is_file() and "engines.md" not in zh_notice.ENGLISH_ONLY   # generated, twinned


def test_the_notice_tops_the_zh_copy_of_an_english_only_page_and_nothing_else(monkeypatch):
    """mkdocs-static-i18n marks each file it builds: ``locale`` (the file's language), ``locale_alternate_of``
    (the build's); the hook adds the notice only where a zh build reads an English file. (No page is English-only
    now; the engines page, the last one, stands in for a listed page here.)"""
    from types import SimpleNamespace

    def page(locale, build):
        return SimpleNamespace(file=SimpleNamespace(src_uri="engines.md", locale=locale, locale_alternate_of=build))

    monkeypatch.setitem(zh_notice.ENGLISH_ONLY, "engines.md", "本页由一次运行的结果整页生成。")
    text = (DOCS / "engines.md").read_text("utf-8")
    out = zh_notice.on_page_markdown(text, page("en", "zh"))
    title, rest = out.split("\n", 1)
    assert title == text.split("\n", 1)[0] and title.startswith("# ")
    assert rest.lstrip("\n").startswith('!!! note "本页暂无中文版"\n    下面是英文原文。本页由一次运行的结果')
    assert out.replace("\n" + zh_notice.notice("engines.md") + "\n", "", 1) == text         # nothing else changed
    assert zh_notice.on_page_markdown(text, page("en", "en")) == text            # the English site
    assert zh_notice.on_page_markdown("# 贪心搜索\n", page("zh", "zh")) == "# 贪心搜索\n"   # a translated page
    assert "中文版还没有写成" in zh_notice.with_notice("no title", "new-page.md")
    hooks = re.search(r"^hooks:\n((?:  - .*\n)+)", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M).group(1)
    assert "tools/docs/zh_notice.py" in hooks


@pytest.mark.parametrize("page", COURSE_ZH, ids=[p.name for p in COURSE_ZH])
def test_a_course_page_in_chinese_keeps_the_english_code_anchors_and_punctuation(page):
    """The course pages' twins follow the rules of the pages above: the English page's shared parts byte for byte
    (tests/docs/test_course.py runs the English page's examples and commands, so these run too), its anchors,
    full-width punctuation after Chinese text."""
    en_text, zh_text = english(page).read_text("utf-8"), page.read_text("utf-8")
    assert shared_parts(zh_text) == shared_parts(en_text), f"{page.name}: code/math/pictures differ from English"
    missing = anchors(en_text) - anchors(zh_text)
    assert not missing, f"{page.name}: add {{#id}} to the heading of each of {sorted(missing)}"
    prose = zh_text
    for part in shared_parts(prose):
        prose = prose.replace(part, "")
    prose = re.sub(r"`[^`]*`|\]\([^)]*\)", "", prose)
    assert not re.findall(r"[\u4e00-\u9fff][,;:](?!//)", prose), f"{page.name}: half-width punctuation after Chinese"

# ---------------------------------------------------------------------------------------------------------------
# One term per concept (the table on docs/glossary.zh.md, following d2l.ai's Chinese edition) and full-width
# punctuation in Chinese prose. The rules hold for every *.zh.md, present and future:
#   - a variant in the table's 不用 column does not occur in a page's prose;
#   - an English term may stand as a gloss in full-width parentheses right after its Chinese term: 词元（token）;
#   - not prose: the shared parts (code, math, diagrams), `inline code`, link targets, URLs, {#anchors}, HTML tags,
#     \(math\), quotations (“…”, 「…」, "...", 《…》, *English titles* and > block quotes, verbatim by rule), and on
#     the glossary page its tables and its entry headings (中文 / English).

HAN = "\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
_NOT_PROSE = re.compile(r"`[^`\n]*`|\]\([^)\n]*\)|https?://[!-~]+|\{#[\w-]+\}|<[^>\n]+>|\\\(.*?\\\)|\$[^$\n]+\$"
                        r"|“[^”]*”|「[^」]*」|\"[^\"\n]*(?:\n[^\"\n]+)*\"|《[^》\n]*》|(?<!\*)\*[A-Z][^*\u4e00-\u9fff]*\*(?!\*)", re.S)


def term_table() -> list[tuple[str, list[str]]]:
    """(the term, its forbidden variants) per row of docs/glossary.zh.md's 统一用词 table."""
    text = (DOCS / "glossary.zh.md").read_text("utf-8")
    section = text.split("## 统一用词 {#terms}", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    assert rows[0] == ["概念", "用词", "English", "不用"], rows[0]
    return [(row[1], [v.strip() for v in row[3].split("、")]) for row in rows[1:]]


def prose(page) -> str:
    """The page's Chinese prose, by the rules above (the glosses 用词（English） are dropped too)."""
    text = page.read_text("utf-8")
    for part in shared_parts(text):
        text = text.replace(part, "")
    glossary = page.name == "glossary.zh.md"
    lines = [line for line in text.splitlines()
             if not line.startswith(":::") and not line.lstrip().startswith(">")
             and not (glossary and (line.startswith("|") or line.startswith("### ")))]
    text = _NOT_PROSE.sub(" ", "\n".join(lines))
    for term, _ in term_table():
        for zh in term.split(" / "):
            text = re.sub(rf"({re.escape(zh)})（[^）]*）", r"\1", text)
    return text


def forbidden(text: str, variant: str) -> list[str]:
    """Where ``variant`` occurs in ``text`` (an English variant as a whole word, any case), with context."""
    if re.search(r"[A-Za-z]", variant):
        pattern = rf"(?i)(?<![\w-]){re.escape(variant)}(?![\w-])"
    else:
        pattern = re.escape(variant)
    return [text[max(0, m.start() - 10): m.end() + 10].replace("\n", " ") for m in re.finditer(pattern, text)]


def test_the_term_table_names_the_d2l_terms():
    terms = dict(term_table())
    for term in ("词元", "对数几率", "贪心搜索", "束搜索", "核采样 / top-p 采样", "温度", "重复惩罚", "长度惩罚"):
        assert term in terms, f"docs/glossary.zh.md's term table has no row for {term}"
    assert "温度系数" in terms["温度"] and "token" in terms["词元"] and "logits" in terms["对数几率"]


@pytest.mark.parametrize("page", ZH_PAGES, ids=[p.name for p in ZH_PAGES])
def test_one_term_per_concept(page):
    text = prose(page)
    found = {v: hits for term, variants in term_table() for v in variants if (hits := forbidden(text, v))}
    assert not found, (f"{page.name}: variants the term table of glossary.zh.md rules out (use its 用词; an English "
                       f"term only as a gloss, 词元（token）): {found}")


def test_the_term_rules_can_fail():
    """A bare English term, 温度系数, fail; a gloss, code, a link target, a quotation do not."""
    variants = dict(term_table())
    assert forbidden("每个 token 的分数", "token") and forbidden("温度系数越大", "温度系数")
    assert forbidden("Beam search 很慢", "beam search")
    page = DOCS / "glossary.zh.md"
    text = "词元（token）与 `token`、[词元](tokens.md#token)、“温度系数”、\"beam search\"、《温度系数与 top-p》"
    assert not any(forbidden(_NOT_PROSE.sub(" ", re.sub(r"(词元)（[^）]*）", r"\1", text)), v)
                   for vs in variants.values() for v in vs), text
    assert "束搜索" in prose(page) and "温度系数" not in prose(page)


@pytest.mark.parametrize("page", ZH_PAGES, ids=[p.name for p in ZH_PAGES])
def test_no_half_width_question_mark_exclamation_or_parenthesis_in_chinese_text(page):
    """?, ! and ( ) next to a Chinese character are the full-width ones (？！（）)."""
    text = re.sub(rf"[A-Za-z0-9_]\((?:[^()\n{HAN}]|\([^()\n{HAN}]*\))*\)", "fx", prose(page))  # f(x), O(T): notation
    bad = re.findall(rf".{{0,10}}(?:[{HAN}][?!()]|[?!()][{HAN}]).{{0,10}}", text)
    assert not bad, f"{page.name}: half-width punctuation in Chinese text: {bad[:6]}"


def test_the_chinese_nav_labels_use_the_terms_too():
    """mkdocs.yml's zh nav labels and site description follow the term table (an English gloss in （）allowed)."""
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    zh_block = config.split("- locale: zh", 1)[1].split("\n  - ", 1)[0]
    labels = "\n".join(v for v in re.findall(r'^\s{10,12}(?:site_description|"[^"]*"|[^":]+):\s+(.+)$', zh_block, re.M))
    assert "概览" in labels and "对数几率" in labels
    for term, _ in term_table():
        for zh in term.split(" / "):
            labels = re.sub(rf"({re.escape(zh)})（[^）]*）", r"\1", labels)
    found = {v: hits for _, variants in term_table() for v in variants if (hits := forbidden(labels, v))}
    assert not found, f"mkdocs.yml's Chinese nav labels: {found}"


@pytest.mark.parametrize("page", ZH_PAGES, ids=[p.name for p in ZH_PAGES])
def test_further_reading_is_translated_too(page):
    """An English page's "Further reading" paragraph has its Chinese one (延伸阅读), with the same References link."""
    en = english(page).read_text("utf-8")
    if "**Further reading**" not in en:
        return
    link = re.search(r"\*\*Further reading\*\* \(\[References\]\((references\.md#[\w-]+)\)", en).group(1)
    assert f"**延伸阅读**（[参考资料]({link})）" in page.read_text("utf-8"), f"{page.name} has no 延伸阅读 paragraph"


def test_the_terms_tool_rewrites_prose_only():
    """tools/docs/zh_terms.py (for a new or updated Chinese page): terms and punctuation in the prose; code,
    quotations and glosses kept; the pages already pass through it unchanged."""
    spec_terms = importlib.util.spec_from_file_location("zh_terms", ROOT / "tools" / "docs" / "zh_terms.py")
    zh_terms = importlib.util.module_from_spec(spec_terms)
    spec_terms.loader.exec_module(zh_terms)
    text = ("每个 token 的 logits 除以温度系数(T)?\n\n    (`top_p`)，缩进\n\n束搜索（beam search）、`token`、“温度系数”\n\n"
            "```python\ntoken = 1  # 温度系数\n```\n")
    assert zh_terms.convert(text) == ("每个词元的对数几率除以温度（T）？\n\n    （`top_p`），缩进\n\n束搜索（beam search）、`token`、"
                                      "“温度系数”\n\n```python\ntoken = 1  # 温度系数\n```\n")
    for page in ZH_PAGES:
        text = page.read_text("utf-8")
        assert zh_terms.convert(text, glossary=page.name == "glossary.zh.md") == text, f"{page.name}: run the tool"
