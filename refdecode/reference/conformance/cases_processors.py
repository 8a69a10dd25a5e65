r"""Unit cases for every logits processor and warper: (input ids, scores, parameters) -> expected scores.

Contract: registers one case type per processor/warper (``temperature``, ``top_k``, ``top_p``,
``repetition_penalty``, ``no_repeat_ngram``, ``min_length``, ``min_new_tokens``,
``hamming_diversity``, ``log_softmax``). Expected values come from refdecode's public classes
(``refdecode.TopPLogitsWarper`` etc.), so a port checks exactly the rules refdecode documents
(and tests against transformers 4.38.2's golden files). Each builder mixes random rows with the
edges where ports go wrong: ties at the top-k / top-p boundary, rows already holding ``-inf``,
``min_tokens_to_keep``, penalties on negative and zero scores, n-grams at the start of a
sequence, padded batches, the exact top-p boundary, and a GPT-2-sized vocabulary.
"""

from __future__ import annotations

import numpy as np

import refdecode as rd
from refdecode.processors import transformers5

from .kinds import F32, FLOAT, I64, INT, ListOf, obj
from .registry import Case, CaseType, register

__all__ = ["random_ids", "random_scores", "row_margin_top_k", "row_margin_top_p"]

NEG_INF = np.float32(-np.inf)


def random_scores(rng: np.random.Generator, batch: int, vocab: int, scale: float = 3.0,
                  neg_inf: float = 0.0) -> np.ndarray:
    """float32 (B, V) logits ~ N(0, scale), a fraction ``neg_inf`` of them already ``-inf`` (never a whole row)."""
    s = (rng.standard_normal((batch, vocab)) * scale).astype(np.float32)
    if neg_inf:
        mask = rng.random((batch, vocab)) < neg_inf
        mask[np.arange(batch), rng.integers(0, vocab, batch)] = False
        s[mask] = NEG_INF
    return s


def random_ids(rng: np.random.Generator, batch: int, length: int, vocab: int) -> np.ndarray:
    """int64 (B, T) token ids, uniform in [0, vocab)."""
    return rng.integers(0, vocab, (batch, length)).astype(np.int64)


def _scale(row: np.ndarray) -> float:
    finite = row[np.isfinite(row)]
    return max(1.0, float(np.abs(finite).max())) if finite.size else 1.0


# ----------------------------------------------------------------------------------------------
# margins: how far a selection is from flipping (0 = an exact tie, decided by the stated tie rule)


def row_margin_top_k(row: np.ndarray, top_k: int, min_tokens_to_keep: int) -> float | None:
    """Gap between the k-th largest score (kept) and the largest score below it (removed), / the row's scale."""
    k = min(max(top_k, min_tokens_to_keep), row.size)
    kth = np.sort(row)[::-1][k - 1]
    below = row[(row < kth) & np.isfinite(row)]
    if not np.isfinite(kth) or below.size == 0:
        return None
    return float(kth - below.max()) / _scale(row)


def row_margin_top_p(row: np.ndarray, top_p: float) -> float | None:
    """Smallest distance between a cumulative probability (ascending order) and the threshold ``1 - top_p``.

    Computed with refdecode's float32 arithmetic (float32 softmax of the sorted row, cumulative sums
    accumulated in float64 and rounded to float32), so an exact boundary gives exactly 0.
    """
    if np.count_nonzero(np.isfinite(row)) < 2:
        return None
    probs = rd.softmax(np.sort(row)[None])[0]  # ascending
    cumulative = np.cumsum(probs, dtype=np.float64).astype(np.float32)
    return float(np.abs(cumulative.astype(np.float64) - np.float32(1.0 - top_p)).min())


# ----------------------------------------------------------------------------------------------
# temperature


def _build_temperature() -> list[Case]:
    rng, cases = np.random.default_rng(101), []
    for i in range(60):
        t = float(rng.choice([0.05, 0.3, 0.7, 0.99, 1.3, 2.0, 7.5]))
        cases.append(Case("random rows" + (", some -inf" if i % 3 == 0 else ""),
                          {"scores": random_scores(rng, int(rng.integers(1, 4)), int(rng.integers(2, 20)),
                                                   neg_inf=0.3 if i % 3 == 0 else 0.0), "temperature": t}))
    return cases


