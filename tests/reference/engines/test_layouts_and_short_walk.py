"""The switches for what engines return (genai's eos-less hypotheses and dropped last step, CTranslate2's batched
lengths) and the regime onnxruntime-genai's 2K candidates reach: more than K eos among them (unfilled beam slots).

The stub models set each step's logits by hand, so the expected rows follow from the engines' source as read
(onnxruntime-genai beam_search_scorer.cpp ``BeamSearchScorer::Process``, search.cpp; CTranslate2 decoding.cc),
not from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from refdecode.reference.engines import PROFILES, EngineRules, decode_as
from refdecode.reference.engines.beam import NotSimulated, Undefined

from engine_records import Stub

#: prompt [5]; step 0 ranks 2, 3 (non-eos) above the eos ids 0, 1; at step 1 both beams rank the two eos ids on top,
#: so the 2K = 4 candidates are all eos: no slot is filled, both keep step 0's (score, token, source beam 0)
SHORT_WALK = Stub({(5,): {2: 0.0, 3: -1.0, 0: -2.0, 1: -3.0},
                   (5, 2): {0: 0.0, 1: -0.5, 4: -3.0},
                   (5, 3): {0: 0.0, 1: 0.0}})
CFG = dict(max_new_tokens=3, eos_token_id=[0, 1], pad_token_id=0, num_beams=2, length_penalty=0.0,
           early_stopping=False, num_return_sequences=2)


def test_unfilled_slots_keep_the_last_filled_values():
    events: list = []
    out = decode_as(EngineRules(candidates="2k"), SHORT_WALK, np.array([[5]]), None, CFG, events=events)
    # slot 0 keeps (score of [5, 2], token 2, beam 0) and slot 1 (score of [5, 3], token 3, beam 0), applied to
    # the current beam 0 = [5, 2]: the beams become [5, 2, 2] and [5, 2, 3]; the last step appends 4 (the stub's
    # default); finalize adds them to the two eos hypotheses [5, 2, 0], [5, 2, 1]: with lp 0 (scores = sums)
    # [5, 2, 2, 4] has log p(2|5) only, the best; [5, 2, 0] is next
    assert events == [{"event": "stale_slots", "step": 1, "filled": 0, "num_beams": 2}]
    assert out["sequences"].tolist()[0] == [5, 2, 2, 4]
    assert out["sequences"].tolist()[1][:3] == [5, 2, 0]
    # 4.38.2's max(2, 1 + 2) * 2 = 6 candidates hold the non-eos [5, 2, 4] (far behind): no unfilled slot; its
    # best two are the eos hypotheses [5, 2, 0] and [5, 2, 1], both written with eos_token_id[0]
    control = decode_as(EngineRules(), SHORT_WALK, np.array([[5]]), None, CFG)["sequences"].tolist()
    assert control == [[5, 2, 0], [5, 2, 0]]


#: prompt [5]; the first step's 2K = 4 candidates: eos 0, eos 1, eos 2, then token 3: one non-eos, slot 1 unfilled
FIRST_STEP = Stub({(5,): {0: 0.0, 1: -0.1, 2: -0.2, 3: -1.0}})


def test_a_first_step_slot_never_written_and_a_next_step_is_undefined():
    """The engine feeds slot 1's token, uninitialised memory, to the model at step 2 (G5): no rows predicted."""
    with pytest.raises(Undefined, match="uninitialised memory"):
        decode_as(EngineRules(candidates="2k"), FIRST_STEP, np.array([[5]]), None, {**CFG, "eos_token_id": [0, 1, 2]})


def test_a_first_step_slot_never_written_on_the_last_step_stays_out_of_the_answer():
    """max_new_tokens 1: the hypotheses [5, 0] and [5, 1] (eos ranks 0, 1 < K) and the beams [5, 3] (slot 0) and
    the unknown slot 1 (score -1e9) are finalised; with lp 0 the two eos hypotheses are best, both written with
    eos_token_id[0]; the unknown beam is never shown, and the step is reported."""
    events: list = []
    out = decode_as(EngineRules(candidates="2k"), FIRST_STEP, np.array([[5]]), None,
                    {**CFG, "eos_token_id": [0, 1, 2], "max_new_tokens": 1}, events=events)
    assert out["sequences"].tolist() == [[5, 0], [5, 0]]
    assert events == [{"event": "stale_slots", "step": 0, "filled": 1, "num_beams": 2}]


