r"""Unit cases for the processors and warpers that ``cases_processors`` leaves out: (ids, scores, parameters) -> scores.

Contract: registers one case type per rule: ``typical``, ``epsilon``, ``eta``, ``min_p`` (warpers),
``no_bad_words``, ``sequence_bias``, ``prefix_constrained``, ``forced_bos``, ``forced_eos``,
``suppress_tokens``, ``suppress_tokens_at_begin``, ``exponential_decay_length_penalty``,
``inf_nan_remove``, ``logit_normalization``, ``encoder_repetition_penalty``,
``encoder_no_repeat_ngram``, ``forced_decoder_ids`` (processors), and the serving API's ``frequency_penalty``,
``presence_penalty`` and ``logit_bias``. Expected values come from
refdecode's public classes, which tests/golden/processors_more.npz, force_tokens.npz and min_p.npz
check against transformers 4.38.2 (min-p: 4.41.0); the serving penalties, in no version of transformers, are
checked by hand-worked rows (tests/processors/test_serving_penalties.py). What is not JSON is written as JSON: ``sequence_bias`` as ``[{"ids": [...], "bias": b}]``,
``prefix_allowed_tokens_fn`` as the table ``allowed[row]`` of allowed ids per row (the callback
returns it). Classifier-free guidance needs a second model run and is covered by the decode cases.
"""

from __future__ import annotations

import functools

import numpy as np

import refdecode as rd

from .cases_processors import random_ids, random_scores
from .kinds import F32, FLOAT, I64, INT, ListOf, obj
from .registry import Case, CaseType, register

GROUPS_W, GROUPS_P = ("warpers", "processors_and_warpers"), ("processors", "processors_and_warpers")


def _kinds(i: int) -> dict:
    """Edge mixes by case index: some -inf, integer ties, a flat (high entropy) row."""
    return {"neg_inf": 0.3 if i % 4 == 0 else 0.0, "scale": 0.3 if i % 5 == 1 else 3.0}


def _rows(rng, i, batch, vocab):
    s = random_scores(rng, batch, vocab, **_kinds(i))
    return np.round(s).astype(np.float32) if i % 6 == 2 else s  # integer scores: ties


# ---- warpers


def _build_warper(seed: int, param: str, values: list[float]):
    def build() -> list[Case]:
        rng, cases = np.random.default_rng(seed), []
        for i in range(48):
            vocab = int(rng.integers(2, 17))  # <= 16: torch's CPU sort is stable there (see docs/top-p.md)
            cases.append(Case("random rows" + (", some -inf" if i % 4 == 0 else "") + (", ties" if i % 6 == 2 else ""),
                              {"scores": _rows(rng, i, int(rng.integers(1, 4)), vocab),
                               param: float(rng.choice(values)), "min_tokens_to_keep": int(rng.choice([1, 1, 2, 4]))}))
        return cases
    return build


for _name, _cls, _param, _values, _seed, _summary, _tie in [
    ("typical", rd.TypicalLogitsWarper, "mass", [0.05, 0.2, 0.5, 0.9, 0.99], 131,
     "TypicalLogitsWarper: sort |-log p - H| ascending, keep distances <= the one where the cumulative "
     "probability first reaches mass, plus the first min_tokens_to_keep.",
     "stable ascending sort of the distances (equal distances keep token-id order)"),
    ("epsilon", rd.EpsilonLogitsWarper, "epsilon", [1e-4, 3e-3, 0.02, 0.1, 0.3], 132,
     "EpsilonLogitsWarper: remove p < epsilon unless the score is >= the min_tokens_to_keep-th largest.",
     "every token tied with the min_tokens_to_keep-th largest score is kept"),
    ("eta", rd.EtaLogitsWarper, "epsilon", [1e-4, 3e-3, 0.02, 0.1, 0.3], 133,
     "EtaLogitsWarper: remove p < min(epsilon, sqrt(epsilon) exp(-H)) unless the score is >= the "
     "min_tokens_to_keep-th largest.",
     "every token tied with the min_tokens_to_keep-th largest score is kept"),
    ("min_p", rd.MinPLogitsWarper, "min_p", [0.0, 0.05, 0.1, 0.3, 0.7, 1.0], 134,
     "MinPLogitsWarper (transformers 4.41): remove p < min_p * max p, except the first min_tokens_to_keep in "
     "descending score order.",
     "stable descending sort (equal scores: lower id first)"),
]:
    register(CaseType(
        name=_name, groups=GROUPS_W, summary=_summary, tie_rule=_tie,
        inputs=obj(scores=F32(2), **{_param: FLOAT}, min_tokens_to_keep=INT), outputs=obj(scores=F32(2)),
        build=_build_warper(_seed, _param, _values),
        run=lambda inp, _cls=_cls, _param=_param: {"scores": _cls(inp[_param], min_tokens_to_keep=inp[
            "min_tokens_to_keep"])(None, inp["scores"])}))