register(CaseType(
    name="temperature", groups=("warpers", "processors_and_warpers"),
    summary="TemperatureLogitsWarper: scores / temperature in float32 (-inf stays -inf).",
    inputs=obj(scores=F32(2), temperature=FLOAT), outputs=obj(scores=F32(2)),
    build=_build_temperature,
    run=lambda inp: {"scores": rd.TemperatureLogitsWarper(inp["temperature"])(None, inp["scores"])}))


# ----------------------------------------------------------------------------------------------
# top-k


def _tied_at_kth(rng: np.random.Generator, vocab: int, k: int) -> np.ndarray:
    """A row whose k-th largest value is shared with the (k+1)-th (and maybe more): a tie at the boundary."""
    row = np.sort(rng.standard_normal(vocab).astype(np.float32))[::-1].copy()
    row[k : min(k + int(rng.integers(1, 3)), vocab)] = row[k - 1]
    return rng.permutation(row)


def _build_top_k() -> list[Case]:
    rng, cases = np.random.default_rng(102), []
    for i in range(40):
        vocab = int(rng.integers(3, 16))
        k, m = int(rng.integers(1, vocab + 2)), int(rng.choice([0, 1, 1, 2, 3]))
        cases.append(Case("random rows" + (", some -inf" if i % 4 == 0 else ""),
                          {"scores": random_scores(rng, int(rng.integers(1, 4)), vocab, neg_inf=0.4 * (i % 4 == 0)),
                           "top_k": k, "min_tokens_to_keep": m}))
    for i in range(30):  # ties with the k-th largest: all of them are kept
        vocab = int(rng.integers(4, 12))
        k = int(rng.integers(1, vocab - 1))
        rows = np.stack([_tied_at_kth(rng, vocab, k) for _ in range(int(rng.integers(1, 3)))])
        cases.append(Case("tie at the k-th largest (all tied tokens kept)",
                          {"scores": rows, "top_k": k, "min_tokens_to_keep": 1}))
    for _ in range(10):  # more -inf than V - k: the k-th largest is -inf and nothing is removed
        vocab = int(rng.integers(4, 10))
        s = random_scores(rng, 1, vocab)
        s[0, rng.permutation(vocab)[: vocab - 1]] = NEG_INF
        cases.append(Case("k-th largest is -inf (row already filtered)",
                          {"scores": s, "top_k": int(rng.integers(2, vocab)), "min_tokens_to_keep": 1}))
    for _ in range(10):  # min_tokens_to_keep above top_k
        vocab = int(rng.integers(5, 12))
        cases.append(Case("min_tokens_to_keep > top_k", {"scores": random_scores(rng, 2, vocab), "top_k": 1,
                                                          "min_tokens_to_keep": int(rng.integers(2, 5))}))
    return cases


def _margins_top_k(inp: dict, out: dict) -> list:
    return [row_margin_top_k(row, inp["top_k"], inp["min_tokens_to_keep"]) for row in inp["scores"]]


register(CaseType(
    name="top_k", groups=("warpers", "processors_and_warpers"),
    summary="TopKLogitsWarper: keep the scores >= the k-th largest, k = min(max(top_k, min_tokens_to_keep), V); "
            "the rest become -inf.",
    tie_rule="every token whose score equals the k-th largest is kept (more than k can survive)",
    inputs=obj(scores=F32(2), top_k=INT, min_tokens_to_keep=INT), outputs=obj(scores=F32(2)),
    build=_build_top_k, margins=_margins_top_k,
    run=lambda inp: {"scores": rd.TopKLogitsWarper(inp["top_k"], min_tokens_to_keep=inp["min_tokens_to_keep"])(
        None, inp["scores"])}))


# ----------------------------------------------------------------------------------------------
# top-p


