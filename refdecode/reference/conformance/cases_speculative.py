r"""Speculative and prompt-lookup decoding: the three rules any language can port, and whole decodes on GPT-2.

Contract: registers

- ``prompt_lookup_candidates``: ids (S,), ``num_output_tokens``, ``max_matching_ngram_size`` -> the drafted
  tokens (c,) (:func:`refdecode.decoding.candidate_generator.prompt_lookup`: the first earlier occurrence of the last
  n-gram, n from the maximum down to 1; no match: ``[0]``);
- ``speculative_greedy_acceptance``: the c drafted tokens, the model's token at each of the c + 1 positions,
  ``last_is_eos``, ``max_matches`` -> ``n`` accepted and the n + 1 tokens the round appends
  (:func:`refdecode.decoding.assisted_decoding.count_matches`);
- ``speculative_sampling``: the drafted tokens, the assistant's (c, V) and the model's (c + 1, V) warped
  scores, ``last_is_eos``, ``max_matches`` and the uniforms -> ``n`` and the tokens
  (:func:`refdecode.decoding.assisted_decoding.speculative_sampling`; the first c uniforms are the acceptance tests
  ``u_i <= p_i(x_i) / q_i(x_i)``, the next one the suite's multinomial draw);
- ``gpt2_assisted_greedy`` and ``gpt2_prompt_lookup_greedy``: ``generate(assistant_model=...)`` and
  ``generate(prompt_lookup_num_tokens=...)`` on the tiny checkpoints of ``tests/golden/models`` with the
  prompts and settings of tests/golden/decode_assisted.npz (made by transformers 4.38.2, cases of one
  ``generate`` call): sequences, scores and ``model_calls``, the number of forward passes of the main model
  (one per round: what the speed-up is made of).

Margins: acceptance, the distance of each deciding uniform to its ratio (and of the draw to its cumulative
boundary); greedy decodes, per step, the gap between the best and second-best score; ``None`` where there is
no decision to flip.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

import refdecode as rd
from refdecode.decoding.assisted_decoding import count_matches, speculative_sampling
from refdecode.decoding.candidate_generator import prompt_lookup
from refdecode.generation_rules import eos_list
from refdecode.model.stand_ins import CountingModel

from .cases_decode import (CONFIG, GOLDEN, GPT2_MODEL, MIN_MARGIN, UniformStream, compare_decode_case, decode,
                           full_config, model_for, quiet_generate, row_gap)
from .kinds import BOOL, F32, F64, I64, INT, Enum, ListOf, obj
from .registry import Case, CaseType, register

# ----------------------------------------------------------------------------------------------
# prompt_lookup_candidates


def _build_lookup() -> list[Case]:
    rng, cases = np.random.default_rng(411), []
    for i in range(60):
        vocab, S = int(rng.integers(2, 9)), int(rng.integers(1, 25))
        ids = rng.integers(0, vocab, S).astype(np.int64)
        if i % 5 == 0 and S > 3:  # the last n-gram occurs several times: the first occurrence wins
            ids[-2:] = ids[:2]
        note = f"S={S}, vocab {vocab}" + (", the sequence starts with its last bigram" if i % 5 == 0 and S > 3 else "")
        cases.append(Case(note, {"ids": ids, "num_output_tokens": int(rng.integers(1, 12)),
                                 "max_matching_ngram_size": int(rng.integers(1, 4))}))
    cases.append(Case("no earlier occurrence: the dummy candidate [0]",
                      {"ids": np.array([3, 4, 5], dtype=np.int64), "num_output_tokens": 5, "max_matching_ngram_size": 2}))
    cases.append(Case("one token: nothing to match", {"ids": np.array([7], dtype=np.int64), "num_output_tokens": 3,
                                                      "max_matching_ngram_size": 2}))
    return cases


register(CaseType(
    name="prompt_lookup_candidates", groups=("speculative",),
    summary="prompt lookup's drafts (PromptLookupCandidateGenerator, transformers 4.38.2): for n from "
            "min(max_matching_ngram_size, S - 1) down to 1, scan the windows of ids equal to its last n tokens from "
            "the left; the first window with a token after it gives up to num_output_tokens of those tokens; no "
            "match for any n: [0]",
    inputs=obj(ids=I64(1), num_output_tokens=INT, max_matching_ngram_size=INT), outputs=obj(candidates=I64(1)),
    build=_build_lookup,
    run=lambda inp: {"candidates": prompt_lookup(inp["ids"], inp["num_output_tokens"],
                                                 inp["max_matching_ngram_size"])},
    tie_rule="several earlier occurrences: the first (leftmost) one with a token after it"))


# ----------------------------------------------------------------------------------------------
# speculative_greedy_acceptance


def _run_greedy_acceptance(inp: dict) -> dict:
    n = count_matches(inp["candidates"], inp["selected"], inp["last_is_eos"], inp["max_matches"])
    return {"n": n, "tokens": inp["selected"][: n + 1].astype(np.int64)}


def _build_greedy_acceptance() -> list[Case]:
    rng, cases = np.random.default_rng(412), []
    for i in range(50):
        c, vocab = int(rng.integers(1, 11)), int(rng.integers(2, 20))
        selected = rng.integers(0, vocab, c + 1).astype(np.int64)
        candidates = selected[:c].copy()
        agree = int(rng.integers(0, c + 1))  # the first `agree` candidates are the model's tokens
        if agree < c:
            candidates[agree] = (selected[agree] + 1 + int(rng.integers(0, vocab - 1))) % vocab
            candidates[agree + 1:] = rng.integers(0, vocab, c - agree - 1)
        inp = {"candidates": candidates, "selected": selected, "last_is_eos": bool(i % 4 == 3),
               "max_matches": int(rng.integers(0, c + 3))}
        cases.append(Case(f"c={c}, {agree} leading candidates agree, last_is_eos={inp['last_is_eos']}, "
                          f"max_matches={inp['max_matches']}", inp))
    return cases


register(CaseType(
    name="speculative_greedy_acceptance", groups=("speculative",),
    summary="assisted / prompt-lookup greedy decoding's acceptance (transformers 4.38.2): n = the number of leading "
            "candidates equal to the model's token at their position; if all c agree and last_is_eos, n = c - 1; "
            "n = min(n, max_matches) (max_length - S - 1); the round appends selected[:n + 1]",
    inputs=obj(candidates=I64(1), selected=I64(1), last_is_eos=BOOL, max_matches=INT),
    outputs=obj(n=INT, tokens=I64(1)), build=_build_greedy_acceptance, run=_run_greedy_acceptance))


# ----------------------------------------------------------------------------------------------
# speculative_sampling


def _sampling(inp: dict) -> tuple[np.ndarray, int, list]:
    """refdecode's answer and the margins of the decisions it took."""
    stream, margins = UniformStream(inp["uniforms"]), []

    def uniform(count: int, rng: Any) -> np.ndarray:
        u = rng.random(count)
        q = rd.softmax(inp["candidate_scores"])[np.arange(count), inp["candidates"]]
        p = rd.softmax(inp["new_scores"])[np.arange(count), inp["candidates"]]
        ratio = (p / q).astype(np.float64)
        deciding = int(np.argmin(u <= ratio)) + 1 if (u > ratio).any() else count  # up to the first rejection
        margins.extend(float(abs(a - b)) / max(1.0, float(b)) for a, b in zip(u[:deciding], ratio[:deciding]))
        return u

    def draw(probs: np.ndarray, num_samples: int, replacement: bool, rng: Any) -> np.ndarray:
        u = float(stream.uniforms[stream.used])
        cdf = np.cumsum(probs[0].astype(np.float64))
        margins.append(float(np.abs(cdf - u * cdf[-1]).min() / cdf[-1]))
        return rd.multinomial(probs, num_samples, replacement, rng)

    tokens, n = speculative_sampling(inp["candidates"], inp["candidate_scores"], inp["new_scores"],
                                     inp["last_is_eos"], inp["max_matches"], stream, draw, uniform)
    return tokens, n, margins


