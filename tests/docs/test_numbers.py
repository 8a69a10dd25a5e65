"""The numbers the README, CONTRIBUTING, the docs pages and benchmarks/README.md quote stay true.

Counts of what the project holds (the conformance suite's cases and types, its planted bugs, a group's case types,
golden cases) are recomputed here from the code: the suite's count from the registry, without exporting
(:func:`refdecode.reference.conformance.registry.case_count`), so a change that adds cases fails this test until
the pages say the new count. Timings cannot be recomputed: each one must stand in a section that says when and on
which CPU it was measured (a date and a CPU name), so a reader can tell an old figure. docs/engines.md is left to
tests/docs/test_engines_page.py (the page is the report's rendering of recorded answers); the test suite's own
size is quoted nowhere (it changes with every test).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import GOLDEN, ROOT
from conformance_suites import JS_TYPES

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.plants import PLANTS
from refdecode.reference.conformance.registry import case_count, select

README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFORMANCE = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
         "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15}


def number(text: str) -> int:
    return WORDS[text.lower()] if text.lower() in WORDS else int(text.replace(",", ""))


# ---- counts


@pytest.mark.slow
def test_the_suite_counts_are_the_registrys():
    """README and docs/conformance.md (its export transcript, its check transcripts, the plant table) and the
    JavaScript example's README count the suite the registry builds."""
    types = select(None)
    total = case_count(types)
    hint = (f"the suite now has {total} cases of {len(types)} types: say so in README.md, docs/conformance.md "
            "(tools/docs/conformance_numbers.py prints its transcript and plant table) and examples/conformance-js")
    assert f"{total:,} language-neutral cases" in README, hint
    assert "more than 1,000 cases" in CONFORMANCE and total > 1000
    assert f"wrote {total} cases of {len(types)} types to suite/" in CONFORMANCE, hint
    assert f"{total} passed, 0 failed" in CONFORMANCE and f"| failing cases (of {total}) |" in CONFORMANCE
    with_plant = re.findall(r"^(\d+) passed, (\d+) failed$", CONFORMANCE, flags=re.M)
    whole = [int(a) + int(b) for a, b in with_plant if int(b) > 0 and int(a) + int(b) > 1000]
    assert whole and set(whole) == {total}
    only = re.search(r'--plant beam_candidates_k" --only (\w+)\n(?:.*\n)*?(\d+) passed, (\d+) failed', CONFORMANCE)
    assert only and int(only.group(2)) + int(only.group(3)) == case_count(select(only.group(1)))
    scale = (ROOT / "docs" / "checking-at-scale.md").read_text(encoding="utf-8")
    assert f"default suite ({total:,} cases)" in scale and f"890/{total} [" in scale, hint + " and checking-at-scale.md"
    measured = re.findall(r"^\| `--jobs \d` \|.*\| (\d+) passed, (\d+) failed \|$", scale, flags=re.M)
    assert measured and {int(a) + int(b) for a, b in measured} == {total}, "checking-at-scale.md: measure again"
    js = case_count(JS_TYPES)
    assert f"all of its case types ({js} cases)" in CONFORMANCE
    js_readme = (ROOT / "examples" / "conformance-js" / "README.md").read_text(encoding="utf-8")
    assert f"`{js} passed, 0 failed, {total - js} unsupported`" in js_readme


def test_the_plant_table_names_every_plant_and_adds_up():
    """"eleven deliberately broken versions", "All eleven planted bugs": the plants of plants.py; each row of the
    table names one, and its count is the sum of its per-type counts (tools/docs/conformance_numbers.py measures
    them; the suite's total they are counted against is checked above)."""
    stated = re.findall(r"\b(\w+) (?:deliberately broken versions|planted bugs)\b", CONFORMANCE)
    assert len(stated) == 2 and {number(w) for w in stated} == {len(PLANTS)}
    rows = re.findall(r"^\| `(\w+)`: [^|]+\| (\d+) \| ([^|]+) \|$", CONFORMANCE, flags=re.M)
    assert sorted(name for name, _, _ in rows) == sorted(PLANTS)
    for name, count, where in rows:
        assert int(count) == sum(int(n) for n in re.findall(r"\w+ (\d+)", where)), name


def test_a_groups_case_types_are_counted_as_registered():
    text = (ROOT / "docs" / "speculative-decoding.md").read_text(encoding="utf-8")
    stated = re.search(r"has (\w+) case types \(group\s+`(\w+)`\)", text)
    assert stated and number(stated.group(1)) == len(select(stated.group(2)))


