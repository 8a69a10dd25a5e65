"""The 5.x, CTranslate2, keras-hub, OpenVINO GenAI, TF 4.38.2 and vLLM beam loops reproduce those engines' recorded
answers."""

from __future__ import annotations

import numpy as np
import pytest

from refdecode.model.stand_ins import TableModel
from refdecode.reference.engines import PROFILES, EngineRules, decode_as

from engine_records import Stub, decode_case, differing, recorded

LOOPS = ["transformers-5", "ctranslate2", "keras-hub", "openvino-genai", "transformers-4.38.2-tf", "vllm"]


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


# OpenVINO GenAI's GroupBeamSearcher (loop="ov"), on stub logits whose candidates are set by hand (V = 6; the
# expected rows follow from sampler.cpp as read, FINDINGS O1 / O2, not from the code under test)
#: step 0 from [5]: tokens 3 (A) and 4 (B) become the beams. Step 1 (eos 0, 1, 2): the candidates by score are
#: A:0 (eos), A:3, B:1 (eos), B:2 (eos) | A:4, A:5, B:3, B:5. More than K = 2 eos among the top 2K = 4, so the walk
#: goes on past them. 4.38.2 walks its (1 + 3) * 2 = 8 candidates in order: A:4 is the next beam. GenAI walks
#: what std::partial_sort(.., 4, ..) left after the top 4: B:1 evicted A:5 to position 4, B:2 evicted A:4 to
#: position 5, so A:5 comes first and is the next beam. Then token 4 (logit 0, the rest -30) to the end; with
#: length_penalty 1 the two long beams (sum / 4) beat the eos hypothesis (sum / 2).
LEFTOVER = Stub({(5,): {3: 0.0, 4: -0.5},
                 (5, 3): {0: 0.0, 3: -0.1, 4: -0.5, 5: -0.6, 1: -10.0, 2: -10.0},
                 (5, 4): {1: 0.0, 2: -0.1, 3: -1.5, 5: -1.6, 0: -10.0, 4: -10.0}})
LEFTOVER_CFG = dict(max_new_tokens=4, eos_token_id=[0, 1, 2], pad_token_id=0, num_beams=2, length_penalty=1.0,
                    early_stopping="never", num_return_sequences=2)


def test_ov_walks_past_the_top_2k_in_partial_sort_order():
    ov = decode_as("openvino-genai", LEFTOVER, np.array([[5]]), None, LEFTOVER_CFG)["sequences"].tolist()
    hf = decode_as("transformers-4.38.2", LEFTOVER, np.array([[5]]), None, LEFTOVER_CFG)["sequences"].tolist()
    assert ov == [[5, 3, 3, 4, 4], [5, 3, 5, 4, 4]]
    assert hf == [[5, 3, 3, 4, 4], [5, 3, 4, 4, 4]]


#: step 0 from [5]: eos 0 and 1 (log-probs -1.12, -1.22) become hypotheses, 2 (-1.62) and 3 (-1.72) the beams;
#: then token 4 at log-prob ~0. 4.38.2 asks at step 1 whether the worst hypothesis (-1.22) >= the best candidate
#: (-1.62) / 2: no, so it goes on, and at max_new_tokens 4 the beams (-0.40, -0.43) beat both hypotheses.
#: GenAI asks whether -1.22 >= the best RUNNING beam of step 0 (-1.62) / its length 1: yes, it stops there.
FINISH = Stub({(5,): {0: 0.0, 1: -0.1, 2: -0.5, 3: -0.6}})
FINISH_CFG = dict(max_new_tokens=4, eos_token_id=[0, 1], pad_token_id=0, num_beams=2, length_penalty=1.0,
                  early_stopping=False, num_return_sequences=2)


def test_ov_heuristic_reads_the_previous_best_running_beam():
    ov = decode_as("openvino-genai", FINISH, np.array([[5]]), None, FINISH_CFG)["sequences"].tolist()
    hf = decode_as("transformers-4.38.2", FINISH, np.array([[5]]), None, FINISH_CFG)["sequences"].tolist()
    assert ov == [[5, 0], [5, 1]]            # the eos it generated (eos_out="generated")
    assert hf == [[5, 2, 4, 4, 4], [5, 3, 4, 4, 4]]


def test_ov_groups_lower_the_tokens_earlier_groups_chose():
    """num_beam_groups 2 of one beam each, one step: group 0 takes token 3 (the best); group 1 sees 3 lowered by the
    diversity penalty (sampler.cpp:367-372) and takes 4 when the penalty is 10; without a penalty it takes 3 too."""
    model = Stub({(5,): {3: 0.0, 4: -0.5}})
    cfg = dict(max_new_tokens=1, eos_token_id=[0], pad_token_id=0, num_beams=2, num_beam_groups=2,
               length_penalty=1.0, early_stopping=False, num_return_sequences=2)
    diverse = decode_as("openvino-genai", model, np.array([[5]]), None, {**cfg, "diversity_penalty": 10.0})
    assert diverse["sequences"].tolist() == [[5, 3], [5, 4]]
    same = decode_as("openvino-genai", model, np.array([[5]]), None, {**cfg, "diversity_penalty": 0.0})
    assert same["sequences"].tolist() == [[5, 3], [5, 3]]
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


