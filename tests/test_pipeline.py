"""generate() with typical, epsilon, eta, min-p, bad words, forcing and the other later processors: whole-generate
golden parity with transformers 4.38.2 (min-p: 4.41.0) and the order in which generate builds them.

Golden files: tests/golden/decode_processors_more.npz (tools/golden/make_processors_more_golden.py)
and tests/golden/decode_min_p.npz (tools/golden/make_min_p_golden.py), on the committed tiny
checkpoints tests/golden/models/decode-*. Every feature runs in every mode it applies to (greedy,
sample and beam_sample replaying transformers' multinomial draws, beam search, group beam search);
sequences and beam indices exact, scores within 1e-4.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from processor_golden import decode_case_ids, load, run_decode_case

import refdecode
from refdecode.pipeline import logits_processors, logits_warpers
from refdecode.generation_config import GenerationConfig
from refdecode.model.stand_ins import TableModel

# remove_invalid_values turns -inf into -3.4e38, which a temperature < 1 then overflows back to -inf (torch too)
pytestmark = [pytest.mark.filterwarnings("ignore:Unfeasible length constraints:UserWarning"),
              pytest.mark.filterwarnings("ignore:overflow encountered in divide:RuntimeWarning")]
FEATURES = {c["feature"] for c in load("decode_processors_more.npz")[0]["cases"]}


@pytest.mark.parametrize("cid", decode_case_ids("decode_processors_more.npz", FEATURES))
def test_golden_generate(cid):
    run_decode_case("decode_processors_more.npz", cid)


@pytest.mark.parametrize("cid", decode_case_ids("decode_min_p.npz", {"min_p"}))
def test_golden_generate_min_p_against_4_41(cid):
    run_decode_case("decode_min_p.npz", cid)


def test_every_feature_in_every_mode_it_applies_to():
    cases = load("decode_processors_more.npz")[0]["cases"]
    per = Counter((c["feature"], c["mode"]) for c in cases)
    warpers = {"typical_p", "epsilon_cutoff", "eta_cutoff"}
    for feature in FEATURES:
        modes = {"sample", "beam_sample"} if feature in warpers else \
            {"greedy_search", "sample"} if feature == "guidance_scale+negative_prompt" else \
            {"greedy_search", "sample", "beam_search", "beam_sample", "group_beam_search"} - \
            ({"beam_sample"} if feature == "forced_bos_token_id" else set())
        for mode in modes:
            assert per[(feature, mode)] >= 2, (feature, mode)
    assert len(FEATURES) == 17


def test_processor_order_is_transformers_4_38_2():
    """One config switching everything on: the list in _get_logits_processor's order, LogitNormalization last."""
    model = TableModel(np.zeros((4, 4), dtype=np.float32), eos_token_id=0)
    cfg = GenerationConfig(guidance_scale=2.0, sequence_bias={(1,): 1.0}, encoder_repetition_penalty=1.5,
                           repetition_penalty=1.2, no_repeat_ngram_size=2, encoder_no_repeat_ngram_size=2,
                           bad_words_ids=[[2]], min_length=3, min_new_tokens=1, forced_bos_token_id=1,
                           forced_eos_token_id=0, remove_invalid_values=True,
                           exponential_decay_length_penalty=(1, 1.1), suppress_tokens=[3], begin_suppress_tokens=[3],
                           renormalize_logits=True, eos_token_id=0)
    custom = refdecode.LogitsProcessorList([refdecode.TemperatureLogitsWarper(0.5)])
    procs = logits_processors(cfg, 2, custom, prompt=np.array([[1, 2]]), model=model,
                              prefix_allowed_tokens_fn=lambda b, ids: [0, 1])
    assert [type(p).__name__ for p in procs] == [
        "UnbatchedClassifierFreeGuidanceLogitsProcessor", "SequenceBiasLogitsProcessor",
        "EncoderRepetitionPenaltyLogitsProcessor", "RepetitionPenaltyLogitsProcessor", "NoRepeatNGramLogitsProcessor",
        "EncoderNoRepeatNGramLogitsProcessor", "NoBadWordsLogitsProcessor", "MinLengthLogitsProcessor",
        "MinNewTokensLengthLogitsProcessor", "PrefixConstrainedLogitsProcessor", "ForcedBOSTokenLogitsProcessor",
        "ForcedEOSTokenLogitsProcessor", "InfNanRemoveLogitsProcessor", "ExponentialDecayLengthPenalty",
        "SuppressTokensLogitsProcessor", "SuppressTokensAtBeginLogitsProcessor", "TemperatureLogitsWarper",
        "LogitNormalization"]


def test_warper_order_and_min_tokens_to_keep():
    cfg = GenerationConfig(do_sample=True, num_beams=2, temperature=0.7, top_k=5, top_p=0.9, min_p=0.1,
                           typical_p=0.9, epsilon_cutoff=0.01, eta_cutoff=0.01, renormalize_logits=True,
                           eos_token_id=[0, 1])
    warpers = logits_warpers(cfg)
    assert [type(w).__name__ for w in warpers] == [
        "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper", "MinPLogitsWarper", "TypicalLogitsWarper",
        "EpsilonLogitsWarper", "EtaLogitsWarper", "LogitNormalization"]
    assert all(w.min_tokens_to_keep == 3 for w in warpers[3:7])


def test_begin_suppress_index_moves_after_a_forced_bos_on_a_one_token_prompt():
    cfg = GenerationConfig(begin_suppress_tokens=[2], forced_bos_token_id=1)
    assert logits_processors(cfg, 1)[-1].begin_index == 2
    assert logits_processors(cfg, 3)[-1].begin_index == 3


@pytest.mark.parametrize("kwargs, name", [
    (dict(exponential_decay_length_penalty=(1, 1.5), eos_token_id=None), "eos_token_id"),
    (dict(guidance_scale=2.0, negative_prompt_ids=np.array([[1], [2], [3]])), "negative_prompt_ids"),
    (dict(guidance_scale=2.0, negative_prompt_ids=np.array([[9]])), "negative_prompt_ids"),
    (dict(guidance_scale=2.0, negative_prompt_ids=np.array([[1, 2]]), negative_prompt_attention_mask=np.ones((1, 3))),
     "negative_prompt_attention_mask"),
    (dict(prefix_allowed_tokens_fn=lambda b, ids: []), "prefix_allowed_tokens_fn"),
    (dict(prefix_allowed_tokens_fn=lambda b, ids: [7]), "prefix_allowed_tokens_fn"),
    (dict(prefix_allowed_tokens_fn=3), "prefix_allowed_tokens_fn"),
    (dict(bad_words_ids=[[0], []], eos_token_id=0), "bad_words_ids"),
    (dict(sequence_bias={(5,): 1.0}), "sequence_bias"),
    (dict(forced_bos_token_id=4), "bos_token_id"),
    (dict(suppress_tokens=[4]), "suppress_tokens"),
])
def test_bad_generate_arguments_name_the_argument(kwargs, name):
    model = TableModel(np.log(np.full((4, 4), 0.25, dtype=np.float32)), eos_token_id=0)
    kwargs = {"eos_token_id": 0, **kwargs}
    with pytest.raises(ValueError, match=f"`{name}`"):
        refdecode.generate(model, np.array([[1]]), max_new_tokens=2, **kwargs)
