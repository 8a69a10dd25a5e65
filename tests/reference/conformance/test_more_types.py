"""Conformance case types of forced_decoder_ids, stop strings, constrained beam search and contrastive search.

Each type is checked on hand-worked requests through ``serve``'s ``answer`` (expected values worked
out by hand from the rules the summaries state). ``tests/test_conformance.py`` checks the exports
of all types against ``serve``, that the GPT-2 contrastive cases expect what transformers 4.38.2
returned, and that the constrained decodes return sequences holding every constraint.
"""

from __future__ import annotations


import numpy as np

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.registry import REGISTRY
from conformance_suites import ask

NEW_TYPES = ["forced_decoder_ids", "stop_strings", "constraint_states", "constrained_beam_search",
             "contrastive_ranking", "gpt2_contrastive_search"]


def test_the_new_types_are_registered_with_their_groups():
    assert set(NEW_TYPES) <= set(REGISTRY)
    assert "processors_and_warpers" in REGISTRY["forced_decoder_ids"].groups
    assert {"decode", "toy", "beam"} <= set(REGISTRY["constrained_beam_search"].groups)
    assert {"decode", "gpt2"} <= set(REGISTRY["gpt2_contrastive_search"].groups)


def test_forced_decoder_ids_forces_only_at_the_index():
    inp = {"input_ids": [[5, 6], [7, 8]], "scores": [[1.0, 2.0, "-inf"], [1.0, 2.0, 3.0]],
           "forced_decoder_ids": [[2, 2], [3, 0]]}
    assert ask("forced_decoder_ids", inp) == {"scores": [["-inf", "-inf", 0.0], ["-inf", "-inf", 0.0]]}
    inp["forced_decoder_ids"] = [[3, 0]]
    assert ask("forced_decoder_ids", inp)["scores"] == inp["scores"]


def test_stop_strings_must_end_in_the_last_token():
    strings = ["a", "b", "\n", "\n\n", "b\nc"]
    inp = {"token_strings": strings, "input_ids": [[0, 3], [2, 2], [3, 0], [0, 4]], "stop_strings": ["\n\n"]}
    assert ask("stop_strings", inp) == {"done": [True, True, False, False]}
    inp = {"token_strings": strings, "input_ids": [[0, 4], [1, 2], [1, 0]], "stop_strings": ["b\n"]}
    assert ask("stop_strings", inp) == {"done": [True, True, False]}


def test_constraint_states_lose_the_token_that_breaks_a_phrase():
    """[1, 2] against "1 1 2": the second 1 breaks the phrase and is not tried as its start (quirk 1)."""
    out = ask("constraint_states", {"force_words_ids": [[1, 2]], "tokens": [1, 1, 2]})
    assert out == {"added": [[False, True], [False, False], [False, False]], "bank": [1, 0, 0],
                   "advance": [[2], [1], [1]], "completed": [False, False, False]}


def test_constraint_states_bank_and_completed():
    """Phrase [5, 6] and one of [[9], [7, 8]]: M = 2; after completion tokens answer [true, false]."""
    out = ask("constraint_states", {"force_words_ids": [[5, 6], [[9], [7, 8]]], "tokens": [7, 8, 5, 6, 3]})
    assert out["bank"] == [1, 2, 3, 4, 4]
    assert out["advance"] == [[8], [5], [6], None, None]
    assert out["completed"] == [False, False, False, True, True]
    assert out["added"] == [[False, True], [True, True], [False, True], [True, True], [True, False]]


def test_contrastive_ranking_penalises_a_repeat():
    inp = {"context": [[[1.0, 0.0]]], "candidates": [[[2.0, 0.0], [0.0, 1.0]]], "probs": [[0.6, 0.4]],
           "penalty_alpha": 0.5}
    out = ask("contrastive_ranking", inp)
    assert out["selected"] == [1]
    assert np.allclose(out["scores"], [[0.5 * 0.6 - 0.5, 0.5 * 0.4]])
    assert ask("contrastive_ranking", dict(inp, penalty_alpha=0.0))["selected"] == [0]


def test_contrastive_ranking_tie_picks_the_first():
    inp = {"context": [[[1.0, 0.0]]], "candidates": [[[0.0, 1.0], [0.0, 1.0]]], "probs": [[0.5, 0.5]],
           "penalty_alpha": 0.6}
    assert ask("contrastive_ranking", inp)["selected"] == [0]


def test_eos_token_looks_at_the_last_token_only():
    out = ask("eos_token", {"input_ids": [[1, 2], [2, 5], [0, 7]], "eos_token_id": [2, 7]})
    assert out == {"done": [True, False, True]}


def test_classifier_free_guidance_pushes_away_from_the_unconditional_branch():
    """p = (0.5, 0.5), unconditional (0.8, 0.2), g = 2: exp(out) = p^2 / u = (0.3125, 1.25); g = 1: log p."""
    inp = {"scores": [[np.log(0.5), np.log(0.5)]], "unconditional_logits": [[np.log(0.8), np.log(0.2)]],
           "guidance_scale": 2.0}
    np.testing.assert_allclose(np.exp(ask("classifier_free_guidance", inp)["scores"]), [[0.3125, 1.25]], rtol=1e-5)
    np.testing.assert_allclose(np.exp(ask("classifier_free_guidance", {**inp, "guidance_scale": 1.0})["scores"]),
                               [[0.5, 0.5]], rtol=1e-6)


def test_repetition_penalty_prompt_ignore_skips_the_first_positions_of_each_row():
    """Row 0 ignores 1 position: token 0 is not seen, token 1 is (2 -> 1); row 1 ignores nothing: both seen."""
    inp = {"input_ids": [[0, 1], [0, 1]], "scores": [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]], "penalty": 2.0,
           "prompt_ignore_length": [1, 0]}
    assert ask("repetition_penalty_prompt_ignore", inp) == {"scores": [[2.0, 1.0, 2.0], [1.0, 1.0, 2.0]]}