def _build_sampling() -> list[Case]:
    rng, cases = np.random.default_rng(413), []
    while len(cases) < 60:
        c, vocab = int(rng.integers(1, 6)), int(rng.integers(3, 12))
        q_scores = (rng.standard_normal((c, vocab)) * 1.5).astype(np.float32)
        p_scores = (q_scores.mean() + rng.standard_normal((c + 1, vocab)) * 1.5).astype(np.float32)
        if len(cases) % 3 == 1:  # top-k-like warping: some tokens at -inf for the model
            p_scores[rng.random((c + 1, vocab)) < 0.3] = -np.inf
            p_scores[:, 0] = np.maximum(p_scores[:, 0], np.float32(0.0))  # never a row of -inf only
        q = rd.softmax(q_scores)
        candidates = np.array([rng.choice(vocab, p=row / row.sum()) for row in q.astype(np.float64)], dtype=np.int64)
        inp = {"candidates": candidates, "candidate_scores": q_scores, "new_scores": p_scores,
               "last_is_eos": bool(len(cases) % 5 == 4), "max_matches": int(rng.integers(0, c + 2)),
               "uniforms": rng.random(c + 1)}
        _, n, margins = _sampling(inp)
        if min(margins) <= MIN_MARGIN:
            continue
        cases.append(Case(f"c={c}, V={vocab}, {n} accepted, last_is_eos={inp['last_is_eos']}, "
                          f"max_matches={inp['max_matches']}", inp))
    return cases


