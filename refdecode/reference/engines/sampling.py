r"""Sampling under an engine's rules, with the case's uniforms: per row, process, warp, softmax, draw.

Contract: ``sample(logits, prompts, rules, config, uniforms) -> [[(new tokens, None)] * R per prompt]``
(R = num_return_sequences, the rows of prompt b are b*R .. b*R + R-1); the layout of the output rows is
``decode.py``'s. 4.38.2's rule (utils.py ``_sample``): each step every row N = B*R (finished or not) takes one
uniform, row r at step t the uniform ``uniforms[t * N + r]`` (the suite's draw order,
``refdecode.reference.conformance.cases_decode``), and draws

.. math:: i = \min\{ j : \textstyle\sum_{l \le j} p_l > u \cdot \sum_l p_l \},
    \quad p = \mathrm{softmax}(\mathrm{warpers}(\mathrm{processors}(y_{<t}, \mathrm{logits}_t)))

(refdecode's ``multinomial``); a finished row gets pad_token_id; stop when every row has finished or after
max_new_tokens. Switches read: ``warpers`` (``"4.38"`` refdecode's 4.38.2 warpers, ``"llama"`` llama.cpp's chain,
L2, ``"mlx"`` mlx-lm's, M3, ``"tf"`` transformers 4.38.2's TF warpers, TF5, ``"flax"`` transformers 4.38.2 Flax's,
FX8, ``"scratch"`` llms-from-scratch's top-k then temperature, S2, ``"litgpt"``
litgpt 0.5.13's ``sample``, LG1, ``"meta"`` llama-models' ``sample_top_p``, S2), ``sample_one_row`` (Flax),
``pad_after_eos`` / ``stop_when_all_last_eos`` as in greedy, and through ``Prompt`` the processors'.
"""

from __future__ import annotations

import math

import numpy as np

from ...decoding.randomness import multinomial
from ...generation_config import GenerationConfig
from ...numerics import softmax
from ...pipeline import logits_warpers
from ...processors.logits_warp import top_p_warp
from .greedy import drop_trailing_pads
from .rules import EngineRules
from .steps import NextTokenLogits, Prompt

__all__ = ["sample", "llama_chain", "mlx_chain", "tf_warpers", "flax_chain", "scratch_chain", "litgpt_chain",
           "meta_chain"]


class _Given(np.random.Generator):
    """A generator whose next ``random(1)`` is the given uniform (``multinomial`` takes one per row)."""

    def __init__(self, u: float):
        super().__init__(np.random.PCG64(0))
        self.u = float(u)

    def random(self, size=None, dtype=np.float64, out=None):
        return np.array([self.u], dtype=np.float64)