# ---- token constraints


def _build_bad_words() -> list[Case]:
    rng, cases = np.random.default_rng(141), []
    for i in range(40):
        vocab, alphabet = 8, int(rng.choice([3, 5]))
        words = [[int(t) for t in rng.integers(0, alphabet, int(rng.integers(1, 4)))] for _ in range(int(rng.integers(1, 4)))]
        eos = [int(rng.integers(0, vocab))]
        words += [[eos[0]]] if i % 3 == 0 else []  # [eos] is dropped
        words += [[1, 2]] if all(w == [eos[0]] for w in words) else []
        batch = int(rng.integers(1, 4))
        cases.append(Case("single and multi-token words" + (", [eos] dropped" if i % 3 == 0 else ""),
                          {"input_ids": random_ids(rng, batch, int(rng.integers(1, 6)), alphabet),
                           "scores": random_scores(rng, batch, vocab), "bad_words_ids": words, "eos_token_id": eos}))
    return cases


register(CaseType(
    name="no_bad_words", groups=GROUPS_P,
    summary="NoBadWordsLogitsProcessor: -inf for the last token of every bad word whose other tokens end the row "
            "(one-token words always; a word longer than the row is skipped; [eos] words dropped).",
    inputs=obj(input_ids=I64(2), scores=F32(2), bad_words_ids=ListOf(ListOf(INT)), eos_token_id=ListOf(INT)),
    outputs=obj(scores=F32(2)), build=_build_bad_words,
    run=lambda inp: {"scores": rd.NoBadWordsLogitsProcessor([list(map(int, w)) for w in inp["bad_words_ids"]],
                                                            [int(e) for e in inp["eos_token_id"]])(
        inp["input_ids"], inp["scores"])}))


def _build_sequence_bias() -> list[Case]:
    rng, cases = np.random.default_rng(142), []
    for _ in range(40):
        vocab, alphabet, seen, biases = 8, int(rng.choice([3, 5])), set(), []
        for _ in range(int(rng.integers(1, 5))):
            ids = tuple(int(t) for t in rng.integers(0, alphabet, int(rng.integers(1, 4))))
            if ids not in seen:
                seen.add(ids)
                biases.append({"ids": list(ids), "bias": float(rng.choice([-3.5, -1.0, 0.5, 2.25, -np.inf]))})
        batch = int(rng.integers(1, 4))
        cases.append(Case("biases on one- and multi-token sequences",
                          {"input_ids": random_ids(rng, batch, int(rng.integers(1, 6)), alphabet),
                           "scores": random_scores(rng, batch, vocab), "sequence_bias": biases}))
    return cases


register(CaseType(
    name="sequence_bias", groups=GROUPS_P,
    summary="SequenceBiasLogitsProcessor: add bias to token ids[-1] in rows ending with ids[:-1] (float32 bias "
            "array built in list order, then added once).",
    inputs=obj(input_ids=I64(2), scores=F32(2), sequence_bias=ListOf(obj(ids=ListOf(INT), bias=FLOAT))),
    outputs=obj(scores=F32(2)), build=_build_sequence_bias,
    run=lambda inp: {"scores": rd.SequenceBiasLogitsProcessor(
        {tuple(int(t) for t in b["ids"]): float(b["bias"]) for b in inp["sequence_bias"]})(
        inp["input_ids"], inp["scores"])}))


