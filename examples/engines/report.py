r"""Write docs/engines.md and examples/engines/report.json from the engines' recorded answers.

    .venv/bin/python examples/engines/report.py [--bench examples/engines/bench.jsonl] [--no-attribute]
                                                [--run-seconds N | --run-time-file F] [--refdecode-bench]
                                                [--beam-gap beam_gap.json] [--check-dir DIR] [--fresh fresh.json ...]
    .venv/bin/python examples/engines/report.py --from-json      # the page again from report.json
    .venv/bin/python examples/engines/report.py --from-json --bench B --refdecode-bench --beam-gap G  # new speed only

Reads examples/engines/<engine>/responses.jsonl (written by run_all.sh: record_responses.py + slim_responses.py),
and for every engine and case group counts pass (the engine's sequences equal transformers 4.38.2's) / differ /
unsupported; runs refdecode's profile of the engine (``refdecode.reference.engines.decode_as``) on every answered
case (reproduced = token for token); for each differing case, finds a minimal set of the profile's switches that
turns 4.38.2's rules into the engine's answer (its cause; ``--no-attribute`` skips this); adds the speed table
(each bench script's JSON line from ``--bench``, refdecode's own with ``--refdecode-bench``: its default and its fast
forward pass; ``--beam-gap``: benchmarks/beam_gap.py's figures on beam-4) and each engine's
causes as its FINDINGS.md states them (both rules with sources, a reproducer each). Runs in refdecode's venv.
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
from dataclasses import replace
from pathlib import Path

import numpy as np

from refdecode import GPT2
from refdecode.reference.engines import PROFILES, EngineRules, NextTokenLogits, decode_as, rules_for, switches_of
from refdecode.reference.conformance.cases_decode import full_config
from refdecode.reference.engines.beam import NotSimulated

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENGINES = ["transformers-4.38.2", "transformers-5", "ctranslate2", "onnxruntime-genai", "transformers-js",
           "llama-cpp", "keras-hub", "mlx-lm", "openvino-genai",
           "transformers-4.38.2-tf", "vllm",
           "transformers-4.38.2-flax"]
GROUPS = ["engines_greedy", "engines_beam_search", "engines_124m_greedy", "engines_124m_beam_search", "gpt2_greedy",
          "gpt2_sample", "gpt2_beam_search"]
_LOGITS: dict[tuple[str, str], NextTokenLogits] = {}


def model_dir(name: str) -> Path:
    for base in (ROOT / "models", ROOT / "tests" / "golden" / "models"):
        if (base / name).exists():
            return base / name
    raise FileNotFoundError(f"model {name!r} is neither in models/ nor in tests/golden/models/")


def run(profile: EngineRules | str, r: dict) -> list | None:
    key = (r["model"], rules_for(profile).activation)     # one memo per model and activation (llama.cpp's GELU)
    if key not in _LOGITS:
        _LOGITS[key] = NextTokenLogits(GPT2.from_pretrained(model_dir(key[0])), key[1])
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


def check_verdicts(check_dir: Path | None, engine: str) -> dict[str, str]:
    """Case id -> what `refdecode conformance check` said of it (its FAIL / NEAR-TIE line: where the decode
    departs, and whether refdecode's margin there makes it a near-tie), from run_all.sh's check-<engine>.txt."""
    path = check_dir / f"check-{engine}.txt" if check_dir else None
    if not path or not path.exists():
        return {}
    found = (re.match(r"(FAIL|NEAR-TIE) (\S+) \(.*?\): (.*)$", line) for line in path.read_text().splitlines())
    return {m.group(2): f"{m.group(1)}: {m.group(3)}" for m in found if m}


def summarise(engine: str, attribute: bool, check_dir: Path | None = None) -> dict:
    verdicts = check_verdicts(check_dir, engine)
    path = HERE / engine / "responses.jsonl"
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


def refdecode_bench() -> list[dict]:
    """refdecode's generate on the 124M-shaped checkpoint with each forward pass, timed as the engines' benches time
    theirs (common/bench_common.py: the same prompt, 64 new tokens, 1 warm-up + 5 runs, median)."""
    from refdecode import generate
    sys.path.insert(0, str(HERE / "common"))
    from bench_common import NEW, PROMPT, default_model, tok_per_s

    ids = np.array([PROMPT], dtype=np.int64)
    rows = []
    for forward, note in FORWARDS.items():
        model = GPT2.from_pretrained(default_model(), forward=forward)
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


def speed_lines(report: dict) -> list[str]:
    """The speed table (greedy, beam-4 and their ratio per engine; refdecode's two forward passes as two rows), and
    the paragraph on beam-4 from benchmarks/beam_gap.py's figures when the run made them."""
    lines = ["", "## Speed (GPT-2-124M-shaped, 8-token prompt, 64 new tokens, batch 1, median of 5)", ""]
    if not report["bench"]:
        return lines + ["Not measured in this run (`run_all.sh` measures it); each engine's FINDINGS.md gives the "
                        "figures its helper measured."]
    lines += ["| engine | version | greedy tok/s | beam-4 tok/s | beam-4 / greedy | note |",
              "|---|---|---|---|---|---|"]
    for b in report["bench"]:
        name = b.get("engine") + (f", forward=\"{b['forward']}\"" if b.get("forward") else "")
        beam, greedy = b.get("beam4_tok_s"), b.get("greedy_tok_s")
        ratio = f"{beam / greedy:.2f}" if beam and greedy else "-"
        lines.append(f"| {name} | {b.get('version')} | {'-' if greedy is None else greedy} | "
                     f"{'-' if beam is None else beam} | {ratio} | "
                     f"{b.get('note', '')} |")
    lines += ["", "Each engine single-threaded, its own bench script (`examples/engines/<engine>/bench.*`); "
              "refdecode: `generate` with OPENBLAS_NUM_THREADS=1, once per forward pass. One run each, on a shared "
              "2-core machine: read the ratios, not the third digit."]
    gap = report.get("beam_gap")
    if gap:
        genai = (f" onnxruntime-genai's model runs 4 rows in {gap['genai_model_4_x']}x the time of one (its Conv1D "
                 f"products {gap.get('genai_gemm_4_x', '?')}x, its LM head {gap.get('genai_lm_head_4_x', '?')}x: "
                 "onnxruntime packs each constant weight once, at load, for its MLAS GEMM: `PrePack` in "
                 "onnxruntime/core/providers/cpu/math/gemm.cc and matmul.cc), and its whole beam step "
                 f"(model, search, cache) {gap['genai_step_4_x']}x a greedy step; beam-4 / greedy "
                 f"{gap['genai_beam4_over_greedy']:.2f}." if "genai_model_4_x" in gap else "")
        lines += ["", "**Why beam-4 costs what it does** (`benchmarks/beam_gap.py`, one thread, "
                  f"{gap['clock']}, {gap['rounds']} alternating rounds, {gap['date']}, load average {gap['load']}). "
                  "A beam-4 step is the model on 4 rows plus the search. The weight products of one step take, "
                  f"for 4 rows, {gap['products_4_one_call_x']}x the time of one row as one OpenBLAS call (its GEMM "
                  f"packs a copy of each weight first) and {gap['products_4_blocks_x']}x in blocks under OpenBLAS's "
                  "small-matrix bound, which the fast forward pass runs (11 rows, prompt lookup's verification: "
                  f"{gap['products_11_blocks_x']}x); its whole 4-row forward step costs {gap['forward_4_x']}x a "
                  f"1-row step. The search adds per beam step: log_softmax over 4 x 50,257 with torch's bits "
                  f"{gap['log_softmax_exact_ms']} ms (NumPy's plain expression {gap['log_softmax_numpy_ms']} ms), "
                  f"the top-2K candidates {gap['top_2k_ms']} ms, the KV cache reorder {gap['reorder_ms']} ms. "
                  f"beam-4 / greedy: refdecode default forward {gap['plain_beam4_over_greedy']:.2f}, fast forward "
                  f"{gap['fast_beam4_over_greedy']:.2f}." + genai]
    return lines


def findings_causes(engine: str) -> str:
    """The '## Causes' section(s) of the engine's FINDINGS.md, headings moved down two levels."""
    path = HERE / engine / "FINDINGS.md"
    if not path.exists():
        return ""
    text, out, keep = path.read_text(), [], False
    for line in text.splitlines():
        if line.startswith("## "):
            keep = line.lower().startswith(("## causes", "## cause"))
            continue
        if keep:
            out.append(re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + 1) + " ", line))
    return "\n".join(out).strip()


