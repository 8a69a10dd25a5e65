"""Write the assignment's hidden cases: inputs and refdecode's answers (transformers 4.38.2's), from a seed.

    python tools/course/make_hidden.py --seed 12345        # -> tools/course/hidden/cases.json

The committed file was made with ``--seed 0``, for the tests and for trying the grader. The repository is
public, so anyone can rebuild those cases: **for a real course, run this with a seed you keep secret** before
grading (and do not commit the result where students can read it). The answers come from refdecode's own
processors and ``generate`` (the golden reference, exact to transformers 4.38.2; tests/golden proves it),
run on ``FullPrefixModel`` (``tutorials/assignment/selfcheck.py``), which gives ``generate`` exactly the logits
the submission's model callable (``NextTokenModel``, same file) gives students.

Format (JSON, version 1): ``{"format": 1, "seed": s, "cases": {function: [{"label", "args", "expected"}]}}``;
arrays as ``{"array": nested lists, "dtype": ...}`` (task.encode). ``args`` are the function's positional
arguments, without the model for the decoding functions (the grader passes it first): the shipped model, or,
for a case with a ``"model"`` key (labels "scripted: ..."), ``task.ScriptedModel`` on that table of logits.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task import HIDDEN_DIR, MODEL_DIR, ScriptedModel, encode, harness  # noqa: E402

from refdecode import (  # noqa: E402
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    Tokenizer,
    TopKLogitsWarper,
    generate,
    llama_top_p_probs,
)

FORMAT = 1
PROMPTS = ["ROMEO:\nBut soft, what light", "KING HENRY:\nOnce more unto the breach", "JULIET:\nO Romeo, Romeo",
           "First Citizen:\nBefore we proceed any further", "HAMLET:\nTo be, or not to be",
           "LADY MACBETH:\nOut, damned",
           "MERCUTIO:\nA plague o' both your houses", "PROSPERO:\nWe are such stuff"]


# ---- problem 1: the processors -------------------------------------------------------------------------------


def processor_cases(rng: np.random.Generator) -> dict[str, list[dict]]:
    def scores(rows: int, vocab: int) -> np.ndarray:
        return rng.normal(0.0, 2.0, size=(rows, vocab)).astype(np.float32)

    def probs(rows: int, vocab: int) -> np.ndarray:
        p = rng.dirichlet(np.full(vocab, 0.7), size=rows).astype(np.float32)
        return p / p.sum(axis=1, keepdims=True)

    def ngram_banned(row: list[int], n: int) -> list[int]:
        out = NoRepeatNGramLogitsProcessor(n)(np.array([row]), np.zeros((1, max(row) + 2), dtype=np.float32))
        return sorted(np.flatnonzero(np.isinf(out[0])).tolist())

    def ngram_row() -> tuple[list[int], int]:
        while True:                                       # a row with something banned: [] is never the answer
            row, n = rng.integers(0, 3, size=int(rng.integers(5, 12))).tolist(), int(rng.integers(2, 5))
            if ngram_banned(row, n):
                return row, n

    def topp_case() -> tuple[np.ndarray, float]:
        while True:                                       # a case that removes something: identity never passes
            given = (probs(2, 9), float(np.round(rng.uniform(0.2, 0.95), 2)))
            if (llama_top_p_probs(*given) == 0).any(axis=1).all():
                return given

    rep = [("hand: both signs, a repeated id",
            (np.array([[2, 0, 2]]), np.array([[1.5, -2.0, 0.5, -0.25]], np.float32), 1.3))]
    rep += [(f"random {i}", (rng.integers(0, 10, size=(2, 7)), scores(2, 10), float(rng.uniform(0.4, 3.0))))
            for i in range(6)]
    ngram = [("hand: n = 1", ([2, 2, 0], 1))] + [(f"random {i}", ngram_row()) for i in range(7)]
    topk = [("hand: a tie at the k-th score", (np.array([[0.5, 2.0, 1.0, 1.0, 1.0]], np.float32), 2))]
    topk += [(f"random {i}", (scores(3, 11), int(rng.integers(1, 9)))) for i in range(6)]
    topp = [("hand: a tie at the cut", (np.array([[0.1, 0.2, 0.3, 0.2, 0.2]], np.float32), 0.6))]
    topp += [(f"random {i}", topp_case()) for i in range(6)]

    answer = {"repetition_penalty": lambda ids, s, pen: RepetitionPenaltyLogitsProcessor(pen)(ids, s),
              "no_repeat_ngram_banned": ngram_banned,
              "top_k_filter": lambda s, k: TopKLogitsWarper(k)(None, s),
              "llama_top_p": llama_top_p_probs}
    cases = {"repetition_penalty": rep, "no_repeat_ngram_banned": ngram, "top_k_filter": topk, "llama_top_p": topp}
    return {name: [{"label": label, "args": list(args), "expected": answer[name](*args)} for label, args in found]
            for name, found in cases.items()}


# ---- problems 2-4: the decoding loop ---------------------------------------------------------------------------


def prompt_batch(rng: np.random.Generator, tok: Tokenizer, batch: int) -> np.ndarray:
    """``batch`` distinct prompts cut to the same token length (the assignment does not pad)."""
    rows = [tok.encode(PROMPTS[i]) for i in rng.choice(len(PROMPTS), size=batch, replace=False)]
    width = min(len(r) for r in rows)
    return np.array([r[:width] for r in rows], dtype=np.int64)                      # (B, T0)


def common_token(model: Any, ids: np.ndarray, pick: np.random.Generator, seed: int | None = None,
                 **kwargs: Any) -> int:
    """An eos that the same run without eos emits (so rows finish early), not in the prompts and not a first
    token (so the prompt plus eos is never the answer); ``pick`` chooses it, ``seed`` seeds the run's sampler."""
    if seed is not None:
        kwargs["rng"] = np.random.default_rng(seed)
    out = generate(model, ids, attention_mask=np.ones_like(ids), eos_token_id=None, **kwargs)[:, ids.shape[1]:]
    choices = [t for t in out[:, 1:-1].reshape(-1).tolist() if t not in ids and t not in out[:, 0]]
    return int(pick.choice(choices)) if choices else int(out[0, -1])


