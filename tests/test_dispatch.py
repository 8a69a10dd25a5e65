"""refdecode.dispatch: the mode a config selects, and the loop each mode runs."""

from __future__ import annotations

import numpy as np
import pytest

from refdecode import BeamSearchScorer, beam_search, greedy_search
from refdecode.dispatch import MODES, DecodeRequest, generation_mode, run
from refdecode.generation_config import GenerationConfig
from refdecode.pipeline import logits_processors, stopping_criteria_for
from refdecode.recorder import NO_TRACE
from refdecode.model.stand_ins import TableModel


@pytest.mark.parametrize("kwargs, mode", [
    ({}, "greedy_search"), (dict(do_sample=True), "sample"), (dict(num_beams=2), "beam_search"),
    (dict(num_beams=2, do_sample=True), "beam_sample"),
    (dict(num_beams=4, num_beam_groups=2, diversity_penalty=1.0), "group_beam_search"),
])
def test_generation_mode(kwargs, mode):
    assert generation_mode(GenerationConfig(**kwargs)) == mode


@pytest.mark.parametrize("kwargs, mode", [
    (dict(force_words_ids=[[3]], num_beams=2, do_sample=True), "constrained_beam_search"),   # constraints win
    (dict(penalty_alpha=0.6, top_k=4), "contrastive_search"),
    (dict(penalty_alpha=0.6, top_k=1), "greedy_search"),                                     # top_k 1: no contrast
    (dict(prompt_lookup_num_tokens=3), "assisted_generation"),
    (dict(prompt_lookup_num_tokens=3, do_sample=True), "assisted_generation"),
])
def test_generation_mode_of_the_other_loops(kwargs, mode):
    assert generation_mode(GenerationConfig(**kwargs)) == mode


def test_assisted_generation_with_beams_is_refused_as_transformers_does():
    with pytest.raises(ValueError, match="only supported with Greedy Search and Sample"):
        generation_mode(GenerationConfig(num_beams=2, prompt_lookup_num_tokens=3))


def _request(mode: str, config: GenerationConfig, ids: np.ndarray) -> DecodeRequest:
    model = TableModel(np.random.default_rng(5).standard_normal((6, 6)).astype(np.float32), eos_token_id=5)
    config.max_length = ids.shape[1] + 3
    return DecodeRequest(mode, model, ids, np.ones_like(ids), config,
                         logits_processors(config, ids.shape[1]), stopping_criteria_for(config, 64), NO_TRACE,
                         rng=np.random.default_rng(0))


def test_repeated_expands_each_prompt_consecutively():
    request = _request("beam_search", GenerationConfig(num_beams=2, eos_token_id=5), np.array([[1, 2], [3, 4]]))
    ids, mask = request.repeated(2)
    assert ids.tolist() == [[1, 2], [1, 2], [3, 4], [3, 4]] and mask.shape == (4, 2)


@pytest.mark.parametrize("mode, kwargs, loop", [
    ("greedy_search", {}, lambda m, ids, c: greedy_search(m, ids, max_length=c.max_length, eos_token_id=5,
                                                          pad_token_id=5)),
    ("beam_search", dict(num_beams=3, num_return_sequences=2),
     lambda m, ids, c: beam_search(m, np.repeat(ids, 3, axis=0),
                                   BeamSearchScorer(batch_size=2, num_beams=3, num_beam_hyps_to_keep=2,
                                                    max_length=c.max_length),
                                   max_length=c.max_length, eos_token_id=5, pad_token_id=5)),
])
def test_run_calls_the_loop_of_its_mode_with_the_expanded_rows(mode, kwargs, loop):
    """run() is the loop called by hand: the same rows, the same scorer, the same tokens."""
    config = GenerationConfig(eos_token_id=5, pad_token_id=5, **kwargs)
    ids = np.array([[1, 2], [3, 0]])
    request = _request(mode, config, ids)
    assert np.array_equal(run(request), loop(request.model, ids, config))


def test_every_mode_has_a_loop():
    modes = {"greedy_search", "sample", "contrastive_search", "beam_search", "beam_sample", "group_beam_search",
             "constrained_beam_search", "assisted_generation"}
    assert set(MODES) == modes
