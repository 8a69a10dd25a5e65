"""Golden outputs of the shipped ``models/tiny-shakespeare-llama`` model, as transformers 4.38.2 computes them.

In: ``models/tiny-shakespeare-llama/`` (loaded with ``LlamaForCausalLM.from_pretrained`` from the local path,
eager attention: the float16 file is upcast to float32, as refdecode's loader does) and its ``tokenizer.json``.
Out: ``tests/golden/tiny_shakespeare_llama.npz`` (about 0.5 MB), read by
``tests/model/test_tiny_shakespeare_llama.py``:

    prompt_{i}_ids          int64 (T_i,)        the prompt's token ids (the GPT-2 golden's two prompts)
    prompt_{i}_last_logits  float32 (V,)        logits at the last position (all 50257)
    prompt_{i}_slice_ids    int64 (64,)         token ids of the slice below (fixed, common in Shakespeare)
    prompt_{i}_slice_logits float32 (T_i, 64)   logits at every position, for those 64 ids only
    greedy_prompt_ids       int64 (T,)          "ROMEO:\\n"
    greedy_ids              int64 (T + 24,)     generate(do_sample=False, num_beams=1, max_new_tokens=24)
    beam_ids                int64 (4, T + 24)   generate(num_beams=4, num_return_sequences=4, max_new_tokens=24)
    beam_sequences_scores   float32 (4,)        that call's ``sequences_scores`` (length-penalised log-probabilities)
    excerpt_ids             int64 (N,)          the first N tokens of the held-out play Timon of Athens
    excerpt_nll             float64 ()          mean next-token cross-entropy of the excerpt (nats)
    meta                    str                 JSON: format_version, versions, script, regenerate command

The prompts, the 64-id slice and the excerpt are the GPT-2 golden's (``make_tiny_shakespeare_golden.py``), so
the two models' numbers can be read side by side.

Regenerate (after retraining the model)::

    .venv-oracle/bin/python tools/golden/make_tiny_shakespeare_llama_golden.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import Tokenizer
from transformers import LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tiny_shakespeare_golden import EXCERPT, PROMPTS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "tiny-shakespeare-llama"
OUT = ROOT / "tests" / "golden" / "tiny_shakespeare_llama.npz"
COMMAND = ".venv-oracle/bin/python tools/golden/make_tiny_shakespeare_llama_golden.py"
EOT_ID = 50256
NEW = 24


def slice_ids(tok: Tokenizer) -> np.ndarray:
    """The GPT-2 golden's 64 common ids."""
    return np.array(sorted(set(tok.encode(" the and I you my of to a : , . ; ! ? \n thee thou lord love "
                                          "ROMEO HAMLET KING Enter good death heaven night sir").ids))[:64],
                    dtype=np.int64)


@torch.no_grad()
def generated(model: LlamaForCausalLM, prompt: torch.Tensor) -> dict[str, np.ndarray]:
    """Greedy and beam-4 continuations of ``prompt`` (1, T), as 4.38.2's generate gives them."""
    common = dict(attention_mask=torch.ones_like(prompt), max_new_tokens=NEW, do_sample=False, pad_token_id=EOT_ID)
    greedy = model.generate(prompt, num_beams=1, **common)
    beam = model.generate(prompt, num_beams=4, num_return_sequences=4, output_scores=True,
                          return_dict_in_generate=True, **common)
    return {"greedy_prompt_ids": prompt[0].numpy().astype(np.int64),
            "greedy_ids": greedy[0].numpy().astype(np.int64),
            "beam_ids": beam.sequences.numpy().astype(np.int64),
            "beam_sequences_scores": beam.sequences_scores.numpy().astype(np.float32)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    torch.set_num_threads(1)
    tok = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    model = LlamaForCausalLM.from_pretrained(args.model, local_files_only=True, attn_implementation="eager")
    model.eval()
    assert next(model.parameters()).dtype == torch.float32
    ids64 = slice_ids(tok)
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        for i, prompt in enumerate(PROMPTS):
            ids = np.array(tok.encode(prompt).ids, dtype=np.int64)
            logits = model(torch.from_numpy(ids)[None]).logits[0].numpy()  # (T, V) float32
            arrays[f"prompt_{i}_ids"] = ids
            arrays[f"prompt_{i}_last_logits"] = logits[-1].astype(np.float32)
            arrays[f"prompt_{i}_slice_ids"] = ids64
            arrays[f"prompt_{i}_slice_logits"] = logits[:, ids64].astype(np.float32)
        arrays.update(generated(model, torch.tensor([tok.encode("ROMEO:\n").ids])))
        excerpt = torch.tensor([tok.encode(EXCERPT).ids])
        arrays["excerpt_ids"] = excerpt[0].numpy().astype(np.int64)
        arrays["excerpt_nll"] = np.float64(model(excerpt, labels=excerpt).loss.item())

    meta = {"format_version": 1, "transformers": transformers.__version__, "torch": torch.__version__,
            "tokenizers": tokenizers.__version__, "numpy": np.__version__, "attn_implementation": "eager",
            "model": "models/tiny-shakespeare-llama (float16 safetensors, loaded as float32)",
            "prompts": PROMPTS, "max_new_tokens": NEW, "script": "tools/golden/make_tiny_shakespeare_llama_golden.py",
            "regenerate": COMMAND}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, meta=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
          f"({args.out.stat().st_size / 1e3:.0f} kB); greedy: {tok.decode(arrays['greedy_ids'].tolist())!r}; "
          f"beam scores {arrays['beam_sequences_scores'].round(4).tolist()}; "
          f"excerpt nll {float(arrays['excerpt_nll']):.4f} (ppl {np.exp(arrays['excerpt_nll']):.1f})")


if __name__ == "__main__":
    main()
