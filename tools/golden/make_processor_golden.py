"""Golden outputs of transformers 4.38.2's logits processors and warpers -> tests/golden/processors.npz.

Regenerate (oracle venv only; the package and its tests never import torch):

    .venv-oracle/bin/python tools/golden/make_processor_golden.py

Every case is one chain of transformers classes applied to one (input_ids, scores) pair. The npz
holds, per case ``i``: ``{i}_input_ids`` int64 (B, T), ``{i}_scores`` float32 (B, V), optional
``{i}_current_tokens`` int64 (B*K,), and ``{i}_expected`` float32 (B, V). ``meta`` is a JSON string:
format_version, versions, the regenerate command, and per case the chain
``[[class_name, constructor_kwargs], ...]`` plus the call kwargs.

Cases where torch's answer is not well defined are redrawn, never stored:
- top-p with tied scores straddling the cut (``torch.sort`` is not stable, so which tied token
  survives is unspecified; our rule is documented in refdecode/processors/logits_warp.py), and
- top-p with a cumulative probability within 1e-6 (relative) of the threshold ``1 - top_p``
  (NumPy's exp/softmax may differ from torch's by an ulp there, flipping the comparison).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from make_processors_more_golden import random_scores  # float32 (B, V) rows of each kind (run from tools/golden/)
from transformers import (
    HammingDiversityLogitsProcessor,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

FORMAT_VERSION = 1
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "processors.npz"
COMMAND = ".venv-oracle/bin/python tools/golden/make_processor_golden.py"
CLASSES = {
    c.__name__: c
    for c in [
        HammingDiversityLogitsProcessor,
        MinLengthLogitsProcessor,
        MinNewTokensLengthLogitsProcessor,
        NoRepeatNGramLogitsProcessor,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    ]
}

torch.set_num_threads(1)
rng = np.random.default_rng(20260321)


# ----------------------------------------------------------------------------------------------
# Inputs


def random_ids(batch: int, length: int, vocab: int, alphabet: int | None = None) -> np.ndarray:
    """int64 (B, T); a small ``alphabet`` makes rows repetitive (for n-gram and penalty cases)."""
    return rng.integers(0, alphabet or vocab, size=(batch, length)).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Checks that the case is well defined in torch


def top_p_ambiguous(scores: torch.Tensor, top_p: float, min_tokens_to_keep: int) -> bool:
    """True if torch's top-p answer for these scores depends on sort order or on an ulp."""
    out = TopPLogitsWarper(top_p, filter_value=float("nan"), min_tokens_to_keep=min_tokens_to_keep)(None, scores)
    removed = torch.isnan(out)
    for row, rem in zip(scores, removed):
        kept_vals, removed_vals = set(row[~rem].tolist()), set(row[rem].tolist())
        if kept_vals & removed_vals:  # a tie straddles the cut
            return True
    sorted_logits, _ = torch.sort(scores, descending=False)
    cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1).double()
    thr = float(np.float32(1 - top_p))
    both_zero = (cum == 0) & (thr == 0)
    near = (cum - thr).abs() <= 1e-6 * torch.clamp(torch.maximum(cum.abs(), torch.tensor(abs(thr))), min=1e-30)
    near[..., -min_tokens_to_keep:] = False  # force-kept positions: their comparison does not matter
    return bool((near & ~both_zero).any())


def chain_ambiguous(chain, scores: torch.Tensor, input_ids: torch.Tensor) -> bool:
    """Apply the chain up to each TopP stage and check that stage's input."""
    if not any(isinstance(processor, TopPLogitsWarper) for processor in chain):
        return False
    for processor in chain:
        if isinstance(processor, TopPLogitsWarper):
            if top_p_ambiguous(scores, processor.top_p, processor.min_tokens_to_keep):
                return True
        scores = processor(input_ids, scores.clone())
    return False


# ----------------------------------------------------------------------------------------------
# Cases


cases: list[dict] = []
arrays: dict[str, np.ndarray] = {}
redrawn = 0
skipped: list[dict] = []


