"""Greedy decoding speed of refdecode's GPT-2 vs transformers 4.38.2, GPT-2-124M-shaped, same run, alternating.

Not a test. Needs the ``oracle`` extra (torch + transformers); run from the repository root with the oracle venv::

    .venv-oracle/bin/python benchmarks/bench_model.py [--rounds 3] [--new-tokens 64] [--prompt-len 32] [--threads 2]

1) Creates ``benchmarks/_checkpoints/gpt2-124m-random/`` once (gitignored): transformers' ``GPT2LMHeadModel``
   with the default ``GPT2Config`` (124M parameters), random init, ``save_pretrained`` (float32 safetensors).
2) Loads it in refdecode (``GPT2.from_pretrained``, both with ``mmap=False``, the default, and with
   ``mmap=True``) and in transformers (torch threads = 2), printing the load times.
3) Times greedy decoding of exactly 64 new tokens from a 32-token prompt, alternating the two libraries:
   refdecode as a plain argmax loop over the model API with a preallocated KV cache (prefill the prompt
   once, then one token per step), transformers as ``model.generate(do_sample=False, min_new_tokens=64,
   max_new_tokens=64)``. Both do 1 prefill + 63 single-token forward passes. Prints the median tokens/s
   of each, the ratios, and whether they produced the same tokens.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

AP = argparse.ArgumentParser(description=__doc__.splitlines()[0])
AP.add_argument("--rounds", type=int, default=3)
AP.add_argument("--new-tokens", type=int, default=64)
AP.add_argument("--prompt-len", type=int, default=32)
AP.add_argument("--threads", type=int, default=2, help="threads for torch and for NumPy's OpenBLAS (default 2)")
ARGS = AP.parse_args()
# OpenBLAS reads its thread count when NumPy is imported, so this must come first
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the oracle venv does not have refdecode installed

from refdecode.model.modeling import GPT2  # noqa: E402

CHECKPOINT = ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-random"


def make_checkpoint() -> None:
    """A random GPT-2 124M in save_pretrained layout (float32), created once."""
    if (CHECKPOINT / "model.safetensors").exists():
        return
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config())
    model.save_pretrained(CHECKPOINT, safe_serialization=True)
    print(f"created {CHECKPOINT.relative_to(ROOT)}")


def greedy_refdecode(model: GPT2, prompt: np.ndarray, new_tokens: int) -> np.ndarray:
    """Argmax loop over the model API: prefill once, then one token per step through the cache."""
    B, T = prompt.shape
    cache = model.new_cache(B, T + new_tokens)  # preallocated: appends never reallocate
    out = np.empty((B, new_tokens), dtype=np.int64)
    # 1) prefill the prompt; only the last position's logits are needed
    logits = model(prompt, past_key_values=cache, logits_to_keep=1).logits  # (B, 1, V)
    for i in range(new_tokens):
        # 2) choose the next token
        out[:, i] = logits[:, -1].argmax(axis=-1)
        if i == new_tokens - 1:
            break
        # 3) feed it back: one new token, S cached ones
        logits = model(out[:, i : i + 1], past_key_values=cache).logits
    return out


def greedy_transformers(model: GPT2LMHeadModel, prompt: torch.Tensor, new_tokens: int) -> np.ndarray:
    res = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                         min_new_tokens=new_tokens, max_new_tokens=new_tokens, pad_token_id=model.config.eos_token_id)
    return res[:, prompt.shape[1]:].numpy()


def main() -> None:
    args = ARGS
    torch.set_num_threads(args.threads)
    make_checkpoint()

    t0 = time.perf_counter()
    ours = GPT2.from_pretrained(CHECKPOINT)  # mmap=False
    load_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours_mmap = GPT2.from_pretrained(CHECKPOINT, mmap=True)
    load_mmap = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = GPT2LMHeadModel.from_pretrained(CHECKPOINT).eval()
    load_theirs = time.perf_counter() - t0
    print(f"load time: refdecode {load_read:.3f} s, refdecode(mmap) {load_mmap:.3f} s (pages are read on "
          f"first use); transformers {load_theirs:.3f} s")

    prompt = np.random.default_rng(0).integers(0, ours.config.vocab_size, size=(1, args.prompt_len))
    prompt_t = torch.from_numpy(prompt)
    n = args.new_tokens
    runners = {
        "refdecode": lambda: greedy_refdecode(ours, prompt, n),
        "refdecode(mmap)": lambda: greedy_refdecode(ours_mmap, prompt, n),
        "transformers": lambda: greedy_transformers(theirs, prompt_t, n),
    }
    tokens = {name: run() for name, run in runners.items()}  # warm-up: page in weights, settle allocators
    speeds: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.rounds):
        for name, run in runners.items():  # alternating, so load changes hit all alike
            t0 = time.perf_counter()
            tokens[name] = run()
            speeds[name].append(n / (time.perf_counter() - t0))
    med = {k: statistics.median(v) for k, v in speeds.items()}
    print(f"greedy, prompt {args.prompt_len}, {n} new tokens, batch 1, median of {args.rounds} alternating rounds "
          f"[numpy {np.__version__}, torch {torch.__version__}, threads {args.threads}]:")
    for k, v in speeds.items():
        ratio = med[k] / med["transformers"]
        print(f"  {k:16s} {med[k]:6.1f} tokens/s  {ratio:5.2f}x transformers   "
              f"(rounds: {', '.join(f'{s:.1f}' for s in v)})")
    for k in ("refdecode", "refdecode(mmap)"):
        same = np.array_equal(tokens[k], tokens["transformers"])
        print(f"  {k} tokens == transformers tokens: {same}")


if __name__ == "__main__":
    main()
