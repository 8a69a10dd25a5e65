"""Helpers shared by the tests of typical, epsilon, eta, min-p, forcing and the other later processors:
read tests/golden/processors_more.npz and
tests/golden/decode_processors_more.npz (tools/golden/make_processors_more_golden.py) and
tests/golden/min_p.npz (tools/golden/make_min_p_golden.py), rebuild the chains with refdecode's classes.

Not a test module (no ``test_`` prefix): the per-module test files import it.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from conftest import GOLDEN

import refdecode
from refdecode.processors.logits_process import LogitsProcessorList


def prefix_rule(k: int, vocab: int):
    """The golden cases' ``prefix_allowed_tokens_fn`` (the same function as in the golden script)."""
    def allowed(batch_id, sent):
        return sorted({(int(sent[-1]) * 7 + int(batch_id) * 3 + j * 11) % vocab for j in range(k)})
    return allowed


@cache
def load(name: str) -> tuple[dict, dict]:
    with np.load(GOLDEN / name) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    assert meta["format_version"] == 1, f"regenerate with: {meta['regenerate']}"
    return meta, arrays


def standalone_cases(file: str, classes: set[str]) -> list:
    """pytest params (case, arrays) of the chains whose classes all belong to ``classes`` and use one of them."""
    meta, data = load(file)
    params = []
    for i, case in enumerate(meta["cases"]):
        names = {c for c, _ in case["chain"]}
        if names & classes and names <= classes | {"TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper",
                                                   "RepetitionPenaltyLogitsProcessor",
                                                   "NoRepeatNGramLogitsProcessor", "MinLengthLogitsProcessor"}:
            arrays = {k.split("_", 1)[1]: v for k, v in data.items() if k.split("_", 1)[0] == str(i)}
            params.append(pytest.param(case, arrays, id=f"{i}-{case['name']}"))
    return params


def build_chain(case: dict, arrays: dict) -> LogitsProcessorList:
    """The case's chain with refdecode's classes of the same names and constructor kwargs."""
    chain = []
    for name, kwargs in case["chain"]:
        kw = dict(kwargs)
        if "encoder_input_ids" in kw:
            kw["encoder_input_ids"] = arrays["encoder_input_ids"]
        if "sequence_bias" in kw:
            kw["sequence_bias"] = {tuple(ids): bias for ids, bias in kw["sequence_bias"]}
        if "prefix_rule" in kw:
            kw["prefix_allowed_tokens_fn"] = prefix_rule(**kw.pop("prefix_rule"))
        if "exponential_decay_length_penalty" in kw:
            kw["exponential_decay_length_penalty"] = tuple(kw["exponential_decay_length_penalty"])
        chain.append(getattr(refdecode, name)(**kw))
    return LogitsProcessorList(chain)


def check_standalone(case: dict, arrays: dict) -> None:
    """-inf (and NaN) positions exactly as transformers, finite values within 1e-6."""
    scores = arrays["scores"]
    before = scores.copy()
    with np.errstate(invalid="ignore", over="ignore"):  # all -inf rows give NaN, as in torch
        got = build_chain(case, arrays)(arrays["input_ids"], scores)
    want = arrays["expected"]
    assert np.array_equal(scores, before, equal_nan=True), "processor changed its input in place"
    assert got.dtype == np.float32 and got.shape == want.shape
    for name, test in [("-inf", np.isneginf), ("+inf", np.isposinf), ("NaN", np.isnan)]:
        assert np.array_equal(test(got), test(want)), f"{name} positions differ: {case}\n got={got}\nwant={want}"
    finite = np.isfinite(want)
    diff = np.abs(got[finite].astype(np.float64) - want[finite])
    assert np.allclose(got[finite], want[finite], rtol=1e-6, atol=1e-6), \
        f"max abs diff {diff.max():.3g}; got {got[finite][:5]}, want {want[finite][:5]}; {case}"