def _run_sampling(inp: dict) -> dict:
    tokens, n, _ = _sampling(inp)
    return {"n": n, "tokens": tokens.astype(np.int64)}


register(CaseType(
    name="speculative_sampling", groups=("speculative", "sampling"),
    summary="assisted sampling's acceptance (_speculative_sampling, transformers 4.38.2; Leviathan et al. 2023): "
            "q = softmax(candidate_scores) (c, V), p = softmax(new_scores) (c + 1, V), float32; candidate i accepted "
            "while uniforms[i] <= p_i(x_i) / q_i(x_i), n = accepted up to the first rejection; all c accepted and "
            "last_is_eos: tokens = candidates, n = c - 1, no draw; else n = min(n, max_matches) and one token is "
            "drawn with uniforms[c] (the suite's draw: the first index whose cumulative probability exceeds u * "
            "total) from max(p_n - q_n, 0) renormalised if n < min(c, max_matches), else from p_n; tokens = "
            "candidates[:n] + [drawn]",
    inputs=obj(candidates=I64(1), candidate_scores=F32(2), new_scores=F32(2), last_is_eos=BOOL, max_matches=INT,
               uniforms=F64(1)),
    outputs=obj(n=INT, tokens=I64(1)), build=_build_sampling, run=_run_sampling,
    margins=lambda inp, out: _sampling(inp)[2]))


# ----------------------------------------------------------------------------------------------
# gpt2_assisted_greedy, gpt2_prompt_lookup_greedy


def _run_assisted(inp: dict) -> tuple[dict, list]:
    config = dict(inp["config"])
    model = CountingModel(model_for(inp["model"], config))
    extra: dict[str, Any] = {}
    if "assistant" in inp:  # a fresh assistant: the schedule writes num_assistant_tokens into its config
        assistant = rd.GPT2.from_pretrained(str(inp["assistant"]["path"]))
        assistant.generation_config.num_assistant_tokens = inp["num_assistant_tokens"]
        assistant.generation_config.num_assistant_tokens_schedule = inp["num_assistant_tokens_schedule"]
        extra["assistant_model"] = assistant
    else:
        extra["prompt_lookup_num_tokens"] = inp["prompt_lookup_num_tokens"]
    out = quiet_generate(model, inp, config, **extra)
    output = {"sequences": out.sequences, "scores": [np.asarray(s) for s in out.scores], "model_calls": model.calls}
    generated, eos = out.sequences[:, inp["input_ids"].shape[1]:], config["eos_token_id"]
    margins = [[None if np.isin(generated[0, :t], eos).any() else row_gap(np.sort(s[0])[::-1][:2])]
               for t, s in enumerate(output["scores"])]
    return output, margins


