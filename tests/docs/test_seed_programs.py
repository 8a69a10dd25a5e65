"""The quick-start programs of the 4.26 walkthrough, ported to refdecode and run on models/gpt2-tiny.

Each test is the document's program with only these changes: imports from refdecode, NumPy
instead of torch (``repeat_interleave`` -> ``np.repeat``, ``torch.manual_seed(0)`` -> ``seed=0``),
the model passed first, T5 replaced by GPT-2 (the prompt repeated num_beams times instead of
decoder-start tokens and encoder outputs), ``max_length=20`` where the T5 programs relied on eos,
and ``model.generation_config`` read from the model directory (transformers' from_pretrained does
that itself). The expected outputs are transformers 4.38.2 running the same programs
(``tests/golden/decode_seed_programs.npz``, from tools/golden/make_decode_golden.py); the sampling
programs replay transformers' draws, and also run with a NumPy seed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import GOLDEN, MODELS

from refdecode.decoding.beam.beam_scorer import BeamSearchScorer
from refdecode.decoding.beam.beam_search import beam_sample, beam_search
from refdecode.generation_config import GenerationConfig
from refdecode.model.modeling import GPT2
from refdecode.decoding.greedy import greedy_search
from refdecode.decoding.beam.group_beam_search import group_beam_search
from refdecode.processors.logits_process import (
    HammingDiversityLogitsProcessor,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
)
from refdecode.processors.logits_warp import TopKLogitsWarper, TopPLogitsWarper
from refdecode.decoding.sampling import sample
from refdecode.decoding.stopping_criteria import MaxLengthCriteria, StoppingCriteriaList
from refdecode.text.tokenizer import Tokenizer

TINY = MODELS / "gpt2-tiny"


@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN / "decode_seed_programs.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer(TINY)


def load_model():
    model = GPT2.from_pretrained(TINY)
    model.generation_config = GenerationConfig.from_pretrained(TINY)
    return model


def replay(golden, name):
    draws = [golden[k].astype(np.int64) for k in sorted(golden) if k.startswith(name + "/draw")]

    def draw(probs, num_samples, replacement, rng):
        return draws.pop(0)
    return draw


def batch_decode(tokenizer, outputs):
    return [tokenizer.decode(row, skip_special_tokens=True) for row in outputs]


def test_meta(golden):
    meta = json.loads(str(golden["meta"]))
    assert meta["transformers"] == "4.38.2" and "make_decode_golden" in meta["regenerate"]


def test_greedy_search_program(golden, tokenizer):
    model = load_model()
    # set pad_token_id to eos_token_id because GPT2 does not have a PAD token
    model.generation_config.pad_token_id = model.generation_config.eos_token_id
    input_prompt = "It might be possible to"
    input_ids = tokenizer.encode(input_prompt)[None]
    # instantiate logits processors
    logits_processor = LogitsProcessorList([
        MinLengthLogitsProcessor(10, eos_token_id=model.generation_config.eos_token_id),
        RepetitionPenaltyLogitsProcessor(1.2),
    ])
    stopping_criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=20)])
    outputs = greedy_search(model, input_ids, logits_processor=logits_processor, stopping_criteria=stopping_criteria)
    result = batch_decode(tokenizer, outputs)
    np.testing.assert_array_equal(outputs, golden["greedy"])
    assert result[0].startswith(input_prompt)


def test_beam_search_program(golden, tokenizer):
    model = load_model()
    encoder_input_str = "translate English to Chinese: How old are you?"
    # lets run beam search using 3 beams
    num_beams = 3
    input_ids = np.repeat(tokenizer.encode(encoder_input_str)[None], num_beams, axis=0)
    # instantiate beam scorer
    beam_scorer = BeamSearchScorer(batch_size=1, num_beams=num_beams, num_beam_hyps_to_keep=2)
    # instantiate logits processors
    logits_processor = LogitsProcessorList([NoRepeatNGramLogitsProcessor(2)])
    outputs = beam_search(model, input_ids, beam_scorer, logits_processor=logits_processor, max_length=20)
    result = batch_decode(tokenizer, outputs)
    np.testing.assert_array_equal(outputs, golden["beam_search"])
    assert len(result) == 2


def test_sample_program(golden, tokenizer):
    model = load_model()
    model.generation_config.pad_token_id = model.config.eos_token_id
    input_prompt = "Today is a beautiful day, and"
    input_ids = tokenizer.encode(input_prompt)[None]
    logits_processor = LogitsProcessorList([
        MinLengthLogitsProcessor(15, eos_token_id=model.generation_config.eos_token_id),
    ])
    logits_warper = LogitsProcessorList([TopKLogitsWarper(50), TopPLogitsWarper(0.9)])
    stopping_criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=20)])
    outputs = sample(model, input_ids, logits_processor=logits_processor, logits_warper=logits_warper,
                     stopping_criteria=stopping_criteria, seed=0)
    assert outputs.shape == (1, 20) and batch_decode(tokenizer, outputs)[0].startswith(input_prompt)
    replayed = sample(model, input_ids, logits_processor=logits_processor, logits_warper=logits_warper,
                      stopping_criteria=stopping_criteria, seed=0, draw=replay(golden, "sample"))
    np.testing.assert_array_equal(replayed, golden["sample"])


def test_beam_sample_program(golden, tokenizer):
    model = load_model()
    encoder_input_str = "translate English to German: How old are you?"
    num_beams = 3
    input_ids = np.repeat(tokenizer.encode(encoder_input_str)[None], num_beams, axis=0)
    beam_scorer = BeamSearchScorer(batch_size=1, max_length=model.generation_config.max_length, num_beams=num_beams)
    logits_warper = LogitsProcessorList([TopKLogitsWarper(50), TopPLogitsWarper(0.9)])
    outputs = beam_sample(model, input_ids, beam_scorer, logits_warper=logits_warper, max_length=20, seed=0)
    assert outputs.shape[0] == 1
    beam_scorer = BeamSearchScorer(batch_size=1, max_length=model.generation_config.max_length, num_beams=num_beams)
    replayed = beam_sample(model, input_ids, beam_scorer, logits_warper=logits_warper, max_length=20,
                           draw=replay(golden, "beam_sample"))
    np.testing.assert_array_equal(replayed, golden["beam_sample"])


def test_group_beam_search_program(golden, tokenizer):
    model = load_model()
    encoder_input_str = "translate English to German: How old are you?"
    # lets run diverse beam search using 6 beams
    num_beams = 6
    input_ids = np.repeat(tokenizer.encode(encoder_input_str)[None], num_beams, axis=0)
    beam_scorer = BeamSearchScorer(batch_size=1, max_length=model.generation_config.max_length, num_beams=num_beams,
                                   num_beam_groups=3, num_beam_hyps_to_keep=2)
    logits_processor = LogitsProcessorList([HammingDiversityLogitsProcessor(5.5, num_beams=6, num_beam_groups=3)])
    outputs = group_beam_search(model, input_ids, beam_scorer, logits_processor=logits_processor, max_length=20)
    np.testing.assert_array_equal(outputs, golden["group_beam_search"])
    assert len(batch_decode(tokenizer, outputs)) == 2