def _peaked_large_vocab(rng: np.random.Generator, vocab: int) -> np.ndarray:
    """A GPT-2-sized row: a head of ~12 likely tokens and a long tail, like a language model's distribution."""
    row = (rng.standard_normal(vocab) * 1.5 - 6.0).astype(np.float32)
    head = rng.choice(vocab, 12, replace=False)
    row[head] = (rng.standard_normal(12) * 1.0 + 8.0).astype(np.float32)
    return row


def _top_p_case(note: str, scores: np.ndarray, top_p: float, keep: int = 1, margin: float = 1e-3) -> Case | None:
    """A case, unless a row's cumulative mass comes closer than ``margin`` to the threshold by accident."""
    margins = [row_margin_top_p(row, top_p) for row in scores]
    if any(m is not None and 0 < m < margin for m in margins):
        return None
    return Case(note, {"scores": scores, "top_p": float(top_p), "min_tokens_to_keep": keep})


def _build_top_p() -> list[Case]:
    rng, cases = np.random.default_rng(103), []
    while len(cases) < 50:
        vocab = int(rng.integers(2, 20))
        case = _top_p_case("random rows" + (", some -inf" if len(cases) % 4 == 0 else ""),
                           random_scores(rng, int(rng.integers(1, 4)), vocab, neg_inf=0.4 * (len(cases) % 4 == 0)),
                           float(rng.choice([0.1, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99])), int(rng.choice([1, 1, 2, 3])))
        cases += [case] if case else []
    exact = [([0.5, 0.25, 0.125, 0.125], 0.75), ([0.5, 0.25, 0.25], 0.5), ([0.25, 0.25, 0.25, 0.25], 0.5),
             ([0.5, 0.5], 0.5), ([0.75, 0.125, 0.0625, 0.0625], 0.875), ([0.5, 0.25, 0.125, 0.0625, 0.0625], 0.875)]
    for probs, p in exact:  # the mass before a token equals top_p exactly (powers of two: exact in float32)
        for perm_seed in range(3):
            order = np.random.default_rng(perm_seed).permutation(len(probs)) if perm_seed else np.arange(len(probs))
            scores = np.log(np.array(probs, dtype=np.float32))[order][None]
            cases.append(Case("mass of the more probable tokens equals top_p exactly: the next token is dropped",
                              {"scores": scores, "top_p": p, "min_tokens_to_keep": 1}))
    while len(cases) < 50 + 18 + 20:  # a tie straddling the cut: the lower ids are dropped first
        vocab = int(rng.integers(4, 10))
        row = np.sort(rng.standard_normal(vocab).astype(np.float32))[::-1].copy()
        cut = int(rng.integers(1, vocab - 1))
        row[cut] = row[cut - 1]
        probs = np.exp(row.astype(np.float64) - row.max())
        probs /= probs.sum()
        p = float(np.cumsum(probs)[cut - 1] + probs[cut] / 2)  # the cut falls between the two tied tokens
        case = _top_p_case("tied tokens straddle the cut (lower id dropped)", rng.permutation(row)[None], p)
        cases += [case] if case else []
    for keep in (1, 2, 3, 5):  # min_tokens_to_keep beats a tiny top_p
        cases.append(Case("min_tokens_to_keep beats a small top_p",
                          {"scores": random_scores(rng, 2, 9), "top_p": 0.01, "min_tokens_to_keep": keep}))
    for p in (0.0, 1.0):
        for _ in range(3):
            cases.append(Case(f"top_p = {p}", {"scores": random_scores(rng, 2, 8, neg_inf=0.3), "top_p": p,
                                               "min_tokens_to_keep": 1}))
    while len(cases) < 50 + 18 + 20 + 4 + 6 + 8:  # GPT-2's vocabulary: float32 sums over 50257 entries
        case = _top_p_case("GPT-2-sized vocabulary (50257)", _peaked_large_vocab(rng, 50257)[None],
                           float(rng.choice([0.5, 0.8, 0.9, 0.95])))
        cases += [case] if case else []
    return cases


def _margins_top_p(inp: dict, out: dict) -> list:
    return [row_margin_top_p(row, inp["top_p"]) for row in inp["scores"]]


