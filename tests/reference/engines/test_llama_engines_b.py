"""The engine profiles on the shipped Llama: every answer llama.cpp, mlx-lm, OpenVINO GenAI and vLLM gave on the
``engines_llama`` group (examples/engines/<engine>/responses-llama.jsonl, written by
examples/engines/common/record_responses.py + slim_responses.py from the real engines on models/tiny-shakespeare-llama)
is reproduced, token for token, by the engine's profile (the same one as on GPT-2)."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from conftest import ROOT

from refdecode import from_pretrained
from refdecode.reference.engines import NextTokenLogits, decode_as

ENGINES = [e for e in ("llama-cpp", "mlx-lm", "openvino-genai", "vllm")
           if (ROOT / "examples" / "engines" / e / "responses-llama.jsonl").exists()]


def records(engine: str) -> list[dict]:
    """The engine's recorded engines_llama cases (answered or not)."""
    lines = (ROOT / "examples" / "engines" / engine / "responses-llama.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@lru_cache(maxsize=None)
def logits_of(name: str) -> NextTokenLogits:
    return NextTokenLogits(from_pretrained(ROOT / "models" / name))


@pytest.mark.parametrize("engine", ENGINES)
def test_records_are_the_llama_group(engine):
    """Each file holds the whole group, on the shipped Llama, and the engine answered some of it."""
    recs = records(engine)
    assert len(recs) == 92 and {r["model"] for r in recs} == {"tiny-shakespeare-llama"}
    assert {r["type"] for r in recs} == {"engines_llama_greedy", "engines_llama_beam_search"}
    assert any("output" in r["response"] for r in recs)


@pytest.mark.slow
@pytest.mark.heavy  # 10 s of CPU or more: `pytest --heavy` (CI) runs it
@pytest.mark.parametrize("engine", ENGINES)
def test_profile_reproduces_every_llama_answer(engine):
    for r in records(engine):
        if "output" not in r["response"]:
            continue
        out = decode_as(engine, logits_of(r["model"]), r["input_ids"], r["attention_mask"], r["config"])
        assert out["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]
