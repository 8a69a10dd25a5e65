r"""Decoding rules of transformers 4.38.2, transformers 5.x and CTranslate2 4.8, as switches over one NumPy decoder.

    .venv/bin/python examples/engines/common/decode_rules.py RESPONSES.jsonl --engine ctranslate2|transformers-5 \
        [--attribute] [-v]

RESPONSES.jsonl is what ``record_responses.py`` wrote for an engine's adapter. For every answered greedy / beam
decode, this runs the engine's rules (the preset) and prints whether they give the engine's sequences, token for
token; ``--attribute`` also finds, for each case where the engine differs from transformers 4.38.2, the smallest
sets of switches (starting from 4.38.2's rules) that turn 4.38.2's output into the engine's: the cause(s) of that
case. It runs in refdecode's venv (NumPy + refdecode's GPT-2 forward pass; no torch, no engine).

The switches (``Rules``; each preset's values are in ``PRESETS``; FINDINGS.md cites the source line of each):

``rp_ctx`` / ``ngram_ctx``: the tokens the repetition penalty / no-repeat n-gram see, besides the generated ones:
    ``row`` the whole padded row (4.38.2), ``unpadded`` the prompt without left padding (5.x's repetition
    penalty), ``tail`` the prompt without its first token (CTranslate2 with include_prompt_in_result=True: the
    first token is the start token, outside ``alive_seq``), ``none`` (CTranslate2 with include_prompt_in_result
    =False).
``min_length``: ``4.38`` min_length (counting the padded width) and min_new_tokens both apply; ``5``:
    min_new_tokens set (0 included) replaces min_length by min_new_tokens + input length, so min_length is void.
``renorm``: beam search applies the processors to the logits and then log_softmax (CTranslate2), instead of
    log_softmax and then the processors, not renormalised (transformers).
``cands``: candidates per step, ``hf`` max(2, 1 + n_eos) * K, ``2k`` 2 * K (CTranslate2).
``loop``: the beam bookkeeping, ``4.38`` (BeamSearchScorer / BeamHypotheses), ``5`` (the vectorised
    ``_beam_search`` of 5.x), ``ct2`` (CTranslate2's BeamSearch::search). Each brings its finishing rule, its
    last-step rule and its way of writing the eos (4.38.2 writes eos_token_id[0] after a finished hypothesis,
    whichever eos ended it).
``offset``: the length-penalty length adds len(prompt) - 1 (CTranslate2 with include_prompt_in_result=True).
``first_eos``: at the first generated step, eos candidates of rank > 0 become token 0 with score -1e10
    (CTranslate2's update_sample_with_prefix, with a prompt prefix).
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from refdecode import GPT2

LOWEST = np.finfo(np.float32).min
NEG = np.float32(-np.inf)


@dataclass(frozen=True)
class Rules:
    rp_ctx: str = "row"
    ngram_ctx: str = "row"
    min_length: str = "4.38"
    renorm: bool = False
    cands: str = "hf"
    loop: str = "4.38"
    offset: bool = False
    first_eos: bool = False
    # finer switches inside the 4.38 loop (attribution only; the presets' own loops have them built in)
    finish: str = "4.38"
    last: str = "finalize"
    eos_out: str = "first"


PRESETS = {
    "transformers-4.38.2": Rules(),
    "transformers-5": Rules(rp_ctx="unpadded", min_length="5", loop="5"),
    "ctranslate2": Rules(rp_ctx="tail", ngram_ctx="tail", renorm=True, cands="2k", loop="ct2", offset=True,
                         first_eos=True),
    "ctranslate2-noprompt": Rules(rp_ctx="none", ngram_ctx="none", renorm=True, cands="2k", loop="ct2"),
}

# the same engines with loop="4.38" and the finer switches: what --attribute varies
ATTRIBUTION = {
    "transformers-5": replace(PRESETS["transformers-5"], loop="4.38", finish="5", last="topk", eos_out="actual"),
    "ctranslate2": replace(PRESETS["ctranslate2"], loop="4.38", finish="ct2", last="topk", eos_out="actual"),
    "ctranslate2-noprompt": replace(PRESETS["ctranslate2-noprompt"], loop="4.38", finish="ct2", last="topk",
                                    eos_out="actual"),
}

_MODELS: dict[str, GPT2] = {}


def model(path: str) -> GPT2:
    if path not in _MODELS:
        _MODELS[path] = GPT2.from_pretrained(path)
    return _MODELS[path]


_LOGITS: dict[tuple, np.ndarray] = {}  # (model id, row) -> logits: the switch sets of --attribute share prefixes


def next_logits(m: GPT2, rows: list[list[int]]) -> np.ndarray:
    """float32 (R, V): next-token logits of unpadded rows of equal length (a left-padded row gives the same
    logits up to float rounding: positions count from its first real token). Memoised per row."""
    keys = [(id(m), tuple(r)) for r in rows]
    todo = [r for r, k in zip(rows, keys) if k not in _LOGITS]
    if todo:
        out = np.asarray(m(np.array(todo, dtype=np.int64), logits_to_keep=1).logits[:, -1, :], dtype=np.float32)
        for r, row_logits in zip(todo, out):
            _LOGITS[(id(m), tuple(r))] = row_logits
    return np.stack([_LOGITS[k] for k in keys])


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    mx = np.max(x[np.isfinite(x)]) if np.isfinite(x).any() else np.float32(0)
    with np.errstate(over="ignore", invalid="ignore"):
        z = np.exp(np.where(np.isfinite(x), x - mx, -np.inf)).sum()
    return (x - mx - np.float32(np.log(z))).astype(np.float32)


class Prompt:
    """One prompt of a request: its padded row, its pad count, the request's settings."""

    def __init__(self, row: list[int], mask: list[int], cfg: dict, rules: Rules):
        self.row, self.cfg, self.rules = list(row), cfg, rules
        self.pads = len(row) - sum(mask)
        self.p = self.row[self.pads:]
        self.T = len(row)
        self.eos = list(cfg["eos_token_id"])
        self.max_new = int(cfg["max_new_tokens"])
        self.penalty = np.float32(cfg.get("repetition_penalty", 1.0))
        self.ngram = int(cfg.get("no_repeat_ngram_size", 0))
        min_new = int(cfg.get("min_new_tokens") or 0)
        if rules.min_length == "5" and cfg.get("min_new_tokens") is not None:
            self.min_gen = min_new
        else:
            self.min_gen = max(min_new, int(cfg.get("min_length") or 0) - self.T, 0)

    def ctx(self, kind: str, gen: list[int]) -> list[int]:
        base = {"row": self.row, "unpadded": self.p, "tail": self.p[1:], "none": []}[kind]
        return base + gen

    def process(self, x: np.ndarray, gen: list[int], masked: np.float32) -> np.ndarray:
        """The processors on one row of scores: repetition penalty, no-repeat n-gram, min length (eos)."""
        x = x.copy()
        r = self.rules
        if self.penalty != 1.0:
            ids = sorted(set(self.ctx(r.rp_ctx, gen)))
            s = x[ids]
            x[ids] = np.where(s < 0, s * self.penalty, s / self.penalty)
        if self.ngram > 0:
            c = self.ctx(r.ngram_ctx, gen)
            n = self.ngram
            if len(c) >= n:
                tail = c[len(c) - n + 1:]
                for i in range(len(c) - n + 1):
                    if c[i:i + n - 1] == tail:
                        x[c[i + n - 1]] = masked
        if len(gen) < self.min_gen:
            x[self.eos] = masked
        return x


