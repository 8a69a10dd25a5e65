"""tools/course/hidden/cases.json: no trivial answer scores, and each rule the handout grades decides a case.

A rule decides a case when the reference submission with that one rule broken (a "mutant": one line of its text
changed) fails it. The mutants run in this process on the scripted cases (task.ScriptedModel), which need no
GPT-2 forward pass; the trivial answers never call the model, so they run on every case.
"""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
from conftest import ROOT

COURSE = ROOT / "tools" / "course"
sys.path.insert(0, str(COURSE))
import task  # noqa: E402

REFERENCE = ROOT / "tutorials" / "solutions" / "submission"
CASES = task.decode(json.loads((COURSE / "hidden" / "cases.json").read_text())["cases"])
TEST = {t.function: t for t in task.TESTS}

#: (what is broken, file, function, the line as the reference writes it, the broken line)
MUTANTS = [
    ("greedy: ties to the higher id", "decoding", "greedy",
     "model(ids).argmax(axis=-1)", "_higher_argmax(model(ids))"),
    ("sample: top-p ties, the higher id first", "decoding", "sample",
     'order = np.argsort(scores, axis=-1, kind="stable")',
     'order = scores.shape[-1] - 1 - np.argsort(scores[:, ::-1], axis=-1, kind="stable")'),
    ("beam_search: ties, the higher index first", "decoding", "beam_search",
     'ranked = np.argsort(-flat, kind="stable")[:2 * k]',
     'ranked = (len(flat) - 1 - np.argsort(-flat[::-1], kind="stable"))[:2 * k]'),
    ("llama_top_p: ties, the higher id first", "processors", "llama_top_p",
     'order = np.argsort(-probs, axis=-1, kind="stable")',
     'order = probs.shape[-1] - 1 - np.argsort(-probs[:, ::-1], axis=-1, kind="stable")'),
    ("beam_search: an eos ranked K or below finishes a hypothesis", "decoding", "beam_search",
     "if rank < k:", "if True:"),
    ("sample: the crossing token of top-p removed", "decoding", "sample",
     "drop = mass <= np.float32(1.0 - top_p)",
     "drop = np.concatenate([np.zeros_like(mass[:, :1]), mass[:, :-1]], axis=1) <= np.float32(1.0 - top_p)"),
    ("greedy: finished rows padded with 0", "decoding", "greedy",
     "np.where(unfinished, next_tokens, eos_token_id)", "np.where(unfinished, next_tokens, 0)"),
    ("sample: finished rows padded with 0", "decoding", "sample",
     "np.where(unfinished, next_tokens, eos_token_id)", "np.where(unfinished, next_tokens, 0)"),
    ("beam_search: shorter rows padded with 0", "decoding", "beam_search",
     "-1 if eos_token_id is None else eos_token_id", "-1 if eos_token_id is None else 0"),
    ("beam_search: the length penalty ignored", "decoding", "beam_search",
     "** length_penalty", "** 1.0"),
]
HELPERS = '''

def _higher_argmax(x):
    return x.shape[-1] - 1 - x[:, ::-1].argmax(axis=-1)
'''


def _module(file: str, replace: tuple[str, str] | None = None) -> types.ModuleType:
    text = (REFERENCE / f"{file}.py").read_text(encoding="utf-8")
    if replace:
        assert replace[0] in text, replace[0]
        text = text.replace(*replace) + HELPERS
    module = types.ModuleType(f"mutant_{file}")
    exec(compile(text, str(REFERENCE / f"{file}.py"), "exec"), module.__dict__)
    return module


def _failures(fn, function: str, cases: list[dict]) -> int:
    test, failed = TEST[function], 0
    for case in cases:
        args = [task.case_model(case, None), *case["args"]] if test.needs_model else case["args"]
        try:
            with np.errstate(all="ignore"):
                got = fn(*args)
            problem = task.harness.compare(test.kind, case["expected"], got,
                                           np.shape(case["args"][0])[-1] if test.needs_model else 0)
        except Exception as err:  # noqa: BLE001 -- a crash is a failed case
            problem = repr(err)
        failed += problem is not None
    return failed


def _scripted(function: str) -> list[dict]:
    return [c for c in CASES[function] if "model" in c] if TEST[function].needs_model else CASES[function]


def test_every_decoding_function_has_scripted_cases_and_the_reference_passes_them():
    for function in ("greedy", "sample", "beam_search"):
        scripted = _scripted(function)
        assert len(scripted) >= 3 and all(c["label"].startswith("scripted:") for c in scripted)
        assert _failures(getattr(_module("decoding"), function), function, scripted) == 0
    for function in ("repetition_penalty", "no_repeat_ngram_banned", "top_k_filter", "llama_top_p"):
        assert _failures(getattr(_module("processors"), function), function, CASES[function]) == 0


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_each_graded_rule_decides_a_case(mutant):
    _, file, function, line, broken = mutant
    fn = getattr(_module(file, (line, broken)), function)
    assert _failures(fn, function, _scripted(function)) >= 1


def _prompt_plus_eos(model, input_ids, max_new_tokens, *rest):
    eos = rest[-1]
    rows = np.asarray(input_ids, dtype=np.int64)
    out = np.concatenate([rows, np.full((len(rows), 1), 0 if eos is None else eos, dtype=np.int64)], axis=1)
    return (out, np.zeros(len(rows), np.float32)) if len(rest) == 4 else out


TRIVIAL = {"repetition_penalty": lambda ids, scores, penalty: scores.copy(),
           "no_repeat_ngram_banned": lambda row, n: [],
           "top_k_filter": lambda scores, k: scores.copy(),
           "llama_top_p": lambda probs, p: probs.copy(),
           "greedy": _prompt_plus_eos, "sample": _prompt_plus_eos, "beam_search": _prompt_plus_eos}


@pytest.mark.parametrize("function", list(TRIVIAL))
def test_identity_empty_and_prompt_plus_eos_score_zero(function):
    """Every hidden case: the input back (1a, 1c, 1d), [] (1b), the prompt plus eos (2-4) fail, every one."""
    cases = CASES[function]
    assert _failures(TRIVIAL[function], function, cases) == len(cases)
