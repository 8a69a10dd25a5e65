r"""Beam search with transformers 4.38.2's bookkeeping (BeamSearchScorer / BeamHypotheses), rule by rule switchable.

Contract: ``beam_search(logits, prompts, rules) -> [[(new tokens, score)] * num_return_sequences per prompt]``,
best first; new tokens keep the eos that finished a hypothesis (``decode.py`` writes it as ``eos_out`` says).
``loop="4.38"`` only; the other loops are in ``beam_loops.py``.

4.38.2's rule (beam_search.py ``BeamSearchScorer.process`` :223-316, ``BeamHypotheses`` :936-1006, ``finalize``
:318-362; utils.py ``_beam_search``), per prompt and step:

1. candidates: the top max(2, 1 + n_eos) * K of (beam score + processed log-probs), flattened (K*V,);
2. walk them by rank: an eos of rank < K becomes a hypothesis with score sum / generated_len ** lp
   (generated_len counts the eos); other tokens fill the K next beams;
3. done when K hypotheses are kept and: early_stopping True; or worst kept >= best candidate / L ** lp with
   L = generated length (False, or "never" with lp <= 0) or max_new_tokens ("never", lp > 0);
4. at max_length, the K running beams of unfinished prompts are added; the best num_return_sequences win,
   among equal scores the later inserted.

With ``candidates="2k"`` a step may hold fewer than K non-eos candidates among the 2K (more than K eos: two or more
eos ids); 4.38.2's max(2, 1 + n_eos) * K never does. onnxruntime-genai then keeps the unfilled slots' values of
the last step that filled them (``_walk``; its FINDINGS.md, G5). At the first step those are its initial scores
(0 for the first slot, -1e9 for the others) and a token and source beam from uninitialised memory: such a beam is
carried with the token :data:`UNKNOWN`. If the batch's search goes on, the engine feeds that token to the model at
the next step (:class:`Undefined`: measured, ORT's "indices element out of data bounds" or a crash); if it ends
there, the unknown beam's score keeps it out of the answer, which the engine gives unless reading the slot's source
index crashes it (``decode_as``'s ``events`` say ``stale_slots`` at step 0); an answer that would show the unknown
beam is :class:`Undefined` too.

The switches (``EngineRules``): ``candidates``, ``first_eos``, ``finish``, ``last``, ``offset``,
``hyp_length_with_prompt``, ``can_improve_length``, ``can_improve_offset``, ``tie_earlier_wins``.
"""

from __future__ import annotations

import math

import numpy as np

from .rules import EngineRules
from .steps import NextTokenLogits, Prompt

__all__ = ["beam_search", "Hypotheses", "candidates", "decision_margin", "NotSimulated", "Undefined", "UNKNOWN"]

#: the token of a beam slot onnxruntime-genai never wrote (uninitialised memory; G5): never read, only carried
UNKNOWN = -1


class NotSimulated(ValueError):
    """The engine reaches a state its own code leaves undefined (e.g. a release build's compiled-out assert)."""


class Undefined(NotSimulated):
    """The engine's answer depends on memory its code never wrote: the profile predicts no rows. What the engine
    does is then its luck (measured for onnxruntime-genai: an error or a crash; rarely rows)."""


class Hypotheses:
    """BeamHypotheses: the K best finished hypotheses of one prompt (the kept set is the state)."""

    def __init__(self, num_beams: int, length_penalty: float, earlier_wins: bool):
        self.k, self.lp, self.earlier = num_beams, length_penalty, earlier_wins
        self.items: list[tuple[float, int, list[int]]] = []   # (score, insertion number, new tokens)
        self.count = 0

    def add(self, tokens: list[int], sum_logprobs: float, length: int) -> None:
        """score = sum_logprobs / length ** lp (Python floats, as 4.38.2's ``.item()``); kept if among the K best."""
        score = sum_logprobs / (length ** self.lp)
        if len(self.items) >= self.k and not score > self.worst():
            return
        self.items.append((score, self.count, tokens))
        self.count += 1
        if len(self.items) > self.k:
            self.items.remove(self.ranked()[-1])

    def ranked(self) -> list[tuple[float, int, list[int]]]:
        """Best first; equal scores: the later inserted first (4.38.2) or the earlier (``tie_earlier_wins``)."""
        return sorted(self.items, key=lambda h: (-h[0], h[1] if self.earlier else -h[1]))

    def worst(self) -> float:
        return self.ranked()[-1][0]