def add(spec: list, make_inputs, call_kwargs: dict | None = None, name: str = "", attempts: int = 200) -> None:
    """Build the chain from ``spec`` ([[class, kwargs], ...]), draw inputs until the case is well
    defined, run transformers, store inputs and output."""
    global redrawn
    call_kwargs = dict(call_kwargs or {})
    for _ in range(attempts):
        inputs = make_inputs()
        input_ids, scores = inputs["input_ids"], inputs["scores"]
        chain = LogitsProcessorList([CLASSES[c](**kw) for c, kw in spec])
        t_ids, t_scores = torch.from_numpy(input_ids), torch.from_numpy(scores)
        if chain_ambiguous(chain, t_scores.clone(), t_ids):
            redrawn += 1
            continue
        kwargs = dict(call_kwargs)
        if "current_tokens" in inputs:
            kwargs["current_tokens"] = torch.from_numpy(inputs["current_tokens"])
        expected = chain(t_ids, t_scores.clone(), **kwargs).numpy()
        i = len(cases)
        for key, value in inputs.items():
            arrays[f"{i}_{key}"] = value
        arrays[f"{i}_expected"] = expected.astype(np.float32)
        cases.append({"name": name, "chain": spec, "call_kwargs": call_kwargs})
        return
    skipped.append({"name": name, "chain": spec})  # e.g. top_p=0 on tie-heavy rows: the max is almost always tied


def inputs_fn(batch, vocab, kind, length=5, alphabet=None):
    return lambda: {"input_ids": random_ids(batch, length, vocab, alphabet),
                    "scores": random_scores(rng, batch, vocab, kind)}


KINDS = ["normal", "ties", "neginf", "logprobs"]

# Warpers ------------------------------------------------------------------------------------
for t in [0.01, 0.5, 1.0, 1.7, 100.0]:
    for kind in KINDS + ["allneginf"]:
        b = int(rng.integers(1, 5))
        add([["TemperatureLogitsWarper", {"temperature": t}]], inputs_fn(b, 16, kind), name=f"temperature/{kind}")

for top_k in [1, 2, 3, 15, 16, 17, 1000]:
    for m in [0, 1, 2, 5]:
        for kind in KINDS:
            b = int(rng.integers(1, 5))
            add([["TopKLogitsWarper", {"top_k": top_k, "min_tokens_to_keep": m}]], inputs_fn(b, 16, kind),
                name=f"top_k/{kind}")
add([["TopKLogitsWarper", {"top_k": 3, "filter_value": -100.0}]], inputs_fn(3, 16, "ties"), name="top_k/filter")
add([["TopKLogitsWarper", {"top_k": 2}]], inputs_fn(3, 8, "allneginf"), name="top_k/allneginf")

for top_p in [0.0, 0.1, 0.5, 0.8, 0.9, 0.95, 1.0]:
    for m in [1, 2, 3, 40]:
        for kind in KINDS:
            b = int(rng.integers(1, 5))
            vocab = int(rng.choice([5, 16, 33]))
            add([["TopPLogitsWarper", {"top_p": top_p, "min_tokens_to_keep": m}]], inputs_fn(b, vocab, kind),
                name=f"top_p/{kind}")
add([["TopPLogitsWarper", {"top_p": 0.7, "filter_value": -100.0}]], inputs_fn(3, 16, "normal"), name="top_p/filter")
add([["TopPLogitsWarper", {"top_p": 0.7}]], inputs_fn(3, 8, "allneginf"), name="top_p/allneginf")
for top_p in [0.5, 0.9]:  # larger vocabulary: torch's sort is introsort here
    add([["TopPLogitsWarper", {"top_p": top_p}]], inputs_fn(2, 200, "normal"), name="top_p/large_vocab")

# GPT-2's vocabulary, flat logits: the float32 cumsum drifts by ~1e-6 over 50257 terms, enough to move
# the cut unless it is accumulated in float64 as torch's CPU cumsum does.
def gpt2_vocab_scores():
    return {"input_ids": np.zeros((1, 1), dtype=np.int64),
            "scores": (rng.normal(size=(1, 50257)) * 0.5).astype(np.float32)}


add([["TopPLogitsWarper", {"top_p": 0.3}]], gpt2_vocab_scores, name="top_p/gpt2_vocab")

# the sample / beam_sample warper chains of generate: temperature -> top-k -> top-p
for t, k, p, m in [(0.7, 5, 0.9, 1), (1.3, 50, 0.8, 1), (0.5, 3, 0.5, 2), (2.0, 10, 0.95, 3), (0.9, 1, 0.3, 2)]:
    for kind in KINDS:
        spec = [["TemperatureLogitsWarper", {"temperature": t}],
                ["TopKLogitsWarper", {"top_k": k, "min_tokens_to_keep": m}],
                ["TopPLogitsWarper", {"top_p": p, "min_tokens_to_keep": m}]]
        add(spec, inputs_fn(int(rng.integers(1, 5)), 24, kind), name=f"chain/{kind}")