def llama_chain(scores: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """llama.cpp's top-k -> top-p (on the un-tempered float32 softmax) -> temperature, on one row (V,)."""
    row = np.array(scores, dtype=np.float32, copy=True)
    order = np.argsort(-row, kind="stable")                  # (V,) best first
    keep = np.ones(row.shape, dtype=bool)
    if 0 < top_k < row.size:                                 # exactly k candidates
        keep[:] = False
        keep[order[:top_k]] = True
    if top_p < 1.0:
        kept = order[keep[order]]                            # kept ids, best first
        p = softmax(row[kept][None])[0]                      # float32, before the temperature
        reached = np.cumsum(p, dtype=np.float32) >= np.float32(top_p)
        last = int(np.argmax(reached)) + 1 if reached.any() else kept.size
        keep[:] = False
        keep[kept[:last]] = True
    row[~keep] = -np.inf
    row[keep] = row[keep] / np.float32(temperature)
    return row


def mlx_chain(scores: np.ndarray, temperature: float, top_k: int, top_p: float, min_p: float) -> np.ndarray:
    """mlx-lm's ``make_sampler`` chain on one row (V,): top-p -> min-p -> top-k on the float32 log-softmax, then the
    log-probabilities times float32(1 / temperature) (the logits ``categorical_sampling`` draws from)."""
    x = np.asarray(scores, dtype=np.float32)                 # generate.py: logits - mx.logsumexp(logits), whose
    m = x.max()                                              # CPU sum runs in order, in float32
    lp = (x - (m + np.log(np.cumsum(np.exp(x - m), dtype=np.float32)[-1]))).astype(np.float32)
    if 0 < top_p < 1.0:                                      # apply_top_p
        srt = np.sort(lp, kind="stable")                     # ascending
        p = np.exp(srt).astype(np.float32)
        above = np.concatenate([np.cumsum(p[::-1], dtype=np.float32)[::-1][1:], [np.float32(0)]])  # exclusive
        dropped = int(np.count_nonzero(above >= np.float32(top_p) * (above[0] + p[0])))
        lp = np.where(lp < srt[dropped], -np.inf, lp).astype(np.float32)
    if min_p != 0.0:                                         # apply_min_p, min_tokens_to_keep 1
        lp = np.where(lp < lp.max() + np.float32(math.log(min_p)), -np.inf, lp).astype(np.float32)
    if 0 < top_k < lp.size:                                  # apply_top_k: exactly k (argpartition)
        out = np.full_like(lp, -np.inf)
        keep = np.argsort(-lp, kind="stable")[:top_k]
        out[keep] = lp[keep]
        lp = out
    return (lp * np.float32(1.0 / temperature)).astype(np.float32)


def tf_warpers(scores: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """transformers 4.38.2's TF warpers on one row (V,): temperature, top-k (ties at the k-th value kept, as
    4.38.2), then top-p over the scores sorted descending (ties: the lower id first, ``tf.math.top_k``): the
    float32 cumulative sum of ``softmax(sorted + 1e-9)`` (``stable_softmax``); a token is kept while the sum
    BEFORE it is < top_p (the first one always). 4.38.2 sums ascending and drops the tail with sum <= 1 - top_p:
    the same set in exact arithmetic, not always in float32 (tf_logits_process.py:170-199)."""
    row = np.array(scores, dtype=np.float32, copy=True)
    if temperature != 1.0:
        row = (row / np.float32(temperature)).astype(np.float32)
    if top_k != 0:
        kth = np.sort(row)[-min(top_k, row.size)]
        row = np.where(row < kth, np.float32(-np.inf), row).astype(np.float32)
    if top_p < 1.0:
        order = np.argsort(-row, kind="stable")                                   # (V,) best first
        p = softmax((row[order] + np.float32(1e-9))[None].astype(np.float32))[0]
        before = np.concatenate([[np.float32(0)], np.cumsum(p, dtype=np.float32)[:-1]])
        keep = before < np.float32(top_p)
        keep[0] = True
        row[order[~keep]] = -np.inf
    return row


def flax_chain(scores: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """transformers 4.38.2 Flax's temperature -> top-k (exactly k) -> top-p (cumulative softmax before the token
    < top_p) on one row (V,) (flax_logits_process.py:110-156, :179-191)."""
    row = np.array(scores, dtype=np.float32, copy=True)
    if temperature != 1.0:
        row = (row / np.float32(temperature)).astype(np.float32)
    if 0 < top_k < row.size:
        row[_flax_order(row)[top_k:]] = -np.inf
    if top_p < 1.0:
        order = _flax_order(row)
        cum = np.cumsum(softmax(row[order][None])[0], dtype=np.float32)
        keep = np.concatenate([[True], cum[:-1] < np.float32(top_p)])   # rolled by one, the first always kept
        row[order[~keep]] = -np.inf
    return row


def scratch_chain(scores: np.ndarray, temperature: float, top_k: int) -> np.ndarray:
    """llms-from-scratch 1.0.19's ch05 ``generate`` on one row (V,): top-k on the scores, ties at the k-th value
    kept (``torch.where(logits < min_val, -inf, logits)``), then the division by the temperature (ch05.py:29-37)."""
    row = np.array(scores, dtype=np.float32, copy=True)
    if top_k > 0:
        kth = np.sort(row)[-min(top_k, row.size)]
        row = np.where(row < kth, np.float32(-np.inf), row).astype(np.float32)
    return (row / np.float32(temperature)).astype(np.float32)


def meta_chain(scores: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """llama-models 0.3.0's ``softmax(logits / temperature)`` then ``sample_top_p`` on one row (V,)
    (models/llama3/generation.py:252-253, :363-367): the float32 probabilities sorted descending, a token dropped
    where the float32 cumulative sum before it (``probs_sum - probs_sort``) is > top_p; the kept scores returned
    (the draw's softmax renormalises them, as ``probs_sort.div_(probs_sort.sum())``). The cumulative sum is torch's
    on the CPU: accumulated in float64, each entry rounded to float32. No top-k."""
    row = (np.asarray(scores, dtype=np.float32) / np.float32(temperature)).astype(np.float32)
    order = np.argsort(-softmax(row), kind="stable")                             # (V,) best first
    p = softmax(row)[order]
    cum = np.cumsum(p, dtype=np.float64).astype(np.float32)
    out = row.copy()
    out[order[(cum - p).astype(np.float32) > np.float32(top_p)]] = -np.inf
    return out


def _flax_order(row: np.ndarray) -> np.ndarray:
    """``lax.top_k``'s order: descending in XLA's total order (+0.0 above -0.0), equal values by the lower index."""
    return np.lexsort((np.arange(row.size), np.signbit(row), -row))


def litgpt_chain(scores: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """litgpt 0.5.13's ``sample`` on one row (V,) (litgpt/generate/base.py:39-74): top-k on the raw scores keeping
    exactly k (``torch.topk``, the rest ``-inf``; ties at the k-th value: the lower ids), then ``/ temperature``,
    then ``sample_top_p``: sorted ascending, the float32 softmax's cumulative sum <= 1 - top_p removed, the top
    token always kept (4.38.2's ``TopPLogitsWarper`` code line for line: refdecode's ``top_p_warp``)."""
    row = np.array(scores, dtype=np.float32, copy=True)
    if 0 < top_k < row.size:                                 # exactly k (ties: the lower ids)
        row[np.argsort(-row, kind="stable")[top_k:]] = -np.inf
    row = (row / np.float32(temperature)).astype(np.float32)
    if top_p < 1.0:                                          # the same code as 4.38.2's warper: refdecode's
        row = top_p_warp(row[None], top_p)[0]                # torch-exact one
    return row


def sample(logits: NextTokenLogits, prompts: list[Prompt], rules: EngineRules, config: dict,
           uniforms: np.ndarray) -> list[list[tuple[list[int], None]]]:
    """New tokens per prompt and returned row (eos included where one was drawn); see the module doc."""
    R = 1 if rules.sample_one_row else int(config["num_return_sequences"])   # Flax FX8: one row per prompt
    rows = [p for p in prompts for _ in range(R)]            # N = B * R rows
    N, u = len(rows), np.asarray(uniforms, dtype=np.float64).ravel()
    given = {k: config.get(k) for k in ("temperature", "top_k", "top_p")}
    # 4.38.2's warpers, built for both rule sets: they refuse what 4.38.2 refuses (temperature <= 0, top_k < 0 ...)
    warpers = logits_warpers(GenerationConfig(do_sample=True, **{k: v for k, v in given.items() if v is not None}))
    temperature = 1.0 if given["temperature"] is None else float(given["temperature"])
    top_k = 0 if given["top_k"] is None else int(given["top_k"])
    top_p = 1.0 if given["top_p"] is None else float(given["top_p"])
    gens: list[list[int]] = [[] for _ in rows]
    finished = [False] * N
    for t in range(max(p.max_new for p in rows)):          # one budget for all rows but under lengths_from_unpadded
        if u.size < (t + 1) * N and t < min(p.max_new for p in rows):
            raise ValueError(f"`uniforms` must hold max_new_tokens * rows = {rows[0].max_new * N} values "
                             f"(one per row and step), got {u.size}")
        for r, prompt in enumerate(rows):
            if t >= prompt.max_new:             # its budget is spent (shorter than another row's)
                finished[r] = True
                continue
            if finished[r] and rules.pad_after_eos:
                gens[r].append(prompt.pad)
                continue
            if u.size <= t * N + r:            # llama-models S1: a longer budget than the case's uniforms cover
                raise ValueError(f"`uniforms` hold {u.size} values: none for row {r} at step {t} (its budget "
                                 f"{prompt.max_new} > max_new_tokens)")
            scores = prompt.process(logits(prompt.model_tokens(gens[r])), gens[r], np.float32(-np.inf))  # (V,)
            if rules.warpers == "llama":
                scores = llama_chain(scores, temperature, top_k, top_p)
            elif rules.warpers == "mlx":
                scores = mlx_chain(scores, temperature, top_k, top_p, float(config.get("min_p") or 0.0))
            elif rules.warpers == "tf":
                scores = tf_warpers(scores, temperature, top_k, top_p)
            elif rules.warpers == "flax":
                scores = flax_chain(scores, temperature, top_k, top_p)
            elif rules.warpers == "scratch":
                scores = scratch_chain(scores, temperature, top_k)
            elif rules.warpers == "litgpt":
                scores = litgpt_chain(scores, temperature, top_k, top_p)
            elif rules.warpers == "meta":
                scores = meta_chain(scores, temperature, top_p)
            else:
                ids = np.array([prompt.row + gens[r]], dtype=np.int64)                                   # (1, T+t)
                scores = np.asarray(warpers(ids, scores[None]), dtype=np.float32)[0]
            tok = int(multinomial(softmax(scores[None]), 1, rng=_Given(u[t * N + r]))[0, 0])
            gens[r].append(tok)
            finished[r] = tok in prompt.eos if rules.stop_when_all_last_eos else finished[r] or tok in prompt.eos
        if all(finished):
            break
    out = [drop_trailing_pads(g, p, rules) for g, p in zip(gens, rows)]
    return [[(out[b * R + j], None) for j in range(R)] for b in range(len(prompts))]