def greedy(m: GPT2, pr: Prompt) -> list[tuple[list[int], float | None]]:
    gen: list[int] = []
    for _ in range(pr.max_new):
        x = pr.process(next_logits(m, [pr.p + gen])[0], gen, NEG)
        t = int(np.argmax(x))
        gen.append(t)
        if t in pr.eos:
            break
    return [(gen, None)]


def beam(m: GPT2, pr: Prompt) -> list[tuple[list[int], float]]:
    r, cfg = pr.rules, pr.cfg
    K = int(cfg["num_beams"])
    lp = float(cfg["length_penalty"])
    es = cfg["early_stopping"]
    nrs = int(cfg["num_return_sequences"])
    n_c = max(2, 1 + len(pr.eos)) * K if r.cands == "hf" else 2 * K
    off = len(pr.p) - 1 if r.offset else 0
    masked = LOWEST if r.renorm else NEG
    beams: list[tuple[np.float32, list[int]]] = [(np.float32(0), [])]
    hyps: list[tuple[float, list[int], bool]] = []  # (score, tokens as output, finished by eos)
    worst = 1e9
    done = False
    heur_open = True  # 5.x's is_early_stop_heuristic_unsatisfied
    top_finished = False  # CTranslate2's top_beam_finished
    n_added = 0  # finished hypotheses ever added (CTranslate2 counts them all)

    def norm(score: float, length: int) -> float:
        return score / (length + off) ** lp

    def add_438(score: float, toks: list[int], eos: bool, length: int) -> None:
        nonlocal worst
        s = norm(score, length)
        if len(hyps) < K or s > worst:
            hyps.append((s, toks, eos))
            if len(hyps) > K:
                order = sorted((h[0], i) for i, h in enumerate(hyps))
                del hyps[order[0][1]]
                worst = order[1][0]
            else:
                worst = min(s, worst)

    for g in range(pr.max_new):
        logits = next_logits(m, [pr.p + b[1] for b in beams])
        rows = []
        for (score, gen), lg in zip(beams, logits):
            if r.renorm:
                ls = log_softmax(pr.process(lg, gen, masked))
            else:
                ls = pr.process(log_softmax(lg), gen, masked)
            rows.append((ls + score).astype(np.float32))
        flat = np.concatenate(rows)
        V = logits.shape[1]
        order = np.argsort(-flat, kind="stable")[:n_c]
        cands = [[int(i % V), np.float32(flat[i]), int(i // V)] for i in order]
        if r.first_eos and g == 0:
            for c in cands[1:]:
                if c[0] in pr.eos:
                    c[0], c[1], c[2] = 0, np.float32(-1e10), 0
        last = g == pr.max_new - 1
        if r.loop == "4.38" and last and r.last == "topk":  # 5.x / CTranslate2: the top K candidates finish
            for tok, sc, o in cands[:K]:
                add_438(float(sc), beams[o][1] + [tok], tok in pr.eos, g + 1)
            break
        if r.loop == "4.38":
            new = []
            for rank, (tok, sc, o) in enumerate(cands):
                if tok in pr.eos:
                    if rank >= K:
                        continue
                    add_438(float(sc), beams[o][1] + [tok], True, g + 1)
                    n_added += 1
                    if rank == 0:
                        top_finished = True
                else:
                    new.append((sc, beams[o][1] + [tok]))
                if len(new) == K:
                    break
            beams = new
            if r.finish == "ct2":
                done = (top_finished and n_added >= nrs) if lp == 0 else n_added >= K
            elif r.finish == "5":
                if len(hyps) >= K:
                    length = pr.max_new if (es == "never" and lp > 0) else g + 1
                    done = es is True or float(beams[0][0]) / (length + off) ** lp <= min(h[0] for h in hyps)
            elif len(hyps) >= K:
                best = float(cands[0][1])
                if es is True:
                    done = True
                elif es is False or lp <= 0:
                    done = done or worst >= best / (g + 1 + off) ** lp
                else:
                    done = done or worst >= best / (pr.max_new + off) ** lp
            if done:
                break
            if last:
                for sc, toks in beams:
                    add_438(float(sc), toks, False, g + 1)
                break
        elif r.loop == "5":
            hits = [c[0] in pr.eos or last for c in cands]
            running = sorted(range(len(cands)), key=lambda i: -(float(cands[i][1]) + (-1e9 if hits[i] else 0)))[:K]
            new = [(np.float32(cands[i][1] + (-1e9 if hits[i] else 0)), beams[cands[i][2]][1] + [cands[i][0]])
                   for i in running]
            full = len(hyps) == K and all(h[2] is not None for h in hyps) and es is True
            if heur_open and not full:
                for rank, (tok, sc, o) in enumerate(cands):
                    if rank < K and hits[rank]:
                        hyps.append((norm(float(sc), g + 1), beams[o][1] + [tok], tok in pr.eos))
                hyps.sort(key=lambda h: -h[0])
                del hyps[K:]
            beams = new
            all_finished = len(hyps) == K
            if es == "never" and lp > 0:
                length = pr.max_new
            else:
                length = g + 1
            if all_finished:
                best_running = float(beams[0][0]) / (length + off) ** lp
                heur_open = heur_open and best_running > min(h[0] for h in hyps)
            if not heur_open or (all_finished and es is True) or last:
                break
        else:  # ct2
            new, secondary = [], K
            for k in range(K):
                tok, sc, o = cands[k]
                nb = k
                if tok in pr.eos or last:
                    if k == 0:
                        top_finished = True
                    hyps.append((float(sc), beams[o][1] + [tok], tok in pr.eos))
                    for j in range(secondary, len(cands)):
                        if cands[j][0] not in pr.eos:
                            nb, secondary = j, j + 1
                            break
                t, s, oo = cands[nb]
                new.append((s, beams[oo][1] + [t]))
            beams = new
            if last:
                break
            if lp == 0:
                if top_finished and len(hyps) >= nrs:
                    break
            elif len(hyps) >= K:
                break
    if r.loop == "ct2":
        out = [(float(np.float32(s) / np.float32(np.float32(len(t) + off) ** np.float32(lp))), t)
               for s, t, _ in hyps]
        out.sort(key=lambda h: -h[0])
        return [(t, s) for s, t in out[:nrs]]
    if r.loop == "4.38":
        ranked = sorted(hyps, key=lambda h: h[0])  # stable; pop() takes the last: later inserted wins ties
        picked = [ranked.pop() for _ in range(nrs)]
        return [(t, s) for s, t, _ in picked]
    return [(t, s) for s, t, _ in hyps[:nrs]]


def decode(inp: dict, rules: Rules) -> tuple[list[list[int]], list[float]]:
    cfg = inp["config"]
    m = model(inp["model"]["path"])
    K = int(cfg.get("num_beams", 1))
    eos = list(cfg["eos_token_id"])
    pad = cfg["pad_token_id"]
    gens, scores = [], []
    for row, mask in zip(inp["input_ids"], inp["attention_mask"]):
        pr = Prompt(row, mask, cfg, rules)
        for toks, s in (greedy(m, pr) if K == 1 else beam(m, pr)):
            gens.append((list(row), toks))
            scores.append(s)
    if K > 1 and rules.loop == "4.38" and rules.eos_out == "first":
        # BeamSearchScorer.finalize: hypotheses without their eos, then eos_token_id[0] where it fits
        T = len(inp["input_ids"][0])
        lens = [T + len(t) - (1 if t and t[-1] in eos else 0) for _, t in gens]
        width = min(max(lens) + 1, T + int(cfg["max_new_tokens"]))
        rows = []
        for (row, t), n in zip(gens, lens):
            body = row + (t[:-1] if t and t[-1] in eos else t)
            if n < width:
                body = body + [eos[0]]
            rows.append(body + [pad] * (width - len(body)))
        return rows, scores
    rows = [row + t for row, t in gens]
    width = max(map(len, rows))
    return [r + [pad] * (width - len(r)) for r in rows], scores


SWITCHES = ("rp_ctx", "ngram_ctx", "min_length", "renorm", "cands", "offset", "first_eos", "finish", "last",
            "eos_out", "loop")


def attribute(inp: dict, engine: Rules, target: list[list[int]]) -> list[tuple[str, ...]]:
    """The smallest sets of switches (engine values over 4.38.2's) whose rules give `target`."""
    base = Rules()
    differing = [s for s in SWITCHES if getattr(engine, s) != getattr(base, s)]
    if len(differing) > 9:
        differing = differing[:9]
    for size in range(1, len(differing) + 1):
        found = []
        for combo in itertools.combinations(differing, size):
            rules = replace(base, **{s: getattr(engine, s) for s in combo})
            if decode(inp, rules)[0] == target:
                found.append(combo)
        if found:
            return found
    return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("responses", type=Path)
    ap.add_argument("--engine", required=True, choices=sorted(PRESETS))
    ap.add_argument("--attribute", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    rules = PRESETS[args.engine]
    total = same = same_hf = differ = reproduced = base_ok = 0
    causes: dict[tuple, list[str]] = {}
    for line in args.responses.read_text().splitlines():
        rec = json.loads(line)
        out = rec["response"].get("output")
        if out is None:
            continue
        total += 1
        _LOGITS.clear()
        seqs, scores = decode(rec["input"], rules)
        ok = seqs == out["sequences"]
        hf = out["sequences"] == rec["expected"]["sequences"]
        base_ok += decode(rec["input"], PRESETS["transformers-4.38.2"])[0] == rec["expected"]["sequences"]
        same += ok
        same_hf += hf
        if not hf:
            differ += 1
            reproduced += ok
            if args.attribute:
                found = attribute(rec["input"], ATTRIBUTION.get(args.engine, rules), out["sequences"])
                if not found:  # the finer switches do not make it: try the engine's whole loop
                    found = attribute(rec["input"], rules, out["sequences"])
                key = tuple("+".join(c) for c in found)
                causes.setdefault(key, []).append(rec["id"])
        if ok and "sequences_scores" in out and all(s is not None for s in scores):
            worst = max(abs(a - b) for a, b in zip(scores, out["sequences_scores"]))
            if worst > 1e-4 * max(1.0, max(abs(a) for a in scores)):
                print(f"{rec['id']}: tokens reproduced, sequences_scores differ by {worst:.3g}")
        if not ok and args.verbose:
            print(f"{rec['id']}: NOT reproduced\n  engine {out['sequences']}\n  rules  {seqs}\n  "
                  f"4.38.2 {rec['expected']['sequences']}\n  config {rec['input']['config']}")
    print(f"{args.engine}: {total} answered decodes; the 4.38.2 rules of this script give the suite's expected "
          f"sequences on {base_ok}; the engine equals 4.38.2 on {same_hf} and these rules on {same}; of the "
          f"{differ} that differ from 4.38.2, {reproduced} are reproduced token for token")
    for key, ids in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        print(f"  cause {' | '.join(key) or '(none found)'}: {len(ids)} cases: {' '.join(ids)}")


if __name__ == "__main__":
    main()
