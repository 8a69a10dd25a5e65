"""The engines on the shipped Llama (the engines_llama group, models/tiny-shakespeare-llama): each engine's profile
gives every answer the engine recorded there (examples/engines/<engine>/responses-llama.jsonl), token for token."""

from __future__ import annotations

import json

import pytest

from engine_records import ROOT, decode_case, recorded

#: the engines whose Llama answers are recorded (their adapters convert a Llama folder with the engine's converter)
LLAMA_ENGINES = ["transformers-4.38.2", "transformers-5", "ctranslate2", "onnxruntime-genai"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", LLAMA_ENGINES)
def test_profile_reproduces_every_llama_answer(engine):
    records = recorded(engine, llama=True)
    assert records and {r["model"] for r in records} == {"tiny-shakespeare-llama"}
    assert {r["type"] for r in records} <= {"engines_llama_greedy", "engines_llama_beam_search"}
    for r in records:
        assert decode_case(engine, r)["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]


def test_the_control_passes_every_llama_case_it_answers():
    """transformers 4.38.2 on the Llama is refdecode's expected answer: its recorded sequences equal them."""
    for r in recorded("transformers-4.38.2", llama=True):
        assert r["response"]["output"]["sequences"] == r["expected"]["sequences"], r["id"]


def test_flax_refuses_the_shipped_llama_for_its_grouped_query_attention():
    """4.38.2's FlaxLlamaForCausalLM has no num_key_value_heads (FINDINGS FX9): every engines_llama case
    Unsupported, saying why."""
    lines = (ROOT / "examples" / "engines" / "transformers-4.38.2-flax" / "responses-llama.jsonl").read_text()
    records = [json.loads(line) for line in lines.splitlines()]
    assert len(records) == 92
    assert all("grouped-query attention" in r["response"]["unsupported"] for r in records)
