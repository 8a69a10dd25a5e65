"""refdecode.reference.conformance.cases_forward: the forward-pass cases hold what a correct model computes.

Three properties a correct forward pass has, checked on the built cases' expected values without running the
cases' own code path twice: the cached calls give the logits of one uncached call over the whole sequence; a
left-padded row gives the logits of the same row without padding; the last hidden state times the tied
embedding is the logits.
"""

from __future__ import annotations

import numpy as np

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode import GPT2
from refdecode.reference.conformance.registry import REGISTRY

CASES = list(REGISTRY["gpt2_forward"].build())


def _expected(case):
    return REGISTRY["gpt2_forward"].run(case.input)


def test_the_cases_cover_padding_cached_steps_and_every_checkpoint():
    assert len(CASES) == 30
    assert sum("left-padded" in c.note for c in CASES) >= 10
    assert sum(c.input["next_tokens"].shape[0] > 0 for c in CASES) >= 20
    assert {c.note.split(":")[0] for c in CASES} == {"decode-a", "decode-b", "decode-c"}


def test_cached_steps_give_the_logits_of_one_uncached_call():
    for case in CASES[:12]:
        inp, out = case.input, _expected(case)
        model = GPT2.from_pretrained(inp["model"]["path"])
        steps = inp["next_tokens"].shape[0]
        ids = np.concatenate([inp["input_ids"], inp["next_tokens"].T], axis=1)               # (B, T + S)
        mask = np.concatenate([inp["attention_mask"], np.ones_like(inp["next_tokens"].T)], axis=1)
        whole = model(ids, attention_mask=mask).logits                                      # (B, T + S, V)
        at = whole[:, ids.shape[1] - steps - 1:]                                            # the S + 1 call ends
        np.testing.assert_allclose(out["logits"], at.transpose(1, 0, 2), atol=2e-5, err_msg=case.note)


def test_a_left_padded_row_gives_the_logits_of_the_unpadded_row():
    for case in [c for c in CASES if "left-padded" in c.note][:8]:
        inp, out = case.input, _expected(case)
        model = GPT2.from_pretrained(inp["model"]["path"])
        for row in range(inp["input_ids"].shape[0]):
            real = inp["attention_mask"][row].astype(bool)
            alone = model(inp["input_ids"][row:row + 1, real]).logits[0, -1]
            np.testing.assert_allclose(out["logits"][0, row], alone, atol=2e-5, err_msg=case.note)


def test_the_last_hidden_state_times_the_embedding_is_the_logits():
    for case in CASES[:6]:
        out = _expected(case)
        wte = GPT2.from_pretrained(case.input["model"]["path"]).params["wte"]               # (V, E)
        np.testing.assert_allclose(out["hidden_states"][:, -1] @ wte.T, out["logits"], atol=2e-4)
        assert out["logits"].dtype == out["hidden_states"].dtype == np.float32
