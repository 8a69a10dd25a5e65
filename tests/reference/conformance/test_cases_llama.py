"""refdecode.reference.conformance.cases_llama: the llama group's cases hold what transformers 4.38.2 computes.

The forward cases: their cached calls give the logits of one uncached call over the whole sequence, and every
checkpoint is covered. The decode cases: built from tests/golden/llama.npz's prompts and settings, so the greedy,
beam and group beam cases' expected sequences are the ones transformers 4.38.2 generated there.
"""

from __future__ import annotations

import json

import numpy as np

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from conftest import GOLDEN
from refdecode import from_pretrained
from refdecode.reference.conformance.cases_llama import CHECKPOINTS
from refdecode.reference.conformance.registry import REGISTRY, select

FORWARD = list(REGISTRY["llama_forward"].build())


def test_the_llama_group_has_forward_and_every_decode_type():
    assert select("llama") == ["llama_forward", "llama_greedy", "llama_beam_search", "llama_group_beam_search",
                               "llama_sample", "llama_beam_sample"]
    assert len(FORWARD) == 24 and {c.note.split(":")[0] for c in FORWARD} == set(CHECKPOINTS)
    assert sum("left-padded" in c.note for c in FORWARD) >= 8


def test_forward_cached_steps_give_the_logits_of_one_uncached_call():
    """... except with dynamic RoPE past max_position_embeddings: there 4.38.2 rotates each new token with the base
    of its own call, and the cached keys keep theirs (tests/model/test_llama.py holds transformers' numbers)."""
    for case in FORWARD[:12]:
        inp = case.input
        out = REGISTRY["llama_forward"].run(inp)
        model = from_pretrained(inp["model"]["path"])
        steps = inp["next_tokens"].shape[0]
        ids = np.concatenate([inp["input_ids"], inp["next_tokens"].T], axis=1)               # (B, T + S)
        mask = np.concatenate([inp["attention_mask"], np.ones_like(inp["next_tokens"].T)], axis=1)
        whole = model(ids, attention_mask=mask).logits                                      # (B, T + S, V)
        at = whole[:, ids.shape[1] - steps - 1:]
        scale = np.abs(at).max()
        c = model.config
        if c.rope_scaling and c.rope_scaling["type"] == "dynamic" and steps and ids.shape[1] > c.max_position_embeddings:
            assert not np.allclose(out["logits"][-1], at[:, -1], atol=1e-3 * scale), case.note
            continue
        np.testing.assert_allclose(out["logits"], at.transpose(1, 0, 2), atol=1e-5 * scale, err_msg=case.note)
        assert out["logits"].dtype == np.float32


def test_decode_cases_expect_what_transformers_generated():
    with np.load(GOLDEN / "llama.npz") as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    for type_name, mode in [("llama_greedy", "greedy"), ("llama_beam_search", "beam"),
                            ("llama_group_beam_search", "group")]:
        cases = list(REGISTRY[type_name].build())
        assert len(cases) == 6
        for case, golden in zip(cases, [c for c in meta["cases"] if c["mode"] == mode]):
            out = REGISTRY[type_name].run(case.input)
            np.testing.assert_array_equal(out["sequences"], arrays[f"{golden['id']}/sequences"], err_msg=case.note)
    assert len(list(REGISTRY["llama_sample"].build())) >= 4