register(CaseType(
    name="top_p", groups=("warpers", "processors_and_warpers"),
    summary="TopPLogitsWarper (transformers' rule): sort ascending, cumulative softmax, remove positions with "
            "cumulative <= 1 - top_p except the last min_tokens_to_keep; removed scores become -inf.",
    tie_rule="torch's CPU sort order, ascending: for rows of up to 16 entries (every tie case here) a stable sort "
             "(equal scores in token-id order), so on a tie straddling the cut the lower ids are dropped first, as "
             "transformers 4.38.2; above 16 entries libstdc++'s introsort order (docs/top-p.md); a "
             "token whose more probable predecessors have mass exactly top_p is dropped; the cumulative sums are "
             "torch's: the float32 probabilities accumulated in float64, each prefix rounded to float32 and compared "
             "with float32(1 - top_p) (sums kept in float64 land on the other side of an exact boundary)",
    inputs=obj(scores=F32(2), top_p=FLOAT, min_tokens_to_keep=INT), outputs=obj(scores=F32(2)),
    build=_build_top_p, margins=_margins_top_p,
    run=lambda inp: {"scores": rd.TopPLogitsWarper(inp["top_p"], min_tokens_to_keep=inp["min_tokens_to_keep"])(
        None, inp["scores"])}))


# ----------------------------------------------------------------------------------------------
# repetition penalty


def _build_repetition_penalty() -> list[Case]:
    rng, cases = np.random.default_rng(104), []
    for i in range(50):
        batch, vocab = int(rng.integers(1, 4)), int(rng.integers(3, 16))
        scores = random_scores(rng, batch, vocab, neg_inf=0.2 * (i % 5 == 0))
        if i % 2:
            scores = -np.abs(scores)  # all negative: the penalty multiplies
        scores[:, 0] = 0.0 if i % 7 == 0 else scores[:, 0]  # an exact zero is divided and stays 0
        cases.append(Case("seen tokens with " + ("negative" if i % 2 else "mixed-sign") + " scores",
                          {"input_ids": random_ids(rng, batch, int(rng.integers(1, 8)), vocab), "scores": scores,
                           "penalty": float(rng.choice([0.5, 0.9, 1.2, 1.5, 2.0, 3.0]))}))
    for _ in range(10):  # a left-padded batch: the pad id (= eos) is "seen" too, in 4.38.2
        vocab, pad = 10, 9
        ids = random_ids(rng, 2, 5, vocab - 1)
        ids[1, :2] = pad
        cases.append(Case("left-padded batch: the pad token counts as seen (4.38.2)",
                          {"input_ids": ids, "scores": random_scores(rng, 2, vocab), "penalty": 1.3}))
    return cases


register(CaseType(
    name="repetition_penalty", groups=("processors", "processors_and_warpers"),
    summary="RepetitionPenaltyLogitsProcessor: for every token id in input_ids (once, padding included), "
            "score < 0 -> score * penalty, else score / penalty.",
    inputs=obj(input_ids=I64(2), scores=F32(2), penalty=FLOAT), outputs=obj(scores=F32(2)),
    build=_build_repetition_penalty,
    run=lambda inp: {"scores": rd.RepetitionPenaltyLogitsProcessor(inp["penalty"])(inp["input_ids"], inp["scores"])}))


def _build_repetition_penalty_ignore() -> list[Case]:
    rng, cases = np.random.default_rng(109), []
    for _ in range(30):
        batch, length, vocab = int(rng.integers(1, 4)), int(rng.integers(1, 8)), int(rng.integers(3, 9))
        ignore = rng.integers(0, length + 1, batch).astype(np.int64)  # e.g. each row's left-padding width
        cases.append(Case("the first prompt_ignore_length[b] positions of row b are not looked at",
                          {"input_ids": random_ids(rng, batch, length, vocab), "scores": random_scores(rng, batch, vocab),
                           "penalty": float(rng.choice([0.5, 1.3, 2.0])), "prompt_ignore_length": ignore}))
    return cases