def _build_prefix_constrained() -> list[Case]:
    rng, cases = np.random.default_rng(143), []
    for _ in range(30):
        beams, vocab = int(rng.integers(1, 4)), 10
        batch = beams * int(rng.integers(1, 3))
        allowed = [sorted(int(t) for t in rng.choice(vocab, int(rng.integers(1, 5)), replace=False))
                   for _ in range(batch)]
        cases.append(Case("allowed ids per row", {"input_ids": random_ids(rng, batch, 3, vocab),
                                                  "scores": random_scores(rng, batch, vocab), "num_beams": beams,
                                                  "allowed": allowed}))
    return cases


def _run_prefix(inp: dict) -> dict:
    rows = iter(inp["allowed"])  # the callback is called once per row, in row order
    proc = rd.PrefixConstrainedLogitsProcessor(lambda batch_id, ids: [int(t) for t in next(rows)], inp["num_beams"])
    return {"scores": proc(inp["input_ids"], inp["scores"])}


register(CaseType(
    name="prefix_constrained", groups=GROUPS_P,
    summary="PrefixConstrainedLogitsProcessor: -inf everywhere except the allowed ids of each row (the callback's "
            "answer, given here as a table; batch_id = row // num_beams).",
    inputs=obj(input_ids=I64(2), scores=F32(2), num_beams=INT, allowed=ListOf(ListOf(INT))),
    outputs=obj(scores=F32(2)), build=_build_prefix_constrained, run=_run_prefix))


def _build_forced(name: str) -> list[Case]:
    rng, cases = np.random.default_rng(144 if name == "bos" else 145), []
    for _ in range(30):
        vocab, length = int(rng.integers(2, 12)), int(rng.integers(1, 5))
        inp = {"input_ids": random_ids(rng, int(rng.integers(1, 4)), length, vocab)}
        inp["scores"] = random_scores(rng, inp["input_ids"].shape[0], vocab, neg_inf=0.2)
        if name == "bos":
            inp["bos_token_id"] = int(rng.integers(0, vocab))
        else:
            inp["max_length"] = length + int(rng.integers(0, 3))
            inp["eos_token_id"] = [int(e) for e in rng.choice(vocab, int(rng.integers(1, 3)), replace=False)]
        cases.append(Case("at and off the forced step", inp))
    return cases


register(CaseType(
    name="forced_bos", groups=GROUPS_P,
    summary="ForcedBOSTokenLogitsProcessor: when the row holds exactly one token, bos gets 0 and every other "
            "token -inf; otherwise unchanged.",
    inputs=obj(input_ids=I64(2), scores=F32(2), bos_token_id=INT), outputs=obj(scores=F32(2)),
    build=lambda: _build_forced("bos"),
    run=lambda inp: {"scores": rd.ForcedBOSTokenLogitsProcessor(inp["bos_token_id"])(inp["input_ids"],
                                                                                     inp["scores"])}))
register(CaseType(
    name="forced_eos", groups=GROUPS_P,
    summary="ForcedEOSTokenLogitsProcessor: when T == max_length - 1, every eos id gets 0 and every other token "
            "-inf; otherwise unchanged.",
    inputs=obj(input_ids=I64(2), scores=F32(2), max_length=INT, eos_token_id=ListOf(INT)),
    outputs=obj(scores=F32(2)), build=lambda: _build_forced("eos"),
    run=lambda inp: {"scores": rd.ForcedEOSTokenLogitsProcessor(inp["max_length"], list(inp["eos_token_id"]))(
        inp["input_ids"], inp["scores"])}))


def _build_suppress(at_begin: bool) -> list[Case]:
    rng, cases = np.random.default_rng(146 + at_begin), []
    for _ in range(20):
        vocab, length = 10, int(rng.integers(2, 6))
        inp = {"input_ids": random_ids(rng, 2, length, vocab), "scores": random_scores(rng, 2, vocab),
               "suppress_tokens": [int(t) for t in rng.choice(vocab, int(rng.integers(0, 5)), replace=False)]}
        if at_begin:
            inp["begin_index"] = length + int(rng.integers(-1, 2))
        cases.append(Case("suppressed ids" + (" at and off the begin index" if at_begin else ""), inp))
    return cases


