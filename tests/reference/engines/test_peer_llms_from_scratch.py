"""The teaching peer llms-from-scratch 1.0.19 (examples/peers/llms-from-scratch): its profiles reproduce every answer
the package's own code gave (responses*.jsonl, recorded through its adapter), and each of its switches changes an
answer where it should."""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import pytest

from engine_records import ROOT, Stub, model_dir
from refdecode.reference.engines import EngineRules, NextTokenLogits, decode_as, rules_for
from refdecode.numerics import softmax
from refdecode.reference.engines.sampling import scratch_chain

PEER = ROOT / "examples" / "peers" / "llms-from-scratch"
#: recorded answers per profile: the adapter's default mode, SCRATCH_KV=1, SCRATCH_LLAMA=qwen3
RECORDS = {"llms-from-scratch": "responses.jsonl", "llms-from-scratch-kv": "responses-kv.jsonl",
           "llms-from-scratch-qwen3": "responses-qwen3.jsonl"}


def answered(profile: str) -> list[dict]:
    lines = (PEER / RECORDS[profile]).read_text().splitlines()
    return [r for r in map(json.loads, lines) if "output" in r["response"]]


@lru_cache(maxsize=None)
def logits_of(name: str, rms_norm_eps: str = "checkpoint") -> NextTokenLogits:
    from refdecode.reference.conformance.cases_decode import model_for

    config = json.loads((model_dir(name) / "config.json").read_text())
    kind = "gpt2" if config["model_type"] == "gpt2" else "llama"
    return NextTokenLogits(model_for({"kind": kind, "path": str(model_dir(name))}, {}), rms_norm_eps=rms_norm_eps)


def replay(profile, r: dict) -> list[list[int]]:
    return decode_as(profile, logits_of(r["model"], rules_for(profile).rms_norm_eps), r["input_ids"], r["attention_mask"], r["config"],
                     r.get("uniforms"))["sequences"].tolist()


@pytest.mark.slow
@pytest.mark.parametrize("profile", sorted(RECORDS))
def test_profile_reproduces_every_answer(profile):
    records = answered(profile)
    assert records, f"no answered case recorded for {profile}"
    for r in records:
        assert replay(profile, r) == r["response"]["output"]["sequences"], r["id"]


@pytest.mark.slow
def test_stop_eos_dropped_is_needed():
    """S1: some recorded answers end before the eos 4.38.2 writes; without the switch they are not reproduced."""
    without = EngineRules(warpers="scratch", rms_norm_eps="1e-5")
    records = [r for r in answered("llms-from-scratch")
               if r["response"]["output"]["sequences"] != r["expected"]["sequences"]]
    assert records
    assert any(replay(without, r) != r["response"]["output"]["sequences"] for r in records)


def test_scratch_warpers_top_k_before_the_temperature():
    """S2: a logit one float32 step below the k-th is tied with it after / 3.0: 4.38.2 keeps it, the peer does not."""
    a = np.float32(6.67304801940918)
    b = np.nextafter(a, np.float32(0))
    assert b < a and a / np.float32(3.0) == b / np.float32(3.0)      # the premise: the division makes the tie
    row = np.array([a, b, -5.0, -5.0], dtype=np.float32)
    kept = scratch_chain(row, 3.0, 1)
    assert kept.dtype == np.float32 and np.isfinite(kept).tolist() == [True, False, False, False]
    stub = Stub({(1,): {0: float(a), 1: float(b)}})
    config = {"max_new_tokens": 1, "eos_token_id": [5], "do_sample": True, "temperature": 3.0, "top_k": 1}
    assert decode_as("llms-from-scratch", stub, [[1]], None, config, [0.9])["sequences"].tolist() == [[1, 0]]
    assert decode_as("transformers-4.38.2", stub, [[1]], None, config, [0.9])["sequences"].tolist() == [[1, 1]]


def test_eos_ignored_runs_past_the_eos():
    """S5: the KV-cache loop has no eos: the row runs max_new_tokens steps, the eos a plain token."""
    stub = Stub({(1,): {5: 1.0}})
    config = {"max_new_tokens": 3, "eos_token_id": [5], "pad_token_id": 0}
    assert decode_as("llms-from-scratch-kv", stub, [[1]], None, config)["sequences"].tolist() == [[1, 5, 4, 4]]
    assert decode_as("transformers-4.38.2", stub, [[1]], None, config)["sequences"].tolist() == [[1, 5]]


def test_rms_norm_eps_moves_the_logits_and_is_restored():
    """S4: llama-gqa-tied says 1e-6; the peer's Llama3Model uses 1e-5: logits apart by far more than check's 1e-4,
    the checkpoint's epsilon back after the call; a GPT-2 is left as it is."""
    prompt = [5, 9, 17, 33, 2, 8, 1, 40]
    ours = logits_of("llama-gqa-tied")
    peer = NextTokenLogits(ours.model, rms_norm_eps="1e-5")
    assert peer(prompt).dtype == np.float32
    assert np.abs(peer(prompt) - ours(prompt)).max() > 1e-4
    assert ours.model.config.rms_norm_eps == 1e-6
    gpt2 = logits_of("decode-a")
    assert np.array_equal(NextTokenLogits(gpt2.model, rms_norm_eps="1e-5")(prompt), gpt2(prompt))


def test_rms_norm_eps_changes_a_sampled_answer():
    """S4 in a decode: Qwen3Model's 1e-6 on tiny-shakespeare-llama (1e-5) moves the first step's distribution, so a
    uniform between the two cumulative sums draws another token under the peer's epsilon than under 4.38.2's."""
    prompt = [464, 3290, 373, 257, 1110, 11, 290, 262]
    ours = logits_of("tiny-shakespeare-llama")
    cdf = [np.cumsum(softmax(NextTokenLogits(ours.model, rms_norm_eps=eps)(prompt)[None])[0], dtype=np.float64)
           for eps in ("checkpoint", "1e-6")]
    j = int(np.argmax(np.abs(cdf[0] - cdf[1])))
    assert abs(cdf[0][j] - cdf[1][j]) > 1e-4
    u = (cdf[0][j] + cdf[1][j]) / 2 / cdf[0][-1]
    config = {"max_new_tokens": 1, "eos_token_id": [50256], "do_sample": True}
    peer = decode_as("llms-from-scratch-qwen3", ours.model, [prompt], None, config, [u])["sequences"].tolist()
    hf = decode_as("transformers-4.38.2", ours.model, [prompt], None, config, [u])["sequences"].tolist()
    assert peer != hf


def test_rms_norm_eps_refuses_other_values():
    with pytest.raises(ValueError, match="rms_norm_eps"):
        EngineRules(rms_norm_eps="1e-4")
