r"""Engine cases with transformers 4.38.2's answers, in the suite's case format: a stop-gap for the engines helpers
until the suite's ``engines`` group lands (then use ``refdecode conformance export --only engines``).

    /work/main/.venv-oracle/bin/python examples/engines/common/oracle_cases.py OUT_DIR [--model-124m DIR]

Writes ``OUT_DIR/cases/engines_greedy.jsonl`` and ``OUT_DIR/cases/engines_beam_search.jsonl`` (the model paths are
absolute), each line ``{"id", "type", "note", "input": {"model", "input_ids", "attention_mask", "config"},
"expected": {"sequences", "sequences_scores"?}}``; ``expected`` is ``GPT2LMHeadModel.generate`` under torch
2.13.0 / transformers 4.38.2 (float32, CPU). Cases, on the shipped model (tiny-shakespeare, eos 198 "\n", a token
it emits):

* beam search over num_beams 2-5 x length_penalty {-1, 0, 0.5, 1, 2} x early_stopping {True, False, "never"}
  (60 cases; batch 1 and 2 alternate, 2 = left-padded), max_new_tokens 14;
* num_return_sequences 2-3; repetition_penalty 1.3 / 0.8; no_repeat_ngram_size 2-3; min_length / min_new_tokens;
  and combinations (beam and greedy);
* on the GPT-2-124M-shaped checkpoint (when given): greedy and beam 2-4, eos = a token that checkpoint emits
  under greedy search (found by a first greedy run).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import torch
from transformers import GPT2LMHeadModel, GPT2TokenizerFast

ROOT = Path(__file__).resolve().parents[3]
PROMPTS = ["ROMEO:\nWhat say you", "First Citizen:\nBefore we proceed any further, hear", "KING HENRY:\nNow",
           "JULIET:\nO Romeo, Romeo", "MENENIUS:\nI will tell you"]
FIELDS = dict(do_sample=False, num_beams=1, num_beam_groups=1, diversity_penalty=0.0, length_penalty=1.0,
              early_stopping=False, num_return_sequences=1, repetition_penalty=1.0, no_repeat_ngram_size=0,
              min_length=0, min_new_tokens=None, temperature=1.0, top_k=50, top_p=1.0)


def batch(tok, texts: list[str], pad: int) -> tuple[list[list[int]], list[list[int]]]:
    rows = [tok(t)["input_ids"] for t in texts]
    width = max(len(r) for r in rows)
    ids = [[pad] * (width - len(r)) + r for r in rows]
    mask = [[0] * (width - len(r)) + [1] * len(r) for r in rows]
    return ids, mask


def run(model, ids, mask, cfg: dict) -> dict:
    kw = {k: v for k, v in cfg.items() if v is not None}
    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                             return_dict_in_generate=True, output_scores=True, **kw)
    expected = {"sequences": out.sequences.tolist()}
    if getattr(out, "sequences_scores", None) is not None:
        expected["sequences_scores"] = [float(x) for x in out.sequences_scores]
    return expected


def case(kind, n, note, model_path, ids, mask, cfg, expected) -> dict:
    return {"id": f"{kind}/{n:04d}", "type": kind, "note": note,
            "input": {"model": {"kind": "gpt2", "path": str(model_path)}, "input_ids": ids, "attention_mask": mask,
                      "config": cfg}, "expected": expected}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", type=Path, default=ROOT / "models" / "tiny-shakespeare")
    ap.add_argument("--model-124m", type=Path, default=None)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    (args.out / "cases").mkdir(parents=True, exist_ok=True)
    tok = GPT2TokenizerFast(tokenizer_file=str(args.model / "tokenizer.json"))
    model = GPT2LMHeadModel.from_pretrained(str(args.model)).eval()
    greedy, beams = [], []
    eos, pad = [198], 50256

    def add(kind, texts, note, **over):
        cfg = dict(FIELDS, eos_token_id=eos, pad_token_id=pad, max_new_tokens=14)
        cfg.update(over)
        ids, mask = batch(tok, texts, cfg["pad_token_id"])
        target = beams if kind == "engines_beam_search" else greedy
        target.append(case(kind, len(target), note, args.model.resolve(), ids, mask, cfg,
                           run(model, ids, mask, cfg)))

    grid = itertools.product([2, 3, 4, 5], [-1.0, 0.0, 0.5, 1.0, 2.0], [True, False, "never"])
    for i, (nb, lp, es) in enumerate(grid):
        texts = [PROMPTS[i % 5]] if i % 2 == 0 else [PROMPTS[i % 5], PROMPTS[(i + 2) % 5]]
        add("engines_beam_search", texts, f"grid num_beams={nb} length_penalty={lp} early_stopping={es}",
            num_beams=nb, length_penalty=lp, early_stopping=es)
    extras = [
        dict(num_beams=3, num_return_sequences=2), dict(num_beams=4, num_return_sequences=3, early_stopping=True),
        dict(num_beams=3, repetition_penalty=1.3), dict(num_beams=3, repetition_penalty=0.8),
        dict(num_beams=3, no_repeat_ngram_size=2), dict(num_beams=4, no_repeat_ngram_size=3),
        dict(num_beams=3, min_length=20), dict(num_beams=3, min_new_tokens=8),
        dict(num_beams=4, repetition_penalty=1.3, no_repeat_ngram_size=2, min_new_tokens=5, num_return_sequences=2),
        dict(num_beams=2, eos_token_id=[198, 13], length_penalty=0.5),
    ]
    for j, over in enumerate(extras):
        texts = PROMPTS[j % 5: j % 5 + 1 + (j % 2)]
        add("engines_beam_search", texts, "options " + json.dumps(over), **over)
    for j, over in enumerate([{}, dict(repetition_penalty=1.3), dict(repetition_penalty=0.8),
                              dict(no_repeat_ngram_size=2), dict(min_length=20), dict(min_new_tokens=8),
                              dict(repetition_penalty=1.3, no_repeat_ngram_size=3, min_new_tokens=4),
                              dict(eos_token_id=[198, 13])]):
        add("engines_greedy", PROMPTS[j % 5: j % 5 + 1 + (j % 2)], "options " + json.dumps(over), **over)
        add("engines_greedy", PROMPTS[:3], "batch 3 " + json.dumps(over), **over)

    if args.model_124m:
        big = GPT2LMHeadModel.from_pretrained(str(args.model_124m)).eval()
        model, saved = big, args.model
        args.model = args.model_124m
        ids, mask = batch(tok, PROMPTS[:1], 50256)
        probe = run(big, ids, mask, dict(FIELDS, eos_token_id=[50256], pad_token_id=50256, max_new_tokens=8))
        eos = [probe["sequences"][0][len(ids[0]) + 5]]  # a token this checkpoint emits under greedy search
        for j in range(3):
            add("engines_greedy", PROMPTS[j: j + 1 + (j % 2)], f"124M greedy eos={eos}")
        for nb in (2, 3, 4):
            add("engines_beam_search", PROMPTS[nb - 2: nb - 1], f"124M beam num_beams={nb} eos={eos}", num_beams=nb)
        args.model = saved
    for kind, rows in (("engines_greedy", greedy), ("engines_beam_search", beams)):
        with open(args.out / "cases" / f"{kind}.jsonl", "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    print(json.dumps({"engines_greedy": len(greedy), "engines_beam_search": len(beams)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