def candidates(logits: NextTokenLogits, prompt: Prompt, beams: list[tuple[np.float32, list[int]]],
               rules: EngineRules, step: int, margins: list | None = None) -> list[list]:
    """[[token, score float32, source beam]] best first: the top n of the K beams' (V,) scores, flattened (K*V,).
    ``margins``: a list that gets this step's decision margin (``decision_margin`` of the top n + 1 scores)."""
    K = int(prompt.config["num_beams"])
    n = max(2, 1 + len(prompt.eos)) * K if rules.candidates == "hf" else 2 * K
    flat = np.concatenate([prompt.beam_scores(logits, gen, score) for score, gen in beams])   # (K*V,)
    V = flat.size // len(beams)
    order = np.argsort(-flat, kind="stable")[:n + 1]      # ties: the lower flat index first (torch.topk on CPU)
    if margins is not None:
        margins.append(decision_margin(flat[order]))
    cands = [[int(i % V), np.float32(flat[i]), int(i // V)] for i in order[:n]]
    if rules.first_eos and step == 0:                     # CTranslate2 C6
        for c in cands[1:]:
            if c[0] in prompt.eos:
                c[0], c[1], c[2] = 0, np.float32(-1e10), 0
    return cands


def decision_margin(ranked: np.ndarray) -> float | None:
    """The step's margin: the smallest positive gap between consecutive scores of the ranked candidates (the kept
    n and the first left out), over the row's scale max(1, max |score|); None when no gap is positive (an exact tie
    is the tie rule's, not a near-tie). The suite's ``row_gap`` (conformance/cases_decode.py), so a profile's
    margin and a case's compare with one ``TOLERANCE``.

    >>> decision_margin(np.array([-1.0, -1.00002, -3.0], dtype=np.float32)) < 1e-4
    True
    """
    finite = ranked[np.isfinite(ranked)].astype(np.float64)
    gaps = finite[:-1] - finite[1:]
    gaps = gaps[gaps > 0]
    return float(gaps.min()) / max(1.0, float(np.abs(finite).max())) if gaps.size else None


def _length(prompt: Prompt, gen: list[int], eos_ended: bool, rules: EngineRules) -> int:
    """The length in the length penalty of a hypothesis with new tokens ``gen`` (its eos included if any)."""
    if rules.hyp_length_with_prompt:                      # genai G2: padded width + new tokens without the eos
        return prompt.T + len(gen) - (1 if eos_ended else 0)
    return len(gen) + (len(prompt.real) - 1 if rules.offset else 0)


class _State:
    """One prompt's search: its running beams, its hypotheses, whether it is done."""

    def __init__(self, prompt: Prompt, rules: EngineRules):
        cfg = prompt.config
        self.prompt, self.K = prompt, int(cfg["num_beams"])
        self.lp, self.es = float(cfg["length_penalty"]), cfg["early_stopping"]
        self.hyps = Hypotheses(self.K, self.lp, rules.tie_earlier_wins)
        self.beams: list[tuple[np.float32, list[int]]] = [(np.float32(0), [])]
        self.done = False
        self.added = 0              # hypotheses ever added (CTranslate2 counts them all)
        self.top_finished = False   # CTranslate2: the rank-0 candidate was an eos at some step
        self.slots: list[tuple[np.float32, int, int]] | None = None   # the K slots last written (genai G5)
        self.step = 0
        self.unknown = False        # genai G5: a slot holds uninitialised memory since the first step


def _walk(state: _State, cands: list[list], rules: EngineRules, events: list | None = None) -> None:
    """Step 2: eos candidates of rank < K become hypotheses; the other candidates fill the K next beams.

    Fewer than K non-eos candidates (only with ``candidates="2k"``: more than K eos among the 2K): the slots
    left unfilled keep the (score, token, source beam) they were given at the last step that filled them,
    applied to the current beams (onnxruntime-genai G5: ``BeamSearchScorer::Process`` writes the member arrays
    next_beam_scores_ / next_beam_tokens_ / next_beam_indices_ only up to beam_idx, its ``assert(beam_idx ==
    num_beams_)`` is compiled out, and ``BeamSearch_Cpu::AppendNextTokensToSequences`` and the KV cache's
    ``PickPastState`` read all K slots).
    """
    new: list[tuple[np.float32, int, int]] = []   # (score, token, source beam)
    for rank, (tok, score, src) in enumerate(cands):
        if tok in state.prompt.eos:
            if rank >= state.K:
                continue
            gen = state.beams[src][1] + [tok]
            state.hyps.add(gen, float(score), _length(state.prompt, gen, True, rules))
            state.added += 1
            state.top_finished = state.top_finished or rank == 0
        else:
            new.append((score, tok, src))
        if len(new) == state.K:
            break
    if len(new) < state.K:
        if events is not None:
            events.append({"event": "stale_slots", "step": state.step, "filled": len(new), "num_beams": state.K})
        if state.slots is None:
            # first step: the constructor's scores (0 for slot 0, -1e9 for the others); token and source beam
            # from uninitialised memory (DeviceBuffer of the ORT allocator). Slot 0 unfilled (all 2K eos) would
            # make the unknown beam the best one: everything after it depends on that memory.
            state.slots = [(np.float32(0 if j == 0 else -1e9), UNKNOWN, 0) for j in range(state.K)]
            state.unknown = True
        new += state.slots[len(new):]
    state.slots = new
    state.beams = [(score, state.beams[src][1] + [tok]) for score, tok, src in new]


def _is_done(state: _State, best: float, step: int, rules: EngineRules) -> bool:
    """Step 3 (``finish``), after the walk of generated step ``step`` (0-based)."""
    prompt, K, lp = state.prompt, state.K, state.lp
    off = len(prompt.real) - 1 if rules.offset else 0
    if rules.finish == "ct2":
        nrs = int(prompt.config["num_return_sequences"])
        return (state.top_finished and state.added >= nrs) if lp == 0 else state.added >= K
    if len(state.hyps.items) < K:
        return False
    if rules.finish == "5":
        length = prompt.max_new if (state.es == "never" and lp > 0) else step + 1
        return state.es is True or float(state.beams[0][0]) / (length + off) ** lp <= state.hyps.worst()
    if state.es is True:
        return True
    if rules.can_improve_length:          # genai G3: the row length before the new token
        length = prompt.T + step
    elif state.es == "never" and lp > 0:
        length = prompt.max_new
    else:
        length = step + 1
    return state.hyps.worst() >= float(np.float32(best)) / math.pow(length + off, lp)


def beam_search(logits: NextTokenLogits, prompts: list[Prompt], rules: EngineRules, events: list | None = None,
                margins: list[list] | None = None) -> list[list[tuple[list[int], float]]]:
    """The 4.38 loop over all prompts in lockstep (``can_improve_offset`` reads across prompts); ``events``: a list
    that gets a dict for each step where a prompt ran short of non-eos candidates (G5's unfilled slots);
    ``margins``: one list per prompt that gets its decision margin at each step it searched."""
    states = [_State(p, rules) for p in prompts]
    for step in range(max(p.max_new for p in prompts)):   # one budget for all but under lengths_from_unpadded
        live = [not s.done and step < s.prompt.max_new for s in states]
        # 1) candidates of every prompt still searching
        cands = [candidates(logits, s.prompt, s.beams, rules, step, None if margins is None else margins[b])
                 for b, (s, on) in enumerate(zip(states, live))]
        for b, state in enumerate(states):
            if not live[b]:
                continue
            last = step == state.prompt.max_new - 1
            if last and rules.last == "topk":     # 5.x / CTranslate2: the top K candidates finish, eos or not
                for tok, score, src in cands[b][:state.K]:
                    gen = state.beams[src][1] + [tok]
                    state.hyps.add(gen, float(score), _length(state.prompt, gen, tok in state.prompt.eos, rules))
                state.done = True
                continue
            # 2) the walk, 3) done?
            state.step = step
            _walk(state, cands[b], rules, events)
            state.done = _is_done(state, _best(cands, b, state.K, rules), step, rules)
        if all(s.done for s in states):
            break
        # a next step runs the model on every slot, a finished prompt's too (its slots are padded only then)
        if any(s.unknown for s in states) and step + 1 < max(p.max_new for p in prompts):
            raise Undefined("onnxruntime-genai feeds a token from uninitialised memory to the model (a beam slot "
                            "the first step never wrote, G5)")
    # 4) finalize: the running beams of the prompts still open
    for state in states:
        if not state.done:
            for score, gen in state.beams:
                state.hyps.add(gen, float(score), _length(state.prompt, gen, False, rules))
    nrs = int(prompts[0].config["num_return_sequences"])
    found = [[(gen, score) for score, _, gen in s.hyps.ranked()[:nrs]] for s in states]
    if any(UNKNOWN in gen for rows in found for gen, _ in rows):
        raise Undefined("a returned row is a beam slot the first step never wrote (onnxruntime-genai G5)")
    return found


def _best(cands: list[list[list]], b: int, K: int, rules: EngineRules) -> float:
    """The best candidate score of prompt b; genai G4 reads the window [b*K, b*K + 2K) of all prompts' 2K each."""
    if not rules.can_improve_offset:
        return float(cands[b][0][1])
    flat = [float(c[1]) for cs in cands for c in cs[:2 * K]]
    window = flat[b * K: b * K + 2 * K]
    return max(window) if window else float(cands[b][0][1])
