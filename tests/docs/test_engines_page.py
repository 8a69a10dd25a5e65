"""docs/engines.md and its Chinese twin docs/engines.zh.md are what examples/engines/report.py writes from
examples/engines/report.json (both made by examples/engines/run_all.sh), and report.json holds what the engines page
promises: the control passes all it answered, every differing case has a cause and its departure, every cause a
reproducer. The Chinese page has the English page's numbers, its words from report_text.py, and a Chinese summary of
every cause of every engine's FINDINGS.md (FINDINGS.zh.md beside it)."""

from __future__ import annotations

import importlib.util
import json
import re
import string

from conftest import ROOT

REPORT = json.loads((ROOT / "examples" / "engines" / "report.json").read_text())


def _report_module():
    spec = importlib.util.spec_from_file_location("engines_report", ROOT / "examples" / "engines" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPORT_PY = _report_module()


def test_the_pages_are_the_reports():
    """Both pages as report.py writes them from the committed report.json (run it with --from-json after an edit)."""
    assert REPORT_PY.write_markdown(REPORT) == (ROOT / "docs" / "engines.md").read_text()
    assert REPORT_PY.write_markdown(REPORT, "zh") == (ROOT / "docs" / "engines.zh.md").read_text("utf-8")


def _numbers(line: str) -> list[str]:
    return sorted(re.findall(r"\d+(?:[.,]\d+)*", line))


def test_the_chinese_page_has_the_english_pages_numbers_line_for_line():
    """Up to the engines' own notes the two pages are the same lines in two languages: every table row, case and
    reproducer holds the same numbers as often, every sentence the same numbers; the code blocks are the same bytes."""
    en = REPORT_PY.write_markdown(REPORT).split("\n## The causes, engine by engine")[0].split("\n")
    zh = REPORT_PY.write_markdown(REPORT, "zh").split("\n## 逐个引擎的原因")[0].split("\n")
    assert len(en) == len(zh) > 300
    for a, b in zip(en, zh):
        same = _numbers(a) == _numbers(b) if a.startswith(("|", "* ", "  ")) else set(_numbers(a)) == set(_numbers(b))
        assert same, f"\n--- en\n{a}\n--- zh\n{b}"            # rows and cases: each number as often; prose: each
        if a.startswith(("|", ">>>", "examples/")) and not re.search(r"[A-Za-z]{3}", a.replace("`", "")) or a == "```":
            assert a == b
    assert sum(a == b for a, b in zip(en, zh)) > 150          # table separators, code blocks: the same lines
    assert not any(re.search(r"[\u4e00-\u9fff]", a) for a in en)


def test_every_english_template_has_its_chinese_one_with_the_same_fields():
    """report_text.py: the same keys, the same ``{fields}``, and Chinese in each Chinese template with words."""
    text = importlib.util.module_from_spec(spec := importlib.util.spec_from_file_location(
        "report_text", ROOT / "examples" / "engines" / "report_text.py"))
    spec.loader.exec_module(text)
    assert set(text.EN) == set(text.ZH) and len(text.EN) > 50
    for key in text.EN:
        fields = [{f for _, f, _, _ in string.Formatter().parse(re.sub(r" \{#[\w-]+\}$", "", t[key])) if f}
                  for t in (text.EN, text.ZH)]                    # (a heading's {#anchor} is not a field)
        assert fields[0] == fields[1], key
        if re.search(r"(?<![\w.-])[A-Za-z]{4,}(?![\w.-])", re.sub(r"`[^`]*`|\{[^}]*\}", "", text.EN[key])):  # words
            assert re.search(r"[\u4e00-\u9fff]", text.ZH[key]), f"ZH[{key!r}] is not Chinese"


def _english_causes(engine: str) -> tuple[str, list[str]]:
    """(intro, headings) of the engine's FINDINGS.md '## Causes' section."""
    text = REPORT_PY.findings_causes(engine)
    intro = re.split(r"^#+ ", text, maxsplit=1, flags=re.M)[0].strip()
    return intro, [h for h in re.findall(r"^#+ (.*)$", text, flags=re.M)]


def test_every_cause_of_every_findings_file_has_its_chinese_summary():
    """Each heading of an engine's '## Causes' section has, in the same order, a heading in FINDINGS.zh.md's
    '## 原因' carrying its anchor, with a paragraph of Chinese under it; an English introduction has a Chinese one.
    A cause added or renamed in FINDINGS.md fails here until FINDINGS.zh.md follows."""
    engines_with_causes = 0
    for engine in REPORT_PY.ENGINES:
        intro, headings = _english_causes(engine)
        zh = REPORT_PY.findings_causes(engine, "zh")
        if not headings:
            assert not zh, engine
            continue
        engines_with_causes += 1
        anchors = [a for a, _ in REPORT_PY.zh_headings(engine)]
        assert anchors == [REPORT_PY.slug(h) for h in headings], f"{engine}: FINDINGS.zh.md lags FINDINGS.md"
        zh_intro, *bodies = re.split(r"^#+ .*$", zh, flags=re.M)
        assert bool(zh_intro.strip()) == bool(intro), f"{engine}: the introduction of '## Causes'"
        assert len(bodies) == len(headings)
        for heading, body in zip(headings, bodies):
            assert len(re.findall(r"[\u4e00-\u9fff]", body)) >= 40, (engine, heading)
            assert "\n\n" not in body.strip() and not re.search(r"[\u4e00-\u9fff]\n[\u4e00-\u9fff]", body)
    assert engines_with_causes == 11                                  # every engine but the control
    zh_page = (ROOT / "docs" / "engines.zh.md").read_text("utf-8")
    assert zh_page.count("\n#### ") == (ROOT / "docs" / "engines.md").read_text().count("\n#### ") > 60


def test_the_control_passes_what_it_answers_and_every_difference_has_a_cause():
    engines = {e["engine"]: e for e in REPORT["engines"]}
    assert len(engines) == 12 and REPORT["run_time"]   # the control and eleven engines; the run time, or why not
    control = engines["transformers-4.38.2"]
    assert control["differing"] == 0 and control["answered"] == sum(g["pass"] for g in control["groups"].values())
    for e in engines.values():
        assert len(e["differing_cases"]) == e["differing"]
        for case in e["differing_cases"]:
            assert case["cause"] and case["departs"], (e["engine"], case["id"])
            assert case["cause"] in e["causes"] and case["id"] in e["causes"][case["cause"]]
        assert set(e["reproducers"]) == set(e["causes"])
        for rep in e["reproducers"].values():
            assert rep["transformers-4.38.2"] != rep[e["engine"]]


def test_every_profile_reproduces_every_answered_case_and_meets_100_fresh_answers():
    """The engines page's promise: each profile gives every answer its engine gave on the suite, and on the fresh
    cases of the run each engine answered at least 100, every mismatch listed with its case and where it parts."""
    for e in REPORT["engines"]:
        assert e["reproduced"] == e["answered"], e["engine"]
    fresh = REPORT["fresh"]["engines"]
    assert {e["engine"] for e in REPORT["engines"]} <= set(fresh)
    for name, r in fresh.items():
        assert r["answered"] >= 100, name
        answered_mismatches = [m for m in r["mismatches"] if not m["why"].startswith("no answer")]
        assert r["same"] + len(answered_mismatches) == r["answered"], name
        assert all(m["id"] and m["note"] and m["why"] for m in r["mismatches"])


def _anchors(page: str) -> list[str]:
    """The anchor of every ``##``-``####`` heading outside code blocks, as mkdocs gives them: ``{#id}`` where the
    heading has one, else its slug, a repeated one numbered ``_1``, ``_2``... (Python-Markdown's toc)."""
    found, fenced = [], False
    for line in page.splitlines():
        fenced = fenced != line.startswith("```")
        m = None if fenced else re.match(r"^#{2,4} (.+?)\s*$", line)
        if m:
            given = re.search(r"\{#([\w-]+)\}$", m.group(1))
            anchor = given.group(1) if given else REPORT_PY.slug(m.group(1))
            n = sum(a == anchor or re.fullmatch(re.escape(anchor) + r"_\d+", a) is not None for a in found)
            found.append(anchor if given or not n else f"{anchor}_{n}")
    return found


def test_every_section_has_the_same_anchor_in_both_languages():
    """A link to ``engines.md#c2-renorm-processors-before-log_softmax-in-beam-search`` (or to any section, a cause
    of an engine included) lands on the same section of the Chinese page."""
    en = _anchors((ROOT / "docs" / "engines.md").read_text())
    assert len(en) > 80 and "not-causes-here-checked_4" in en
    assert _anchors((ROOT / "docs" / "engines.zh.md").read_text("utf-8")) == en