# Processors ---------------------------------------------------------------------------------
for length in [1, 4, 8]:
    for min_length in [0, length - 1, length, length + 1, length + 5]:
        for eos in [0, 7, [3, 11], [2, 2, 15]]:
            add([["MinLengthLogitsProcessor", {"min_length": max(min_length, 0), "eos_token_id": eos}]],
                inputs_fn(int(rng.integers(1, 5)), 16, "normal", length), name="min_length")

for length in [3, 6]:
    for skip in [0, 2, length]:
        for new in [0, 1, length - skip, length - skip + 1, 4]:
            add([["MinNewTokensLengthLogitsProcessor",
                  {"prompt_length_to_skip": skip, "min_new_tokens": max(new, 0), "eos_token_id": [1, 9]}]],
                inputs_fn(int(rng.integers(1, 5)), 16, "normal", length), name="min_new_tokens")

for penalty in [0.5, 0.9, 1.0, 1.2, 2.0]:
    for kind in KINDS:
        for length in [1, 6, 12]:
            add([["RepetitionPenaltyLogitsProcessor", {"penalty": penalty}]],
                inputs_fn(int(rng.integers(1, 5)), 16, kind, length, alphabet=6), name=f"repetition/{kind}")

for n in [1, 2, 3, 4]:
    for length in [0, 1, 2, 3, 5, 9, 14]:
        for alphabet in [2, 3, 16]:
            add([["NoRepeatNGramLogitsProcessor", {"ngram_size": n}]],
                inputs_fn(int(rng.integers(1, 5)), 16, "normal", length, alphabet), name="no_repeat_ngram")

for num_beams, groups in [(2, 2), (4, 2), (6, 3), (6, 2), (6, 6), (5, 2), (5, 3)]:
    for penalty in [0.5, 5.5]:
        for group_idx in range(groups):
            batch = int(rng.integers(1, 4))
            sub = num_beams // groups
            start = group_idx * sub
            group_size = min(start + sub, num_beams) - start

            def make(batch=batch, group_size=group_size, num_beams=num_beams):
                return {
                    "input_ids": random_ids(batch * group_size, 4, 12),
                    "scores": random_scores(rng, batch * group_size, 12, "logprobs"),
                    "current_tokens": rng.integers(0, 4, size=batch * num_beams).astype(np.int64),
                }

            add([["HammingDiversityLogitsProcessor",
                  {"diversity_penalty": penalty, "num_beams": num_beams, "num_beam_groups": groups}]],
                make, call_kwargs={"beam_group_idx": group_idx}, name="hamming")

# Processors then warpers, as sample() runs them
for kind in KINDS:
    spec = [["RepetitionPenaltyLogitsProcessor", {"penalty": 1.2}],
            ["NoRepeatNGramLogitsProcessor", {"ngram_size": 2}],
            ["MinLengthLogitsProcessor", {"min_length": 10, "eos_token_id": 0}],
            ["TemperatureLogitsWarper", {"temperature": 0.8}],
            ["TopKLogitsWarper", {"top_k": 8}],
            ["TopPLogitsWarper", {"top_p": 0.9}]]
    add(spec, inputs_fn(int(rng.integers(1, 5)), 16, kind, 6, alphabet=4), name=f"full_chain/{kind}")


meta = {
    "format_version": FORMAT_VERSION,
    "transformers": transformers.__version__,
    "torch": torch.__version__,
    "numpy": np.__version__,
    "python": sys.version.split()[0],
    "script": "tools/golden/make_processor_golden.py",
    "regenerate": COMMAND,
    "redrawn_ambiguous_inputs": redrawn,
    "skipped_combinations": skipped,
    "cases": cases,
}
OUT.parent.mkdir(parents=True, exist_ok=True)
np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
print(f"wrote {OUT.relative_to(ROOT)}: {len(cases)} cases, {OUT.stat().st_size / 1024:.0f} KiB, "
      f"{redrawn} ambiguous draws redrawn, {len(skipped)} combinations skipped")