register(CaseType(
    name="suppress_tokens", groups=GROUPS_P, summary="SuppressTokensLogitsProcessor: -inf for the listed ids.",
    inputs=obj(input_ids=I64(2), scores=F32(2), suppress_tokens=ListOf(INT)), outputs=obj(scores=F32(2)),
    build=lambda: _build_suppress(False),
    run=lambda inp: {"scores": rd.SuppressTokensLogitsProcessor(list(inp["suppress_tokens"]))(inp["input_ids"],
                                                                                              inp["scores"])}))
register(CaseType(
    name="suppress_tokens_at_begin", groups=GROUPS_P,
    summary="SuppressTokensAtBeginLogitsProcessor: -inf for the listed ids when T == begin_index.",
    inputs=obj(input_ids=I64(2), scores=F32(2), suppress_tokens=ListOf(INT), begin_index=INT),
    outputs=obj(scores=F32(2)), build=lambda: _build_suppress(True),
    run=lambda inp: {"scores": rd.SuppressTokensAtBeginLogitsProcessor(list(inp["suppress_tokens"]),
                                                                       inp["begin_index"])(inp["input_ids"],
                                                                                           inp["scores"])}))


# ---- length penalty, clean-up, prompt penalties


def _build_exponential_decay() -> list[Case]:
    rng, cases = np.random.default_rng(148), []
    for _ in range(30):
        prompt, length = int(rng.integers(1, 4)), int(rng.integers(1, 9))
        cases.append(Case("before, at and after the start", {
            "input_ids": random_ids(rng, 2, length, 10), "scores": random_scores(rng, 2, 10),
            "start_index": int(rng.integers(0, 4)), "decay_factor": float(rng.choice([0.8, 1.01, 1.5, 3.0])),
            "eos_token_id": [int(e) for e in rng.choice(10, int(rng.integers(1, 3)), replace=False)],
            "input_ids_seq_length": prompt}))
    return cases


register(CaseType(
    name="exponential_decay_length_penalty", groups=GROUPS_P,
    summary="ExponentialDecayLengthPenalty: for T > start_index + input_ids_seq_length, each eos score s becomes "
            "s + |s| * float32(decay_factor ** (T - start) - 1).",
    inputs=obj(input_ids=I64(2), scores=F32(2), start_index=INT, decay_factor=FLOAT, eos_token_id=ListOf(INT),
               input_ids_seq_length=INT), outputs=obj(scores=F32(2)), build=_build_exponential_decay,
    run=lambda inp: {"scores": rd.ExponentialDecayLengthPenalty(
        (inp["start_index"], inp["decay_factor"]), list(inp["eos_token_id"]), inp["input_ids_seq_length"])(
        inp["input_ids"], inp["scores"])}))


def _build_cleanup(nonfinite: bool) -> list[Case]:
    rng, cases = np.random.default_rng(149 + nonfinite), []
    for _ in range(20):
        s = random_scores(rng, 2, 8, neg_inf=0.3)
        if nonfinite:
            s[rng.random(s.shape) < 0.2] = np.nan
            s[rng.random(s.shape) < 0.1] = np.inf
        cases.append(Case("rows with -inf" + (", +inf and NaN" if nonfinite else ""), {"scores": s}))
    return cases


def _build_guidance() -> list[Case]:
    rng, cases = np.random.default_rng(171), []
    for i in range(40):
        batch, vocab = int(rng.integers(1, 4)), int(rng.integers(2, 12))
        scale = float(rng.choice([1.0, 0.5, 1.5, 3.0, 7.5, -1.0]))
        cases.append(Case(f"guidance_scale={scale}" + (", some -inf" if i % 4 == 0 else ""),
                          {"scores": _rows(rng, i, batch, vocab),
                           "unconditional_logits": random_scores(rng, batch, vocab), "guidance_scale": scale}))
    return cases


register(CaseType(
    name="classifier_free_guidance", groups=GROUPS_P,
    summary="UnbatchedClassifierFreeGuidanceLogitsProcessor's mix (guidance_scale): out = g * (log_softmax(scores) - "
            "u) + u with u = log_softmax(unconditional_logits), the unconditional branch's last logits (the model "
            "run on the negative prompt, or on each row's last prompt token, plus the tokens generated); g = 1: "
            "log_softmax(scores). float32 throughout.",
    inputs=obj(scores=F32(2), unconditional_logits=F32(2), guidance_scale=FLOAT), outputs=obj(scores=F32(2)),
    build=_build_guidance,
    run=lambda inp: {"scores": rd.guidance_mix(inp["scores"], inp["unconditional_logits"], inp["guidance_scale"])}))


