r"""CTranslate2 4.8's decoding rules, written out in NumPy over refdecode's GPT-2 forward pass: the precise
statement of each cause in FINDINGS.md, checked by running it against CTranslate2's own outputs.

    .venv/bin/python examples/engines/ctranslate2/rules.py RESPONSES.jsonl [--include-prompt 1|0]

RESPONSES.jsonl is what ``examples/engines/common/record_responses.py`` wrote for the CTranslate2 adapter. For
every answered decode case this prints whether CTranslate2's sequences equal (a) these rules' and (b)
transformers 4.38.2's (the suite's expected values), and a summary. It runs in refdecode's venv: NumPy and
refdecode only, no CTranslate2, no torch.

The rules (one ``generate_batch`` call per unpadded prompt p of length n, as the adapter does; source lines in
FINDINGS.md, CTranslate2 v4.8.1 src/decoding.cc unless named):

* context of the processors (``alive_seq``): ``p[1:] + generated`` when ``include_prompt_in_result`` (the
  first prompt token is the start token, the rest a forced prefix decoded in the loop), ``generated`` alone
  when not. transformers 4.38.2 uses the whole padded row.
* order per step: eos disabled while fewer than min_new tokens are generated, repetition penalty on the
  logits, no-repeat n-gram bans, bans written as float32 lowest, THEN log_softmax (renormalised), + beam score.
  transformers 4.38.2 beam search: log_softmax first, then the same processors, no renormalisation.
* beam search: top 2K of the K*V candidates; walk ranks k < K: an eos (or any token at the last step) is
  registered as a finished hypothesis with its cumulative score, and beam k takes the next non-eos candidate
  of rank >= K (none left: the eos candidate itself stays a beam); with include_prompt_in_result, at the
  first generated step every eos candidate of rank > 0 (of the 2K) becomes token 0 with score -1e10 first.
* finished: at the last step; else, length_penalty == 0: the rank-0 candidate was an eos at some step and
  at least num_hypotheses are finished; else at least K hypotheses are finished (CTranslate2 has no
  early_stopping option; patience 1).
* final score: cumulative / len ** length_penalty, len = hypothesis length = generated tokens (eos
  included) + (n - 1 when include_prompt_in_result); sorted by that score, best num_hypotheses kept.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from refdecode import GPT2

LOWEST = np.finfo(np.float32).min
_MODELS: dict[str, GPT2] = {}


def model(path: str) -> GPT2:
    if path not in _MODELS:
        _MODELS[path] = GPT2.from_pretrained(path)
    return _MODELS[path]


def last_logits(m: GPT2, rows: list[list[int]]) -> np.ndarray:
    """float32 (R, V): the next-token logits of each unpadded row (rows of one call have equal length)."""
    return np.asarray(m(np.array(rows, dtype=np.int64)).logits[:, -1, :], dtype=np.float32)


def process(logits: np.ndarray, ctx: list[int], generated: int, eos: list[int], min_new: int, penalty: float,
            ngram: int) -> np.ndarray:
    """CTranslate2's per-row processing of the logits before log_softmax (decoding.cc apply_min_length,
    decoding_utils.cc RepetitionPenalty / NoRepeatNgram, DisableTokens with float32 lowest)."""
    x = logits.copy()
    disabled: set[int] = set()
    if generated < min_new:
        disabled.update(eos)
    if penalty != 1.0 and ctx:
        for t in set(ctx):
            s = logits[t]
            x[t] = s * np.float32(penalty) if s < 0 else s / np.float32(penalty)
    if ngram > 0 and len(ctx) >= ngram:
        tail = ctx[len(ctx) - ngram + 1:]
        for i in range(len(ctx) - ngram + 1):
            if ctx[i:i + ngram - 1] == tail:
                disabled.add(ctx[i + ngram - 1])
    for t in disabled:
        x[t] = LOWEST
    return x


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    m = x.max(axis=-1, keepdims=True)
    return (x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))).astype(np.float32)


def greedy(m: GPT2, p: list[int], eos: list[int], max_new: int, min_new: int, penalty: float, ngram: int,
           include_prompt: bool) -> list[int]:
    ctx0 = p[1:] if include_prompt else []
    gen: list[int] = []
    for g in range(max_new):
        x = process(last_logits(m, [p + gen])[0], ctx0 + gen, g, eos, min_new, penalty, ngram)
        t = int(np.argmax(x))
        gen.append(t)
        if t in eos:
            break
    return gen


def beam(m: GPT2, p: list[int], eos: list[int], max_new: int, min_new: int, penalty: float, ngram: int,
         K: int, lp: float, num_hyp: int, include_prompt: bool) -> list[tuple[float, list[int]]]:
    ctx0 = p[1:] if include_prompt else []
    beams: list[tuple[np.float32, list[int]]] = [(np.float32(0), [])]
    hyps: list[tuple[np.float32, list[int]]] = []
    top_beam_finished = False
    for g in range(max_new):
        logits = last_logits(m, [p + b[1] for b in beams])
        rows = []
        for (score, gen), lg in zip(beams, logits):
            lp_row = log_softmax(process(lg, ctx0 + gen, g, eos, min_new, penalty, ngram))
            rows.append(lp_row + score)
        flat = np.concatenate(rows).astype(np.float32)
        V = logits.shape[1]
        order = np.argsort(-flat, kind="stable")[: 2 * K]
        cands = [[int(i % V), np.float32(flat[i]), int(i // V)] for i in order]
        if include_prompt and g == 0:  # decoding.cc update_sample_with_prefix, step == prefix length
            for c in cands[1:]:
                if c[0] in eos:
                    c[0], c[1], c[2] = 0, np.float32(-1e10), 0
        last = g == max_new - 1
        new_beams, secondary = [], K
        for k in range(K):
            tok, sc, origin = cands[k]
            nb = k
            if tok in eos or last:
                if k == 0:
                    top_beam_finished = True
                hyps.append((sc, beams[origin][1] + [tok]))
                for j in range(secondary, 2 * K):
                    if cands[j][0] not in eos:
                        nb, secondary = j, j + 1
                        break
            t, s, o = cands[nb]
            new_beams.append((s, beams[o][1] + [t]))
        if last:
            break
        if lp == 0:
            if top_beam_finished and len(hyps) >= num_hyp:
                break
        elif len(hyps) >= K:
            break
        beams = new_beams
    offset = len(p) - 1 if include_prompt else 0
    scored = [(float(np.float32(s) / np.float32((offset + len(gen)) ** np.float32(lp))), gen) for s, gen in hyps]
    scored.sort(key=lambda h: -h[0])
    return scored[:num_hyp]


def decode(inp: dict, include_prompt: bool) -> tuple[list[list[int]], list[float]]:
    cfg = inp["config"]
    m = model(inp["model"]["path"])
    width = len(inp["input_ids"][0])
    eos = list(cfg["eos_token_id"])
    max_new = int(cfg["max_new_tokens"])
    min_new = min(max(int(cfg.get("min_new_tokens") or 0), int(cfg.get("min_length") or 0) - width, 0), max_new)
    K = int(cfg.get("num_beams", 1))
    rows, scores = [], []
    for ids, mask in zip(inp["input_ids"], inp["attention_mask"]):
        p = [t for t, mk in zip(ids, mask) if mk]
        args = (m, p, eos, max_new, min_new, float(cfg["repetition_penalty"]), int(cfg["no_repeat_ngram_size"]))
        if K == 1:
            rows.append(list(ids) + greedy(*args, include_prompt))
        else:
            for s, gen in beam(*args, K, float(cfg["length_penalty"]), int(cfg["num_return_sequences"]),
                               include_prompt):
                rows.append(list(ids) + gen)
                scores.append(s)
    longest = max(map(len, rows))
    pad = cfg["pad_token_id"]
    return [r + [pad] * (longest - len(r)) for r in rows], scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("responses", type=Path)
    ap.add_argument("--include-prompt", type=int, default=1)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    total = same_rules = same_hf = 0
    differ_hf_reproduced = differ_hf = 0
    misses = []
    for line in args.responses.read_text().splitlines():
        rec = json.loads(line)
        out = rec["response"].get("output")
        if out is None:
            continue
        total += 1
        seqs, scores = decode(rec["input"], bool(args.include_prompt))
        ok = seqs == out["sequences"]
        hf = out["sequences"] == rec["expected"]["sequences"]
        same_rules += ok
        same_hf += hf
        if not hf:
            differ_hf += 1
            differ_hf_reproduced += ok
        if ok and scores and "sequences_scores" in out:
            worst = max(abs(a - b) for a, b in zip(scores, out["sequences_scores"]))
            if worst > 1e-3 * max(1.0, max(abs(a) for a in scores)):
                print(f"{rec['id']}: tokens reproduced, score differs by {worst:.3g}: rules {scores} ct2 "
                      f"{out['sequences_scores']}")
        if not ok:
            misses.append(rec["id"])
            if args.verbose:
                print(f"{rec['id']}: NOT reproduced\n  ct2   {out['sequences']}\n  rules {seqs}\n  "
                      f"hf    {rec['expected']['sequences']}\n  config {rec['input']['config']}")
    print(f"{total} answered: {same_hf} equal transformers 4.38.2; {same_rules} equal these rules; of the "
          f"{differ_hf} that differ from 4.38.2, {differ_hf_reproduced} are reproduced token for token")
    if misses:
        print("not reproduced:", " ".join(misses))


if __name__ == "__main__":
    main()
