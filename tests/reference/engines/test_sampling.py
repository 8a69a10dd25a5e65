"""refdecode.reference.engines.sampling: the 4.38.2 profile samples as the suite's golden cases (transformers
4.38.2's tokens with the cases' uniforms); llama.cpp's chain (L2) keeps what its order keeps."""

from __future__ import annotations

import numpy as np
import pytest

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.cases_decode import model_for
from refdecode.reference.conformance.registry import REGISTRY
from refdecode.reference.engines import EngineRules, NextTokenLogits, decode_as
from refdecode.reference.engines.sampling import llama_chain


def test_the_control_profile_samples_the_golden_tokens():
    """gpt2_sample's expected sequences are transformers 4.38.2's (tests/golden/decode_sampling.npz), drawn with
    each case's uniforms; the 4.38.2 profile, which decodes each prompt alone from its real tokens, gives them."""
    case_type = REGISTRY["gpt2_sample"]
    cases = list(case_type.build())
    assert len(cases) >= 10 and any(c.input["config"]["num_return_sequences"] > 1 for c in cases)
    for case in cases:
        inp = case.input
        logits = NextTokenLogits(model_for(inp["model"], inp["config"]))
        got = decode_as("transformers-4.38.2", logits, inp["input_ids"], inp["attention_mask"], inp["config"],
                        inp["uniforms"])["sequences"]
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, case_type.run(inp)["sequences"], err_msg=case.note)


def test_llama_takes_top_p_before_the_temperature():
    """p = [0.5, 0.3, 0.15, 0.05], top_p 0.9, temperature 0.5. llama.cpp: cumulative 0.5, 0.8, 0.95 reaches 0.9
    at the third token, 3 kept, then divided by 0.5. transformers: the tempered probabilities (p^2 normalised:
    0.685, 0.247, 0.062, 0.007) reach 0.9 at the second, 2 kept."""
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], dtype=np.float32))
    llama = llama_chain(logits, temperature=0.5, top_k=0, top_p=0.9)
    assert llama.dtype == np.float32
    np.testing.assert_allclose(llama[:3], logits[:3] / 0.5, rtol=1e-6)
    assert llama[3] == -np.inf
    from refdecode.generation_config import GenerationConfig
    from refdecode.pipeline import logits_warpers
    hf = logits_warpers(GenerationConfig(do_sample=True, temperature=0.5, top_k=0, top_p=0.9))(
        np.array([[1]]), logits[None])[0]
    assert np.isfinite(hf).sum() == 2


def test_llama_top_k_keeps_exactly_k():
    logits = np.array([1.0, 3.0, 3.0, 3.0, 0.0], dtype=np.float32)
    assert np.isfinite(llama_chain(logits, 1.0, 2, 1.0)).sum() == 2  # transformers' top-k keeps the 3 tied


def test_draws_must_cover_every_row_and_step():
    case = next(iter(REGISTRY["gpt2_sample"].build()))
    inp = case.input
    logits = NextTokenLogits(model_for(inp["model"], inp["config"]))
    with pytest.raises(ValueError, match="`uniforms` must hold"):
        decode_as("llama-cpp", logits, inp["input_ids"], inp["attention_mask"], inp["config"], inp["uniforms"][:1])
    with pytest.raises(ValueError, match="`do_sample=True` needs"):
        decode_as("llama-cpp", logits, inp["input_ids"], inp["attention_mask"], {**inp["config"], "num_beams": 2},
                  inp["uniforms"])


def test_the_llama_profile_gives_llama_cpps_sampled_rows():
    """llama.cpp's recorded gpt2_sample answers (drawn by its adapter, with the case's uniforms, from the distribution
    node-llama-cpp exposes): the llama-cpp profile (L1 + L2 + its fp16-table GELU) gives every row. Without that
    activation one row (gpt2_sample/0004 row 0) departs, where a draw falls 1.2e-4 from a cumulative boundary
    (examples/engines/llama-cpp/FINDINGS.md, "Numerics")."""
    from dataclasses import replace

    from engine_records import decode_case, differing, recorded

    from refdecode.reference.engines import PROFILES

    sampled = [r for r in recorded("llama-cpp") if r["config"].get("do_sample")]
    assert len(sampled) >= 2 and len([r for r in differing("llama-cpp") if r in sampled]) == len(sampled)
    missed = []
    for r in sampled:
        got = decode_case("llama-cpp", r)["sequences"].tolist()
        control = decode_case("transformers-4.38.2", r)["sequences"].tolist()
        assert control == r["expected"]["sequences"] != r["response"]["output"]["sequences"]
        missed += [(r["id"], i) for i, (a, b) in enumerate(zip(got, r["response"]["output"]["sequences"])) if a != b]
    assert missed == []
    plain = replace(PROFILES["llama-cpp"], activation="checkpoint")
    r = next(r for r in sampled if r["id"] == "gpt2_sample/0004")
    assert decode_case(plain, r)["sequences"].tolist()[0] != r["response"]["output"]["sequences"][0]