def test_an_answer_that_would_show_a_slot_never_written_is_undefined():
    """All 2K candidates eos: slot 0 keeps its initial score 0, above every hypothesis, and finalize returns it."""
    stub = Stub({(5,): {0: 0.0, 1: -0.1, 2: -0.2, 3: -0.3}})
    with pytest.raises(Undefined, match="never wrote"):
        decode_as(EngineRules(candidates="2k"), stub, np.array([[5]]), None,
                  {**CFG, "eos_token_id": [0, 1, 2, 3], "max_new_tokens": 1})
    assert issubclass(Undefined, NotSimulated)


def test_eos_out_none_writes_hypotheses_without_their_eos():
    """onnxruntime-genai G9: the second row is the hypothesis [5, 2, 0] cloned before its eos: [5, 2], then pad."""
    out = decode_as(EngineRules(candidates="2k", eos_out="none"), SHORT_WALK, np.array([[5]]), None,
                    {**CFG, "pad_token_id": 3})
    assert out["sequences"].tolist() == [[5, 2, 2, 4], [5, 2, 3, 3]]
    first = decode_as(EngineRules(candidates="2k"), SHORT_WALK, np.array([[5]]), None, {**CFG, "pad_token_id": 3})
    assert first["sequences"].tolist()[1] == [5, 2, 0, 3]


def test_drop_last_step_loses_the_step_that_finished_the_last_row():
    """onnxruntime-genai G10: row 0 ends at step 1, row 1 at step 2; step 2 (row 1's eos, row 0's pad) is dropped."""
    stub = Stub({(4,): {2: 0.0}, (4, 2): {0: 0.0}, (3,): {2: 0.0}, (3, 2): {3: 0.0}, (3, 2, 3): {1: 0.0}})
    cfg = dict(max_new_tokens=5, eos_token_id=[0, 1], pad_token_id=5)
    rows = [[4], [3]]
    genai = decode_as(EngineRules(drop_last_step=True), stub, np.array(rows), None, cfg)["sequences"].tolist()
    control = decode_as(EngineRules(), stub, np.array(rows), None, cfg)["sequences"].tolist()
    assert control == [[4, 2, 0, 5], [3, 2, 3, 1]]
    assert genai == [[4, 2, 0], [3, 2, 3]]


def test_lengths_from_unpadded_give_a_short_prompt_its_padding_back():
    """CTranslate2 C8: one max_length / min_length for the batch, in steps from each prompt's first token."""
    stub = Stub({}, default={4: 0.0, 0: -0.5})     # always 4, eos 0 second
    ids, mask = np.array([[3, 3, 2], [5, 5, 1]]), np.array([[1, 1, 1], [0, 0, 1]])
    cfg = dict(max_new_tokens=2, eos_token_id=[0], pad_token_id=5)
    out = decode_as(EngineRules(lengths_from_unpadded=True), stub, ids, mask, cfg)["sequences"].tolist()
    assert out == [[3, 3, 2, 4, 4, 5, 5], [5, 5, 1, 4, 4, 4, 4]]
    eos_first = Stub({}, default={0: 0.0, 4: -0.5})  # eos first: only the minimum keeps it away
    out = decode_as(EngineRules(lengths_from_unpadded=True), eos_first, ids, mask, {**cfg, "min_new_tokens": 1})
    assert out["sequences"].tolist() == [[3, 3, 2, 4, 0, 5, 5], [5, 5, 1, 4, 4, 4, 0]]


def test_the_profiles_carry_the_switches():
    genai, ct2 = PROFILES["onnxruntime-genai"], PROFILES["ctranslate2"]
    assert genai.eos_out == "none" and genai.drop_last_step and genai.candidates == "2k"
    assert ct2.lengths_from_unpadded and not PROFILES["ctranslate2-per-prompt"].lengths_from_unpadded
    with pytest.raises(ValueError, match="eos_out"):
        EngineRules(eos_out="last")
    with pytest.raises(TypeError, match="drop_last_step"):
        EngineRules(drop_last_step="yes")