def test_vllm_loop_finishes_an_eos_outside_the_global_top_k():
    """Bigram table, eos 0, K = 2, lp = 0 (scores are sums of log-probs), 2 new tokens after the prompt [1].

    Step 0 (from 1: p = .2 eos, .05, .5, .25): 4.38.2 ranks 2 (log .5), 3 (log .25), then the eos 0 (log .2 =
    -1.609) at rank 2 >= K: skipped. vLLM takes the beam's own top 2K = 4 tokens and every eos among them
    finishes: [0] with -1.609. Step 1 (from 2: p = .1, .35, .3, .25; from 3: .25 each): the best running beam
    is [2, 1] with log .5 + log .35 = -1.743. 4.38.2 has no finished hypothesis and returns [2, 1]; vLLM
    returns the best of finished + running: [0] (-1.609 > -1.743)."""
    table = np.log(np.array([[.25, .25, .25, .25], [.2, .05, .5, .25], [.1, .35, .3, .25], [.25, .25, .25, .25]],
                            dtype=np.float32))
    cfg = dict(max_new_tokens=2, eos_token_id=[0], pad_token_id=3, num_beams=2, length_penalty=0.0)
    ids = np.array([[1]])
    hf = decode_as(EngineRules(), TableModel(table), ids, None, cfg)["sequences"].tolist()
    vllm = decode_as(EngineRules(loop="vllm"), TableModel(table), ids, None, cfg)
    assert hf == [[1, 2, 1]] and vllm["sequences"].tolist() == [[1, 0]]
    assert vllm["sequences_scores"].tolist() == pytest.approx([np.log(.2)], rel=1e-6)   # cum_logprob / 1 ** 0


def test_vllm_loop_divides_by_the_unpadded_prompt_length():
    """lp = 1: vLLM's score is cum_logprob / (prompt + new tokens, a final eos not counted); 4.38.2 divides by the
    new tokens with the eos. The same hypothesis [0] (log .2) after the 3-token prompt [2, 3, 1]: -1.609 / 3."""
    table = np.log(np.array([[.25, .25, .25, .25], [.2, .05, .5, .25], [.1, .35, .3, .25], [.25, .25, .25, .25]],
                            dtype=np.float32))
    cfg = dict(max_new_tokens=1, eos_token_id=[0], pad_token_id=3, num_beams=2, length_penalty=1.0,
               num_return_sequences=2)
    out = decode_as(EngineRules(loop="vllm"), TableModel(table), np.array([[2, 3, 1]]), None, cfg)
    # the running beams [2] (log .5 / 4) and [3] (log .25 / 4), the finished [0] (log .2 / 3): -0.173, -0.347, -0.536
    assert out["sequences"].tolist() == [[2, 3, 1, 2], [2, 3, 1, 3]]
    assert out["sequences_scores"].tolist() == pytest.approx([np.log(.5) / 4, np.log(.25) / 4], rel=1e-6)


def test_ctranslate2_penalises_a_first_step_eos_only_after_a_prompt_prefix():
    """CTranslate2 C6 needs a prefix: generate_batch starts from each prompt's first token and forces the rest
    (``split_start_tokens``, decoding.cc:1000-1021), and drops all prefixes when every prompt of the call is one
    token. Step 1's 2K = 4 candidates: eos 1, token 4, eos 2, eos 3 (K = 2, eos [1, 2, 3], lp 1, two steps; the
    stub's next step gives token 4, the other tokens -30).

    Prompt [5] (no prefix): eos 1 finishes [1]; no non-eos among ranks >= K, so beam 0 goes on from its own eos
    candidate [1]; beam 1 is [4]. The last step finishes [1, 4] and [4, 4]; with lp 1 and lengths 1, 2, 2
    (prompt offset 0) [1, 4] wins: log p(1) / 2 = -0.62 against log p(4) / 2 = -0.67 and log p(1) = -1.24.
    Prompt [5, 5] (prefix [5]): eos 2 and 3 of rank > 0 become token 0 with -1e10; beam 0 is that dead token;
    the last step finishes [4, 4]; lengths now count the prompt's extra token (offset 1): [1] -1.24 / 2, [4, 4]
    -1.34 / 3 = -0.45 wins."""
    step = {1: 0.0, 4: -0.1, 2: -0.2, 3: -0.3}
    stub = Stub({(5,): step, (5, 5): step})
    cfg = dict(max_new_tokens=2, eos_token_id=[1, 2, 3], pad_token_id=0, num_beams=2, length_penalty=1.0)
    for profile in ("ctranslate2", "ctranslate2-per-prompt"):
        assert decode_as(profile, stub, np.array([[5]]), None, cfg)["sequences"].tolist() == [[5, 1, 4]]
        assert decode_as(profile, stub, np.array([[5, 5]]), None, cfg)["sequences"].tolist() == [[5, 5, 4, 4]]
