r"""Engines' search rules restated in NumPy over refdecode's GPT-2, rule by rule switchable to transformers
4.38.2's: the evidence for the engines' FINDINGS.md ("explained = reproduced") and the specification of the engine
profiles refdecode would need. Engines: onnxruntime-genai 0.18.0 and transformers.js 4.3.1.

    .venv/bin/python examples/engines/common/rules.py SUITE --engine onnxruntime-genai|transformers-js
                     [--only TYPES] [--engine-run RUN] [--json FILE] [--ids ID,...]

For every decode case of the suite (greedy and beam search; sampling is not simulated), it computes
(a) the output under all of the engine's rules, (b) under all-transformers rules, and (c) for each engine rule, the output
under transformers' rules with only that rule switched to the engine's. It then asks the engine itself (through
``--engine-run``, default ``examples/engines/<engine>/run``) and reports, per case: whether (a) equals the engine's answer
(reproduced), whether (b) equals the suite's expected answer (the control), and which single rules change the
answer (the causes). A JSON summary goes to standard output (``--json FILE`` writes it to a file too).

onnxruntime-genai's rules (names used in its FINDINGS.md; sources: the engine's repository, src/):

* ``processors_before_log_softmax`` — beam search: min_length, repetition_penalty and no_repeat_ngram_size act on
  the raw logits, then LogSoftMax (standard_decoding_strategy.cpp:30-32, then search.cpp BeamSearch_Cpu::SelectTop);
  transformers 4.38.2 takes log_softmax first and applies the processors to the log-probabilities
  (utils.py, _beam_search: ``next_token_scores = log_softmax(...)``; ``logits_processor(input_ids,
  next_token_scores)``). Greedy search is unaffected (argmax).
* ``hyp_length_with_prompt`` — a finished hypothesis is scored sum_logprobs / L**length_penalty with L = its stored
  length = prompt width + generated tokens WITHOUT the eos (beam_search_scorer.cpp:19-21 with :132-137); an open
  beam at max_length: L = prompt width + generated (:184-193). transformers: L = generated tokens including the eos
  (beam_search.py:228 cur_len = input_ids.shape[-1] + 1; :286 generated_len = cur_len - decoder_prompt_len;
  :960-961); open beams: generated tokens (:347).
* ``can_improve_length`` — early_stopping=False: a batch is done when worst kept score >= best_candidate / L**lp
  with L = current sequence length before the new token, prompt width included (beam_search_scorer.cpp:41-44,
  :160-166); transformers: L = cur_len - decoder_prompt_len = generated tokens including the new one
  (beam_search.py:306-308, :995-997).
* ``can_improve_offset`` — that best candidate is read at next_scores[batch * num_beams ...] (:161), a slice that for
  batch > 0 starts inside the previous prompt's candidates (they are laid out batch * 2 * num_beams, :117-121);
  transformers uses the batch's own candidates (beam_search.py:307).
* ``candidates_2k`` — 2 * num_beams candidates per prompt (search.cpp SelectTop ``top_k = 2 * num_beams``);
  transformers max(2, 1 + len(eos_token_id)) * num_beams (utils.py, _beam_search, torch.topk).
* ``tie_earlier_wins`` — among equal hypothesis scores the earlier-inserted ranks first (:33-36, strict >);
  transformers: the later-inserted (sorted() is stable, the best is popped from the end, beam_search.py finalize).
* ``right_padded_sequences`` — the processors (repetition penalty, no-repeat n-grams, min_length) see the engine's
  sequence: each prompt's real tokens, then its pad tokens, then the generated tokens (model.cpp PadInputs;
  search.cpp ApplyNoRepeatNgram scans that array); transformers sees the left-padded row.
* ``trailing_pad_is_padding`` — the first step's logits of every row are read at its last token that is not
  pad_token_id (logits.cpp:93-103), whatever the batch size; with more than one prompt the attention mask and
  position ids also treat every pad_token_id at the END of a prompt as padding (position_inputs.cpp:338-370,
  :258-300), so the model never sees them; with one prompt the mask is all ones (:343-347) and later steps attend
  to the whole prompt. The processors still see the tokens. transformers reads the last position and attends to
  what attention_mask says. (It matters when a prompt ends with pad_token_id: e.g. "ROMEO:\n" with pad = eos = 198.)

transformers.js's rules (sources: node_modules/@huggingface/transformers/src/ at 4.3.1):

* ``no_pad_after_eos`` — a row that has emitted an eos goes on generating (argmax of its processed logits): the
  generate() loop appends every row's token every step (models/modeling_utils.js:1005-1020) and has no
  unfinished-sequences mask; transformers 4.38.2 writes pad_token_id into finished rows
  (utils.py, _greedy_search: ``next_tokens * unfinished_sequences + pad_token_id * (1 - unfinished_sequences)``).
* ``stop_when_all_last_eos`` — generation stops when, at the same step, EVERY row's last token is an eos
  (EosTokenCriteria looks at ``ids.at(-1)`` only, generation/stopping_criteria.js:131-136; the loop stops when all
  rows are done, modeling_utils.js:1025-1027), or at max_length; transformers stops when every row has emitted an
  eos at some step (unfinished_sequences.max() == 0).
* ``beam_is_greedy`` — num_beams > 1 runs the same one-row-per-prompt loop: the BeamSearchSampler's first
  candidate, the top-1 of the processed logits, is taken and the loop breaks ("TODO: Support beam search",
  modeling_utils.js:1008-1018; logits_sampler.js:164-181); length_penalty, early_stopping and num_return_sequences
  are never read: one row per prompt.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from refdecode.model.modeling import GPT2

HERE = Path(__file__).resolve().parent
ENGINES = HERE.parent
ENGINE_RULES = {
    "onnxruntime-genai": ("processors_before_log_softmax", "hyp_length_with_prompt", "can_improve_length",
                          "can_improve_offset", "candidates_2k", "tie_earlier_wins", "right_padded_sequences",
                          "trailing_pad_is_padding"),
    "transformers-js": ("no_pad_after_eos", "stop_when_all_last_eos", "beam_is_greedy"),
}
# What the engine's answer looks like beyond the rules (the adapters' layout): genai's greedy answer carries the
# final eos the adapter reads back from get_next_tokens(); both lay rows out as transformers does.
F32_LOWEST = np.float32(np.finfo(np.float32).min)

_logits: dict[str, "Logits"] = {}


class NotSimulated(Exception):
    """A state the engine reaches only through undefined behaviour (see where it is raised)."""


def logits_of(path: str) -> "Logits":
    """The memoised next-token logits of the checkpoint at ``path`` (shared by every simulation)."""
    if path not in _logits:
        _logits[path] = Logits(GPT2.from_pretrained(path))
    return _logits[path]


class Logits:
    """Next-token logits of a row given its REAL tokens (prompt without pads + generated), memoised."""

    def __init__(self, model: GPT2):
        self.model, self.memo = model, {}

    def __call__(self, tokens: tuple[int, ...]) -> np.ndarray:
        if tokens not in self.memo:
            out = self.model(np.array([tokens], dtype=np.int64))
            self.memo[tokens] = np.asarray(out.logits[0, -1], dtype=np.float32)
        return self.memo[tokens]


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    m = np.max(x)
    shifted = x - m
    return (shifted - np.log(np.sum(np.exp(shifted), dtype=np.float32))).astype(np.float32)


def repetition(scores: np.ndarray, seen: list[int], penalty: float) -> None:
    if penalty == 1.0:
        return
    for t in set(seen):
        s = scores[t]
        scores[t] = s * np.float32(penalty) if s < 0 else s / np.float32(penalty)


def no_repeat(scores: np.ndarray, seq: list[int], n: int, value: np.float32) -> None:
    if n <= 0 or len(seq) < n:
        return
    prefix = seq[len(seq) - (n - 1):] if n > 1 else []
    for start in range(len(seq) - n + 1):
        if seq[start:start + n - 1] == prefix:
            scores[seq[start + n - 1]] = value


def processors(scores: np.ndarray, seq: list[int], cfg: dict, eos: list[int], min_length: int, width_len: int,
               value: np.float32) -> None:
    """Repetition penalty, no-repeat n-grams, then min_length (transformers' order; the engine's order,
    min_length first, gives the same ranking: all three only lower scores, min_length to the lowest)."""
    repetition(scores, seq, float(cfg.get("repetition_penalty", 1.0)))
    no_repeat(scores, seq, int(cfg.get("no_repeat_ngram_size") or 0), value)
    if width_len < min_length:
        for e in eos:
            scores[e] = value


def lengths(cfg: dict, width: int) -> tuple[int, int]:
    if cfg.get("max_new_tokens") is not None:
        max_length = width + int(cfg["max_new_tokens"])
    else:
        max_length = int(cfg.get("max_length") or 20)
    min_length = int(cfg.get("min_length") or 0)
    if cfg.get("min_new_tokens"):
        min_length = max(min_length, width + int(cfg["min_new_tokens"]))
    return max_length, min_length


def real_tokens(ids: list[list[int]], mask: list[list[int]], pad: int,
                rules: set[str]) -> tuple[list[list[int]], list[list[int]]]:
    """The tokens the model attends to, per prompt: (at the first step, at the later steps)."""
    reals = [[t for t, m in zip(r, k) if m] for r, k in zip(ids, mask)]
    if "trailing_pad_is_padding" not in rules:
        return reals, reals
    stripped = [list(r) for r in reals]
    for real in stripped:
        while len(real) > 1 and real[-1] == pad:
            real.pop()
    # batch > 1: the trailing pads are masked at every step; batch 1: the mask is all ones, only the first step's
    # logits are read at the last non-pad token (logits.cpp), later steps attend to the whole prompt
    return stripped, (stripped if len(ids) > 1 else reals)


def layout(seq_prompt: list[int], real: list[int], width: int, pad: int, right: bool) -> list[int]:
    """The row the processors see for a prompt (before generated tokens)."""
    return real + [pad] * (width - len(real)) if right else seq_prompt


def greedy(inp: dict, rules: set[str]) -> list[list[int]]:
    cfg = inp["config"]
    eos = list(cfg["eos_token_id"]) if isinstance(cfg["eos_token_id"], list) else [cfg["eos_token_id"]]
    pad = cfg.get("pad_token_id", eos[0])
    ids, mask = inp["input_ids"], inp["attention_mask"]
    width = len(ids[0])
    max_length, min_length = lengths(cfg, width)
    logits = logits_of(inp["model"]["path"])
    firsts, reals = real_tokens(ids, mask, pad, rules)
    seqs = [layout(r, real, width, pad, "right_padded_sequences" in rules) for r, real in zip(ids, reals)]
    gens: list[list[int]] = [[] for _ in ids]
    done = [False] * len(ids)
    keep_going = "no_pad_after_eos" in rules
    for step in range(max_length - width):
        for b in range(len(ids)):
            if done[b] and not keep_going:
                gens[b].append(pad)
                continue
            scores = logits(tuple((firsts[b] if step == 0 else reals[b]) + gens[b])).copy()
            processors(scores, seqs[b] + gens[b], cfg, eos, min_length, width + step, np.float32(-np.inf))
            tok = int(np.argmax(scores))
            gens[b].append(tok)
            if "stop_when_all_last_eos" in rules:
                done[b] = tok in eos
            else:
                done[b] = done[b] or tok in eos
        if all(done):
            break
    return [list(r) + g for r, g in zip(ids, gens)]


class Hyps:
    def __init__(self, num_beams: int, lp: float, earlier_wins: bool):
        self.k, self.lp, self.earlier = num_beams, lp, earlier_wins
        self.items: list[tuple[float, int, list[int]]] = []  # (score, insertion order, tokens)
        self.n = 0

    def add(self, tokens: list[int], sum_logprobs: float, length: int) -> None:
        score = float(np.float32(sum_logprobs) / np.float32(math.pow(length, self.lp)))
        worst = min(s for s, _, _ in self.items) if self.items else None
        if len(self.items) >= self.k and not score > worst:
            return
        self.items.append((score, self.n, tokens))
        self.n += 1
        if len(self.items) > self.k:
            self.items.remove(self.ranked()[-1])

    def ranked(self) -> list[tuple[float, int, list[int]]]:
        # best first; among equal scores the earlier (engine) or the later (transformers) insertion first
        return sorted(self.items, key=lambda x: (-x[0], x[1] if self.earlier else -x[1]))

    def worst(self) -> float:
        return self.ranked()[-1][0]


def beam(inp: dict, rules: set[str]) -> list[list[int]]:
    cfg = inp["config"]
    eos = list(cfg["eos_token_id"]) if isinstance(cfg["eos_token_id"], list) else [cfg["eos_token_id"]]
    pad = cfg.get("pad_token_id", eos[0])
    ids, mask = inp["input_ids"], inp["attention_mask"]
    B, width, K = len(ids), len(ids[0]), int(cfg["num_beams"])
    nrs = int(cfg.get("num_return_sequences") or 1)
    lp = float(cfg.get("length_penalty", 1.0))
    early = cfg.get("early_stopping", False)
    max_length, min_length = lengths(cfg, width)
    logits = logits_of(inp["model"]["path"])
    firsts, reals = real_tokens(ids, mask, pad, rules)
    right = "right_padded_sequences" in rules
    prompts = [layout(r, real, width, pad, right) for r, real in zip(ids, reals)]
    value = F32_LOWEST if "processors_before_log_softmax" in rules else np.float32(-np.inf)
    ncand = 2 * K if "candidates_2k" in rules else max(2, 1 + len(eos)) * K
    hyps = [Hyps(K, lp, "tie_earlier_wins" in rules) for _ in range(B)]
    done = [False] * B
    beams = [[[] for _ in range(K)] for _ in range(B)]  # generated tokens per beam
    bscore = np.zeros((B, K), dtype=np.float32)
    bscore[:, 1:] = np.float32(-1e9)
    cur = width
    while cur < max_length:
        all_cands = []
        for b in range(B):
            rows = []
            for k in range(K):
                raw = logits(tuple((firsts[b] if cur == width else reals[b]) + beams[b][k])).copy()
                seq = prompts[b] + beams[b][k]
                if "processors_before_log_softmax" in rules:
                    processors(raw, seq, cfg, eos, min_length, cur, value)
                    s = log_softmax(raw)
                else:
                    s = log_softmax(raw)
                    processors(s, seq, cfg, eos, min_length, cur, value)
                rows.append((s + bscore[b, k]).astype(np.float32))
            flat = np.concatenate(rows)
            order = np.argsort(-flat, kind="stable")[:ncand]  # ties: the lower flat index first
            all_cands.append([(float(flat[i]), int(i) // len(rows[0]), int(i) % len(rows[0])) for i in order])
        new_beams, new_scores = [], np.zeros((B, K), dtype=np.float32)
        for b in range(B):
            if done[b]:
                new_beams.append([[*beams[b][0], pad] for _ in range(K)])
                continue
            nb = []
            for rank, (score, k, tok) in enumerate(all_cands[b]):
                if tok in eos:
                    if rank >= K:
                        continue
                    gen = beams[b][k]
                    length = width + len(gen) if "hyp_length_with_prompt" in rules else len(gen) + 1
                    hyps[b].add(gen, score, length)
                else:
                    new_scores[b, len(nb)] = score
                    nb.append([*beams[b][k], tok])
                if len(nb) == K:
                    break
            if len(nb) < K:
                # only with candidates_2k: more than num_beams eos among the 2 * num_beams candidates. The engine's
                # assert(beam_idx == num_beams_) (beam_search_scorer.cpp:152) is compiled out of release builds and
                # the unfilled slots keep the previous step's tokens and scores: not simulated.
                raise NotSimulated("fewer than num_beams non-eos candidates among 2 * num_beams")
            new_beams.append(nb)
            if len(hyps[b].items) < K:
                continue
            if early is True:
                done[b] = True
                continue
            if "can_improve_offset" in rules:
                flat_scores = [c[0] for cands in all_cands for c in cands[:2 * K]]
                window = flat_scores[b * K: b * K + 2 * K]
                best = max(window) if window else all_cands[b][0][0]
            else:
                best = max(c[0] for c in all_cands[b])
            if "can_improve_length" in rules:
                length = cur
            elif early == "never" and lp > 0.0:  # transformers 4.38.2: the largest denominator, from max_length
                length = max_length - width
            else:
                length = cur + 1 - width
            attainable = float(np.float32(best) / np.float32(math.pow(length, lp)))
            done[b] = not (hyps[b].worst() < attainable)
        beams, bscore = new_beams, new_scores
        cur += 1
        if all(done):
            break
    rows = []
    for b in range(B):
        if not done[b]:
            for k in range(K):
                gen = beams[b][k]
                length = width + len(gen) if "hyp_length_with_prompt" in rules else len(gen)
                hyps[b].add(gen, float(bscore[b, k]), length)
        for score, _, gen in hyps[b].ranked()[:nrs]:
            row = list(ids[b]) + gen
            if len(row) < max_length:
                row.append(eos[0])
            rows.append(row)
    longest = max(len(r) for r in rows)
    return [r + [pad] * (longest - len(r)) for r in rows]


def simulate(inp: dict, rules: set[str]) -> list[list[int]]:
    if int(inp["config"].get("num_beams") or 1) > 1 and "beam_is_greedy" not in rules:
        return beam(inp, rules)
    return greedy(inp, rules)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("--engine", required=True, choices=sorted(ENGINE_RULES))
    ap.add_argument("--only", default="gpt2_greedy,gpt2_beam_search")
    ap.add_argument("--engine-run", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--ids", default=None, help="comma-separated case ids")
    args = ap.parse_args(argv)
    rules_of_engine = ENGINE_RULES[args.engine]
    run = args.engine_run or str(ENGINES / args.engine / "run")
    suite = Path(args.suite).resolve()
    cases = []
    for kind in args.only.split(","):
        f = suite / "cases" / f"{kind}.jsonl"
        if f.exists():
            cases += [json.loads(line) for line in f.open()]
    if args.ids:
        wanted = set(args.ids.split(","))
        cases = [c for c in cases if c["id"] in wanted]
    cases = [c for c in cases if not c["input"]["config"].get("do_sample")]
    for c in cases:
        c["input"]["model"]["path"] = str(suite / c["input"]["model"]["path"])
    # the engine's own answers (types renamed so that beam types do not ask for beam_indices)
    reqs = [json.dumps({"id": c["id"], "type": "engines_" + ("beam_search" if int(c["input"]["config"].get(
        "num_beams") or 1) > 1 else "greedy"), "input": c["input"]}) for c in cases]
    out = subprocess.run([run], input="\n".join(reqs) + "\n", capture_output=True, text=True)
    engine = {}
    for line in out.stdout.splitlines():
        d = json.loads(line)
        engine[d["id"]] = d
    report = []
    for c in cases:
        e = engine.get(c["id"], {})
        if "output" not in e:
            report.append({"id": c["id"], "engine": e.get("unsupported") or e.get("error")})
            continue
        got, expected = e["output"]["sequences"], c["expected"]["sequences"]
        sim_engine = simulate(c["input"], set(rules_of_engine))
        sim_hf = simulate(c["input"], set())
        causes = [r for r in rules_of_engine if simulate(c["input"], {r}) != sim_hf]
        needed = [r for r in rules_of_engine if simulate(c["input"], set(rules_of_engine) - {r}) != got]
        report.append({"id": c["id"], "engine_equals_expected": got == expected,
                       "reproduced": sim_engine == got, "control": sim_hf == expected,
                       "single_rule_changes": causes, "needed_rules": needed})
        print(json.dumps(report[-1]), file=sys.stderr)
    summary = {
        "engine": args.engine,
        "cases": len(report),
        "engine_differs": sum(1 for r in report if r.get("engine_equals_expected") is False),
        "reproduced": sum(1 for r in report if r.get("reproduced")),
        "reproduced_of_differing": sum(1 for r in report if r.get("reproduced") and not r.get(
            "engine_equals_expected")),
        "control_ok": sum(1 for r in report if r.get("control")),
        "unsupported": sum(1 for r in report if "engine" in r),
        "cases_detail": report,
    }
    text = json.dumps(summary, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "cases_detail"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