register(CaseType(
    name="inf_nan_remove", groups=GROUPS_P,
    summary="InfNanRemoveLogitsProcessor: NaN -> 0, +inf -> float32 max, -inf -> float32 min.",
    inputs=obj(scores=F32(2)), outputs=obj(scores=F32(2)), build=lambda: _build_cleanup(True),
    run=lambda inp: {"scores": rd.InfNanRemoveLogitsProcessor()(None, inp["scores"])}))
register(CaseType(
    name="logit_normalization", groups=GROUPS_P + ("warpers",),
    summary="LogitNormalization (renormalize_logits): log_softmax of each row.",
    inputs=obj(scores=F32(2)), outputs=obj(scores=F32(2)), build=lambda: _build_cleanup(False),
    run=lambda inp: {"scores": rd.LogitNormalization()(None, inp["scores"])}))


def _build_encoder(kind: str) -> list[Case]:
    rng, cases = np.random.default_rng(151 + (kind == "ngram")), []
    for _ in range(30):
        prompts, per_prompt = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        inp = {"input_ids": random_ids(rng, prompts * per_prompt, int(rng.integers(1, 7)), 4),
               "scores": random_scores(rng, prompts * per_prompt, 10), "encoder_input_ids": random_ids(rng, prompts, 5, 4)}
        if kind == "ngram":
            inp["ngram_size"] = int(rng.integers(1, 4))
        else:
            inp["penalty"] = float(rng.choice([0.5, 1.3, 2.0]))
        cases.append(Case(f"{per_prompt} row(s) per prompt", inp))
    return cases


for name, kind, param, processor, rule in [
        ("encoder_repetition_penalty", "penalty", FLOAT, rd.EncoderRepetitionPenaltyLogitsProcessor,
         "EncoderRepetitionPenaltyLogitsProcessor: with p' = 1/penalty, rows r < B (B prompt rows) get, on the "
         "tokens of prompt r, s < 0 -> s * p', else s / p'; later rows unchanged (4.38.2's gather/scatter)."),
        ("encoder_no_repeat_ngram", "ngram_size", INT, rd.EncoderNoRepeatNGramLogitsProcessor,
         "EncoderNoRepeatNGramLogitsProcessor: -inf for every token that completes an n-gram of the row's "
         "prompt (row r uses prompt r // (N / B)).")]:
    register(CaseType(
        name=name, groups=GROUPS_P, summary=rule,
        inputs=obj(input_ids=I64(2), scores=F32(2), encoder_input_ids=I64(2), **{kind: param}),
        outputs=obj(scores=F32(2)), build=functools.partial(_build_encoder, "penalty" if kind == "penalty" else "ngram"),
        run=lambda inp, kind=kind, processor=processor: {"scores": processor(inp[kind], inp["encoder_input_ids"])(
            inp["input_ids"], inp["scores"])}))


# ---- forced_decoder_ids


def _build_force_tokens() -> list[Case]:
    rng, cases = np.random.default_rng(151), []
    for i in range(30):
        vocab, length, batch = int(rng.integers(3, 12)), int(rng.integers(1, 7)), int(rng.integers(1, 4))
        indices = {int(x) for x in rng.integers(1, 9, int(rng.integers(1, 4)))} | ({length} if i % 2 else set())
        pairs = [[index, int(rng.integers(0, vocab))] for index in sorted(indices)]
        at = "a pair at T (forced)" if length in indices else "no pair at T (unchanged)"
        cases.append(Case(f"{at}, {len(pairs)} pair(s)", {
            "input_ids": random_ids(rng, batch, length, vocab), "scores": _rows(rng, i, batch, vocab),
            "forced_decoder_ids": pairs}))
    return cases


