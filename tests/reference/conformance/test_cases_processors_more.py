"""refdecode.reference.conformance.cases_processors_more: hand-worked requests through serve's answer (expected values worked out by hand from the rules the summaries state)."""

from __future__ import annotations

import numpy as np
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from conformance_suites import ask


def test_forced_decoder_ids_forces_only_at_the_index():
    inp = {"input_ids": [[5, 6], [7, 8]], "scores": [[1.0, 2.0, "-inf"], [1.0, 2.0, 3.0]],
           "forced_decoder_ids": [[2, 2], [3, 0]]}
    assert ask("forced_decoder_ids", inp) == {"scores": [["-inf", "-inf", 0.0], ["-inf", "-inf", 0.0]]}
    inp["forced_decoder_ids"] = [[3, 0]]
    assert ask("forced_decoder_ids", inp)["scores"] == inp["scores"]


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