register(CaseType(
    name="repetition_penalty_prompt_ignore", groups=("processors", "processors_and_warpers"),
    summary="RepetitionPenaltyLogitsProcessor of transformers 5.x (refdecode's semantics=\"5\"): as repetition_penalty, "
            "but only the positions from prompt_ignore_length[b] on of row b count as seen (generate passes each "
            "row's left-padding width, so padding is no longer penalised).",
    inputs=obj(input_ids=I64(2), scores=F32(2), penalty=FLOAT, prompt_ignore_length=I64(1)), outputs=obj(scores=F32(2)),
    build=_build_repetition_penalty_ignore,
    run=lambda inp: {"scores": transformers5.RepetitionPenaltyLogitsProcessor(inp["penalty"], prompt_ignore_length=inp[
        "prompt_ignore_length"])(inp["input_ids"], inp["scores"])}))


# ----------------------------------------------------------------------------------------------
# no-repeat n-gram


def _build_no_repeat_ngram() -> list[Case]:
    rng, cases = np.random.default_rng(105), []
    for i in range(50):
        vocab, n = int(rng.integers(2, 6)), int(rng.integers(1, 5))
        length = int(rng.integers(1, 12))
        note = "sequence shorter than the n-gram (start of the sequence)" if length < n else "repeated n-grams"
        batch = int(rng.integers(1, 4))
        cases.append(Case(note, {"input_ids": random_ids(rng, batch, length, vocab),
                                 "scores": random_scores(rng, batch, vocab, neg_inf=0.2 * (i % 5 == 0)),
                                 "ngram_size": n}))
    for n in (2, 3, 4):  # exactly n - 1 tokens: the prefix exists but no n-gram yet; then n tokens
        for length in (n - 1, n):
            ids = np.array([[1] * length, [2, 1, 2, 1][:length] + [1] * max(0, length - 4)])
            cases.append(Case(f"{length} tokens with ngram_size {n} (start of the sequence)",
                              {"input_ids": ids, "scores": random_scores(rng, 2, 4), "ngram_size": n}))
    return cases


register(CaseType(
    name="no_repeat_ngram", groups=("processors", "processors_and_warpers"),
    summary="NoRepeatNGramLogitsProcessor: ban (-inf) every token t such that the last n-1 tokens followed by t "
            "already occur as an n-gram of the row (prompt included); rows shorter than n-1 ban nothing.",
    inputs=obj(input_ids=I64(2), scores=F32(2), ngram_size=INT), outputs=obj(scores=F32(2)),
    build=_build_no_repeat_ngram,
    run=lambda inp: {"scores": rd.NoRepeatNGramLogitsProcessor(inp["ngram_size"])(inp["input_ids"], inp["scores"])}))


# ----------------------------------------------------------------------------------------------
# min length, min new tokens


def _build_min_length() -> list[Case]:
    rng, cases = np.random.default_rng(106), []
    for _ in range(40):
        vocab, length = int(rng.integers(3, 10)), int(rng.integers(1, 8))
        eos = [int(e) for e in rng.choice(vocab, int(rng.integers(1, 3)), replace=False)]
        cases.append(Case("length below / at / above min_length",
                          {"input_ids": random_ids(rng, 2, length, vocab), "scores": random_scores(rng, 2, vocab),
                           "min_length": length + int(rng.integers(-1, 3)), "eos_token_id": eos}))
    return cases


register(CaseType(
    name="min_length", groups=("processors", "processors_and_warpers"),
    summary="MinLengthLogitsProcessor: every eos id gets -inf while input_ids.shape[-1] < min_length "
            "(the prompt counts).",
    inputs=obj(input_ids=I64(2), scores=F32(2), min_length=INT, eos_token_id=ListOf(INT)),
    outputs=obj(scores=F32(2)), build=_build_min_length,
    run=lambda inp: {"scores": rd.MinLengthLogitsProcessor(inp["min_length"], inp["eos_token_id"])(
        inp["input_ids"], inp["scores"])}))