def _switch_text() -> list[str]:
    """EngineRules' docstring from its first section on (the switches, with their sources)."""
    doc = inspect.getdoc(EngineRules) or ""
    return doc[doc.index("Processors"):].splitlines() if "Processors" in doc else doc.splitlines()


def findings_sections_naming(engine: str, case_id: str) -> list[str]:
    """The headings of the engine's FINDINGS.md sections whose text names ``case_id``."""
    path = HERE / engine / "FINDINGS.md"
    if not path.exists():
        return []
    found, heading = [], ""
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif case_id in line and heading not in found:
            found.append(heading)
    return found


def fresh_lines(fresh: dict | None) -> list[str]:
    """The page's section on fresh cases (``fresh_check.py --json``'s results, merged): profile = engine per engine,
    how its cases were drawn, every mismatch with its case."""
    if not fresh:
        return []
    target = fresh.get("answered_target")
    lines = ["", "### Fresh cases (drawn anew, never in the suite)", "",
             f"`examples/engines/fresh_check.py --fresh {fresh['cases']} --seed {fresh['seed']}"
             + (f" --answered {target}`" if target else "`")
             + " (`refdecode conformance fresh`: left-padded batches of new prompts, new settings, near-ties kept and "
             "labelled) through each engine's adapter, its answers against its profile. Each engine is drawn for "
             "over the options it takes (the draw column; fresh_check.py's `DRAWS`), the expected answers computed "
             "after the fit"
             + (f"; an engine that answered fewer than {target} of a stream's {fresh['cases']} cases is asked the "
                "next stream of the same seed until it has" if target else "") + ":", "",
             "| engine (profile) | draw | asked | answered | profile = engine | differ from 4.38.2 | "
             "of those profile = engine | unsupported | failed where the profile allows it |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in fresh["engines"].items():
        asked = r.get("asked", r["answered"] + r["unsupported"] + r["no_answer"])
        lines.append(f"| {name} | {r.get('draw', 'the common draw')} | {asked} | {r['answered']} | {r['same']} | "
                     f"{r['departing']} | {r['departing_same']} | {r['unsupported']} | "
                     f"{r.get('failed_as_modelled', 0)} |")
    mismatches = [(name, m) for name, r in fresh["engines"].items() for m in r["mismatches"]]
    lines += ["", "Mismatches: " + ("none." if not mismatches else "each with its case, where the answers part, "
                                                                 "and why:")]
    lines += [f"* **{name}** {m['id']} ({m['note']}): {m['why']}. Why: {mismatch_reason(m)}" for name, m in mismatches]
    undefined = [(name, m) for name, r in fresh["engines"].items() for m in r.get("undefined_answered", [])]
    if undefined:
        lines += ["", "Rows where the profile predicts none (the engine read memory it never wrote, and its answer "
                  "came from what that memory held; onnxruntime-genai G5):"]
        lines += [f"* **{name}** {m['id']} ({m['note']})" for name, m in undefined]
    return lines


def mismatch_reason(m: dict) -> str:
    """Why a fresh case's answer differs from the profile's, as far as the run can tell."""
    if m["why"].startswith("no answer"):
        return "the engine gave no answer (error, crash or hang), where the profile predicts rows."
    if "near-tie: margin" in m["note"]:
        return ("a near-tie: a decision closer than check's tolerance, which the engine's own forward pass (its "
                "float arithmetic, not a decoding rule) can turn.")
    return "not found in this run: a rule or numeric of the engine that its profile lacks."


def merge_fresh(report: dict, paths: list[Path]) -> None:
    """fresh_check.py --json outputs (of one seed) into ``report["fresh"]``; a missing one ends the run."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:  # fresh_check.py crashed before writing its results: say so, do not drop the page's section
        sys.exit(f"report.py: --fresh {', '.join(missing)} does not exist (did fresh_check.py fail? see fresh*.txt)")
    for path in paths:
        found = json.loads(path.read_text())
        report.setdefault("fresh", {**found, "engines": {}})["engines"].update(found["engines"])


def write_markdown(report: dict) -> str:
    lines = [
        "# Engines: where real inference engines depart from transformers 4.38.2, and why",
        "",
        "Generated by `examples/engines/report.py` (run `examples/engines/run_all.sh` from a fresh clone to redo "
        f"everything); machine-readable: `examples/engines/report.json`. Generated {report['date']}.",
        "",
        report["provenance"],
        "",
        "Each engine runs through its adapter (`examples/engines/<engine>/run`, the conformance protocol) on the "
        "suite's `engines` group (the shipped tiny-shakespeare model, eos 198 \"\\n\"), its `engines_124m` group "
        "(the same decodes on the shipped model widened to GPT-2 124M's shape: 12 layers, 768 wide; "
        "`tools/engines/make_gpt2_124m_shaped.py`), `gpt2_greedy`, `gpt2_sample` and "
        "`gpt2_beam_search` (refdecode's golden GPT-2 cases; beams sent as `engines_beam_search`, since no engine "
        "returns per-step `beam_indices`). Sampling: no engine takes given draws; an adapter answers a sampling "
        "case only where the engine exposes the distribution it samples from (node-llama-cpp's probabilities), "
        "drawing from it with the case's uniforms, and refdecode's profile draws with the same uniforms. *pass*: "
        "the engine's sequences equal 4.38.2's; *differ*: they do not; *unsupported*: the engine has no way to take "
        "the case (sampling without given draws or its distribution, an option it lacks); *no answer* (shown only where "
        "it happened): the adapter hung, exited or answered junk (record_responses.py, as check, restarts it).",
        "",
        "## The idea",
        "",
        "An engine's departure from transformers 4.38.2 is understood when refdecode can produce it on demand. Each "
        "engine gets a profile: the named rules (`EngineRules` switches) where it differs, every other rule being "
        "4.38.2's. The profile is right when it gives the engine's own answers, token for token, on every case the "
        "engine answered.",
        "",
        "## Worked example",
        "",
        "transformers.js's greedy loop has no finished-rows mask: a row that emitted eos goes on generating while "
        "another row has not finished (its cause T1 below). On a bigram stand-in model (1 -> 2 -> 0 = eos -> 3):",
        "",
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
        "",
        "## Results: engine x case group (pass / differ / unsupported)",
        "",
        "| engine | " + " | ".join(g for g in GROUPS if any(g in e["groups"] for e in report["engines"])) + " |",
    ]
    shown = [g for g in GROUPS if any(g in e["groups"] for e in report["engines"])]
    lines.append("|---|" + "---|" * len(shown))
    for e in report["engines"]:
        cells = [("{pass} / {differ} / {unsupported}".format(**e["groups"][g])
                  + (f" / {e['groups'][g]['no answer']} no answer" if e["groups"][g].get("no answer") else "")
                  if g in e["groups"] else "-")
                 for g in shown]
        lines.append(f"| {e['engine']} | " + " | ".join(cells) + " |")
    lines += ["", "## Explained = reproduced", "",
              "refdecode's profile of each engine (`refdecode.reference.engines.PROFILES`; `decode_as(engine, ...)`, "
              "or `refdecode conformance serve --as ENGINE`) run on every case the engine answered:", "",
              "| engine | profile switches (over 4.38.2's rules) | answered | reproduced | differ from 4.38.2 | "
              "of those reproduced |", "|---|---|---|---|---|---|"]
    for e in report["engines"]:
        sw = ", ".join(f"`{k}={v}`" for k, v in e["switches"].items()) or "(none: the control)"
        lines.append(f"| {e['engine']} | {sw} | {e['answered']} | {e['reproduced']} | {e['differing']} | "
                     f"{e['reproduced_differing']} |")
    judged = [(e["engine"], [c["check"] for c in e["differing_cases"] if c.get("check")]) for e in report["engines"]]
    if any(v for _, v in judged):
        lines += ["", "`refdecode conformance check`'s verdict on the differing cases it judged (the step where the "
                  "engine departs, and refdecode's smallest margin up to there: below 1e-4 a near-tie, a rounding "
                  "difference; above, a rule): "
                  + "; ".join(f"{name} {sum('(not a near-tie)' in v for v in vs)} not a near-tie, "
                              f"{sum(v.startswith('NEAR-TIE') or '(near-tie)' in v for v in vs)} near-tie"
                              for name, vs in judged if vs) + "."]
    missed = [(e["engine"], c) for e in report["engines"] for c in e["differing_cases"] if not c["reproduced"]]
    if missed:
        lines += ["", "Not reproduced by the profile (the engine's FINDINGS.md section that names the case says "
                  "why, with its evidence):", ""]
        for engine, c in missed:
            where = ", ".join(f"\"{h}\"" for h in findings_sections_naming(engine, c["id"])) or "(none names it)"
            lines.append(f"* **{engine}** {c['id']} (departs at row {c['departs'].get('row')}, index "
                         f"{c['departs'].get('position')}): FINDINGS.md {where}")
    lines += fresh_lines(report.get("fresh"))
    lines += ["", "### Causes assigned to the differing cases", "",
              "For each differing case, a minimal set of the engine's switches that, turned on over 4.38.2's "
              "rules, gives the engine's answer: one switch alone when one does (the first listed when several "
              "do), else the whole profile with switches dropped one at a time while the answer stays the "
              "engine's. `(not reproduced)`: the whole profile does not give it. Per case, with the row and "
              "token where the engine departs: `report.json`, `differing_cases`.", ""]
    for e in report["engines"]:
        for c, ids in sorted(e["causes"].items(), key=lambda kv: -len(kv[1])):
            more = f" ... ({len(ids)} cases)" if len(ids) > 8 else ""
            lines.append(f"* **{e['engine']}** `{c}`: {', '.join(ids[:8])}{more}")
            rep = e["reproducers"].get(c)
            if rep:
                mask = "" if all(map(all, rep["attention_mask"])) else f", attention_mask {rep['attention_mask']}"
                lines.append(f"  reproducer {rep['case']} (model `{rep['model']}`): input_ids {rep['input_ids']}"
                             + mask + f", {json.dumps(rep['options'])}; row {rep['row']}, new tokens: "
                             f"transformers 4.38.2 "
                             f"{rep['transformers-4.38.2']}, {e['engine']} {rep[e['engine']]}")
    lines += ["", "### The switches", "",
              "Each switch is a rule of `refdecode.reference.engines.EngineRules` "
              "(`refdecode/reference/engines/rules.py`); its text, with the engine's source lines and 4.38.2's:", "",
              "```text", *_switch_text(), "```"]
    lines += speed_lines(report)
    lines += ["", "## Setup (one command per engine, from a fresh clone)", "", "```sh"]
    lines += [f"examples/engines/{e}/setup.sh" for e in ENGINES]
    lines += ["examples/engines/run_all.sh        # everything: setups, suite export, runs, diagnosis, this page",
              "```", "", f"Full run time: {report['run_time']}.", "", "## The causes, engine by engine", "",
              "As each engine's `FINDINGS.md` states them (the engine's rule with its source line, 4.38.2's rule "
              "with its source line, the cases, a reproducer, the refdecode rule = the profile's switch).", ""]
    for e in ENGINES:
        text = findings_causes(e)
        if text:
            lines += [f"### {e}", "", text, ""]
    return "\n".join(lines).rstrip() + "\n"


def bench_rows(args: argparse.Namespace) -> list[dict]:
    """The engines' bench lines (``--bench``), then refdecode's two rows (``--refdecode-bench``)."""
    bench = []
    if args.bench and args.bench.exists():
        bench = [json.loads(line) for line in args.bench.read_text().splitlines() if line.strip().startswith("{")]
    if args.refdecode_bench:
        bench += refdecode_bench()
    return bench


def total_run_time(path: Path) -> str:
    """The page's sentence for run_all.sh's whole run, from the file it writes at its end (seconds)."""
    seconds = float(path.read_text().split()[0])
    return (f"{seconds / 60:.1f} min (`run_all.sh` from start to end, timed by itself: setups, suite export, checks "
            "and recordings, fresh cases, benches, this report)")


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
        for e in report["engines"]:  # the profiles' switches as the code names them now (they decide no answer)
            e["switches"] = switches_of(PROFILES[e["engine"]])
        (HERE / "report.json").write_text(json.dumps(report, indent=1) + "\n")
        (ROOT / "docs" / "engines.md").write_text(write_markdown(report))
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
    (HERE / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (ROOT / "docs" / "engines.md").write_text(write_markdown(report))
    for e in engines:
        print(f"{e['engine']}: answered {e['answered']}, reproduced {e['reproduced']}; differ {e['differing']}, "
              f"reproduced {e['reproduced_differing']}")


if __name__ == "__main__":
    main()
