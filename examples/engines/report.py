r"""Write docs/engines.md, its Chinese twin docs/engines.zh.md and examples/engines/report.json from the engines'
recorded answers.

    .venv/bin/python examples/engines/report.py [--bench examples/engines/bench.jsonl] [--no-attribute]
                                                [--run-seconds N | --run-time-file F] [--refdecode-bench]
                                                [--beam-gap beam_gap.json] [--check-dir DIR] [--fresh fresh.json ...]
    .venv/bin/python examples/engines/report.py --from-json      # both pages again from report.json (no engine)
    .venv/bin/python examples/engines/report.py --from-json --bench B --refdecode-bench --beam-gap G  # new speed only
    .venv/bin/python examples/engines/report.py --from-json --llama [--refdecode-bench-llama] [--fresh-llama F]
                                                # the Llama part again: every responses-llama.jsonl, bench-llama.json

Reads examples/engines/<engine>/responses.jsonl (written by run_all.sh: record_responses.py + slim_responses.py),
and for every engine and case group counts pass (the engine's sequences equal transformers 4.38.2's) / differ /
unsupported; runs refdecode's profile of the engine (``refdecode.reference.engines.decode_as``) on every answered
case (reproduced = token for token); for each differing case, finds a minimal set of the profile's switches that
turns 4.38.2's rules into the engine's answer (its cause; ``--no-attribute`` skips this); adds the speed table
(each bench script's JSON line from ``--bench``, refdecode's own with ``--refdecode-bench``: its default and its fast
forward pass; ``--beam-gap``: benchmarks/beam_gap.py's figures on beam-4) and each engine's
causes as its FINDINGS.md states them (both rules with sources, a reproducer each). Runs in refdecode's venv.

The Llama checkpoint: every engine that has examples/engines/<engine>/responses-llama.jsonl (the engines_llama group,
the same prompts and settings on models/tiny-shakespeare-llama) gets the same counts and reproduction there (its row of
the page's "Llama checkpoint" section; ``--fresh-llama``: fresh_check.py ``--family llama``'s results), and every
examples/engines/<engine>/bench-llama.json (its bench on benchmarks/make_llama_checkpoint.py's 124M-class Llama, with
the date and load it was measured at) the speed table's Llama columns; ``--refdecode-bench-llama`` times refdecode's
own there. ``report["llama"]`` in report.json holds it all (``--llama`` with ``--from-json`` reads it again).

Both pages are rendered from the report alone (``write_markdown(report, lang)``; ``--from-json`` runs no engine):
the same lines, numbers and code blocks, the words from report_text.py (``EN``, ``ZH``), the causes from each
engine's FINDINGS.md or, in Chinese, its FINDINGS.zh.md.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import os
import re
import sys
import time
import unicodedata
from dataclasses import replace
from pathlib import Path

import numpy as np

from refdecode import from_pretrained
from refdecode.reference.engines import PROFILES, EngineRules, NextTokenLogits, decode_as, rules_for, switches_of
from refdecode.reference.conformance.cases_decode import full_config
from refdecode.reference.engines.beam import NotSimulated

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from report_text import TEXT  # noqa: E402  (the page's words, English and Chinese, beside this file)

#: the page each language is written to, and the engines' notes it quotes (a section of each engine's file)
PAGES = {"en": ROOT / "docs" / "engines.md", "zh": ROOT / "docs" / "engines.zh.md"}
EN_RUN_TIME = TEXT["en"]["run_time_total"]
FINDINGS = {"en": ("FINDINGS.md", ("## causes", "## cause")), "zh": ("FINDINGS.zh.md", ("## 原因",))}
ENGINES = ["transformers-4.38.2", "transformers-5", "ctranslate2", "onnxruntime-genai", "transformers-js",
           "llama-cpp", "keras-hub", "mlx-lm", "openvino-genai",
           "transformers-4.38.2-tf", "vllm",
           "transformers-4.38.2-flax"]
GROUPS = ["engines_greedy", "engines_beam_search", "engines_124m_greedy", "engines_124m_beam_search", "gpt2_greedy",
          "gpt2_sample", "gpt2_beam_search"]
#: the Llama checkpoint's groups, the file each engine records them in, and its bench figures' file
LLAMA_GROUPS = ["engines_llama_greedy", "engines_llama_beam_search"]
LLAMA_RESPONSES, LLAMA_BENCH = "responses-llama.jsonl", "bench-llama.json"
#: the machine every figure of the page was measured on (lscpu's model name; /proc/cpuinfo has no avx512 flag)
CPU = "AMD EPYC, 2 cores, AVX2, no AVX-512"
_LOGITS: dict[tuple[str, str], NextTokenLogits] = {}


def model_dir(name: str) -> Path:
    for base in (ROOT / "models", ROOT / "tests" / "golden" / "models"):
        if (base / name).exists():
            return base / name
    raise FileNotFoundError(f"model {name!r} is neither in models/ nor in tests/golden/models/")


def run(profile: EngineRules | str, r: dict) -> list | None:
    key = (r["model"], rules_for(profile).activation)     # one memo per model and activation (llama.cpp's GELU)
    if key not in _LOGITS:
        _LOGITS[key] = NextTokenLogits(from_pretrained(model_dir(key[0])), key[1])   # GPT-2 or Llama
    try:
        return decode_as(profile, _LOGITS[key], r["input_ids"], r["attention_mask"], r["config"],
                         r.get("uniforms"))["sequences"].tolist()
    except NotSimulated:
        return None


def cause(engine: str, r: dict, target: list) -> list[str]:
    """A minimal set of the engine's switches that, over 4.38.2's rules, gives ``target``: one switch alone if
    one does (every such switch is listed), else the whole profile with switches dropped one at a time while the
    answer stays the engine's (at most 2n + 1 decodes for n switches, instead of all pairs)."""
    switches = switches_of(PROFILES[engine])
    alone = [s for s in switches if run(replace(EngineRules(), **{s: switches[s]}), r) == target]
    if alone:
        return alone
    if run(engine, r) != target:
        return ["(not reproduced)"]
    kept = dict(switches)
    for s in switches:
        trial = {k: v for k, v in kept.items() if k != s}
        if run(replace(EngineRules(), **trial), r) == target:
            kept = trial
    return ["+".join(kept)]


