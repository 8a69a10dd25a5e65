"""Recompute the printed outputs of the 4.26 walkthrough's GPT-2 quick starts with refdecode.

The walkthrough (docs/references.md) prints what transformers 4.26.1 generated with the real GPT-2
for two decoder-only programs. With the real GPT-2 in ``models/gpt2`` (see models/README.md; it is
not shipped), this script reruns them and says whether refdecode gives the same:

- greedy quick start (section 2.2): "It might be possible to", MinLength(10) + RepetitionPenalty(1.2),
  max_length 20. Greedy is deterministic, so the text must be identical.
- sampling quick start (section 4.2): "Today is a beautiful day, and", MinLength(15), top-k 50,
  top-p 0.9, max_length 20, ``torch.manual_seed(0)``. torch's random stream cannot be replayed in
  NumPy, so the draw itself cannot be recomputed; what can be checked is that every printed token
  survives the processors and warpers at its step (it was drawable), with its probability.

Its T5 programs (sections 3, 5, 6) need an encoder-decoder model, which refdecode does not implement.

Without ``models/gpt2`` nothing is run: the script says so, and what it would show. Usage::

    python tools/strategies/seed_outputs.py                  # models/gpt2
    python tools/strategies/seed_outputs.py --model DIR      # another GPT-2 checkpoint
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from refdecode import (  # noqa: E402
    GPT2,
    LogitsProcessorList,
    MaxLengthCriteria,
    MinLengthLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    StoppingCriteriaList,
    Tokenizer,
    TopKLogitsWarper,
    TopPLogitsWarper,
    greedy_search,
    softmax,
)

DEFAULT_MODEL = ROOT / "models" / "gpt2"
GREEDY_PROMPT = "It might be possible to"
GREEDY_PRINTED = "It might be possible to get a better understanding of the nature of this phenomenon, but it is not"
SAMPLE_PROMPT = "Today is a beautiful day, and"
# printed as "...day.nnI was..." in the walkthrough: its "\n\n" lost the backslashes when the page was copied
SAMPLE_PRINTED = "Today is a beautiful day, and a wonderful day.\n\nI was lucky enough to meet the"
NOT_PRESENT = ("not run: {path} holds no GPT-2 checkpoint (config.json + model.safetensors + tokenizer.json; "
               "models/README.md says how to place it). With it, this compares refdecode's greedy text with "
               "the walkthrough's printed line, and checks that every token of its printed sample was drawable "
               "under top-k 50 / top-p 0.9.")


def has_checkpoint(path: Path) -> bool:
    return all((path / name).is_file() for name in ("config.json", "model.safetensors", "tokenizer.json"))


def greedy_program(model: GPT2, tok: Tokenizer) -> dict:
    """Section 2.2, ported: the text refdecode generates and whether it is the printed one."""
    eos = int(model.config.eos_token_id)
    processors = LogitsProcessorList([MinLengthLogitsProcessor(10, eos_token_id=eos), RepetitionPenaltyLogitsProcessor(1.2)])
    out = greedy_search(model, tok.encode(GREEDY_PROMPT)[None], logits_processor=processors,
                        stopping_criteria=StoppingCriteriaList([MaxLengthCriteria(max_length=20)]), pad_token_id=eos)
    text = tok.decode(out[0], skip_special_tokens=True)
    return {"program": "greedy quick start (section 2.2)", "printed": GREEDY_PRINTED, "refdecode": text,
            "status": "same as printed" if text == GREEDY_PRINTED else "differs from printed"}


def sample_program(model: GPT2, tok: Tokenizer) -> dict:
    """Section 4.2: is each printed token inside the warped distribution of its step? (the draw is torch's)"""
    eos = int(model.config.eos_token_id)
    processors = LogitsProcessorList([MinLengthLogitsProcessor(15, eos_token_id=eos)])
    warpers = LogitsProcessorList([TopKLogitsWarper(50), TopPLogitsWarper(0.9)])
    prompt, full = tok.encode(SAMPLE_PROMPT), tok.encode(SAMPLE_PRINTED)
    if not np.array_equal(full[: len(prompt)], prompt):
        raise ValueError("the printed sample does not start with the prompt's tokens")
    logits = model(full[None]).logits[0]                                  # (T, V): every prefix at once
    probs = []
    for t in range(len(prompt), len(full)):
        scores = warpers(full[None, :t], processors(full[None, :t], logits[t - 1][None]))
        probs.append(float(softmax(scores)[0, full[t]]))                  # 0.0: filtered out at that step
    drawable = all(p > 0 for p in probs)
    return {"program": "sampling quick start (section 4.2)", "printed": SAMPLE_PRINTED,
            "step_probabilities": [round(p, 4) for p in probs],
            "status": "every printed token was drawable" if drawable else "a printed token was filtered out"}


def recompute(model_dir: Path = DEFAULT_MODEL) -> list[dict]:
    """Both programs on ``model_dir``; without a checkpoint there, one entry saying what was not run."""
    model_dir = Path(model_dir)
    if not has_checkpoint(model_dir):
        shown = model_dir.relative_to(ROOT) if model_dir.is_relative_to(ROOT) else model_dir
        return [{"program": "greedy and sampling quick starts", "status": NOT_PRESENT.format(path=shown)}]
    model, tok = GPT2.from_pretrained(model_dir), Tokenizer(model_dir)
    return [greedy_program(model, tok), sample_program(model, tok)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Recompute the 4.26 walkthrough's GPT-2 quick-start outputs.")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="GPT-2 checkpoint (default: models/gpt2)")
    args = parser.parse_args(argv)
    for row in recompute(args.model):
        print(f"{row['program']}: {row['status']}")
        for key in ("printed", "refdecode", "step_probabilities"):
            if key in row:
                print(f"  {key}: {row[key]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
