"""The build-the-whole-loop problem (problems 2-4 of docs/course/assignment.md): a reference submission.

Greedy search, sampling (temperature -> top-k -> top-p, then one inverse-CDF draw per row from the uniforms
given) and beam search, written end to end on ``model(input_ids) -> logits (N, V)``, with numpy only. Each
equals transformers 4.38.2's ``generate`` (refdecode's, its golden reference) token for token; the rules
that make it exact are the handout's. Grade it: ``python tools/course/grade.py tutorials/solutions/submission``.
"""

from __future__ import annotations

import numpy as np


def log_softmax(x):
    """float32 log-probabilities, shifted by the row maximum (as torch.log_softmax)."""
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax(x):
    """float32 probabilities; -inf scores get exactly 0."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def append(ids, next_tokens, unfinished, eos_token_id):
    """Rows that already finished get eos (the pad) again; returns the longer ids and who is still running."""
    if eos_token_id is not None:
        next_tokens = np.where(unfinished, next_tokens, eos_token_id)      # (N,)
        unfinished = unfinished & (next_tokens != eos_token_id)
    return np.concatenate([ids, next_tokens[:, None].astype(np.int64)], axis=1), unfinished   # (N, T+1)


# ---- problem 2: greedy -------------------------------------------------------------------------------------


def greedy(model, input_ids, max_new_tokens, eos_token_id=None):
    """Append the argmax token (lowest id on a tie) until every row emitted eos or max_new_tokens steps ran."""
    ids = np.asarray(input_ids, dtype=np.int64)                            # (N, T)
    unfinished = np.ones(len(ids), dtype=bool)
    for _ in range(max_new_tokens):
        ids, unfinished = append(ids, model(ids).argmax(axis=-1), unfinished, eos_token_id)
        if not unfinished.any():
            break
    return ids


# ---- problem 3: sampling -----------------------------------------------------------------------------------


def warp(scores, temperature, top_k, top_p):
    """transformers' order: temperature, then top-k, then top-p; removed tokens get -inf. (N, V) float32."""
    if temperature != 1.0:
        scores = scores / temperature                                      # Python float: stays float32
    if top_k > 0:
        k = min(top_k, scores.shape[-1])
        kth = np.sort(scores, axis=-1)[:, -k][:, None]                     # (N, 1) the k-th largest
        scores = np.where(scores < kth, np.float32(-np.inf), scores)
    if top_p < 1.0:
        order = np.argsort(scores, axis=-1, kind="stable")                 # ascending, ties: lower id first
        ascending = np.take_along_axis(scores, order, axis=-1)
        mass = np.cumsum(softmax(ascending), axis=-1, dtype=np.float64).astype(np.float32)
        drop = mass <= np.float32(1.0 - top_p)
        drop[:, -1] = False                                                # the most probable token stays
        removed = np.zeros_like(drop)
        np.put_along_axis(removed, order, drop, axis=-1)                   # sorted order -> token order
        scores = np.where(removed, np.float32(-np.inf), scores)
    return scores


def draw(probs, u):
    """One token per row: the first index whose float64 cumulative probability exceeds u * (the row's mass)."""
    tokens = np.empty(len(probs), dtype=np.int64)
    for row, (p, ui) in enumerate(zip(probs.astype(np.float64), u)):
        cdf = np.cumsum(p)
        j = int(np.count_nonzero(cdf <= ui * cdf[-1]))
        tokens[row] = min(j, int(np.flatnonzero(p)[-1]))                   # u * mass rounded up to the mass
    return tokens


def sample(model, input_ids, max_new_tokens, temperature, top_k, top_p, uniforms, eos_token_id=None):
    """Sampling with ``uniforms[step, row]`` as the random draw of each row at each step."""
    ids = np.asarray(input_ids, dtype=np.int64)
    unfinished = np.ones(len(ids), dtype=bool)
    for step in range(max_new_tokens):
        probs = softmax(warp(model(ids), temperature, top_k, top_p))      # (N, V) float32
        ids, unfinished = append(ids, draw(probs, uniforms[step]), unfinished, eos_token_id)
        if not unfinished.any():
            break
    return ids


