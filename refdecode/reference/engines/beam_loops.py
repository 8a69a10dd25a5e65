r"""The beam loops that are not 4.38.2's bookkeeping: transformers 5.x, CTranslate2, keras-hub and 4.38.2's Flax.

Contract: ``beam_5`` and ``beam_ct2`` take one prompt, ``beam_keras`` and ``beam_flax`` the whole batch; each
returns, per prompt,
[(new tokens, score)] best first (num_return_sequences of them). New tokens keep their eos; the candidates come
from ``beam.candidates`` (so ``candidates``, ``first_eos`` and the processors' switches apply).

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

import numpy as np

from .beam import candidates
from .rules import EngineRules
from .steps import NextTokenLogits, Prompt, softmax

__all__ = ["beam_5", "beam_ct2", "beam_keras", "beam_flax", "FLAX_NEG"]

#: Flax's score for an empty finished slot and its push-down of a candidate (flax_utils.py :823-824, :948, :967)
FLAX_NEG = np.float32(-1.0e7)


def beam_5(logits: NextTokenLogits, prompt: Prompt, rules: EngineRules) -> list[tuple[list[int], float]]:
    """transformers 5.x's vectorised beam search for one prompt."""
    cfg = prompt.config
    K, lp, es = int(cfg["num_beams"]), float(cfg["length_penalty"]), cfg["early_stopping"]
    beams: list[tuple[np.float32, list[int]]] = [(np.float32(0), [])]
    hyps: list[tuple[float, list[int]]] = []      # (normalised score, new tokens), best first
    heuristic_open = True                          # is_early_stop_heuristic_unsatisfied (sticky)
    for step in range(prompt.max_new):
        last = step == prompt.max_new - 1
        cands = candidates(logits, prompt, beams, rules, step)
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


def beam_ct2(logits: NextTokenLogits, prompt: Prompt, rules: EngineRules) -> list[tuple[list[int], float]]:
    """CTranslate2's BeamSearch::search for one prompt."""
    cfg = prompt.config
    K, lp, nrs = int(cfg["num_beams"]), float(cfg["length_penalty"]), int(cfg["num_return_sequences"])
    off = len(prompt.real) - 1 if rules.offset else 0
    beams: list[tuple[np.float32, list[int]]] = [(np.float32(0), [])]
    hyps: list[tuple[float, list[int]]] = []      # (sum of log-probs, new tokens), all kept
    top_finished = False
    for step in range(prompt.max_new):
        last = step == prompt.max_new - 1
        cands = candidates(logits, prompt, beams, rules, step)
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


def beam_flax(logits: NextTokenLogits, prompts: list[Prompt],
              rules: EngineRules) -> list[list[tuple[list[int] | None, float]]]:
    """transformers 4.38.2's Flax beam search over the batch (see the module docstring); new tokens ``None``: an
    empty slot (written as a row of pad_token_id)."""
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
            cands = candidates(logits, prompt, running[b], rules, step)          # the top 2K
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
