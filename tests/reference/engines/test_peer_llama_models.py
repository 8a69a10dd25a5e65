"""The ``llama-models`` profile (Meta's reference ``Llama3.generate``, llama-models 0.3.0): it gives every answer
Meta's own ``generate`` gave (examples/peers/llama-models/responses.jsonl, recorded through its adapter), and each
of its switches changes an answer where it should (S1 lockstep budgets, S2 ``sample_top_p``, S3 the stop token).
No torch."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from refdecode.reference.conformance.cases_decode import model_for
from refdecode.reference.engines import PROFILES, NextTokenLogits, decode_as
from refdecode.reference.engines.rules import EngineRules
from refdecode.reference.engines.sampling import meta_chain

ROOT = Path(__file__).resolve().parents[3]
MODELS = {"tiny-shakespeare-llama": ROOT / "models" / "tiny-shakespeare-llama",
          "llama-tiny": ROOT / "models" / "llama-tiny",
          "llama-gqa-tied": ROOT / "tests" / "golden" / "models" / "llama-gqa-tied"}
RECORDS = ROOT / "examples" / "peers" / "llama-models" / "responses.jsonl"


@lru_cache(maxsize=None)
def logits_of(name: str) -> NextTokenLogits:
    return NextTokenLogits(model_for({"kind": "llama", "path": str(MODELS[name])}, {}))


def _stub_case(**config) -> dict:
    base = {"max_new_tokens": 3, "eos_token_id": [198], "pad_token_id": 0}
    return {**base, **config}


def test_s1_a_shorter_prompt_gets_the_longer_prompts_extra_steps():
    """S1: two prompts of 4 and 2 tokens, 3 new tokens: the short row generates 2 + 3 = 5 tokens."""
    logits = logits_of("tiny-shakespeare-llama")
    ids, mask = [[464, 3290, 318, 257], [0, 0, 464, 3290]], [[1, 1, 1, 1], [0, 0, 1, 1]]
    cfg = _stub_case(eos_token_id=[50256])      # an eos the model does not emit here
    meta = decode_as("llama-models", logits, ids, mask, cfg)["sequences"]
    hf = decode_as(EngineRules(), logits, ids, mask, cfg)["sequences"]
    assert hf.shape == (2, 7) and meta.shape == (2, 9)
    assert meta[1, :7].tolist() == hf[1].tolist() and meta[0, 7:].tolist() == [0, 0]


def test_s3_the_stop_token_is_not_kept():
    logits = logits_of("tiny-shakespeare-llama")
    ids = [[464, 3290, 318]]
    first = int(np.argmax(logits(ids[0])))
    cfg = _stub_case(eos_token_id=[first])
    assert decode_as(EngineRules(), logits, ids, [[1, 1, 1]], cfg)["sequences"].tolist() == [ids[0] + [first]]
    assert decode_as("llama-models", logits, ids, [[1, 1, 1]], cfg)["sequences"].tolist() == [ids[0]]


def test_s2_meta_top_p_drops_where_the_mass_before_the_token_is_above_top_p():
    """Meta keeps a token whose float32 cumulative mass before it equals top_p (``probs_sum - probs_sort > p``)
    and drops it one float32 step below."""
    scores = np.array([2.0, 1.0, 0.5, 0.0, -1.0], dtype=np.float32)
    p = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum(dtype=np.float32)
    before = float(np.cumsum(p.astype(np.float64)).astype(np.float32)[1])      # the mass before token 2
    kept = meta_chain(scores, 1.0, before)
    assert kept.dtype == np.float32 and np.isfinite(kept[:3]).all() and np.isinf(kept[3:]).all()
    assert np.isinf(meta_chain(scores, 1.0, float(np.nextafter(np.float32(before), np.float32(0))))[2])


def test_s2_the_sampled_answer_ignores_top_k():
    """Meta's chain has no top-k: with top_k 1 4.38.2 can only draw the argmax, Meta draws from the whole nucleus."""
    logits = logits_of("tiny-shakespeare-llama")
    ids, mask = [[464, 3290, 318]], [[1, 1, 1]]
    cfg = _stub_case(do_sample=True, top_k=1, top_p=1.0, temperature=1.5, max_new_tokens=4, eos_token_id=[50256])
    u = np.array([0.999, 0.999, 0.999, 0.999])
    assert decode_as(EngineRules(warpers="meta"), logits, ids, mask, cfg, u)["sequences"].tolist() != \
        decode_as(EngineRules(), logits, ids, mask, cfg, u)["sequences"].tolist()


def test_profile_switches():
    rules = PROFILES["llama-models"]
    assert rules.lockstep_budget and not rules.lengths_from_unpadded and rules.stop_eos_dropped and rules.warpers == "meta"
    with pytest.raises(ValueError, match="warpers"):
        EngineRules(warpers="meta2")


def answered() -> list[dict]:
    records = [json.loads(line) for line in RECORDS.read_text().splitlines()]
    return [r for r in records if "output" in r["response"]]


def test_the_recorded_answers_cover_the_llama_groups():
    """Meta's generate answered the suite's greedy Llama cases it takes (no beams, penalties or minimum length)."""
    got = answered()
    assert {"engines_llama_greedy", "llama_greedy"} <= {r["type"] for r in got}
    assert all(r.get("kind") == "llama" and int(r["config"].get("num_beams") or 1) == 1 for r in got)
    assert len(got) >= 4


def test_profile_reproduces_every_llama_models_answer():
    departing = 0
    for r in answered():
        logits = logits_of(r["model"])
        out = decode_as("llama-models", logits, r["input_ids"], r["attention_mask"], r["config"],
                        r.get("uniforms"))["sequences"]
        assert out.dtype == np.int64
        assert out.tolist() == r["response"]["output"]["sequences"], r["id"]
        hf = decode_as(EngineRules(), logits, r["input_ids"], r["attention_mask"], r["config"], r.get("uniforms"))
        departing += hf["sequences"].tolist() != out.tolist()
    assert departing >= 1                     # the record shows a departure (S1 or S3), not only agreement
