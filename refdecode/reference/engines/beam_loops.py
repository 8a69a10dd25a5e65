r"""The beam loops that are not 4.38.2's bookkeeping: transformers 5.x, CTranslate2, keras-hub, OpenVINO GenAI, vLLM,
and transformers 4.38.2's TensorFlow and Flax.

Contract: ``beam_5``, ``beam_ct2``, ``beam_ov`` and ``beam_vllm`` take one prompt, ``beam_keras``, ``beam_tf`` and
``beam_flax`` the whole batch; each returns, per prompt, [(new tokens, score)] best first (num_return_sequences of
them). New tokens keep their eos; the candidates come from ``beam.candidates`` (so ``candidates``, ``first_eos`` and
the processors' switches apply).

* ``loop="5"`` (transformers 5.x ``_beam_search``, generation/utils.py :3375-3890; FINDINGS T4): a candidate
  "hits" when it is an eos or the row reaches max_length; the finished set takes the hits among the top K ranks,
  score / (generated incl. eos) ** lp, merged with the kept ones, the best K kept; nothing is added once the
  early-stop heuristic fired or (early_stopping True) all K are finished; running beams: the best K non-hits;
  stop when all K are finished and early_stopping is True, or when the sticky heuristic fires (best RUNNING beam
  / L ** lp <= worst finished, L = max_new_tokens for "never" with lp > 0, else the generated length), or at the
  last step. 4.38.2 instead compares the best CANDIDATE (beam_search.py :306-307, :971-1006).
* ``loop="ct2"`` (CTranslate2 ``BeamSearch::search``, src/decoding.cc :449-658; FINDINGS C3-C5): 2K candidates;
  ranks k < K are walked, an eos (or any token at the last step) registers a hypothesis with its sum and beam k
  takes the next non-eos candidate of rank >= K; done at the last step, or (lp == 0) once the rank-0 candidate was
  an eos and >= num_return_sequences are finished, else once >= K are finished (all kept, none pruned); final
  score = sum / (generated incl. eos + len(prompt) - 1) ** lp in float32 (``offset``), sorted descending.
* ``loop="keras"`` (keras-hub ``BeamSampler``, samplers/beam_sampler.py :96-193; FINDINGS K2): the batch
  right-padded to T + max_new_tokens in lockstep from the shortest prompt; K beams per row with log-probs
  [0, -1e9, ...]; each index: log(softmax(logits)) (float32, the log of the probabilities) + log-prob, the K
  largest of (K*V,) become the beams; inside a longer row's prompt the token is forced but the value kept; no
  processors' eos handling, no length normalisation; stop when all beams hold an eos past their prompt; output:
  beams by log-prob, each cut after its first eos (duplicates kept).
* ``loop="ov"`` (OpenVINO GenAI 2026.4 ``Sampler::GroupBeamSearcher``, src/cpp/src/sampling/sampler.cpp
  ``select_next_tokens``, ``Group::finish``, ``Group::is_done``, ``finalize``; FINDINGS O1-O4): K beams, the first
  at 0 and the others at -inf; each step every beam's float32 log_softmax (a sequential float sum, as
  ``std::accumulate``), the no-repeat n-gram over the unpadded prompt + its tokens (``-inf``; only when that holds
  more than one token), its own top 2K; the K * 2K candidates (beam order, each beam's best first) go through
  ``std::partial_sort(.., 2K, ..)`` and are walked IN THE ORDER THAT CALL LEAVES THEM, all of them if need be: an
  eos at rank < K finishes (float32 score / (generated incl. eos) ** lp, pushed on a ``std::push_heap`` min-heap,
  the lowest popped past K), later eos are skipped, other tokens become the next beams until K; done (K finished
  and) early_stopping True, or worst finished >= the best RUNNING beam of the previous step / (its generated
  length) ** lp (max_new_tokens for "never" with lp > 0), float32; at max_new_tokens the running beams are
  finished; the finished ones ranked by their sequence's sum of log-probs / length ** lp. No other processor
  (the min length only where ``beam_min_new`` keeps 4.38.2's rule; GenAI has none in beam search, O4). With
  num_beam_groups G, each group of K / G beams runs this in turn, its log-probs lowered by diversity_penalty once
  per beam the earlier groups chose at this step; the finished ones of all groups are ranked together.
* ``loop="tf"`` (transformers 4.38.2's TF ``beam_search``, generation/tf_utils.py :2264-2648; FINDINGS TF3): the
  batch in lockstep; K running slots per prompt, log-probs [0, -1e9, ...]; each step 2K candidates; the eos among
  ranks < K are hits, score / float32(generated incl. eos) ** lp in float32, -1e9 added to every other candidate
  (and to every hit of a prompt whose K finished slots are all set, with early_stopping True); the finished set
  is the top K of [kept K, these 2K] (its unset slots: the pad row at -1e9, kept before any new -1e9); running: the
  top K of the 2K with -1e9 added to every eos. Before each later step the WHOLE batch stops if no prompt can
  improve (best running / L ** lp > the prompt's worst finished slot, a slot not finished counting -1e9; L =
  max_new_tokens for "never" with lp > 0, else the generated length) or, with early_stopping True, every slot of
  every prompt is finished. Output per prompt: its finished slots (num_return_sequences best, unset ones as rows of
  pad_token_id, score -1e9) if any slot is finished, else its running beams with score / float32(steps) ** lp;
  every row as wide as the steps run (prompt width + steps), pad after its eos.
* ``loop="vllm"`` (vLLM 0.32 ``LLM.beam_search``, entrypoints/generate/beam_search/offline.py :58-342, utils.py
  :137-163; FINDINGS V2): each running beam offers its own top 2K tokens (``logprobs=2 * beam_width``, the
  log_softmax of its logits); a candidate that is eos_token_id[0] (the tokenizer's one eos) joins the finished
  list, whatever its rank, every other candidate the pool; the K best of the pool by cum_logprob / len ** lp run on,
  len = the unpadded prompt + the new tokens; always max_new_tokens steps (no early stopping); at the end finished +
  running, sorted by the same score with len not counting a final eos, the best K returned (Python's stable sort:
  equal scores keep their order).
* ``loop="flax"`` (transformers 4.38.2 ``FlaxGenerationMixin._beam_search``, generation/flax_utils.py :745-1019;
  FINDINGS FX5-FX7): K running beams and K finished slots per prompt, the slots filled with score -1e7 and a row
  of pad_token_id (:815, :824). Each step: the top 2K candidates (:932-933); the running beams are the top K of
  the candidates with every eos pushed down by -1e7 (:947-955); EVERY candidate is offered to the slots with score
  / (generated incl. the new token) ** lp in float32, a non-eos one (or any, once the prompt's K slots are finished
  under early_stopping True) pushed down by -1e7, and the slots keep the top K of their K + 2K (ties: the lower
  index, the slots first; :962-979). The batch goes on while some prompt's best running beam / L ** lp beats the
  worst score of its slots, where an unfinished slot counts -1e7 (L the generated length, or max_new_tokens for
  "never" with lp > 0), and not every slot of the batch is finished under early_stopping True (:853-881): no
  prompt is frozen. No finalize: a prompt with a finished slot returns its first num_return_sequences slots
  (empty ones an all-pad row, score -1e7), one without returns its running beams with their raw sums (:1011-1017).
"""