def decoding_cases(rng: np.random.Generator) -> dict[str, list[dict]]:
    tok = Tokenizer(MODEL_DIR)
    model = harness.FullPrefixModel(harness.NextTokenModel.load())
    cases: dict[str, list[dict]] = {"greedy": [], "sample": [], "beam_search": []}

    def add(function: str, label: str, args: list, seed: int | None = None, table: np.ndarray | None = None) -> None:
        eos = args[-1]
        label += f", eos {'emitted by the run' if eos is not None else 'none'}"
        on = model if table is None else harness.FullPrefixModel(ScriptedModel(table))
        case = {"label": label, "args": args, "expected": harness.reference(on, function, args, seed)}
        cases[function].append(case if table is None else {**case, "model": table})

    for batch, steps, with_eos in [(1, 12, False), (2, 10, False), (1, 16, True), (2, 14, True), (3, 8, True)]:
        ids = prompt_batch(rng, tok, batch)
        eos = common_token(model, ids, rng, max_new_tokens=steps) if with_eos else None
        add("greedy", f"{batch} prompt(s), {steps} tokens", [ids, steps, eos])
    for temperature, top_k, top_p, batch, with_eos in [(1.0, 0, 1.0, 1, False), (0.7, 0, 1.0, 2, False),
                                                       (1.0, 20, 1.0, 1, True), (1.0, 0, 0.9, 2, False),
                                                       (0.8, 50, 0.95, 2, True), (1.5, 10, 0.8, 1, False),
                                                       (0.6, 0, 0.7, 3, True), (1.2, 40, 0.85, 2, False)]:
        ids, steps, seed = prompt_batch(rng, tok, batch), int(rng.integers(8, 15)), int(rng.integers(2**31))
        setting = dict(max_new_tokens=steps, do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p)
        eos = common_token(model, ids, rng, seed, **setting) if with_eos else None
        uniforms = np.random.default_rng(seed).random((steps, batch))     # what generate's sampler draws, in order
        add("sample", f"T={temperature}, top_k={top_k}, top_p={top_p}, {batch} prompt(s)",
            [ids, steps, temperature, top_k, top_p, uniforms, eos], seed)
    for beams, penalty, early, batch, with_eos in [(2, 1.0, False, 1, True), (3, 0.0, True, 2, True),
                                                   (4, 2.0, "never", 1, True), (3, -0.5, False, 2, True),
                                                   (2, 1.0, "never", 2, True), (4, 0.5, True, 1, True),
                                                   (3, 1.0, False, 2, False), (4, 1.5, False, 2, True)]:
        ids, steps = prompt_batch(rng, tok, batch), int(rng.integers(8, 13))
        setting = dict(max_new_tokens=steps, num_beams=beams, length_penalty=penalty, early_stopping=early)
        eos = common_token(model, ids, rng, **setting) if with_eos else None
        add("beam_search", f"{beams} beams, length_penalty={penalty}, early_stopping={early!r}, {batch} prompt(s)",
            [ids, steps, beams, penalty, early, eos])
    scripted_cases(rng, add)
    return cases


