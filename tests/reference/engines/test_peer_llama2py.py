"""The llama2-py profile (llama2-py 0.0.6, llama2.c's run.c in pure Python; examples/peers/llama2-py/FINDINGS.md):
it reproduces every answer llama2-py gave on the suite's Llama cases (examples/peers/llama2-py/responses.jsonl,
recorded through its adapter), and each of its switches changes what it should: ``eos_ignored=True`` (P3) answers
past an eos where 4.38.2 stops; ``rms_norm_eps="1e-5"`` (P2) moves the logits of a checkpoint trained with another
epsilon and leaves those of a 1e-5 checkpoint as they are."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache

import numpy as np
import pytest
from engine_records import ROOT, model_dir

from refdecode.model.llama_modeling import Llama
from refdecode.reference.engines import PROFILES, NextTokenLogits, decode_as

RECORDS = ROOT / "examples" / "peers" / "llama2-py" / "responses.jsonl"
PROFILE = PROFILES["llama2-py"]


@lru_cache(maxsize=None)
def logits_of(name: str) -> NextTokenLogits:
    return NextTokenLogits(Llama.from_pretrained(model_dir(name)))


def recorded() -> list[dict]:
    return [r for r in map(json.loads, RECORDS.read_text().splitlines()) if "output" in r["response"]]


def decode(profile, r: dict) -> list[list[int]]:
    out = decode_as(profile, logits_of(r["model"]), r["input_ids"], r["attention_mask"], r["config"],
                    r.get("uniforms"))
    return out["sequences"].tolist()


def test_the_records_hold_answers_and_refusals():
    lines = [json.loads(line) for line in RECORDS.read_text().splitlines()]
    answered = recorded()
    # the suite's Llama cases llama2-py takes: batch 1, no penalty, n-gram ban or minimum length (its sampling
    # cases all have batches or top_k 50: refused); the fresh cases (fresh.json) hold its sampling answers
    assert len(answered) >= 3 and {r["model"] for r in answered} == {"tiny-shakespeare-llama"}
    # batch > 1: refused (llama2-py runs one prompt), never answered
    assert all(len(r["input_ids"]) == 1 for r in answered)
    assert any(len(r["input_ids"]) > 1 and "unsupported" in r["response"] for r in lines)


@pytest.mark.slow
def test_profile_reproduces_every_answer():
    for r in recorded():
        assert decode(PROFILE, r) == r["response"]["output"]["sequences"], r["id"]


@pytest.mark.slow
def test_no_eos_stop_is_what_departs():
    """Where llama2-py's answer is not 4.38.2's, the profile without eos_ignored=True gives 4.38.2's (P3)."""
    departing = [r for r in recorded() if r["response"]["output"]["sequences"] != r["expected"]["sequences"]]
    assert departing
    for r in departing:
        assert decode(replace(PROFILE, eos_ignored=False), r) != r["response"]["output"]["sequences"], r["id"]
        assert any(t in r["config"]["eos_token_id"] for t in r["response"]["output"]["sequences"][0][:-1]
                   [len(r["input_ids"][0]):]), r["id"]      # an eos generated before the last token


def test_rms_norm_eps_moves_logits_only_off_1e5():
    ids = (5, 17, 99, 3)
    for name, moved in (("llama-gqa-tied", True), ("tiny-shakespeare-llama", False)):
        model = Llama.from_pretrained(model_dir(name))
        plain, peer = NextTokenLogits(model)(ids), NextTokenLogits(model, rms_norm_eps="1e-5")(ids)
        assert peer.dtype == np.float32
        assert (np.abs(plain - peer).max() > 1e-6) == moved, name
        assert model.config.rms_norm_eps == (1e-6 if moved else 1e-5)      # restored after the call


def test_eos_ignored_runs_every_row_to_max_new_tokens():
    r = next(r for r in recorded() if r["response"]["output"]["sequences"] != r["expected"]["sequences"])
    width = len(r["input_ids"][0]) + int(r["config"]["max_new_tokens"])
    assert len(decode(PROFILE, r)[0]) == width
    assert len(decode(PROFILES["transformers-4.38.2"], r)[0]) < width


def test_rms_norm_eps_turns_a_greedy_answer_llama2py_gave():
    """examples/peers/llama2-py/switch_cases.jsonl: a prompt on llama-gqa-tied (rms_norm_eps 1e-6) where the epsilon
    turns a near-tie at the 4th new token, asked of llama2-py through its adapter: its answer is the profile's with
    rms_norm_eps="1e-5" (P2), not with the checkpoint's epsilon; and it goes on past the eos 2 (P3)."""
    r = json.loads((RECORDS.parent / "switch_cases.jsonl").read_text().splitlines()[0])
    answer = r["response"]["output"]["sequences"]
    assert decode(PROFILE, r) == answer
    assert decode(replace(PROFILE, rms_norm_eps="checkpoint"), r) != answer
    assert 2 in answer[0][4:-1] and answer != r["expected"]["sequences"]


def test_the_fresh_fit_gives_one_unpadded_row_on_llama_gqa_tied():
    """fresh_check.py's for_llama2py: the first prompt without its padding, ids and eos mod 128 on llama-gqa-tied,
    one row, none of the options llama2-py lacks, the uniforms of that one row."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("fresh_check", ROOT / "examples" / "engines" / "fresh_check.py")
    fresh_check = importlib.util.module_from_spec(spec)
    sys.modules["fresh_check"] = fresh_check
    spec.loader.exec_module(fresh_check)
    base = {"model": {"kind": "llama", "path": "x"}, "input_ids": np.array([[7, 50256, 198, 300], [1, 2, 3, 4]]),
            "attention_mask": np.array([[0, 1, 1, 1], [1, 1, 1, 1]]), "uniforms": np.arange(12) / 12,
            "config": {"eos_token_id": [198, 326], "pad_token_id": 7, "max_new_tokens": 3, "do_sample": True,
                       "num_return_sequences": 2, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2,
                       "min_length": 9, "min_new_tokens": 2, "top_k": 50, "top_p": 0.8}}
    fit = fresh_check.for_llama2py(base)
    c = fit["config"]
    assert fit["input_ids"].tolist() == [[50256 % 128, 198 % 128, 300 % 128]]
    assert fit["attention_mask"].tolist() == [[1, 1, 1]] and fit["model"]["path"].endswith("llama-gqa-tied")
    assert c["eos_token_id"] == [70] and c["pad_token_id"] == 7 and c["max_new_tokens"] == 3
    assert (c["num_return_sequences"], c["repetition_penalty"], c["no_repeat_ngram_size"], c["min_length"],
            c["min_new_tokens"], c["top_k"], c["top_p"]) == (1, 1.0, 0, 0, 0, 0, 1.0)
    assert fit["uniforms"].tolist() == (np.arange(3) / 12).tolist()