from __future__ import annotations

import itertools

import numpy as np

from ...numerics.introsort import std_partial_sort_literal, std_pop_heap, std_push_heap
from .beam import candidates
from .rules import EngineRules
from .steps import NextTokenLogits, Prompt, log_softmax, softmax

__all__ = ["beam_5", "beam_ct2", "beam_keras", "beam_ov", "beam_tf", "beam_vllm", "beam_flax", "FLAX_NEG"]

#: Flax's score for an empty finished slot and its push-down of a candidate (flax_utils.py :823-824, :948, :967)
FLAX_NEG = np.float32(-1.0e7)


def beam_5(logits: NextTokenLogits, prompt: Prompt, rules: EngineRules,
           margins: list | None = None) -> list[tuple[list[int], float]]:
    """transformers 5.x's vectorised beam search for one prompt (``margins``: gets each step's decision margin)."""
    cfg = prompt.config
    K, lp, es = int(cfg["num_beams"]), float(cfg["length_penalty"]), cfg["early_stopping"]
    beams: list[tuple[np.float32, list[int]]] = [(np.float32(0), [])]
    hyps: list[tuple[float, list[int]]] = []      # (normalised score, new tokens), best first
    heuristic_open = True                          # is_early_stop_heuristic_unsatisfied (sticky)
    for step in range(prompt.max_new):
        last = step == prompt.max_new - 1
        cands = candidates(logits, prompt, beams, rules, step, margins)
        hits = [c[0] in prompt.eos or last for c in cands]
        # running beams: the best K non-hits (a hit is pushed down by -1e9, as 5.x does)
        pushed = [float(c[1]) + (-1e9 if h else 0.0) for c, h in zip(cands, hits)]
        running = sorted(range(len(cands)), key=lambda i: -pushed[i])[:K]
        new = [(np.float32(pushed[i]), beams[cands[i][2]][1] + [cands[i][0]]) for i in running]
        full = len(hyps) == K and es is True
        if heuristic_open and not full:
            for rank, (tok, score, src) in enumerate(cands[:K]):
                if hits[rank]:
                    hyps.append((float(score) / (step + 1) ** lp, beams[src][1] + [tok]))
            hyps.sort(key=lambda h: -h[0])        # stable: among equal scores the kept ones first
            del hyps[K:]
        beams = new
        length = prompt.max_new if (es == "never" and lp > 0) else step + 1
        if len(hyps) == K:
            heuristic_open = heuristic_open and float(beams[0][0]) / length ** lp > hyps[-1][0]
        if not heuristic_open or (len(hyps) == K and es is True) or last:
            break
    return [(gen, score) for score, gen in hyps[:int(cfg["num_return_sequences"])]]