def test_what_4382_refuses_is_refused_under_either_chain():
    from refdecode import GPT2
    from engine_records import model_dir

    model = GPT2.from_pretrained(model_dir("gpt2-tiny"))
    for profile in ("transformers-4.38.2", "llama-cpp"):
        with pytest.raises(ValueError, match="`temperature` has to be a strictly positive"):
            decode_as(profile, model, [[1, 2]], None, {"max_new_tokens": 2, "eos_token_id": 0, "do_sample": True,
                                                        "temperature": 0.0}, np.full(4, 0.5))


def test_mlx_takes_top_p_before_the_temperature_and_top_k_after():
    """p = [0.6, 0.3, 0.1], top_p 0.7, temperature 0.5. mlx-lm (M3): the mass above each token, untempered, is 0,
    0.6, 0.9: tokens 0 and 1 are below 0.7 and kept, then times 1 / 0.5. transformers: the tempered probabilities
    (p^2 normalised: 0.783, 0.196, 0.022) reach 0.7 at the first token: 1 kept."""
    from refdecode.reference.engines.sampling import mlx_chain

    logits = np.log(np.array([0.6, 0.3, 0.1], dtype=np.float32))
    mlx = mlx_chain(logits, temperature=0.5, top_k=0, top_p=0.7, min_p=0.0)
    assert mlx.dtype == np.float32
    assert np.isfinite(mlx).tolist() == [True, True, False]
    np.testing.assert_allclose(mlx[:2], (logits[:2] - np.log(np.float32(1.0))) * 2, rtol=1e-5, atol=1e-6)
    assert np.isfinite(mlx_chain(logits, 0.5, 1, 0.7, 0.0)).tolist() == [True, False, False]   # then top-k 1
    # min-p 0.4: log p < log 0.6 + log 0.4 (p < 0.24) goes: token 2
    assert np.isfinite(mlx_chain(logits, 1.0, 0, 1.0, 0.4)).tolist() == [True, True, False]
    from refdecode.generation_config import GenerationConfig
    from refdecode.pipeline import logits_warpers
    hf = logits_warpers(GenerationConfig(do_sample=True, temperature=0.5, top_k=0, top_p=0.7))(
        np.array([[1]]), logits[None])[0]
    assert np.isfinite(hf).sum() == 1


def test_the_mlx_profile_draws_from_its_kept_set():
    """The same row as a one-token decode: with the uniform 0.9 the mlx-lm profile draws token 1 (its tempered
    probabilities over {0, 1}: 0.8, 0.2; 0.9 lies past 0.8), 4.38.2 token 0 (the only one kept)."""
    from refdecode.model.stand_ins import TableModel

    table = np.log(np.array([[0.6, 0.3, 0.1]] * 3, dtype=np.float32))
    cfg = {"max_new_tokens": 1, "eos_token_id": [2], "pad_token_id": 2, "do_sample": True, "temperature": 0.5,
           "top_k": 0, "top_p": 0.7}
    ids, mask = np.array([[0]]), np.array([[1]])
    mlx = decode_as(EngineRules(warpers="mlx"), TableModel(table), ids, mask, cfg, [0.9])["sequences"]
    hf = decode_as("transformers-4.38.2", TableModel(table), ids, mask, cfg, [0.9])["sequences"]
    assert mlx.tolist() == [[0, 1]] and hf.tolist() == [[0, 0]]


def test_the_mlx_profile_gives_mlx_lms_sampled_rows():
    """mlx-lm's recorded gpt2_sample answers (its own sampler chain, the draw taken with the case's uniforms): the
    mlx-lm profile gives every row; 4.38.2's differ (M1 on gpt2_sample/0000, M3 on gpt2_sample/0004)."""
    from engine_records import decode_case, recorded

    sampled = [r for r in recorded("mlx-lm") if r["config"].get("do_sample")]
    assert {r["id"] for r in sampled} == {"gpt2_sample/0000", "gpt2_sample/0004"}
    for r in sampled:
        assert decode_case("mlx-lm", r)["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]
        assert decode_case("transformers-4.38.2", r)["sequences"].tolist() != r["response"]["output"]["sequences"]
def test_tf_top_p_keeps_the_first_ids_of_a_tie():
    """warpers="tf", by hand: four equal scores (p = .25 each), top_p .5. TF sums from the top in id order (0, 1, 2,
    3): the sums before each are 0, .25, .5, .75, so ids 0 and 1 are kept (.5 is not < .5). 4.38.2 sorts
    ascending (ids 0, 1, 2, 3 again) and drops the tail whose sum is <= .5: ids 0 and 1, keeping 2 and 3."""
    from refdecode.generation_config import GenerationConfig
    from refdecode.pipeline import logits_warpers
    from refdecode.reference.engines.sampling import tf_warpers

    x = np.zeros(4, dtype=np.float32)
    tf_row = tf_warpers(x, 1.0, 0, 0.5)
    assert tf_row.dtype == np.float32
    assert np.isfinite(tf_row).tolist() == [True, True, False, False]
    hf_row = logits_warpers(GenerationConfig(do_sample=True, top_p=0.5))(np.zeros((1, 1), dtype=np.int64), x[None])
    assert np.isfinite(hf_row[0]).tolist() == [False, False, True, True]
    assert np.isfinite(tf_warpers(x, 1.0, 0, 0.51)).tolist() == [True, True, True, False]   # .5 < .51