def _build_min_new_tokens() -> list[Case]:
    rng, cases = np.random.default_rng(107), []
    for _ in range(40):
        vocab, length = int(rng.integers(3, 10)), int(rng.integers(1, 9))
        prompt = int(rng.integers(0, length + 1))
        eos = [int(e) for e in rng.choice(vocab, int(rng.integers(1, 3)), replace=False)]
        cases.append(Case("new tokens below / at / above min_new_tokens",
                          {"input_ids": random_ids(rng, 2, length, vocab), "scores": random_scores(rng, 2, vocab),
                           "prompt_length_to_skip": prompt,
                           "min_new_tokens": max(0, length - prompt + int(rng.integers(-1, 3))), "eos_token_id": eos}))
    return cases


register(CaseType(
    name="min_new_tokens", groups=("processors", "processors_and_warpers"),
    summary="MinNewTokensLengthLogitsProcessor: every eos id gets -inf while input_ids.shape[-1] - "
            "prompt_length_to_skip < min_new_tokens.",
    inputs=obj(input_ids=I64(2), scores=F32(2), prompt_length_to_skip=INT, min_new_tokens=INT,
               eos_token_id=ListOf(INT)),
    outputs=obj(scores=F32(2)), build=_build_min_new_tokens,
    run=lambda inp: {"scores": rd.MinNewTokensLengthLogitsProcessor(
        inp["prompt_length_to_skip"], inp["min_new_tokens"], inp["eos_token_id"])(inp["input_ids"], inp["scores"])}))


# ----------------------------------------------------------------------------------------------
# Hamming diversity (group beam search)


def _build_hamming() -> list[Case]:
    rng, cases = np.random.default_rng(108), []
    for _ in range(40):
        groups = int(rng.integers(2, 4))
        beams = groups * int(rng.integers(1, 3))
        batch, vocab = int(rng.integers(1, 3)), int(rng.integers(3, 8))
        group = int(rng.integers(0, groups))
        size = beams // groups
        tokens = rng.integers(0, vocab, batch * beams).astype(np.int64)
        tokens.reshape(batch, beams)[:, group * size :] = 0  # later groups have not chosen yet (zeros)
        cases.append(Case("tokens chosen by earlier groups this step",
                          {"scores": random_scores(rng, batch * size, vocab), "current_tokens": tokens,
                           "beam_group_idx": group, "diversity_penalty": float(rng.choice([0.5, 1.0, 2.5])),
                           "num_beams": beams, "num_beam_groups": groups}))
    return cases


register(CaseType(
    name="hamming_diversity", groups=("processors", "processors_and_warpers", "beam"),
    summary="HammingDiversityLogitsProcessor: scores are the rows of group beam_group_idx (B * K/G, V); subtract "
            "diversity_penalty x (how often the earlier groups' beams of the same prompt chose the token).",
    inputs=obj(scores=F32(2), current_tokens=I64(1), beam_group_idx=INT, diversity_penalty=FLOAT, num_beams=INT,
               num_beam_groups=INT),
    outputs=obj(scores=F32(2)), build=_build_hamming,
    run=lambda inp: {"scores": rd.HammingDiversityLogitsProcessor(
        inp["diversity_penalty"], inp["num_beams"], inp["num_beam_groups"])(
        None, inp["scores"], current_tokens=inp["current_tokens"], beam_group_idx=inp["beam_group_idx"])}))


# ----------------------------------------------------------------------------------------------
# log_softmax (what beam search applies before the processors)


def _build_log_softmax() -> list[Case]:
    rng, cases = np.random.default_rng(109), []
    for i in range(30):
        cases.append(Case("random rows" + (", some -inf" if i % 3 == 0 else ""),
                          {"scores": random_scores(rng, int(rng.integers(1, 4)), int(rng.integers(2, 30)),
                                                   scale=float(rng.choice([1.0, 10.0, 100.0])),
                                                   neg_inf=0.3 * (i % 3 == 0))}))
    return cases


register(CaseType(
    name="log_softmax", groups=("beam", "processors_and_warpers"),
    summary="log_softmax over the last axis in float32: s - max - log(sum(exp(s - max))); -inf stays -inf.",
    inputs=obj(scores=F32(2)), outputs=obj(scores=F32(2)), build=_build_log_softmax,
    run=lambda inp: {"scores": rd.log_softmax(inp["scores"])}))
