r"""The Llama family (llama, mistral, qwen2): its forward pass, and decoding on it, for a porter adding RoPE models.

Contract: registers the ``llama`` group: ``llama_forward`` (the protocol of ``gpt2_forward``,
:mod:`~refdecode.reference.conformance.cases_forward`, on the tiny random Llama-family checkpoints of
tests/golden/models: grouped-query attention, tied and untied heads, q/k/v(/o) biases, linear and dynamic RoPE scaling,
a Mistral within its sliding window, a sharded Qwen2) and ``llama_greedy``, ``llama_beam_search``,
``llama_group_beam_search``, ``llama_sample``, ``llama_beam_sample`` (the protocol of the ``gpt2_*`` decode types, on
the prompts and settings of tests/golden/llama.npz, which transformers 4.38.2 decoded; sampling cases draw with the
case's uniforms, as every decode case of the suite). A model is ``{"kind": "llama", "path": ...}``: a directory in
Hugging Face's layout whose config.json says ``model_type``.

The expected values are refdecode's (:class:`refdecode.model.llama_modeling.Llama`), equal to transformers 4.38.2's
within 1e-4 of the logits' scale and token for token on these checkpoints (tests/model/test_llama.py).
"""

from __future__ import annotations

import functools
import json

import numpy as np

from .cases_decode import GOLDEN, MIN_MARGIN, decode, describe, full_config, model_for, register_decode, smallest
from .cases_forward import run_forward
from .kinds import I64, STR, Enum, obj
from .kinds import F32
from .registry import Case, CaseType, register
from ...generation_rules import eos_list

__all__ = ["LLAMA_MODEL", "CHECKPOINTS"]

LLAMA_MODEL = obj(kind=Enum(("llama",)), path=STR)
CHECKPOINTS = ("llama-gqa-tied", "llama-bias", "llama-rope-linear", "llama-rope-dynamic", "mistral-window",
               "qwen2-bias")


def _spec(name: str) -> dict:
    return {"kind": "llama", "path": str(GOLDEN / "models" / name)}


def _build_forward() -> list[Case]:
    """4 cases per checkpoint: batch 1-3, prompts of 1-14 tokens (left-padded in 2 of 3), 0-6 cached steps."""
    rng, cases = np.random.default_rng(601), []
    for i in range(4 * len(CHECKPOINTS)):
        name = CHECKPOINTS[i % len(CHECKPOINTS)]
        model = model_for(_spec(name), {})
        vocab, n_positions = model.config.vocab_size, model.config.n_positions
        batch, length, steps = int(rng.integers(1, 4)), int(rng.integers(1, 15)), int(rng.integers(0, 7))
        length = min(length, n_positions - steps)
        ids = rng.integers(0, vocab, (batch, length)).astype(np.int64)
        mask = np.ones_like(ids)
        for row in range(batch if i % 3 else 0):
            pad = int(rng.integers(0, length))
            mask[row, :pad], ids[row, :pad] = 0, ids[row, pad]
        cases.append(Case(f"{name}: batch {batch}, prompt {length}" + (", left-padded" if (mask == 0).any() else "")
                          + f", {steps} cached steps",
                          {"model": _spec(name), "input_ids": ids, "attention_mask": mask,
                           "next_tokens": rng.integers(0, vocab, (steps, batch)).astype(np.int64)}))
    return cases


def _golden_decode_cases(modes: tuple[str, ...], sample: bool) -> list[Case]:
    """The prompts and settings tools/golden/make_llama_golden.py gave transformers 4.38.2, as decode cases."""
    z = np.load(GOLDEN / "llama.npz")
    meta, cases = json.loads(str(z["meta"])), []
    rng = np.random.default_rng(602)
    for case in meta["cases"]:
        if case["mode"] not in modes:
            continue
        prefix = case["id"] if f"{case['id']}/input_ids" in z.files else f"{case['model']}/forward"
        ids, mask = (z[f"{prefix}/{k}"].astype(np.int64) for k in ("input_ids", "attention_mask"))
        kwargs = {k: v for k, v in case["kwargs"].items() if k != "do_sample"}
        eos = model_for(_spec(case["model"]), {}).generation_config.eos_token_id
        config = full_config(eos_token_id=eos_list(eos, no_token=True), pad_token_id=0, do_sample=sample, **kwargs)
        inp = {"model": _spec(case["model"]), "input_ids": ids, "attention_mask": mask, "config": config}
        if sample:
            inp["uniforms"] = rng.random(config["max_new_tokens"] * ids.shape[0] * 2 * config["num_beams"]
                                         * config["num_return_sequences"] * config["num_beams"])
            if smallest(decode(inp)[1]) <= MIN_MARGIN:  # a draw too close to a boundary between two tokens
                continue
        cases.append(Case(f"transformers golden case llama.npz:{case['id']}: " + describe(config, ids, mask), inp))
    return cases


register(CaseType(
    name="llama_forward", groups=("llama", "model"),
    summary="the Llama-family forward pass (RMSNorm, RoPE with linear/dynamic scaling, grouped-query attention, "
            "SwiGLU; llama, mistral and qwen2 checkpoints) with a KV cache, in gpt2_forward's protocol: the prompt "
            "(left-padded; position ids = cumsum(mask) - 1, pads at 1), then each column of next_tokens as one "
            "cached step; logits (S + 1, B, V) float32 at the last position of each call, and optionally "
            "hidden_states (S + 1, L + 1, B, E): every layer's input, then the last layer's output after the norm",
    inputs=obj(model=LLAMA_MODEL, input_ids=I64(2), attention_mask=I64(2), next_tokens=I64(2)),
    outputs=obj(may_omit=("hidden_states",), logits=F32(3), hidden_states=F32(4)),
    build=_build_forward, run=run_forward))

for _name, _mode, _modes, _sample in [("llama_greedy", "greedy", ("greedy",), False),
                                      ("llama_beam_search", "beam_search", ("beam",), False),
                                      ("llama_group_beam_search", "group_beam_search", ("group",), False),
                                      ("llama_sample", "sample", ("sample",), True),
                                      ("llama_beam_sample", "beam_sample", ("beam_sample",), True)]:
    register_decode(_name, _mode, LLAMA_MODEL, ("llama",), functools.partial(_golden_decode_cases, _modes, _sample))
