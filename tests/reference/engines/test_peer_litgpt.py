"""The teaching peer litgpt 0.5.13 (examples/peers/litgpt): refdecode's profile ``litgpt`` gives every answer
litgpt's own ``generate`` gave (examples/peers/litgpt/responses.jsonl, recorded through its adapter), and its one
switch, ``warpers="litgpt"`` (FINDINGS LG1), changes a draw where litgpt's ``sample`` departs from 4.38.2."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from refdecode.model.stand_ins import TableModel
from refdecode.reference.conformance.cases_decode import model_for
from refdecode.reference.engines import PROFILES, EngineRules, NextTokenLogits, decode_as, switches_of
from refdecode.reference.engines.sampling import litgpt_chain

from tests.engine_records import model_dir

ROOT = Path(__file__).resolve().parents[3]
RECORDS = ROOT / "examples" / "peers" / "litgpt" / "responses.jsonl"


def records() -> list[dict]:
    return [json.loads(line) for line in RECORDS.read_text().splitlines()]


def answered() -> list[dict]:
    return [r for r in records() if "output" in r["response"]]


@lru_cache(maxsize=None)
def logits_of(name: str, kind: str) -> NextTokenLogits:
    return NextTokenLogits(model_for({"kind": kind, "path": str(model_dir(name))}, {}))


def test_the_recorded_answers_cover_the_llama_groups():
    """litgpt answered the suite's greedy and sampling Llama cases (no beams: its generate has none)."""
    got = answered()
    types = {r["type"] for r in got}
    assert {"engines_llama_greedy", "llama_greedy", "llama_sample"} <= types
    assert all(r.get("kind") == "llama" for r in got)
    assert all(int(r["config"].get("num_beams") or 1) == 1 for r in got)
    assert len(got) >= 10


def test_profile_reproduces_every_litgpt_answer():
    for r in answered():
        out = decode_as("litgpt", logits_of(r["model"], r.get("kind", "gpt2")), r["input_ids"], r["attention_mask"],
                        r["config"], r.get("uniforms"))["sequences"]
        assert out.dtype == np.int64
        assert out.tolist() == r["response"]["output"]["sequences"], r["id"]


def test_the_profile_is_one_switch():
    assert switches_of(PROFILES["litgpt"]) == {"warpers": "litgpt"}


def test_litgpt_top_k_keeps_exactly_k():
    """scores [3, 2, 2, 0], top_k 2: 4.38.2's TopKLogitsWarper keeps every score >= the 2nd (ids 0, 1, 2);
    litgpt's ``torch.topk`` + ``-inf`` fill keeps two of them (base.py:61-64)."""
    scores = np.array([3.0, 2.0, 2.0, 0.0], dtype=np.float32)
    kept = litgpt_chain(scores, temperature=1.0, top_k=2, top_p=1.0)
    assert kept.dtype == np.float32
    assert np.isfinite(kept).sum() == 2 and np.isfinite(kept[0])


def test_the_switch_changes_a_draw_at_a_top_k_tie():
    """A bigram stand-in whose next-token scores after token 1 are [3, 2, 2, 0]: with top_k 2 and the uniform 0.95,
    4.38.2 draws among ids 0, 1, 2 (its cumulative mass passes 0.95 at id 2); litgpt's profile among 0 and 1."""
    table = np.log(np.full((4, 4), 0.25, dtype=np.float32))
    table[1] = [3.0, 2.0, 2.0, 0.0]
    model, ids = TableModel(table), np.array([[1]])
    config = {"max_new_tokens": 1, "eos_token_id": [3], "pad_token_id": 3, "do_sample": True, "top_k": 2}
    hf = decode_as("transformers-4.38.2", model, ids, None, config, [0.95])["sequences"].tolist()
    lit = decode_as("litgpt", model, ids, None, config, [0.95])["sequences"].tolist()
    assert hf == [[1, 2]] and lit == [[1, 1]]
    assert decode_as(EngineRules(), model, ids, None, config, [0.95])["sequences"].tolist() == hf


def test_litgpt_top_p_is_the_4382_rule():
    """``sample_top_p`` (base.py:39-51) is TopPLogitsWarper's code: the same kept set on the tempered scores,
    including the boundary (a token whose more probable predecessors hold exactly top_p is dropped)."""
    from refdecode.generation_config import GenerationConfig
    from refdecode.pipeline import logits_warpers

    rng = np.random.default_rng(7)
    for scores in [np.log(np.array([0.5, 0.25, 0.125, 0.125], dtype=np.float32)),
                   *(rng.normal(size=40).astype(np.float32) for _ in range(20))]:
        for temperature, top_p in [(1.0, 0.75), (0.7, 0.9), (1.5, 0.5)]:
            ours = litgpt_chain(scores, temperature, 0, top_p)
            hf = logits_warpers(GenerationConfig(do_sample=True, temperature=temperature, top_k=0, top_p=top_p))(
                np.array([[1]]), scores[None])[0]
            np.testing.assert_array_equal(np.isfinite(ours), np.isfinite(hf))


@pytest.mark.parametrize("bad", [{"warpers": "litgpt2"}])
def test_an_unknown_warpers_value_is_refused(bad):
    with pytest.raises(ValueError, match="`warpers` must be one of"):
        EngineRules(**bad)