def departure(got: list, expected: list) -> dict:
    """Where the engine's sequences first leave 4.38.2's: the row and the position (a token index of the row)."""
    if len(got) != len(expected):
        return {"row": min(len(got), len(expected)), "position": None, "what": "number of rows"}
    for row, (a, b) in enumerate(zip(got, expected)):
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return {"row": row, "position": at, "what": "token" if at < min(len(a), len(b)) else "length"}
    return {}


def check_verdicts(check_dir: Path | None, engine: str, llama: bool = False) -> dict[str, str]:
    """Case id -> what `refdecode conformance check` said of it (its FAIL / NEAR-TIE line: where the decode
    departs, and whether refdecode's margin there makes it a near-tie), from run_all.sh's check-<engine>.txt
    (``llama``: check-llama-<engine>.txt)."""
    path = check_dir / f"check-{'llama-' if llama else ''}{engine}.txt" if check_dir else None
    if not path or not path.exists():
        return {}
    found = (re.match(r"(FAIL|NEAR-TIE) (\S+) \(.*?\): (.*)$", line) for line in path.read_text().splitlines())
    return {m.group(2): f"{m.group(1)}: {m.group(3)}" for m in found if m}


def summarise(engine: str, attribute: bool, check_dir: Path | None = None, llama: bool = False) -> dict:
    """The engine's recorded answers (``llama``: responses-llama.jsonl) counted per group, reproduced by its
    profile, the differing ones with their causes."""
    verdicts = check_verdicts(check_dir, engine, llama)
    path = HERE / engine / (LLAMA_RESPONSES if llama else "responses.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    groups: dict[str, dict] = {}
    causes: dict[str, list[str]] = {}
    cases: list[dict] = []
    reproduced = differing = reproduced_differing = answered = 0
    for r in records:
        g = groups.setdefault(r["type"], {"pass": 0, "differ": 0, "unsupported": 0})
        response = r["response"]
        if "output" not in response:  # "unsupported", or "error": no usable answer (record_responses.py)
            if "unsupported" in response:
                g["unsupported"] += 1
            else:
                g["no answer"] = g.get("no answer", 0) + 1
            continue
        answered += 1
        got = response["output"]["sequences"]
        same = run(engine, r) == got
        reproduced += same
        if got == r["expected"]["sequences"]:
            g["pass"] += 1
            continue
        g["differ"] += 1
        differing += 1
        reproduced_differing += same
        found = cause(engine, r, got)[0] if attribute else None
        if found:
            causes.setdefault(found, []).append(r["id"])
        cases.append({"id": r["id"], "type": r["type"], "cause": found, "reproduced": same,
                      "departs": departure(got, r["expected"]["sequences"]), "check": verdicts.get(r["id"])})
    by_id = {r["id"]: r for r in records}
    reproducers = {c: reproducer(engine, min((by_id[i] for i in ids), key=_size)) for c, ids in causes.items()}
    return {"engine": engine, "groups": groups, "answered": answered, "reproduced": reproduced,
            "differing": differing, "reproduced_differing": reproduced_differing, "causes": causes,
            "reproducers": reproducers, "differing_cases": cases,
            "switches": {k: v for k, v in switches_of(PROFILES[engine]).items()}}


def _size(r: dict) -> tuple:
    """Smaller reproducers first: fewer prompt tokens, fewer rows, fewer new tokens, fewer beams."""
    c = r["config"]
    return (sum(map(sum, r["attention_mask"])), len(r["input_ids"]), c["max_new_tokens"], c["num_beams"], r["id"])


def reproducer(engine: str, r: dict) -> dict:
    """A cause's smallest case, as a user would type it: the model, the prompt ids, the options that are not
    generate()'s defaults, and both answers on the row where they part (generated tokens only)."""
    defaults = full_config(eos_token_id=r["config"]["eos_token_id"])
    got, want = r["response"]["output"]["sequences"], r["expected"]["sequences"]
    where = departure(got, want)
    row = where.get("row", 0)
    width = len(r["input_ids"][0])
    return {"case": r["id"], "model": str(model_dir(r["model"]).relative_to(ROOT)), "input_ids": r["input_ids"],
            "attention_mask": r["attention_mask"],
            "options": {k: v for k, v in r["config"].items() if v != defaults.get(k) or k == "eos_token_id"},
            "row": row, "transformers-4.38.2": want[row][width:] if row < len(want) else None,
            engine: got[row][width:] if row < len(got) else None}


#: refdecode's two forward passes, as the speed table names them.
FORWARDS = {"plain": "GPT2.from_pretrained(path): the default, readable forward pass (refdecode/model/gpt2.py)",
            "fast": "GPT2.from_pretrained(path, forward=\"fast\"): refdecode/model/fast/"}
LLAMA_FORWARDS = {"plain": "Llama.from_pretrained(path): the default forward pass (refdecode/model/llama.py)",
                  "fast": "Llama.from_pretrained(path, forward=\"fast\"): refdecode/model/fast/llama.py"}


def refdecode_bench(path: Path | None = None) -> list[dict]:
    """refdecode's generate on the 124M-shaped checkpoint (``path``: another, e.g. the 124M-class Llama) with each
    forward pass, timed as the engines' benches time theirs (common/bench_common.py: the same prompt, 64 new tokens,
    1 warm-up + 5 runs, median)."""
    from refdecode import generate
    sys.path.insert(0, str(HERE / "common"))
    from bench_common import NEW, PROMPT, default_model, tok_per_s

    ids = np.array([PROMPT], dtype=np.int64)
    rows = []
    for forward in FORWARDS:
        model = from_pretrained(path or default_model(), forward=forward)   # GPT2 or Llama, by its config.json
        note = (LLAMA_FORWARDS if type(model).__name__ == "Llama" else FORWARDS)[forward]
        out = {"engine": "refdecode", "version": __import__("refdecode").__version__, "forward": forward,
               "threads": 1, "note": f"{note}; {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average "
                                     f"{os.getloadavg()[0]:.1f}"}
        for name, beams in (("greedy", 1), ("beam4", 4)):

            def once() -> None:
                seq = generate(model, ids, max_new_tokens=NEW, min_new_tokens=NEW, num_beams=beams,
                               eos_token_id=50256, pad_token_id=50256)
                assert seq.shape == (1, len(PROMPT) + NEW), seq.shape

            out[f"{name}_tok_s"] = tok_per_s(f"refdecode {forward} {name}", once)
        rows.append(out)
    return rows


def _bench_key(b: dict) -> tuple:
    return b.get("engine"), b.get("version"), b.get("forward")


def _tok_s(value: float | None) -> str:
    return "-" if value is None else str(value)


def speed_lines(report: dict, t: dict) -> list[str]:
    """The speed table (greedy, beam-4 and their ratio per engine; refdecode's two forward passes as two rows; the
    same engine's figures on the 124M-class Llama, ``report["llama"]["bench"]``, in the Llama columns), and the
    paragraph on beam-4 from benchmarks/beam_gap.py's figures when the run made them (``t``: the page's words)."""
    lines = ["", t["speed_h"], ""]
    if not report["bench"]:
        return lines + [t["speed_none"]]
    llama = {_bench_key(b): b for b in report.get("llama", {}).get("bench", [])}
    rows = [(b, llama.pop(_bench_key(b), None)) for b in report["bench"]] + [(None, b) for b in llama.values()]
    lines += [t["speed_head"], "|---|---|---|---|---|---|---|---|"]
    for b, ll in rows:
        first = b or ll
        name = first.get("engine") + (f", forward=\"{first['forward']}\"" if first.get("forward") else "")
        b = b or {}
        beam, greedy = b.get("beam4_tok_s"), b.get("greedy_tok_s")
        ratio = f"{beam / greedy:.2f}" if beam and greedy else "-"
        notes = [t["run_text"].format(text=b["note"])] if b.get("note") else []
        if ll and ll.get("note"):
            notes.append(t["llama_note"].format(note=t["run_text"].format(text=ll["note"])))
        lines.append(f"| {name} | {first.get('version')} | {_tok_s(greedy)} | {_tok_s(beam)} | {ratio} | "
                     f"{_tok_s(ll.get('greedy_tok_s')) if ll else '-'} | {_tok_s(ll.get('beam4_tok_s')) if ll else '-'} "
                     f"| {' '.join(notes)} |")
    lines += ["", t["speed_how"]]
    if llama_part := report.get("llama", {}).get("bench"):
        lines += ["", t["speed_llama"].format(cpu=CPU, n=len(llama_part))]
    gap = report.get("beam_gap")
    if gap:
        genai = (t["gap_genai"].format(**{"genai_gemm_4_x": "?", "genai_lm_head_4_x": "?", **gap},
                                       genai=gap["genai_beam4_over_greedy"]) if "genai_model_4_x" in gap else "")
        lines += ["", t["gap"].format(**gap, plain=gap["plain_beam4_over_greedy"],
                                      fast=gap["fast_beam4_over_greedy"]) + genai]
    return lines


def llama_lines(report: dict, t: dict, lang: str) -> list[str]:
    """The Llama checkpoint (``report["llama"]``): per engine with a responses-llama.jsonl, the engines_llama groups'
    pass / differ / unsupported, answered, reproduced by its profile, differing and of those reproduced, and its
    fresh Llama cases (``fresh_check.py --family llama``); the cases not reproduced and the causes, as above."""
    part = report.get("llama")
    if not part or not part.get("engines"):
        return []
    fresh = (part.get("fresh") or {}).get("engines", {})
    lines = ["", t["llama_h"], "", t["llama"], "", t["llama_head"], "|---|---|---|---|---|---|---|---|---|"]
    for e in part["engines"]:
        cells = ["{pass} / {differ} / {unsupported}".format(**e["groups"][g])
                 + (t["no_answer"].format(n=e["groups"][g]["no answer"]) if e["groups"][g].get("no answer") else "")
                 if g in e["groups"] else "-" for g in LLAMA_GROUPS]
        f = fresh.get(e["engine"])
        lines.append(f"| {e['engine']} | {' | '.join(cells)} | {e['answered']} | {e['reproduced']} | "
                     f"{e['differing']} | {e['reproduced_differing']} | {f['answered'] if f else '-'} | "
                     f"{f['same'] if f else '-'} |")
    if part.get("fresh"):
        lines += ["", t["llama_fresh"].format(seed=part["fresh"]["seed"], cases=part["fresh"]["cases"])]
        mismatches = [(name, m) for name, r in fresh.items() for m in r["mismatches"]]
        lines += [t["mismatches"] if mismatches else t["mismatches_none"]]
        lines += [t["mismatch"].format(name=name, case=m["id"], note=t["run_text"].format(text=m["note"]),
                                       why=m["why"], reason=mismatch_reason(m, t)) for name, m in mismatches]
    missed = [(e["engine"], c) for e in part["engines"] for c in e["differing_cases"] if not c["reproduced"]]
    if missed:
        lines += ["", t["missed"], ""]
        for engine, c in missed:
            where = t["section_sep"].join(t["section"].format(heading=h)
                                          for h in findings_sections_naming(engine, c["id"], lang)) or t["none_names"]
            lines.append(t["missed_case"].format(engine=engine, case=c["id"], row=c["departs"].get("row"),
                                                 position=c["departs"].get("position"), where=where))
    causes = cause_lines({"engines": part["engines"]}, t)[5:]   # the causes' lines, without the heading and intro
    if causes:
        lines += ["", t["llama_causes"], "", *causes]
    return lines


def findings_causes(engine: str, lang: str = "en") -> str:
    """The '## Causes' section(s) of the engine's FINDINGS.md ('## 原因' of its FINDINGS.zh.md for ``lang="zh"``),
    headings moved down two levels."""
    name, starts = FINDINGS[lang]
    path = HERE / engine / name
    if not path.exists():
        return ""
    text, out, keep = path.read_text(), [], False
    for line in text.splitlines():
        if line.startswith("## "):
            keep = line.lower().startswith(starts)
            continue
        if keep:
            out.append(re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + 1) + " ", line))
    return "\n".join(out).strip()