# ---- problem 4: beam search --------------------------------------------------------------------------------


def add_hypothesis(pool, num_beams, tokens, sum_logprobs, generated_len, length_penalty):
    """Keep the num_beams best finished hypotheses (score, tokens): a full pool takes only a better score, and
    drops its lowest (the earliest inserted on a tie)."""
    score = sum_logprobs / generated_len ** length_penalty
    if len(pool) == num_beams and score <= min(s for s, _ in pool):
        return
    pool.append((score, tokens))
    if len(pool) > num_beams:
        del pool[min(range(len(pool)), key=lambda i: (pool[i][0], i))]


def is_done(pool, num_beams, best_sum_logprobs, generated_len, max_new_tokens, length_penalty, early_stopping):
    """Can no running beam beat the worst finished hypothesis any more? (transformers 4.38.2's three rules)"""
    if len(pool) < num_beams:
        return False
    if early_stopping is True:
        return True
    length = max_new_tokens if early_stopping == "never" and length_penalty > 0 else generated_len
    return min(score for score, _ in pool) >= best_sum_logprobs / length ** length_penalty


def beam_search(model, input_ids, max_new_tokens, num_beams, length_penalty, early_stopping, eos_token_id=None):
    """The best hypothesis per prompt: (sequences int64 (B, W), scores float32 (B,))."""
    prompts = np.asarray(input_ids, dtype=np.int64)                        # (B, T0)
    batch, prompt_len, k = len(prompts), prompts.shape[1], num_beams
    ids = np.repeat(prompts, k, axis=0)                                    # (B*K, T0)
    beam_scores = np.zeros((batch, k), dtype=np.float32)
    beam_scores[:, 1:] = -1e9                                              # step 1: only beam 0 is live
    pools, done = [[] for _ in range(batch)], np.zeros(batch, dtype=bool)
    for _ in range(max_new_tokens):
        # 1) every continuation's score: running score + log p, over the K*V candidates of each prompt
        total = log_softmax(model(ids)).reshape(batch, k, -1) + beam_scores[:, :, None]   # (B, K, V)
        vocab, generated = total.shape[-1], ids.shape[1] + 1 - prompt_len  # eos counts in the length
        next_ids = np.empty((batch * k, ids.shape[1] + 1), dtype=np.int64)
        for b in range(batch):
            if done[b]:                                                    # a finished prompt's rows: pad
                next_ids[b * k:(b + 1) * k] = np.append(ids[b * k], eos_token_id)
                beam_scores[b] = 0.0
                continue
            flat = total[b].reshape(-1)
            ranked = np.argsort(-flat, kind="stable")[:2 * k]              # 2) the 2K best, lower index first
            running = 0
            for rank, index in enumerate(ranked):                          # 3) finished or running
                beam, token, row = index // vocab, index % vocab, b * k + index // vocab
                if token == eos_token_id:
                    if rank < k:
                        add_hypothesis(pools[b], k, ids[row], float(flat[index]), generated, length_penalty)
                    continue
                next_ids[b * k + running] = np.append(ids[row], token)
                beam_scores[b, running] = flat[index]
                running += 1
                if running == k:
                    break
            done[b] = is_done(pools[b], k, float(flat[ranked].max()), generated, max_new_tokens, length_penalty,
                              early_stopping)
        ids = next_ids
        if done.all():
            break
    # 4) finalize: the running beams of unfinished prompts join the pool; the best wins (the later one on a tie)
    best = []
    for b in range(batch):
        if not done[b]:
            for j in range(k):
                add_hypothesis(pools[b], k, ids[b * k + j], float(beam_scores[b, j]), ids.shape[1] - prompt_len,
                               length_penalty)
        best.append(sorted(pools[b], key=lambda hyp: hyp[0])[-1])
    width = min(max(len(tokens) for _, tokens in best) + 1, prompt_len + max_new_tokens)
    sequences = np.full((batch, width), -1 if eos_token_id is None else eos_token_id, dtype=np.int64)
    for b, (_, tokens) in enumerate(best):
        sequences[b, :len(tokens)] = tokens                                # shorter rows: eos, then pad (= eos)
    return sequences, np.array([score for score, _ in best], dtype=np.float32)
