"""Golden logits of the shipped ``models/tiny-shakespeare`` model, as transformers 4.38.2 computes them.

In: ``models/tiny-shakespeare/`` (loaded with ``GPT2LMHeadModel.from_pretrained`` from the local path: the
float16 file is upcast to float32, as refdecode's loader does) and its ``tokenizer.json``.
Out: ``tests/golden/tiny_shakespeare.npz`` (about 0.5 MB), read by ``tests/model/test_tiny_shakespeare.py``:

    prompt_{i}_ids          int64 (T_i,)        the prompt's token ids
    prompt_{i}_last_logits  float32 (V,)        logits at the last position (all 50257)
    prompt_{i}_slice_ids    int64 (64,)         token ids of the slice below (fixed, common in Shakespeare)
    prompt_{i}_slice_logits float32 (T_i, 64)   logits at every position, for those 64 ids only
    greedy_prompt_ids       int64 (T,)          "ROMEO:\\n"
    greedy_ids              int64 (T + 24,)     transformers' greedy continuation (do_sample=False, 24 new tokens)
    excerpt_ids             int64 (N,)          the first N tokens of the held-out play Timon of Athens
    excerpt_nll             float64 ()          mean next-token cross-entropy of the excerpt (nats)
    meta                    str                 JSON: format_version, versions, script, regenerate command

Only small slices are stored to keep the file small; the full logits of the last position catch any
error in the LM head, the per-position slices catch errors in positions and attention.

Regenerate (after retraining the model)::

    .venv-oracle/bin/python tools/golden/make_tiny_shakespeare_golden.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import Tokenizer
from transformers import GPT2LMHeadModel

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "tiny-shakespeare"
OUT = ROOT / "tests" / "golden" / "tiny_shakespeare.npz"
COMMAND = ".venv-oracle/bin/python tools/golden/make_tiny_shakespeare_golden.py"
PROMPTS = [
    "ROMEO:\nBut soft, what light through yonder window breaks?",
    "HAMLET:\nTo be, or not to be: that is the question:\nWhether 'tis nobler",
]
# The opening of the held-out Timon of Athens, as in data/tiny-shakespeare/val.txt (which starts with it:
# plays are in file-name order). Written out here so that neither this script nor the test needs data/.
EXCERPT = """Poet:
Good day, sir.

Painter:
I am glad you're well.

Poet:
I have not seen you long: how goes the world?

Painter:
It wears, sir, as it grows.

Poet:
Ay, that's well known:
But what particular rarity? what strange,
Which manifold record not matches? See,
Magic of bounty! all these spirits thy power
Hath conjured to attend. I know the merchant.
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    torch.set_num_threads(1)
    tok = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    model = GPT2LMHeadModel.from_pretrained(args.model, local_files_only=True)
    model.eval()
    assert next(model.parameters()).dtype == torch.float32
    slice_ids = np.array(sorted(set(tok.encode(" the and I you my of to a : , . ; ! ? \n thee thou lord love "
                                               "ROMEO HAMLET KING Enter good death heaven night sir").ids))[:64],
                         dtype=np.int64)
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        for i, prompt in enumerate(PROMPTS):
            ids = np.array(tok.encode(prompt).ids, dtype=np.int64)
            logits = model(torch.from_numpy(ids)[None]).logits[0].numpy()  # (T, V) float32
            arrays[f"prompt_{i}_ids"] = ids
            arrays[f"prompt_{i}_last_logits"] = logits[-1].astype(np.float32)
            arrays[f"prompt_{i}_slice_ids"] = slice_ids
            arrays[f"prompt_{i}_slice_logits"] = logits[:, slice_ids].astype(np.float32)

        prompt = torch.tensor([tok.encode("ROMEO:\n").ids])
        greedy = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, num_beams=1,
                                max_new_tokens=24, pad_token_id=50256)
        arrays["greedy_prompt_ids"] = prompt[0].numpy().astype(np.int64)
        arrays["greedy_ids"] = greedy[0].numpy().astype(np.int64)

        excerpt = torch.tensor([tok.encode(EXCERPT).ids])
        arrays["excerpt_ids"] = excerpt[0].numpy().astype(np.int64)
        arrays["excerpt_nll"] = np.float64(model(excerpt, labels=excerpt).loss.item())

    meta = {"format_version": 1, "transformers": transformers.__version__, "torch": torch.__version__,
            "tokenizers": tokenizers.__version__, "numpy": np.__version__,
            "model": "models/tiny-shakespeare (float16 safetensors, loaded as float32)",
            "prompts": PROMPTS, "script": "tools/golden/make_tiny_shakespeare_golden.py", "regenerate": COMMAND}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, meta=np.array(json.dumps(meta)), **arrays)
    greedy_text = tok.decode(arrays["greedy_ids"].tolist())
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} kB); greedy: {greedy_text!r}; "
          f"excerpt nll {float(arrays['excerpt_nll']):.4f} (ppl {np.exp(arrays['excerpt_nll']):.1f})")


if __name__ == "__main__":
    main()