def beam_ct2(logits: NextTokenLogits, prompt: Prompt, rules: EngineRules,
             margins: list | None = None) -> list[tuple[list[int], float]]:
    """CTranslate2's BeamSearch::search for one prompt (``margins``: gets each step's decision margin)."""
    cfg = prompt.config
    K, lp, nrs = int(cfg["num_beams"]), float(cfg["length_penalty"]), int(cfg["num_return_sequences"])
    off = len(prompt.real) - 1 if rules.offset else 0
    beams: list[tuple[np.float32, list[int]]] = [(np.float32(0), [])]
    hyps: list[tuple[float, list[int]]] = []      # (sum of log-probs, new tokens), all kept
    top_finished = False
    for step in range(prompt.max_new):
        last = step == prompt.max_new - 1
        cands = candidates(logits, prompt, beams, rules, step, margins)
        new, secondary = [], K
        for k in range(K):
            tok, score, src = cands[k]
            take = k
            if tok in prompt.eos or last:
                top_finished = top_finished or k == 0
                hyps.append((float(score), beams[src][1] + [tok]))
                for j in range(secondary, len(cands)):   # beam k continues with the next non-eos of rank >= K
                    if cands[j][0] not in prompt.eos:
                        take, secondary = j, j + 1
                        break
            t, s, o = cands[take]
            new.append((s, beams[o][1] + [t]))
        beams = new
        if last or (top_finished and len(hyps) >= nrs if lp == 0 else len(hyps) >= K):
            break
    scored = [(float(np.float32(s) / np.float32(np.float32(len(g) + off) ** np.float32(lp))), g) for s, g in hyps]
    scored.sort(key=lambda h: -h[0])
    return [(g, s) for s, g in scored[:nrs]]


