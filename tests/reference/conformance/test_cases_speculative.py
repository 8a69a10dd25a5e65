"""Conformance case types of speculative and prompt-lookup decoding (refdecode/reference/conformance/cases_speculative.py).

Hand-worked requests through ``serve``'s ``answer`` (expected values worked out from the rules the summaries
state), and the GPT-2 decodes against transformers 4.38.2's golden file: the exported cases expect its
sequences and its number of main-model calls. ``tests/reference/conformance/test_check.py`` checks every type's export against
``serve``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conformance_suites import ask  # one request through serve's answer

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.registry import REGISTRY

TYPES = ["prompt_lookup_candidates", "speculative_greedy_acceptance", "speculative_sampling", "gpt2_assisted_greedy",
         "gpt2_prompt_lookup_greedy"]


def test_the_types_are_registered_in_the_speculative_group():
    assert set(TYPES) <= set(REGISTRY)
    assert all("speculative" in REGISTRY[t].groups for t in TYPES)
    assert {"decode", "gpt2"} <= set(REGISTRY["gpt2_prompt_lookup_greedy"].groups)


def test_prompt_lookup_takes_the_first_occurrence_and_falls_back_to_shorter_ngrams():
    lookup = {"num_output_tokens": 3, "max_matching_ngram_size": 2}
    # (1, 2) occurs at 0 and 4: the first wins, its continuation 3, 9, 1
    assert ask("prompt_lookup_candidates", {"ids": [1, 2, 3, 9, 1, 2, 5, 1, 2], **lookup}) == {"candidates": [3, 9, 1]}
    # the bigram (7, 2) never occurred before; the unigram 2 did, at 1: then 3
    assert ask("prompt_lookup_candidates", {"ids": [1, 2, 3, 7, 2], **lookup}) == {"candidates": [3, 7, 2]}
    # the continuation is cut at the end of the sequence
    assert ask("prompt_lookup_candidates", {"ids": [4, 5, 4, 5], **lookup}) == {"candidates": [4, 5]}
    assert ask("prompt_lookup_candidates", {"ids": [1, 2, 3], **lookup}) == {"candidates": [0]}


def test_greedy_acceptance_counts_leading_matches_and_stops_on_a_drafted_eos():
    inp = {"candidates": [4, 7, 2], "selected": [4, 7, 9, 1], "last_is_eos": False, "max_matches": 10}
    assert ask("speculative_greedy_acceptance", inp) == {"n": 2, "tokens": [4, 7, 9]}
    inp = {"candidates": [4, 7], "selected": [4, 7, 5], "last_is_eos": True, "max_matches": 10}
    assert ask("speculative_greedy_acceptance", inp) == {"n": 1, "tokens": [4, 7]}
    inp = {"candidates": [4, 7, 2], "selected": [4, 7, 2, 6], "last_is_eos": False, "max_matches": 1}
    assert ask("speculative_greedy_acceptance", inp) == {"n": 1, "tokens": [4, 7]}


def test_speculative_sampling_accepts_by_ratio_and_draws_from_the_residual():
    """V = 2, one draft x = 0 with q(0) = 0.8 and p(0) = 0.4: ratio 0.5. u = 0.6 rejects it; the residual
    max(p - q, 0) = (0, 0.4) renormalised is (0, 1): the draw gives 1 whatever its uniform."""
    q = [[math.log(0.8), math.log(0.2)]]
    p = [[math.log(0.4), math.log(0.6)], [0.0, 0.0]]
    inp = {"candidates": [0], "candidate_scores": q, "new_scores": p, "last_is_eos": False, "max_matches": 5,
           "uniforms": [0.6, 0.01]}
    assert ask("speculative_sampling", inp) == {"n": 0, "tokens": [1]}
    # u = 0.3 <= 0.5 accepts; the bonus token is drawn from p after it, (0.5, 0.5): u = 0.7 -> token 1
    assert ask("speculative_sampling", {**inp, "uniforms": [0.3, 0.7]}) == {"n": 1, "tokens": [0, 1]}
    assert ask("speculative_sampling", {**inp, "uniforms": [0.3, 0.2]}) == {"n": 1, "tokens": [0, 0]}
    # accepted, and the draft is eos: the round ends on it without a draw
    assert ask("speculative_sampling", {**inp, "uniforms": [0.3], "last_is_eos": True}) == {"n": 0, "tokens": [0]}


@pytest.mark.slow
@pytest.mark.parametrize("type_name, mode", [("gpt2_assisted_greedy", "assisted_greedy"),
                                             ("gpt2_prompt_lookup_greedy", "lookup_greedy")])
def test_gpt2_cases_expect_what_transformers_returned(type_name, mode):
    """Every golden case of one generate call is a case; its expected sequences and model calls are 4.38.2's."""
    from refdecode.reference.conformance.cases_decode import GOLDEN

    with np.load(GOLDEN / "decode_assisted.npz") as z:
        meta = json.loads(str(z["meta"]))
        golden = {c["id"]: (z[f"{c['id']}/sequences"], c["rounds"]) for c in meta["cases"]
                  if c["mode"] == mode and c["calls"] == 1}
    cases = list(REGISTRY[type_name].build())
    assert len(cases) == len(golden) > 20
    for case in cases:
        sequences, rounds = golden[case.note.split(":")[1].split(" ")[0]]
        out = REGISTRY[type_name].run(case.input)
        assert np.array_equal(out["sequences"], sequences) and out["model_calls"] == rounds, case.note


@pytest.fixture(scope="module")
def speculative_suite(tmp_path_factory):
    from refdecode.reference.conformance.export import export

    root = tmp_path_factory.mktemp("speculative_suite")
    export(root, types=TYPES)
    return root


@pytest.mark.slow
@pytest.mark.heavy  # 10 s of CPU or more: `pytest --heavy` (CI) runs it
@pytest.mark.parametrize("plant, failing", [("lookup_last_match", {"prompt_lookup_candidates", "gpt2_prompt_lookup_greedy"}),
                                            ("residual_from_p", {"speculative_sampling"})])
def test_the_speculative_plants_are_caught_where_their_rule_is_used(speculative_suite, plant, failing):
    """The most recent match instead of the first changes drafts, and on GPT-2 only the number of model calls (the
    tokens are greedy's either way); drawing from p after a rejection changes the token of some sampling cases."""
    import io
    import sys

    from refdecode.reference.conformance.check import check

    out = io.StringIO()
    status = check(speculative_suite, f'"{sys.executable}" -m refdecode.cli conformance serve --plant {plant}', out=out)
    failed = [line.split()[1] for line in out.getvalue().splitlines() if line.startswith("FAIL ")]
    assert status == 1 and {f.split("/")[0] for f in failed} == failing
    if plant == "lookup_last_match":
        assert all("model_calls" in line for line in out.getvalue().splitlines() if line.startswith("FAIL gpt2"))