def _build_assisted(mode: str) -> list[Case]:
    if not (GOLDEN / "decode_assisted.npz").is_file():
        raise ValueError(f"the GPT-2 cases are built from {GOLDEN / 'decode_assisted.npz'}, which only a checkout of "
                         "the refdecode repository has; export from a clone, or leave them out with --only")
    with np.load(GOLDEN / "decode_assisted.npz") as z:
        meta, arrays = json.loads(str(z["meta"])), {k: z[k] for k in z.files if k.endswith(("input_ids", "_mask"))}
    root, cases = GOLDEN.parent.parent, []  # the golden file names checkpoints relative to the repository
    for case in meta["cases"]:
        if case["mode"] != mode or case["calls"] != 1:
            continue
        ids = arrays[f"{case['id']}/input_ids"].astype(np.int64)
        mask = arrays[f"{case['id']}/attention_mask"].astype(np.int64) if case["attention_mask"] else np.ones_like(ids)
        kwargs = {k: v for k, v in case["kwargs"].items() if k in dict(CONFIG.fields) and k != "eos_token_id"}
        if "max_length" in case["kwargs"]:
            kwargs["max_new_tokens"] = case["kwargs"]["max_length"] - ids.shape[1]
        eos = case["kwargs"].get("eos_token_id")
        if eos is None:
            eos = json.loads((root / case["model"] / "config.json").read_text())["eos_token_id"]
        inp: dict[str, Any] = {"model": {"kind": "gpt2", "path": str(root / case["model"])}, "input_ids": ids,
                               "attention_mask": mask,
                               "config": full_config(eos_token_id=eos_list(eos, no_token=True), **kwargs)}
        if case["assistant"] is not None:
            inp.update(assistant={"kind": "gpt2", "path": str(root / case["assistant"])},
                       num_assistant_tokens=case["num_assistant_tokens"],
                       num_assistant_tokens_schedule=case["schedule"])
        else:
            inp["prompt_lookup_num_tokens"] = case["kwargs"]["prompt_lookup_num_tokens"]
        cases.append(Case(f"transformers golden case decode_assisted.npz:{case['id']} on {case['model']}", inp))
    return cases


_DECODE_OUTPUT = obj(may_omit=("scores",), sequences=I64(2), scores=ListOf(F32(2)), model_calls=INT)
_ROUND = ("each round: the drafts, one forward pass of the main model over them (the KV cache then cropped to the "
          "accepted tokens), the processors on each of the c + 1 positions' logits, argmax, "
          "speculative_greedy_acceptance with max_matches = max_length - S - 1; only the round's last token is "
          "tested for eos; batch size 1")

register(CaseType(
    name="gpt2_assisted_greedy", groups=("decode", "gpt2", "speculative"),
    summary="assisted greedy decoding (assistant_model=): the assistant drafts num_assistant_tokens tokens greedily "
            "with the call's processors (its own cache cropped to S - 2 each round); schedule 'heuristic' / "
            "'heuristic_transient': +2 after a round that accepted every draft, -1 (not below 1) otherwise; " + _ROUND,
    inputs=obj(model=GPT2_MODEL, assistant=GPT2_MODEL, input_ids=I64(2), attention_mask=I64(2), config=CONFIG,
               num_assistant_tokens=INT, num_assistant_tokens_schedule=Enum(("heuristic", "heuristic_transient",
                                                                              "constant"))),
    outputs=_DECODE_OUTPUT, build=lambda: _build_assisted("assisted_greedy"), compare=compare_decode_case,
    run=lambda inp: decode(inp, _run_assisted)[0], margins=lambda inp, out: decode(inp, _run_assisted)[1],
    tie_rule="greedy: the lowest token id among equal maxima"))

register(CaseType(
    name="gpt2_prompt_lookup_greedy", groups=("decode", "gpt2", "speculative"),
    summary="prompt-lookup greedy decoding (prompt_lookup_num_tokens=): the drafts of prompt_lookup_candidates "
            "(max_matching_ngram_size 2) over the sequence so far; " + _ROUND,
    inputs=obj(model=GPT2_MODEL, input_ids=I64(2), attention_mask=I64(2), config=CONFIG,
               prompt_lookup_num_tokens=INT),
    outputs=_DECODE_OUTPUT, build=lambda: _build_assisted("lookup_greedy"), compare=compare_decode_case,
    run=lambda inp: decode(inp, _run_assisted)[0], margins=lambda inp, out: decode(inp, _run_assisted)[1],
    tie_rule="greedy: the lowest token id among equal maxima"))
