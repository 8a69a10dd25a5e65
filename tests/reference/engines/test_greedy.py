"""Greedy under the engines' rules: transformers.js's rows that run past eos, keras-hub's lockstep width."""

from __future__ import annotations

import numpy as np
import pytest

from refdecode import generate
from refdecode.model.stand_ins import TableModel
from refdecode.reference.engines import PROFILES, EngineRules, decode_as

from engine_records import Stub, decode_case, differing, recorded

# bigram table, V = 4: 1 -> 2 -> 0 (eos) -> 3 -> 3 ...; 3 -> 3
TABLE = np.log(np.array([[.1, .1, .1, .7], [.1, .1, .7, .1], [.7, .1, .1, .1], [.1, .1, .1, .7]], dtype=np.float32))
CFG = {"max_new_tokens": 4, "eos_token_id": [0], "pad_token_id": 0}


def test_4382_greedy_equals_generate_on_a_ragged_batch():
    model = TableModel(TABLE)          # pure bigram: a padded row's logits equal its real tokens'
    ids, mask = np.array([[0, 1], [3, 1]]), np.array([[0, 1], [1, 1]])
    ours = decode_as("transformers-4.38.2", model, ids, mask, CFG)["sequences"]
    assert ours.tolist() == generate(model, ids, mask, max_new_tokens=4, eos_token_id=0, pad_token_id=0).tolist()


def test_transformers_js_rows_go_on_after_eos():
    """Row 0 ends with eos at step 2 but row 1 has not: 4.38.2 pads row 0, transformers.js lets it generate 3, 3."""
    model = TableModel(TABLE)
    ids, mask = np.array([[1], [3]]), np.ones((2, 1), dtype=int)
    hf = decode_as("transformers-4.38.2", model, ids, mask, CFG)["sequences"].tolist()
    js = decode_as("transformers-js", model, ids, mask, CFG)["sequences"].tolist()
    assert hf[0] == [1, 2, 0, 0, 0] and js[0] == [1, 2, 0, 3, 3]


def test_keras_lockstep_gives_a_short_prompt_more_tokens():
    """Width T + max_new = 2 + 2: the 1-token prompt generates 3 tokens (no eos reached), the 2-token one 2."""
    model = TableModel(TABLE)
    ids, mask = np.array([[0, 3], [3, 3]]), np.array([[0, 1], [1, 1]])
    out = decode_as(EngineRules(lockstep_width=True), model, ids, mask, {**CFG, "max_new_tokens": 2})["sequences"]
    assert out.tolist() == [[0, 3, 3, 3, 3], [3, 3, 3, 3, 0]]


def test_greedy_ngram_off_lets_greedy_repeat_a_bigram():
    """OpenVINO GenAI O5: no n-gram ban outside beam search. Token 4 always leads (3 next): 4.38.2 bans the
    repeated bigram (4, 4) at the third step and takes 3; GenAI takes 4 again."""
    model = Stub({}, {4: 0.0, 3: -1.0})
    cfg = {**CFG, "max_new_tokens": 3, "no_repeat_ngram_size": 2}
    assert decode_as("transformers-4.38.2", model, np.array([[5]]), None, cfg)["sequences"].tolist() == [[5, 4, 4, 3]]
    assert decode_as(EngineRules(greedy_ngram=False), model, np.array([[5]]), None, cfg)["sequences"].tolist() \
        == [[5, 4, 4, 4]]


@pytest.mark.parametrize("engine", ["transformers-js", "keras-hub", "llama-cpp", "mlx-lm", "openvino-genai"])
def test_profile_reproduces_the_engines_differing_greedy_answers(engine):
    cases = [r for r in differing(engine) if int(r["config"].get("num_beams") or 1) == 1
             and not r["config"].get("do_sample")][:3]
    for r in cases:
        assert decode_case(engine, r)["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["transformers-js", "keras-hub", "llama-cpp", "onnxruntime-genai", "mlx-lm",
                                    "openvino-genai"])
def test_profile_reproduces_every_greedy_answer(engine):
    for r in recorded(engine):
        if int(r["config"].get("num_beams") or 1) == 1 and not r["config"].get("do_sample"):
            assert decode_case(PROFILES[engine], r)["sequences"].tolist() == r["response"]["output"]["sequences"], \
                r["id"]


def test_stop_eos_dropped_returns_the_row_without_its_eos():
    """mlx-lm M2 (batch_generate): 1 -> 2 -> 0 (eos); row 1 runs 3, 3, 3, 3. 4.38.2 writes the eos and pads after
    it; mlx-lm returns row 0 as [1, 2], right-padded with pad_token_id 5 (a pad that is not the eos)."""
    model = TableModel(TABLE)
    ids, mask = np.array([[1], [3]]), np.ones((2, 1), dtype=int)
    cfg = {**CFG, "pad_token_id": 5}
    hf = decode_as("transformers-4.38.2", model, ids, mask, cfg)["sequences"].tolist()
    mlx = decode_as(EngineRules(stop_eos_dropped=True), model, ids, mask, cfg)["sequences"].tolist()
    assert hf == [[1, 2, 0, 5, 5], [3, 3, 3, 3, 3]]
    assert mlx == [[1, 2, 5, 5, 5], [3, 3, 3, 3, 3]]