def _switch_text() -> list[str]:
    """EngineRules' docstring from its first section on (the switches, with their sources)."""
    doc = inspect.getdoc(EngineRules) or ""
    return doc[doc.index("Processors"):].splitlines() if "Processors" in doc else doc.splitlines()


def findings_sections_naming(engine: str, case_id: str, lang: str = "en") -> list[str]:
    """The headings of the engine's FINDINGS.md sections whose text names ``case_id`` (for ``lang="zh"``, the same
    sections' headings in its FINDINGS.zh.md)."""
    path = HERE / engine / "FINDINGS.md"
    if not path.exists():
        return []
    found, heading = [], ""
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif case_id in line and heading not in found:
            found.append(heading)
    if lang == "zh":
        chinese = dict(zh_headings(engine))
        return [chinese.get(slug(h), h) for h in found]
    return found


def slug(heading: str) -> str:
    """Python-Markdown's toc anchor of a heading (what mkdocs gives a heading without ``{#id}``)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def zh_headings(engine: str) -> list[tuple[str, str]]:
    """(anchor, heading) of each heading of the engine's FINDINGS.zh.md that carries ``{#anchor}``: the anchor is
    that of the English FINDINGS.md heading it translates (tests/docs/test_engines_page.py checks they pair up)."""
    path = HERE / engine / "FINDINGS.zh.md"
    found = (re.match(r"^#+ (.*?)\s*\{#([\w-]+)\}\s*$", line) for line in
             (path.read_text().splitlines() if path.exists() else []))
    return [(m.group(2), m.group(1)) for m in found if m]


def fresh_lines(fresh: dict | None, t: dict) -> list[str]:
    """The page's section on fresh cases (``fresh_check.py --json``'s results, merged): profile = engine per engine,
    how its cases were drawn, every mismatch with its case (``t``: the page's words)."""
    if not fresh:
        return []
    target = fresh.get("answered_target")
    command = (f"`examples/engines/fresh_check.py --fresh {fresh['cases']} --seed {fresh['seed']}"
               + (f" --answered {target}`" if target else "`"))
    lines = ["", t["fresh_h"], "",
             t["fresh"].format(command=command,
                               target=t["fresh_target"].format(target=target, cases=fresh["cases"]) if target else ""),
             "", t["fresh_head"], "|---|---|---|---|---|---|---|---|---|"]
    for name, r in fresh["engines"].items():
        asked = r.get("asked", r["answered"] + r["unsupported"] + r["no_answer"])
        draw = r.get("draw", TEXT["en"]["common_draw"])   # fresh_check.py writes the common draw's name in English
        draw = t["common_draw"] if draw == TEXT["en"]["common_draw"] else t["run_text"].format(text=draw)
        lines.append(f"| {name} | {draw} | {asked} | {r['answered']} | {r['same']} | "
                     f"{r['departing']} | {r['departing_same']} | {r['unsupported']} | "
                     f"{r.get('failed_as_modelled', 0)} |")
    mismatches = [(name, m) for name, r in fresh["engines"].items() for m in r["mismatches"]]
    lines += ["", t["mismatches"] if mismatches else t["mismatches_none"]]
    lines += [t["mismatch"].format(name=name, case=m["id"], note=t["run_text"].format(text=m["note"]), why=m["why"],
                                   reason=mismatch_reason(m, t))
              for name, m in mismatches]
    undefined = [(name, m) for name, r in fresh["engines"].items() for m in r.get("undefined_answered", [])]
    if undefined:
        lines += ["", t["undefined"]]
        lines += [t["undefined_case"].format(name=name, case=m["id"], note=m["note"]) for name, m in undefined]
    return lines


def mismatch_reason(m: dict, t: dict) -> str:
    """Why a fresh case's answer differs from the profile's, as far as the run can tell."""
    if m["why"].startswith("no answer"):
        return t["reason_no_answer"]
    if "near-tie: margin" in m["note"]:
        return t["reason_near_tie"]
    return t["reason_unknown"]


def merge_fresh(report: dict, paths: list[Path]) -> None:
    """fresh_check.py --json outputs (of one seed) into ``report["fresh"]``; a missing one ends the run."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:  # fresh_check.py crashed before writing its results: say so, do not drop the page's section
        sys.exit(f"report.py: --fresh {', '.join(missing)} does not exist (did fresh_check.py fail? see fresh*.txt)")
    for path in paths:
        found = json.loads(path.read_text())
        report.setdefault("fresh", {**found, "engines": {}})["engines"].update(found["engines"])


def write_markdown(report: dict, lang: str = "en") -> str:
    """The engines page in ``lang`` ("en": docs/engines.md, "zh": docs/engines.zh.md) from ``report`` (report.json):
    the same numbers and code blocks in both, the words from report_text.py, the engines' notes from FINDINGS.md
    or FINDINGS.zh.md."""
    t = TEXT[lang]
    lines = [t["title"], "", t["generated"].format(date=report["date"]), "",
             t["provenance"].format(provenance=report["provenance"]), "", t["how"], "", t["idea_h"], "", t["idea"], "",
             t["worked_h"], "", t["worked"], "", *WORKED_EXAMPLE]
    lines += result_lines(report, t) + explained_lines(report, t, lang) + llama_lines(report, t, lang)
    lines += fresh_lines(report.get("fresh"), t)
    lines += cause_lines(report, t)
    lines += ["", t["switches_h"], "", t["switches"], "", "```text", *_switch_text(), "```"]
    lines += speed_lines(report, t)
    lines += ["", t["setup_h"], "", "```sh"]
    lines += [f"examples/engines/{e}/setup.sh" for e in ENGINES]
    lines += ["examples/engines/run_all.sh        # everything: setups, suite export, runs, diagnosis, this page",
              "```", "", t["run_time"].format(run_time=run_time_text(report["run_time"], t)), "", t["by_engine_h"],
              "", t["by_engine"], ""]
    for e in ENGINES:
        text = findings_causes(e, lang)
        if text:
            lines += [f"### {e}", "", text, ""]
    return unique_anchors("\n".join(lines).rstrip() + "\n")


def unique_anchors(page: str) -> str:
    """A ``{#anchor}`` given again (two engines' "Not causes here (checked)") becomes ``anchor_1``, ``anchor_2``...,
    as mkdocs numbers a repeated heading of the English page, so each anchor names one section in both pages."""
    seen: dict[str, int] = {}

    def number(m: re.Match) -> str:
        n = seen[m.group(1)] = seen.get(m.group(1), -1) + 1
        return f"{{#{m.group(1)}{f'_{n}' if n else ''}}}"

    return re.sub(r"\{#([\w-]+)\}$", number, page, flags=re.M)


#: the page's worked example (a code block, the same in both languages; tests/docs/test_docs.py runs it)
WORKED_EXAMPLE = [
    "```python",
    ">>> import numpy as np",
    ">>> from refdecode.model.stand_ins import TableModel",
    ">>> from refdecode.reference.engines import decode_as",
    ">>> table = np.log(np.array([[.1, .1, .1, .7], [.1, .1, .7, .1], [.7, .1, .1, .1], [.1, .1, .1, .7]],",
    "...                         dtype=np.float32))",
    ">>> model, ids = TableModel(table), np.array([[1], [3]])",
    ">>> config = {\"max_new_tokens\": 4, \"eos_token_id\": [0], \"pad_token_id\": 0}",
    ">>> decode_as(\"transformers-4.38.2\", model, ids, None, config)[\"sequences\"].tolist()",
    "[[1, 2, 0, 0, 0], [3, 3, 3, 3, 3]]",
    ">>> decode_as(\"transformers-js\", model, ids, None, config)[\"sequences\"].tolist()",
    "[[1, 2, 0, 3, 3], [3, 3, 3, 3, 3]]",
    "",
    "```",
]


def run_time_text(run_time: str, t: dict) -> str:
    """report.json's run time sentence (total_run_time's, in English) in the page's words, when it is that one."""
    m = re.fullmatch(re.escape(EN_RUN_TIME).replace(re.escape("{minutes}"), r"([\d.]+)"), run_time)
    return t["run_time_total"].format(minutes=m.group(1)) if m else run_time


def result_lines(report: dict, t: dict) -> list[str]:
    """Engine x case group: pass / differ / unsupported (and no answer where it happened)."""
    shown = [g for g in GROUPS if any(g in e["groups"] for e in report["engines"])]
    lines = ["", t["results_h"], "", f"| {t['engine']} | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    for e in report["engines"]:
        cells = [("{pass} / {differ} / {unsupported}".format(**e["groups"][g])
                  + (t["no_answer"].format(n=e["groups"][g]["no answer"]) if e["groups"][g].get("no answer") else "")
                  if g in e["groups"] else "-")
                 for g in shown]
        lines.append(f"| {e['engine']} | " + " | ".join(cells) + " |")
    return lines


def explained_lines(report: dict, t: dict, lang: str) -> list[str]:
    """Profile = engine per engine, check's verdicts on the differing cases, the cases no profile gives."""
    lines = ["", t["explained_h"], "", t["explained"], "", t["explained_head"], "|---|---|---|---|---|---|"]
    for e in report["engines"]:
        sw = ", ".join(f"`{k}={v}`" for k, v in e["switches"].items()) or t["control"]
        lines.append(f"| {e['engine']} | {sw} | {e['answered']} | {e['reproduced']} | {e['differing']} | "
                     f"{e['reproduced_differing']} |")
    judged = [(e["engine"], [c["check"] for c in e["differing_cases"] if c.get("check")]) for e in report["engines"]]
    if any(v for _, v in judged):
        lines += ["", t["verdicts"].format(verdicts=t["verdict_sep"].join(
            t["verdict"].format(name=name, rule=sum("(not a near-tie)" in v for v in vs),
                                tie=sum(v.startswith("NEAR-TIE") or "(near-tie)" in v for v in vs))
            for name, vs in judged if vs))]
    missed = [(e["engine"], c) for e in report["engines"] for c in e["differing_cases"] if not c["reproduced"]]
    if missed:
        lines += ["", t["missed"], ""]
        for engine, c in missed:
            where = t["section_sep"].join(t["section"].format(heading=h)
                                          for h in findings_sections_naming(engine, c["id"], lang)) or t["none_names"]
            lines.append(t["missed_case"].format(engine=engine, case=c["id"], row=c["departs"].get("row"),
                                                 position=c["departs"].get("position"), where=where))
    return lines


def cause_lines(report: dict, t: dict) -> list[str]:
    """Each engine's causes, most cases first, with their cases and a reproducer."""
    lines = ["", t["causes_h"], "", t["causes"], ""]
    for e in report["engines"]:
        for c, ids in sorted(e["causes"].items(), key=lambda kv: -len(kv[1])):
            more = t["more"].format(n=len(ids)) if len(ids) > 8 else ""
            lines.append(t["cause"].format(engine=e["engine"], cause=c, cases=", ".join(ids[:8]), more=more))
            rep = e["reproducers"].get(c)
            if rep:
                mask = "" if all(map(all, rep["attention_mask"])) else t["mask"].format(mask=rep["attention_mask"])
                lines.append(t["reproducer"].format(
                    case=rep["case"], model=rep["model"], input_ids=rep["input_ids"], mask=mask,
                    options=json.dumps(rep["options"]), row=rep["row"], expected=rep["transformers-4.38.2"],
                    engine=e["engine"], got=rep[e["engine"]]))
    return lines


def bench_rows(args: argparse.Namespace) -> list[dict]:
    """The engines' bench lines (``--bench``), then refdecode's two rows (``--refdecode-bench``)."""
    bench = []
    if args.bench and args.bench.exists():
        bench = [json.loads(line) for line in args.bench.read_text().splitlines() if line.strip().startswith("{")]
    if args.refdecode_bench:
        bench += refdecode_bench()
    return bench


def llama_report(attribute: bool, check_dir: Path | None, previous: dict | None, args: argparse.Namespace) -> dict:
    """``report["llama"]``: every engine with a responses-llama.jsonl summarised (the page's Llama section), every
    bench-llama.json and refdecode's own rows on the Llama (``--refdecode-bench-llama``: timed now; else the previous
    report's), fresh_check.py ``--family llama``'s results (``--fresh-llama``; else the previous report's)."""
    previous = previous or {}
    engines = [summarise(e, attribute, check_dir, llama=True) for e in ENGINES if (HERE / e / LLAMA_RESPONSES).exists()]
    bench = [json.loads((HERE / e / LLAMA_BENCH).read_text()) for e in ENGINES if (HERE / e / LLAMA_BENCH).exists()]
    if args.refdecode_bench_llama:
        bench += refdecode_bench(args.llama_model)
    else:
        bench += [b for b in previous.get("bench", []) if b.get("engine") == "refdecode"]
    fresh = previous.get("fresh")
    if args.fresh_llama:
        fresh = {}
        merge_fresh(fresh, args.fresh_llama)
        fresh = fresh["fresh"]
        for r in fresh["engines"].values():   # an adapter's error quotes this machine's paths: not in the page
            for m in r["mismatches"]:
                m["why"] = re.sub(r"(?<![\w.])/(?:[\w.+-]+/)+", "", m["why"].replace(str(ROOT) + "/", ""))
    return {"engines": engines, "bench": bench, **({"fresh": fresh} if fresh else {})}


def total_run_time(path: Path) -> str:
    """The page's sentence for run_all.sh's whole run, from the file it writes at its end (seconds)."""
    seconds = float(path.read_text().split()[0])
    return EN_RUN_TIME.format(minutes=f"{seconds / 60:.1f}")


def write_pages(report: dict) -> None:
    """docs/engines.md and its Chinese twin docs/engines.zh.md, from the same report."""
    for lang, page in PAGES.items():
        page.write_text(write_markdown(report, lang), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=None, help="JSON lines of the engines' bench scripts")
    ap.add_argument("--refdecode-bench", action="store_true",
                    help="time refdecode's generate, default and fast forward pass (two rows of the speed table)")
    ap.add_argument("--beam-gap", type=Path, default=None,
                    help="benchmarks/beam_gap.py --json output: the speed section's paragraph on beam-4")
    ap.add_argument("--no-attribute", action="store_true")
    ap.add_argument("--check-dir", type=Path, default=None,
                    help="run_all.sh's folder of check-<engine>.txt (check's verdict on each differing case)")
    ap.add_argument("--run-seconds", type=float, default=None,
                    help="how long run_all.sh took before this step (this step's own time is added)")
    ap.add_argument("--run-time-file", type=Path, default=None,
                    help="run_all.sh's whole run time in seconds, written at its end (replaces --run-seconds)")
    ap.add_argument("--provenance", default="The engines' answers are the committed responses.jsonl files.")
    ap.add_argument("--fresh", type=Path, action="append", default=[],
                    help="fresh_check.py --json output(s) of one seed, merged into the report's fresh-case section")
    ap.add_argument("--llama", action="store_true",
                    help="with --from-json: the Llama part again (every responses-llama.jsonl and bench-llama.json)")
    ap.add_argument("--refdecode-bench-llama", action="store_true",
                    help="time refdecode's generate on the 124M-class Llama (--llama-model), both forward passes")
    ap.add_argument("--llama-model", type=Path, default=ROOT / "benchmarks" / "_checkpoints" / "llama-124m-random",
                    help="the 124M-class Llama (benchmarks/make_llama_checkpoint.py)")
    ap.add_argument("--fresh-llama", type=Path, action="append", default=[],
                    help="fresh_check.py --family llama --json output(s) of one seed")
    ap.add_argument("--from-json", action="store_true",
                    help="write docs/engines.md again from report.json (after a FINDINGS.md edit or a change of a "
                         "profile's switches); with --bench / --refdecode-bench / --beam-gap / --run-time-file / "
                         "--fresh, those parts are replaced first")
    args = ap.parse_args()
    if args.from_json:
        report = json.loads((HERE / "report.json").read_text())
        if args.bench or args.refdecode_bench:
            report["bench"] = bench_rows(args)
        if args.beam_gap:
            report["beam_gap"] = json.loads(args.beam_gap.read_text())
        if args.run_time_file:
            report["run_time"] = total_run_time(args.run_time_file)
        if args.fresh:
            report.pop("fresh", None)
            merge_fresh(report, args.fresh)
        if args.llama or args.refdecode_bench_llama or args.fresh_llama:
            report["llama"] = llama_report(not args.no_attribute, args.check_dir, report.get("llama"), args)
        for e in report["engines"] + report.get("llama", {}).get("engines", []):  # the profiles' switches as the
            e["switches"] = switches_of(PROFILES[e["engine"]])                     # code names them now
        (HERE / "report.json").write_text(json.dumps(report, indent=1) + "\n")
        write_pages(report)
        return
    started = time.perf_counter()
    engines = [summarise(e, not args.no_attribute, args.check_dir) for e in ENGINES]
    bench = bench_rows(args)
    own = time.perf_counter() - started  # this step's own time (attribution, refdecode's bench)
    run_time = (f"{(args.run_seconds + own) / 60:.1f} min (run_all.sh, on a fresh clone: setups, suite export, "
                f"checks and recordings, benches, then this report's {own / 60:.1f} min)" if args.run_seconds
                else "not measured (this page was written from the committed responses)")
    if args.run_time_file:
        run_time = total_run_time(args.run_time_file)
    report = {"date": datetime.date.today().isoformat(), "engines": engines, "bench": bench, "run_time": run_time,
              "provenance": args.provenance}
    if args.beam_gap:
        report["beam_gap"] = json.loads(args.beam_gap.read_text())
    merge_fresh(report, args.fresh)
    report["llama"] = llama_report(not args.no_attribute, args.check_dir, None, args)
    (HERE / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    write_pages(report)
    for e in engines:
        print(f"{e['engine']}: answered {e['answered']}, reproduced {e['reproduced']}; differ {e['differing']}, "
              f"reproduced {e['reproduced_differing']}")


if __name__ == "__main__":
    main()