# ---- scripted models: the rules the shipped model never reaches -----------------------------------------------


def scripted_cases(rng: np.random.Generator, add: Any) -> None:
    """Cases on ScriptedModel tables of logits in steps of 0.5 over 8 tokens: exact ties at the top and at the
    top-p cut, an eos ranked at K or below among the 2K candidates, rows that finish at different steps (the
    padding) and hypotheses of different lengths (the length penalty). tests/tools/course/test_hidden_cases.py
    checks that each rule decides at least one case (a solution with that one rule broken fails it)."""
    def setup(batch: int, **setting: Any) -> tuple[np.ndarray, np.ndarray, int]:
        table = (rng.integers(0, 4, size=(5, 8, 8)) * 0.5).astype(np.float32)     # (S, V, V)
        ids = rng.integers(0, 8, size=(batch, 2)).astype(np.int64)                 # (B, 2)
        runner = harness.FullPrefixModel(ScriptedModel(table))
        return table, ids, common_token(runner, ids, rng, **setting)

    for batch, steps in [(2, 8), (3, 10), (2, 12)]:
        table, ids, eos = setup(batch, max_new_tokens=steps)
        add("greedy", f"scripted: ties, {batch} prompt(s), {steps} tokens", [ids, steps, eos], table=table)
    for temperature, top_k, top_p, batch in [(1.0, 0, 0.7, 2), (1.0, 3, 0.8, 2), (0.8, 0, 0.6, 3), (1.0, 0, 0.5, 2)]:
        steps, seed = int(rng.integers(8, 13)), int(rng.integers(2**31))
        setting = dict(max_new_tokens=steps, do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p)
        table, ids, eos = setup(batch, rng=np.random.default_rng(seed), **setting)
        add("sample", f"scripted: T={temperature}, top_k={top_k}, top_p={top_p}, {batch} prompt(s)",
            [ids, steps, temperature, top_k, top_p, np.random.default_rng(seed).random((steps, batch)), eos], seed,
            table=table)
    for beams, penalty, early, batch in [(2, 1.0, False, 2), (3, 2.0, "never", 1), (2, -1.0, True, 2),
                                         (3, 0.0, False, 2)]:
        steps = int(rng.integers(6, 10))
        table, ids, eos = setup(batch, max_new_tokens=steps, num_beams=beams, length_penalty=penalty,
                                early_stopping=early)
        add("beam_search", f"scripted: {beams} beams, length_penalty={penalty}, early_stopping={early!r}, "
            f"{batch} prompt(s)", [ids, steps, beams, penalty, early, eos], table=table)
    # After the prompt [0, 1], eos = 7: step 1 runs 3 and 4 (a tie); step 2 ranks 3->5 first, 3->eos second (a
    # hypothesis), 4->eos third (rank K = 2: it finishes nothing) and 4->0 fourth; step 3 finishes 3->5->eos,
    # which, at length_penalty 2, beats 3->eos. Counting the rank-2 eos would stop the search a step early.
    table = np.zeros((5, 8, 8), dtype=np.float32)
    table[2, 1, [3, 4]] = 2.0
    table[3, 3, [5, 7]] = [3.0, 2.5]
    table[3, 4, 7] = 0.7
    table[4, 5, 7] = 5.0
    add("beam_search", "scripted: an eos ranked K among the 2K candidates, 2 beams, length_penalty=2.0, "
        "early_stopping=True", [np.array([[0, 1]], dtype=np.int64), 5, 2, 2.0, True, 7], table=table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True, help="the cases' seed (keep it secret for a real course)")
    parser.add_argument("--out", type=Path, default=HIDDEN_DIR / "cases.json")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    cases = {**processor_cases(rng), **decoding_cases(rng)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"format": FORMAT, "seed": args.seed, "cases": encode(cases)}) + "\n")
    print(f"wrote {args.out}: " + ", ".join(f"{name} {len(found)}" for name, found in cases.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
