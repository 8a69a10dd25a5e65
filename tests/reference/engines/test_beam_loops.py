"""The 5.x, CTranslate2, keras-hub and TF 4.38.2 beam loops reproduce those engines' recorded answers."""

from __future__ import annotations

import numpy as np
import pytest

from refdecode.reference.engines import PROFILES

from engine_records import decode_case, differing, recorded

LOOPS = ["transformers-5", "ctranslate2", "keras-hub", "transformers-4.38.2-tf"]


@pytest.mark.parametrize("engine", LOOPS)
def test_profile_reproduces_differing_beams(engine):
    cases = [r for r in differing(engine) if int(r["config"].get("num_beams") or 1) > 1][:3]
    assert cases, f"no recorded beam case where {engine} differs from 4.38.2"
    for r in cases:
        out = decode_case(engine, r)
        assert out["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]
        theirs = r["response"]["output"].get("sequences_scores")
        if theirs is not None:   # float32 sums of up to 12 steps, engines' own kernels
            np.testing.assert_allclose(out["sequences_scores"], theirs, rtol=1e-3, atol=2e-4)


def test_ctranslate2_scores_count_the_prompt():
    """C5: the length penalty's length adds len(prompt) - 1: the same tokens score differently."""
    r = next(r for r in recorded("ctranslate2") if float(r["config"].get("length_penalty", 1)) == 2.0
             and int(r["config"].get("num_beams") or 1) > 1 and len(r["input_ids"][0]) > 2)
    with_offset = decode_case(PROFILES["ctranslate2"], r)["sequences_scores"]
    from dataclasses import replace

    without = decode_case(replace(PROFILES["ctranslate2"], offset=False), r)["sequences_scores"]
    assert not np.allclose(with_offset, without)


@pytest.mark.slow
@pytest.mark.heavy  # 10 s of CPU or more: `pytest --heavy` (CI) runs it
@pytest.mark.parametrize("engine", LOOPS)
def test_profile_reproduces_every_answer(engine):
    for r in recorded(engine):
        assert decode_case(engine, r)["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]


def test_tf_loop_keeps_only_finished_hypotheses():
    """loop="tf", worked by hand. Bigram probabilities after token 1: eos 0 .4, 1 .001, 2 .5, 3 .099; after 2:
    .02, .9, .05, .03; after 3: .01, .97, .01, .01. Prompt [1], K = 2, lp = 0, two new tokens.
    Step 1: [0] (log .4) is an eos of rank 1 < K: finished; running [2] (log .5), [3] (log .099).
    Step 2: no eos among the top K ([2, 1] = log .45, [3, 1]); TF returns its finished set: [1, 0] then the
    unset slot, a row of pad (3) at -1e9. 4.38.2 adds the running beams at max_length: [2, 1] beats [0]."""
    from refdecode.model.stand_ins import TableModel
    from refdecode.reference.engines import EngineRules, decode_as

    probs = [[.25, .25, .25, .25], [.4, .001, .5, .099], [.02, .9, .05, .03], [.01, .97, .01, .01]]
    model = TableModel(np.log(np.array(probs, dtype=np.float32)))
    cfg = dict(max_new_tokens=2, eos_token_id=[0], pad_token_id=3, num_beams=2, num_return_sequences=2,
               length_penalty=0.0, early_stopping=False)
    tf_rules = EngineRules(loop="tf", candidates="2k", eos_out="generated")
    tf_out = decode_as(tf_rules, model, np.array([[1]]), None, cfg)
    assert tf_out["sequences"].tolist() == [[1, 0, 3], [3, 3, 3]]
    np.testing.assert_allclose(tf_out["sequences_scores"], [np.log(.4), -1e9], rtol=1e-6)
    assert decode_as(EngineRules(), model, np.array([[1]]), None, cfg)["sequences"].tolist() == [[1, 2, 1], [1, 0, 3]]