def test_the_traces_page_counts_the_bugs_of_its_table():
    text = (ROOT / "docs" / "traces.md").read_text(encoding="utf-8")
    stated = re.search(r"The tests plant (\w+) bugs in refdecode itself\*\* \(`tests/reference/test_diff.py`\)", text)
    table = text[stated.end():].split("\n\n")[1]
    assert stated and number(stated.group(1)) == len(table.splitlines()) - 2  # header and rule


def test_the_constrained_page_counts_the_golden_cases():
    """"In 17 of the 60 golden cases transformers 4.38.2 itself returns a sequence without a forced phrase."""
    text = (ROOT / "docs" / "constrained-beam-search.md").read_text(encoding="utf-8")
    stated = re.search(r"In (\d+) of the (\d+) golden cases transformers 4.38.2 itself returns", text)
    with np.load(GOLDEN / "decode_constrained.npz") as z:
        meta, arrays = json.loads(str(z["meta"])), dict(z)

    def lacks(row: list, phrase: list) -> bool:
        return not any(row[i : i + len(phrase)] == phrase for i in range(len(row) - len(phrase) + 1))

    lacking = sum(any(lacks(row, p) for row in arrays[f"{c['id']}/sequences"].tolist()
                      for p in c["kwargs"].get("force_words_ids") or [] if not isinstance(p[0], list))
                  for c in meta["cases"])
    assert stated and (int(stated.group(1)), int(stated.group(2))) == (lacking, len(meta["cases"]))


# ---- timings

PAGES = ["README.md", "CONTRIBUTING.md", "benchmarks/README.md"] + sorted(
    f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if p.name not in ("engines.md", "engines.zh.md"))
TIMING = re.compile(r"(?<![\w.-])\d(?:[\d,]*\d)?(?:\.\d+)?(?:[-–]\d(?:[\d,]*\d)?(?:\.\d+)?)?\s?"
                    r"(?:ms|µs|us|s|min|minutes|seconds|tok/s|tokens/s|GB/s|GFLOP/s)(?![\w/])")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
CPU = re.compile(r"AMD EPYC|Intel|Xeon|Apple M\d")
#: figures that are not measurements: the rule for marking a test (CONTRIBUTING), a lesson's planned time
#: (the "about" column of docs/index.md's learning path), a source document's reading time (docs/references.md)
NOT_MEASURED = [r"10 s of CPU or more", r"0\.3 s or more", r"\| (?:每页 )?\d+ min(?: each)? \|$", r"\d+ min read"]


def sections(text: str) -> list[tuple[int, int, int]]:
    """(level, start, end of its own text) of every heading; the text before the first is level 0 at 0."""
    heads = [(0, 0)] + [(len(m.group(1)), m.start()) for m in re.finditer(r"^(#{1,6}) ", text, flags=re.M)]
    return [(level, start, heads[i + 1][1] if i + 1 < len(heads) else len(text))
            for i, (level, start) in enumerate(heads)]


def unlabelled_timings(text: str) -> list[str]:
    """The timings of ``text`` whose section, and no section above it, names a date and a CPU."""
    for pattern in NOT_MEASURED:
        text = re.sub(pattern, lambda m: "x" * len(m.group(0)), text, flags=re.M)
    parts, bad = sections(text), []
    for m in TIMING.finditer(text):
        i = max(k for k, (_, start, _) in enumerate(parts) if start <= m.start())
        level, labelled = parts[i][0] + 1, False
        for k in range(i, -1, -1):  # this section, then each enclosing one's own text
            if parts[k][0] < level:
                own = text[parts[k][1] : parts[k][2]]
                labelled, level = labelled or (bool(DATE.search(own)) and bool(CPU.search(own))), parts[k][0]
        if not labelled:
            bad.append(f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}")
    return bad


@pytest.mark.parametrize("page", PAGES)
def test_every_timing_says_when_and_on_which_cpu_it_was_measured(page):
    bad = unlabelled_timings((ROOT / page).read_text(encoding="utf-8"))
    assert not bad, f"{page}: timings in a section without a date (YYYY-MM-DD) and a CPU name: {bad}"


def test_the_timing_check_can_fail():
    assert unlabelled_timings("# A\n\nA step takes 17.4 ms.\n") == ["line 3: '17.4 ms'"]
    assert unlabelled_timings("# A\n\n2026-11-26, AMD EPYC:\n\n## B\n\n17.4 ms, 3 min 4 s\n") == []
    assert unlabelled_timings("# A\n\n2026-11-26, AMD EPYC\n\n# C\n\n17.4 ms\n") == ["line 7: '17.4 ms'"]
    assert unlabelled_timings("tiny GPT-2s, 10 s of CPU or more, 1e-3 s\n") == []