register(CaseType(
    name="forced_decoder_ids", groups=GROUPS_P,
    summary="ForceTokensLogitsProcessor (forced_decoder_ids = [[index, token], ...]): when the row length T "
            "(prompt included) equals an index, that token gets 0 and every other token -inf (even a -inf score "
            "becomes 0); otherwise unchanged.",
    inputs=obj(input_ids=I64(2), scores=F32(2), forced_decoder_ids=ListOf(ListOf(INT))), outputs=obj(scores=F32(2)),
    build=_build_force_tokens,
    run=lambda inp: {"scores": rd.ForceTokensLogitsProcessor([[int(i), int(t)] for i, t in inp["forced_decoder_ids"]])(
        inp["input_ids"], inp["scores"])}))


# ---- the serving API's penalties (in no version of transformers: OpenAI's formula)


def _build_serving_penalty(seed: int, param: str) -> list[Case]:
    """Rows whose prompt holds tokens the generated part does not (not counted), repeats (counted), -inf scores,
    a prompt as long as the row (nothing generated yet), and negative penalties (repetition rewarded)."""
    rng, cases = np.random.default_rng(seed), []
    for i in range(36):
        vocab, batch, length = int(rng.integers(2, 10)), int(rng.integers(1, 4)), int(rng.integers(1, 8))
        prompt_length = length if i % 6 == 0 else int(rng.integers(0, length))
        cases.append(Case(("nothing generated yet" if prompt_length == length else f"prompt of {prompt_length}")
                          + (", some -inf" if i % 4 == 1 else ""), {
            "input_ids": random_ids(rng, batch, length, int(rng.choice([2, vocab]))),
            "scores": random_scores(rng, batch, vocab, neg_inf=0.3 if i % 4 == 1 else 0.0),
            param: float(rng.choice([-2.0, -0.5, 0.0, 0.25, 1.0, 1.7, 2.0])), "prompt_length": prompt_length}))
    return cases


for _name, _cls, _seed, _summary in [
        ("frequency_penalty", rd.FrequencyPenaltyLogitsProcessor, 161,
         "frequency_penalty (OpenAI's formula; in no transformers): s - float32(count) * float32(frequency_penalty), "
         "count = occurrences of the token in input_ids[:, prompt_length:] (the prompt is not counted), whatever "
         "the sign of s."),
        ("presence_penalty", rd.PresencePenaltyLogitsProcessor, 162,
         "presence_penalty (OpenAI's formula; in no transformers): s - float32(presence_penalty) for every token "
         "occurring in input_ids[:, prompt_length:], once however often, whatever the sign of s.")]:
    register(CaseType(
        name=_name, groups=GROUPS_P, summary=_summary,
        inputs=obj(input_ids=I64(2), scores=F32(2), **{_name: FLOAT}, prompt_length=INT), outputs=obj(scores=F32(2)),
        build=functools.partial(_build_serving_penalty, _seed, _name),
        run=lambda inp, _cls=_cls, _name=_name: {"scores": _cls(inp[_name], int(inp["prompt_length"]))(
            inp["input_ids"], inp["scores"])}))


def _build_logit_bias() -> list[Case]:
    rng, cases = np.random.default_rng(163), []
    for i in range(30):
        vocab, batch = int(rng.integers(2, 12)), int(rng.integers(1, 4))
        ids = rng.choice(vocab, int(rng.integers(0, min(vocab, 4) + 1)), replace=False)
        bias = [{"id": int(t), "bias": float(rng.choice([-100.0, -3.5, -0.1, 0.0, 0.75, 5.0, 100.0]))} for t in ids]
        cases.append(Case(f"{len(bias)} biased token(s)" + (", some -inf" if i % 4 == 1 else ""), {
            "scores": random_scores(rng, batch, vocab, neg_inf=0.3 if i % 4 == 1 else 0.0), "logit_bias": bias}))
    return cases


register(CaseType(
    name="logit_bias", groups=GROUPS_P,
    summary="logit_bias (OpenAI's; in no transformers): s + float32(bias) on each listed token id in every row "
            "(JSON keys are strings, so the map is a list of {id, bias}); -inf stays -inf.",
    inputs=obj(scores=F32(2), logit_bias=ListOf(obj(id=INT, bias=FLOAT))), outputs=obj(scores=F32(2)),
    build=_build_logit_bias,
    run=lambda inp: {"scores": rd.LogitBiasLogitsProcessor({int(b["id"]): float(b["bias"]) for b in inp["logit_bias"]})(
        None, inp["scores"])}))