def decode_kwargs(kwargs: dict) -> dict:
    """The JSON-stored generate kwargs -> refdecode's (tuples, the prefix function, arrays)."""
    kw = dict(kwargs)
    if "sequence_bias" in kw:
        kw["sequence_bias"] = {tuple(ids): bias for ids, bias in kw["sequence_bias"]}
    if "prefix_rule" in kw:
        kw["prefix_allowed_tokens_fn"] = prefix_rule(**kw.pop("prefix_rule"))
    for key in ("negative_prompt_ids", "negative_prompt_attention_mask"):
        if key in kw:
            kw[key] = np.array(kw[key], dtype=np.int64)
    if "exponential_decay_length_penalty" in kw:
        kw["exponential_decay_length_penalty"] = tuple(kw["exponential_decay_length_penalty"])
    return kw


def decode_case_ids(file: str, features: set[str]) -> list:
    meta, _ = load(file)
    return [pytest.param(c["id"], id=f"{c['id']}-{c['feature']}-{c['mode']}")
            for c in meta["cases"] if c["feature"] in features]


def run_decode_case(file: str, cid: str) -> None:
    """Replay one whole-generate case: sequences and beam indices exact, scores within 1e-4."""
    from decode_golden import CopiesComputedAlike, check, golden_model, replay

    meta, arrays = load(file)
    case = next(c for c in meta["cases"] if c["id"] == cid)
    model = CopiesComputedAlike(golden_model(case["model"]))
    draw = replay(arrays, cid, case["n_draws"]) if case["n_draws"] else None
    out = refdecode.generate(model, arrays[f"{cid}/input_ids"].astype(np.int64),
                             attention_mask=arrays[f"{cid}/attention_mask"].astype(np.int64), draw=draw,
                             **decode_kwargs(case["kwargs"]))
    if draw is not None:
        assert not draw.remaining, "fewer draws than transformers made"
    check(f"{cid} sequences", out.sequences, arrays[f"{cid}/sequences"], True)
    if f"{cid}/beam_indices" in arrays:
        check(f"{cid} beam_indices", out.beam_indices, arrays[f"{cid}/beam_indices"], True)
    if f"{cid}/sequences_scores" in arrays:
        check(f"{cid} sequences_scores", out.sequences_scores, arrays[f"{cid}/sequences_scores"], False)
    check_scores_relative(cid, out.scores, arrays)


def check_scores_relative(cid: str, scores: tuple, arrays: dict) -> None:
    """The digest of test_generate.check_scores with the tolerance 1e-4 of the step's scale
    (max |finite score| of the step, at least 1): exponential decay and guidance multiply the scores, so an
    ulp of difference in the log-probabilities grows with them (2^10 * 1 ulp of 2.0 = 2.4e-4)."""
    s = np.stack(scores)                                                   # (S, N, V)
    assert s.dtype == np.float32
    ids = arrays[f"{cid}/top_ids"].astype(np.int64)
    assert s.shape[:2] == ids.shape[:2], f"{cid}: {s.shape[:2]} steps/rows != golden {ids.shape[:2]}"
    want = arrays[f"{cid}/top_values"]                                     # (S, N, 8)
    got = np.take_along_axis(s, ids, axis=-1)
    assert np.array_equal(np.isneginf(got), np.isneginf(want)), f"{cid}: -inf positions of the top 8 differ"
    scale = np.maximum(1.0, np.nanmax(np.where(np.isfinite(want), np.abs(want), np.nan), axis=(1, 2)))  # (S,)
    finite = np.isfinite(want)
    err = np.where(finite, np.abs(got.astype(np.float64) - np.where(finite, want, 0.0)), 0.0).max(axis=(1, 2))
    assert (err <= 1e-4 * scale).all(), f"{cid}: scores differ by {err.max():.3g} (step scales {scale})"
    assert np.array_equal(np.isneginf(s).sum(axis=-1), arrays[f"{cid}/n_neginf"]), f"{cid}: number of -inf differs"
    if f"{cid}/scores" in arrays:
        full = arrays[f"{cid}/scores"]
        assert np.array_equal(np.isfinite(s), np.isfinite(full)), f"{cid}: finite positions differ"
        assert (np.where(np.isfinite(full), np.abs(s - np.where(np.isfinite(full), full, 0)), 0).max(axis=(1, 2))
                <= 1e-4 * scale).all(), f"{cid}: full scores differ"
