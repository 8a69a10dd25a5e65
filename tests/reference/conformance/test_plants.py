"""Planted bugs: each deliberately broken refdecode (``serve --plant NAME``) fails ``check`` on the cases
that exercise its rule, and only there.

Unit bugs run against the full unit cases of their type, search bugs against the first few
cases of each decode type (the ``decode_suite`` of test_conformance.py).
"""

from __future__ import annotations

import io
import json
import re
import sys

import numpy as np
import pytest
from conformance_suites import decode_suite, unit_suite  # noqa: F401  (session fixtures)

from refdecode.reference.conformance.check import check
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.plants import PLANTS, planted
from refdecode.reference.conformance.registry import REGISTRY


def failures(root, plant: str, only: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    status = check(root, f'"{sys.executable}" -m refdecode.cli conformance serve --plant {plant}', only=only, out=out)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"\d+ passed, \d+ failed", lines[-1])
    return status, [line.split()[1] for line in lines if line.startswith("FAIL ")]



def notes(root, case_type: str) -> dict[str, str]:
    lines = (root / "cases" / f"{case_type}.jsonl").read_text().splitlines()
    return {c["id"]: c["note"] for c in map(json.loads, lines)}


def inputs(root, case_type: str) -> dict[str, dict]:
    lines = (root / "cases" / f"{case_type}.jsonl").read_text().splitlines()
    return {c["id"]: c["input"] for c in map(json.loads, lines)}


def test_plants_are_listed():
    assert len(PLANTS) >= 5


@pytest.mark.slow
def test_top_p_boundary_fails_the_boundary_cases(unit_suite):
    """Dropping the token that reaches top_p: every exact-boundary case where transformers keeps two tokens or
    more fails (the plant keeps one fewer); with one token kept, min_tokens_to_keep hides the bug."""
    status, failed = failures(unit_suite, "top_p_boundary", "top_p")
    assert status == 1 and all(f.startswith("top_p/") for f in failed) and len(failed) > 40
    lines = (unit_suite / "cases" / "top_p.jsonl").read_text().splitlines()
    boundary = [c for c in map(json.loads, lines) if c["note"].startswith("mass of the more probable")]
    two_or_more = {c["id"] for c in boundary if sum(v != "-inf" for v in c["expected"]["scores"][0]) >= 2}
    assert len(two_or_more) >= 6 and two_or_more <= set(failed)


def test_top_k_ties_fails_exactly_the_tie_cases(unit_suite):
    status, failed = failures(unit_suite, "top_k_ties", "top_k")
    ties = [i for i, n in notes(unit_suite, "top_k").items() if n.startswith("tie at the k-th")]
    assert status == 1 and set(failed) == set(ties) and len(ties) == 30


def test_repetition_penalty_sign_fails_negative_scores(unit_suite):
    """Dividing a negative score raises it: every case whose seen tokens have negative scores fails."""
    status, failed = failures(unit_suite, "repetition_penalty_sign", "repetition_penalty")
    negative = [i for i, n in notes(unit_suite, "repetition_penalty").items() if "negative" in n]
    assert status == 1 and set(negative) <= set(failed)


@pytest.mark.slow
def test_length_penalty_total_fails_cases_with_a_prompt(unit_suite):
    """Scoring by the whole length differs only where the prompt is not empty and length_penalty != 0."""
    status, failed = failures(unit_suite, "length_penalty_total", "beam_hypotheses")
    assert status == 1 and len(failed) > 30
    for case_id in failed:
        inp = inputs(unit_suite, "beam_hypotheses")[case_id]
        assert inp["length_penalty"] != 0 and any(c.get("decoder_prompt_len", 1) > 0 for c in inp["calls"])


@pytest.mark.slow
def test_is_done_heuristic_fails_only_never_with_positive_length_penalty(unit_suite):
    status, failed = failures(unit_suite, "is_done_heuristic", "beam_hypotheses")
    assert status == 1 and failed
    for case_id in failed:
        inp = inputs(unit_suite, "beam_hypotheses")[case_id]
        assert inp["early_stopping"] == "never" and inp["length_penalty"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("plant", ["beam_candidates_k", "no_cache_reorder", "length_penalty_total"])
def test_search_bugs_fail_beam_decodes_and_nothing_else(decode_suite, plant):
    status, failed = failures(decode_suite, plant, "decode")
    assert status == 1
    assert {f.split("/")[0] for f in failed} >= {"beam_search", "gpt2_beam_search"}
    assert not [f for f in failed if f.split("/")[0] in ("greedy", "sample", "gpt2_greedy", "gpt2_sample")]


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_restores_refdecode(plant):
    """``planted`` undoes every patch: the same objects are back after the block."""
    import refdecode as rd
    from refdecode.reference.conformance.plants import planted
    from refdecode.reference.conformance.toy_model import ToyCache

    owners = [rd.TopPLogitsWarper, rd.TopKLogitsWarper, rd.RepetitionPenaltyLogitsProcessor, rd.BeamHypotheses,
              rd.KVCache, ToyCache]
    before = [dict(vars(o)) for o in owners] + [dict(vars(m)) for k, m in sorted(sys.modules.items())
                                                 if k.startswith("refdecode") and m is not None]
    with planted(plant):
        pass
    after = [dict(vars(o)) for o in owners] + [dict(vars(m)) for k, m in sorted(sys.modules.items())
                                                if k.startswith("refdecode") and m is not None]
    assert len(before) == len(after)
    assert all(b.keys() == a.keys() and all(b[k] is a[k] for k in b) for b, a in zip(before, after))


def _outputs_under(plant: str, name: str) -> tuple[list, list]:
    """(expected outputs, outputs with ``plant`` applied in this process) of every case of type ``name``."""
    case_type = REGISTRY[name]
    cases = list(case_type.build())
    expected = [case_type.run(dict(c.input)) for c in cases]
    with planted(plant):
        got = [case_type.run(dict(c.input)) for c in cases]
    return cases, [not all(np.array_equal(e[k], g[k]) for k in e) for e, g in zip(expected, got)]


def test_top_p_in_float64_fails_the_exact_boundary_cases_with_a_message_about_float32(unit_suite):
    """a port computing top-p in float64 failed 3 cases with a message about a *tie*; they are exact
    float32 boundaries (torch rounds each cumulative sum to float32), and the message now says so."""
    out = io.StringIO()
    status = check(unit_suite, f'"{sys.executable}" -m refdecode.cli conformance serve --plant top_p_float64',
                   only="top_p", out=out)
    fails = [line for line in out.getvalue().splitlines() if line.startswith("FAIL ")]
    assert status == 1 and len(fails) == 3
    assert all("mass of the more probable tokens equals top_p exactly" in f and "margin for this row is exactly 0"
               in f and "rounded to float32" in f and "holds a tie" not in f for f in fails)


def test_finalize_order_fails_every_tie_case_and_no_random_beam_search():
    """reversing finalize's order among equal scores failed no beam_search case (the random decodes are
    drawn away from ties); every beam_search_ties case catches it."""
    _, differs = _outputs_under("finalize_order", "beam_search_ties")
    assert len(differs) == 30 and all(differs)
    _, differs = _outputs_under("finalize_order", "beam_search")
    assert not any(differs)
