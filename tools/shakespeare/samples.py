"""Samples per decoding strategy from ``models/tiny-shakespeare`` (or another checkpoint folder, such as
``models/tiny-shakespeare-llama``), as Markdown for its model card.

Runs transformers 4.38.2 ``generate`` on the shipped float16 weights (loaded as float32, with
``AutoModelForCausalLM``: GPT-2 or Llama as ``config.json`` says; eager attention) for each strategy.
If ``refdecode.generate`` can be imported (the package source is put on ``sys.path``), the same settings also
go through refdecode, and for the deterministic strategies (greedy, beam, group beam) the token ids must be
identical. Sampling cannot match: torch's and NumPy's random streams differ. refdecode's own samples
(``seed=``) are printed next to transformers' (``torch.manual_seed``).

Usage (oracle venv; one thread)::

    .venv-oracle/bin/python tools/shakespeare/samples.py [MODEL_DIR] > /tmp/samples.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

ROOT = Path(__file__).resolve().parents[2]
MODEL = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "models" / "tiny-shakespeare"
SEED = 0
PROMPTS = ["ROMEO:\n", "JULIET:\nO Romeo, Romeo!"]
NEW = 60  # max_new_tokens unless the strategy sets its own
# (title, generate kwargs, deterministic?)
STRATEGIES = [
    ("Greedy", dict(do_sample=False, num_beams=1), True),
    ("Beam search, 4 beams", dict(do_sample=False, num_beams=4), True),
    ("Beam search, 4 beams, no_repeat_ngram_size=3", dict(do_sample=False, num_beams=4, no_repeat_ngram_size=3), True),
    ("Sampling, temperature 0.8, top-k 50", dict(do_sample=True, temperature=0.8, top_k=50), False),
    ("Sampling, top-p 0.9 (top_k=0)", dict(do_sample=True, top_p=0.9, top_k=0), False),
    ("Group beam search, 4 groups of 1 beam, diversity_penalty 1.0, all 4 returned",
     dict(do_sample=False, num_beams=4, num_beam_groups=4, diversity_penalty=1.0, num_return_sequences=4,
          max_new_tokens=40), True),
]


def refdecode_generate():
    """refdecode.generate.generate, or None if the decoding modules are not there yet."""
    sys.path.insert(0, str(ROOT))
    try:
        from refdecode.generate import generate
        from refdecode.model.modeling import GPT2
    except ImportError as e:
        print(f"<!-- refdecode.generate not importable ({e}); transformers only -->\n")
        return None
    try:
        from refdecode import from_pretrained   # GPT-2 or Llama, as config.json says
    except ImportError:                          # a refdecode that knows GPT-2 only
        from_pretrained = GPT2.from_pretrained
    model = from_pretrained(MODEL)
    return lambda ids, **kw: np.asarray(generate(model, ids, **kw))  # int64 (N, T_out), as transformers


def block(tok: Tokenizer, rows: np.ndarray) -> str:
    """Token rows -> a fenced Markdown block, sequences separated by a rule."""
    texts = [tok.decode(r.tolist(), skip_special_tokens=False) for r in rows]
    texts = [t.replace("<|endoftext|>", "\n<|endoftext|>") for t in texts]
    return "```text\n" + "\n-----\n".join(t.rstrip() for t in texts) + "\n```\n"


def main() -> None:
    torch.set_num_threads(1)
    tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    hf = AutoModelForCausalLM.from_pretrained(MODEL, local_files_only=True, attn_implementation="eager").eval()
    ours = refdecode_generate()
    for title, kw, deterministic in STRATEGIES:
        kw = {"max_new_tokens": NEW, **kw}
        print(f"### {title}\n\n`{', '.join(f'{k}={v}' for k, v in kw.items())}`\n")
        for prompt in PROMPTS:
            ids = torch.tensor([tok.encode(prompt).ids])
            torch.manual_seed(SEED)
            with torch.no_grad():
                out = hf.generate(ids, attention_mask=torch.ones_like(ids), pad_token_id=50256, **kw).numpy()
            if ours is None:
                print(block(tok, out))
                continue
            extra = {} if deterministic else {"seed": SEED}
            mine = np.asarray(ours(ids.numpy(), pad_token_id=50256, **kw, **extra))
            if deterministic:
                assert np.array_equal(mine, out), f"{title} / {prompt!r}: refdecode {mine} != transformers {out}"
                print("transformers 4.38.2 and refdecode (identical token ids):\n")
                print(block(tok, out))
            else:
                print(f"transformers 4.38.2 (`torch.manual_seed({SEED})`):\n")
                print(block(tok, out))
                print(f"refdecode (`seed={SEED}`):\n")
                print(block(tok, mine))


if __name__ == "__main__":
    main()