def beam_keras(logits: NextTokenLogits, prompts: list[Prompt],
               rules: EngineRules) -> list[list[tuple[list[int], float]]]:
    """keras-hub's BeamSampler over the batch (lockstep, right-padded; see the module docstring)."""
    K = int(prompts[0].config["num_beams"])
    width = prompts[0].T + prompts[0].max_new
    # per prompt: K beams of (log-prob float32, tokens so far = real prompt + generated)
    start = min(len(p.real) for p in prompts)
    beams = [[(np.float32(0 if k == 0 else -1e9), list(p.real[:start])) for k in range(K)] for p in prompts]

    def finished(p: Prompt, toks: list[int]) -> bool:
        return any(t in p.eos for t in toks[len(p.real):])

    for index in range(start, width):
        if all(finished(p, toks) for p, bs in zip(prompts, beams) for _, toks in bs):
            break
        for b, p in enumerate(prompts):
            with np.errstate(divide="ignore"):
                rows = [(np.log(softmax(logits(toks))) + s).astype(np.float32) for s, toks in beams[b]]
            flat = np.concatenate(rows)                                   # (K*V,)
            V = flat.size // K
            top = np.argsort(-flat, kind="stable")[:K]
            forced = index < len(p.real)       # inside this row's prompt: the token is forced, the value kept
            beams[b] = [(np.float32(flat[i]), beams[b][i // V][1] + [p.real[index] if forced else int(i % V)])
                        for i in top]
    nrs = int(prompts[0].config["num_return_sequences"])
    out = []
    for b, p in enumerate(prompts):
        order = sorted(range(K), key=lambda k: -float(beams[b][k][0]))   # stable
        rows = []
        for k in order[:nrs]:
            new = beams[b][k][1][len(p.real):]
            hit = [i for i, t in enumerate(new) if t in p.eos]
            rows.append((new[:hit[0] + 1] if hit else new, float(beams[b][k][0])))
        out.append(rows)
    return out


def _log_softmax_seq(x: np.ndarray) -> np.ndarray:
    """float32 log_softmax of one row (V,) with the sum of exps accumulated in order (``std::accumulate``)."""
    x = np.asarray(x, dtype=np.float32)
    shifted = (x - x.max()).astype(np.float32)
    log_sum = np.log(np.cumsum(np.exp(shifted), dtype=np.float32)[-1])
    return (shifted - log_sum).astype(np.float32)


def _over_length(score: np.float32, length: int, lp: np.float32) -> np.float32:
    """float32 ``score / std::pow(float(length), lp)`` (0 ** lp: 0 or inf, so 0 / 0 is NaN, as in C++)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float32(np.float32(score) / np.power(np.float32(length), lp))


class _OvGroup:
    """One group of GroupBeamSearcher: its running beams (beam score, the sequence's sum of log-probs, new tokens;
    the first at 0, the others at -inf on the prompt), its min-heap of finished ones, whether it is done."""

    def __init__(self, size: int, lp: np.float32):
        self.size, self.lp, self.done = size, lp, False
        self.beams = [(np.float32(0), np.float32(0), [])] + [(np.float32(-np.inf), np.float32(0), [])] * (size - 1)
        self.heap: list[tuple] = []     # (-normalised score, insertion number, sum of log-probs, new tokens)

    def finish(self, score: np.float32, total: np.float32, gen: list[int], count) -> None:   # Group::finish
        std_push_heap(self.heap, (-float(_over_length(score, len(gen), self.lp)), next(count), total, gen))
        if len(self.heap) > self.size:
            std_pop_heap(self.heap)


def beam_ov(logits: NextTokenLogits, prompt: Prompt, rules: EngineRules) -> list[tuple[list[int], float]]:
    """OpenVINO GenAI's GroupBeamSearcher for one prompt (see the module docstring); with num_beam_groups G, each
    group of K / G beams in turn, its log-probs lowered by diversity_penalty once per beam the groups before it
    chose at this step (sampler.cpp:367-372), before the n-gram ban."""
    cfg = prompt.config
    G = int(cfg.get("num_beam_groups") or 1)
    K, es, div = int(cfg["num_beams"]) // G, cfg["early_stopping"], np.float32(cfg.get("diversity_penalty") or 0.0)
    lp = np.float32(cfg["length_penalty"])
    ninf = np.float32(-np.inf)
    groups, count = [_OvGroup(K, lp) for _ in range(G)], itertools.count()
    for step in range(prompt.max_new):
        chosen: list[int] = []                               # this step's new tokens of the groups so far
        for group in groups:
            if group.done:
                continue
            cands = []
            for b, (score, total, gen) in enumerate(group.beams):
                row = _log_softmax_seq(logits(prompt.model_tokens(gen)))
                for tok in chosen:
                    row[tok] = np.float32(row[tok] - div)
                row = prompt.ban_ngrams(row, gen, ninf, min_seen=2)
                if len(gen) < prompt.min_gen:            # 0 under beam_min_new=False (GenAI's own rule, O4)
                    row[prompt.eos] = ninf
                for tok in np.argsort(-row, kind="stable")[:2 * K]:
                    cands.append((np.float32(score + row[tok]), np.float32(total + row[tok]), int(tok), b))
            children = []
            for rank, i in enumerate(std_partial_sort_literal([-float(c[0]) for c in cands], 2 * K)):
                score, total, tok, src = cands[i]
                if tok in prompt.eos:
                    if rank < K:
                        group.finish(score, total, group.beams[src][2] + [tok], count)
                    continue
                children.append((score, total, group.beams[src][2] + [tok]))
                if len(children) == K:
                    break
            if len(group.heap) >= K:     # Group::is_done, with the previous step's best running beam
                length = prompt.max_new if (es == "never" and lp > 0) else step
                group.done = es is True or -group.heap[0][0] >= _over_length(group.beams[0][0], length, lp)
            group.done = group.done or not children
            chosen += [gen[-1] for _, _, gen in children]    # kept for the next groups even if this one is done
            if not group.done:
                group.beams = children
                if step == prompt.max_new - 1:               # finalize
                    for score, total, gen in children:
                        group.finish(score, total, gen, count)
        if all(g.done for g in groups):
            break
    ranked = sorted((h for g in groups for h in g.heap), key=lambda h: (-float(_over_length(h[2], len(h[3]), lp)),
                                                                         h[1]))
    return [(h[3], float(_over_length(h[2], len(h[3]), lp))) for h in ranked[:int(cfg["num_return_sequences"])]]
NEG = np.float32(-1.0e9)


def _top(values: list, k: int) -> list[int]:
    """Indices of the k largest values, ties to the lower index (tf.math.top_k)."""
    return sorted(range(len(values)), key=lambda i: -float(values[i]))[:k]


def _tf_pow(length: int, lp: float) -> np.float32:
    """float32(length) ** float32(lp) (``tf.cast(..., tf.float32) ** length_penalty``)."""
    return np.float32(np.power(np.float32(length), np.float32(lp), dtype=np.float32))


def beam_tf(logits: NextTokenLogits, prompts: list[Prompt], rules: EngineRules,
            margins: list[list] | None = None) -> tuple[list[list[tuple[list[int] | None, float]]], int]:
    """TF 4.38.2's beam search over the batch: per prompt [(new tokens, or None for an unset slot, score)] best
    first, and the steps run (the rows' common new width); ``margins``: per prompt, each step's decision margin."""
    cfg = prompts[0].config
    K, lp, es = int(cfg["num_beams"]), float(cfg["length_penalty"]), cfg["early_stopping"]
    max_new, nrs = prompts[0].max_new, int(cfg["num_return_sequences"])
    running = [[(np.float32(0 if k == 0 else NEG), []) for k in range(K)] for _ in prompts]
    finished = [[(NEG, None, False) for _ in range(K)] for _ in prompts]     # (score, new tokens, is finished)
    steps = 0
    while steps < max_new:
        if steps > 0:                                                        # beam_search_cond_fn
            L = max_new if (es == "never" and lp > 0) else steps
            div = np.float32(L ** lp) if (es == "never" and lp > 0) else _tf_pow(L, lp)
            improve = any(run[0][0] / div > (min(f[0] for f in fin) if ok else NEG)
                          for run, fin in zip(running, finished) for _, _, ok in fin)
            if not improve or (es is True and all(ok for fin in finished for _, _, ok in fin)):
                break
        div = _tf_pow(steps + 1, lp)
        for b, p in enumerate(prompts):
            cands = candidates(logits, p, running[b], rules, steps,          # 2K: [token, score, source slot]
                               None if margins is None else margins[b])
            eos = [c[0] in p.eos for c in cands]
            full = es is True and all(ok for _, _, ok in finished[b])
            pushed = [np.float32(c[1] + (NEG if e else np.float32(0))) for c, e in zip(cands, eos)]
            new = [(np.float32(c[1] / div + (np.float32(0) if (e and i < K and not full) else NEG)),
                    running[b][c[2]][1] + [c[0]], bool(e and i < K)) for i, (c, e) in enumerate(zip(cands, eos))]
            merged = finished[b] + new
            finished[b] = [merged[i] for i in _top([m[0] for m in merged], K)]
            running[b] = [(pushed[i], running[b][cands[i][2]][1] + [cands[i][0]]) for i in _top(pushed, K)]
        steps += 1
    out = []
    for run, fin in zip(running, finished):
        if any(ok for _, _, ok in fin):
            out.append([(gen, float(score)) for score, gen, _ in fin[:nrs]])
        else:
            out.append([(gen, float(score / _tf_pow(steps, lp))) for score, gen in run[:nrs]])
    return out, steps


def beam_vllm(logits: NextTokenLogits, prompt: Prompt, rules: EngineRules) -> list[tuple[list[int], float]]:
    """vLLM's LLM.beam_search for one prompt (see the module docstring); scores are cum_logprob / len ** lp."""
    cfg = prompt.config
    K, lp, eos = int(cfg["num_beams"]), float(cfg["length_penalty"]), prompt.eos[0]

    def key(item: tuple[float, list[int]]) -> float:          # utils.py get_beam_search_score
        cum, gen = item
        n = len(prompt.real) + len(gen) - (1 if gen and gen[-1] == eos else 0)
        return cum / (max(n, 1) ** lp)

    beams: list[tuple[float, list[int]]] = [(0.0, [])]         # (cum_logprob, new tokens), Python floats
    finished: list[tuple[float, list[int]]] = []
    for _ in range(prompt.max_new):
        pool = []
        for cum, gen in beams:
            row = log_softmax(logits(prompt.model_tokens(gen)))  # float32 (V,)
            for tok in np.argsort(-row, kind="stable")[:2 * K]:  # its own top 2K, best first
                item = (cum + float(row[tok]), gen + [int(tok)])
                (finished if tok == eos else pool).append(item)
        beams = sorted(pool, key=key, reverse=True)[:K]
        if not beams:
            break
    ranked = sorted(finished + beams, key=key, reverse=True)[:K]
    return [(gen, key((cum, gen))) for cum, gen in ranked[:int(cfg["num_return_sequences"])]]
def beam_flax(logits: NextTokenLogits, prompts: list[Prompt], rules: EngineRules,
              margins: list[list] | None = None) -> list[list[tuple[list[int] | None, float]]]:
    """transformers 4.38.2's Flax beam search over the batch (see the module docstring); new tokens ``None``: an
    empty slot (written as a row of pad_token_id); ``margins``: per prompt, each step's decision margin."""
    cfg = prompts[0].config
    K, lp, es = int(cfg["num_beams"]), float(cfg["length_penalty"]), cfg["early_stopping"]
    max_new, nrs = prompts[0].max_new, int(cfg["num_return_sequences"])
    running = [[(np.float32(0), [])] for _ in prompts]         # (sum of log-probs, new tokens), best first
    slots: list[list[tuple[np.float32, list[int] | None, bool]]] = [[(FLAX_NEG, None, False)] * K for _ in prompts]
    for step in range(max_new):
        if step > 0 and not _flax_goes_on(running, slots, step, max_new, lp, es):
            break
        denom = np.float32(step + 1) ** np.float32(lp)       # (cur_len + 1 - prompt_len) ** lp, float32
        for b, prompt in enumerate(prompts):
            cands = candidates(logits, prompt, running[b], rules, step,          # the top 2K
                               None if margins is None else margins[b])
            ends = [tok in prompt.eos for tok, _, _ in cands]
            pushed = [np.float32(s + FLAX_NEG) if e else s for (_, s, _), e in zip(cands, ends)]
            keep = sorted(range(len(cands)), key=lambda i: -float(pushed[i]))[:K]
            full = es is True and all(f for _, _, f in slots[b])
            offered = []
            for (tok, s, src), e in zip(cands, ends):
                score = np.float32(np.float32(s) / denom)
                offered.append((score if e and not full else np.float32(score + FLAX_NEG),
                                running[b][src][1] + [tok], e))
            slots[b] = sorted(slots[b] + offered, key=lambda h: -float(h[0]))[:K]   # stable: the lower index
            running[b] = [(pushed[i], running[b][cands[i][2]][1] + [cands[i][0]]) for i in keep]
    out = []
    for b in range(len(prompts)):
        if any(f for _, _, f in slots[b]):
            out.append([(g, float(s)) for s, g, _ in slots[b][:nrs]])
        else:                                                 # none finished: the running beams, raw sums
            out.append([(g, float(s)) for s, g in running[b][:nrs]])
    return out


def _flax_goes_on(running: list, slots: list, step: int, max_new: int, lp: float, es: object) -> bool:
    """``beam_search_cond_fn`` before generated step ``step`` (flax_utils.py :853-881), over the whole batch."""
    if es is True and all(f for s in slots for _, _, f in s):
        return False
    if es == "never" and lp > 0:
        denom = np.float32(float(max_new) ** lp)             # Python ints: a double, then float32
    else:
        denom = np.float32(step) ** np.float32(lp)
    for beams, held in zip(running, slots):
        best = np.float32(np.float32(beams[0][0]) / denom)
        worst = min(s for s, _, _ in held)
        if any(best > (worst if f else FLAX_NEG) for _, _, f in held):
            return True
    return False
