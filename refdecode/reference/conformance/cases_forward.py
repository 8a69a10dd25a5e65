r"""The forward pass alone: a porter checks the model before any decoding case.

Contract: registers ``gpt2_forward``. A case gives one of the suite's tiny GPT-2 checkpoints, a left-padded
prompt batch ``input_ids`` / ``attention_mask`` int (B, T) and ``next_tokens`` int (S, B): the tokens fed
afterwards, one column per cached step. The implementation runs the prompt through the model (one call,
position ids from the mask: ``cumsum - 1``, pads at 1), then each column of ``next_tokens`` through the KV
cache with a column of ones appended to the mask, and reports, for each of the S + 1 calls, the float32
``logits`` (B, V) at the call's last position (``logits`` (S + 1, B, V)) and, optionally, every layer's
hidden state there (``hidden_states`` (S + 1, L + 1, B, E): the input of every block, then the last
block's output after ``ln_f``, as transformers' ``output_hidden_states``). A forward pass that agrees
here to 1e-4 of each row's scale gives decodes that differ only at near-ties.

The expected values are refdecode's (:class:`refdecode.model.modeling.GPT2`), whose forward pass equals
transformers 4.38.2's on these checkpoints (tests/golden/model_*.npz). No choice is made, so no margins.
"""

from __future__ import annotations

import numpy as np

from .cases_decode import GOLDEN, GPT2_MODEL, model_for
from .kinds import F32, I64, obj
from .registry import Case, CaseType, register

__all__ = ["run_forward"]

CHECKPOINTS = ("decode-a", "decode-b", "decode-c")


def run_forward(inp: dict) -> dict:
    """The case's calls: the prompt, then one cached call per column of ``next_tokens``; see the module docstring."""
    model = model_for(inp["model"], {})
    ids, mask, steps = inp["input_ids"], inp["attention_mask"], inp["next_tokens"]  # (B, T), (B, T), (S, B)
    cache = model.new_cache(ids.shape[0], ids.shape[1] + steps.shape[0])
    out = model(ids, attention_mask=mask, past_key_values=cache, output_hidden_states=True)
    logits, hidden = [out.logits[:, -1]], [np.stack([h[:, -1] for h in out.hidden_states])]  # (B, V), (L+1, B, E)
    for column in steps:
        mask = np.concatenate([mask, np.ones((mask.shape[0], 1), dtype=mask.dtype)], axis=1)  # (B, S) -> (B, S+1)
        out = model(column[:, None], attention_mask=mask, past_key_values=cache, output_hidden_states=True)
        logits.append(out.logits[:, -1])
        hidden.append(np.stack([h[:, -1] for h in out.hidden_states]))
    return {"logits": np.stack(logits).astype(np.float32), "hidden_states": np.stack(hidden).astype(np.float32)}


def _build() -> list[Case]:
    rng, cases = np.random.default_rng(501), []
    for i in range(30):
        name = CHECKPOINTS[i % len(CHECKPOINTS)]
        model = model_for({"kind": "gpt2", "path": str(GOLDEN / "models" / name)}, {})
        vocab, n_positions = model.config.vocab_size, model.config.n_positions
        batch, length, steps = int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(0, 6))
        length = min(length, n_positions - steps)
        ids = rng.integers(0, vocab, (batch, length)).astype(np.int64)
        mask = np.ones_like(ids)
        for row in range(batch if i % 3 else 0):  # every third case without padding; else left-pad some rows
            pad = int(rng.integers(0, length))
            mask[row, :pad], ids[row, :pad] = 0, ids[row, pad]   # a left pad holds some id; the mask hides it
        cases.append(Case(f"{name}: batch {batch}, prompt {length}" + (", left-padded" if (mask == 0).any() else "")
                          + f", {steps} cached steps",
                          {"model": {"kind": "gpt2", "path": str(GOLDEN / "models" / name)}, "input_ids": ids,
                           "attention_mask": mask,
                           "next_tokens": rng.integers(0, vocab, (steps, batch)).astype(np.int64)}))
    return cases


register(CaseType(
    name="gpt2_forward", groups=("gpt2", "model"),
    summary="the GPT-2 forward pass with a KV cache: the prompt (left-padded; position ids = cumsum(mask) - 1, pads "
            "at 1), then each column of next_tokens as one cached step (mask extended by a column of ones); logits "
            "(S + 1, B, V) float32 at the last position of each call, and optionally hidden_states (S + 1, L + 1, "
            "B, E): every block's input, then the last block's output after ln_f",
    inputs=obj(model=GPT2_MODEL, input_ids=I64(2), attention_mask=I64(2), next_tokens=I64(2)),
    outputs=obj(may_omit=("hidden_states",), logits=F32(3), hidden_states=F32(4)),
    build=_build, run=run_forward))
