"""Train the tiny-shakespeare GPT-2 (oracle venv: torch + transformers; never imported by the package).

In: ``data/tiny-shakespeare/{train,val}.txt`` from ``tools/shakespeare/build_corpus.py`` and the real GPT-2
tokenizer ``models/gpt2-tiny/tokenizer.json`` (50257 tokens, ``<|endoftext|>`` = 50256 between plays).
Out: ``models/tiny-shakespeare/`` in Hugging Face's ``save_pretrained`` layout: ``config.json``,
``model.safetensors`` (float16; loaders upcast to float32), ``generation_config.json``, ``tokenizer.json``,
and ``data/tiny-shakespeare/train_summary.json`` with the numbers quoted in the model card.

Model: transformers' ``GPT2LMHeadModel`` with 4 layers, 4 heads, width 128, context 256, tied input and
output embeddings, no dropout (about 1.5 passes over 1.4M tokens does not overfit). Optimiser: AdamW
(betas 0.9/0.95, weight decay 0.1 on matrices only), linear warm-up then cosine decay to 10% of the peak
rate, gradient norm clipped at 1.0. Batches are random 257-token windows of the training stream (input =
first 256, target = last 256), drawn from a seeded ``torch.Generator``; the whole run is seeded and uses
one thread (``torch.set_num_threads(1)``: the machine has 2 cores shared with other work).

Validation loss = mean next-token cross-entropy over non-overlapping 256-token windows of ``val.txt``;
perplexity = exp(loss). During training it is estimated on the first ``--eval-windows`` windows; at the end
it is computed on the whole validation set, both for the float32 weights and for the saved float16 ones.

Usage (the ``MALLOC_*`` variables keep glibc from returning the ~400 MB logits buffers to the OS after
every step; same numbers, about 1.5x faster on this machine, because page faults had cost a third of the time)::

    export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=17179869184 MALLOC_TOP_PAD_=1073741824
    .venv-oracle/bin/python tools/shakespeare/train.py --steps 2200 --batch-size 8 --lr 2e-3 --warmup 100 \
        --seed 1337 > data/tiny-shakespeare/train.log            # the shipped model (~40 min, 1 thread)
    .venv-oracle/bin/python tools/shakespeare/train.py --steps 20 --no-save  # throughput check first
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import shutil
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

ROOT = Path(__file__).resolve().parents[2]
EOT_ID = 50256


# ---------------------------------------------------------------------------------------------------
# data


def load_tokens(path: Path, tok: Tokenizer) -> torch.Tensor:
    """Text file -> int64 token stream (N,)."""
    return torch.tensor(tok.encode(path.read_text(encoding="utf-8")).ids, dtype=torch.int64)


def random_batch(tokens: torch.Tensor, batch_size: int, ctx: int, gen: torch.Generator) -> torch.Tensor:
    """(N,) stream -> (batch_size, ctx + 1) random windows; labels are the windows shifted by one."""
    starts = torch.randint(0, len(tokens) - ctx - 1, (batch_size,), generator=gen)
    return torch.stack([tokens[s:s + ctx + 1] for s in starts.tolist()])


@torch.no_grad()
def eval_loss(model: GPT2LMHeadModel, tokens: torch.Tensor, ctx: int, max_windows: int | None = None,
              batch_size: int = 16) -> float:
    """Mean next-token cross-entropy (nats) over non-overlapping (ctx + 1)-token windows of ``tokens``."""
    n = (len(tokens) - 1) // ctx
    n = n if max_windows is None else min(n, max_windows)
    windows = torch.stack([tokens[i * ctx:i * ctx + ctx + 1] for i in range(n)])  # (n, ctx + 1)
    model.eval()
    total = 0.0
    for b in range(0, n, batch_size):
        w = windows[b:b + batch_size]
        logits = model(w[:, :-1]).logits  # (b, ctx, V)
        total += torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1),
                                                   reduction="sum").item()
    model.train()
    return total / (n * ctx)


# ---------------------------------------------------------------------------------------------------
# model and optimiser


def make_model(args: argparse.Namespace) -> GPT2LMHeadModel:
    config = GPT2Config(vocab_size=50257, n_positions=args.ctx, n_embd=args.width, n_layer=args.layers,
                        n_head=args.heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=EOT_ID, eos_token_id=EOT_ID, tie_word_embeddings=True)
    return GPT2LMHeadModel(config)


def make_optimizer(model: GPT2LMHeadModel, args: argparse.Namespace) -> torch.optim.AdamW:
    """AdamW; weight decay only on matrices (not biases, LayerNorm gains or the position table)."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "wpe" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or "wpe" in n]
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95), eps=1e-8)


def lr_at(step: int, args: argparse.Namespace) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine from ``lr`` down to ``lr * min_lr_ratio``."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


# ---------------------------------------------------------------------------------------------------
# save


def write_generation_config(out: Path) -> None:
    """generation_config.json: bos = eos = pad = <|endoftext|> (pad = eos is what GPT-2 generation assumes)."""
    GenerationConfig(bos_token_id=EOT_ID, eos_token_id=EOT_ID, pad_token_id=EOT_ID).save_pretrained(out)


def save(model: GPT2LMHeadModel, out: Path, tokenizer_json: Path) -> None:
    """float16 ``save_pretrained`` layout + generation_config.json + tokenizer.json."""
    out.mkdir(parents=True, exist_ok=True)
    half = GPT2LMHeadModel(model.config)
    half.load_state_dict(model.state_dict())
    half.half().save_pretrained(out, safe_serialization=True)
    # Only the special ids: any other default (max_length, ...) would be read by transformers' from_pretrained
    # but not by refdecode's, and the two would then generate differently when called without arguments.
    write_generation_config(out)
    shutil.copyfile(tokenizer_json, out / "tokenizer.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "tiny-shakespeare")
    ap.add_argument("--tokenizer", type=Path, default=ROOT / "models" / "gpt2-tiny" / "tokenizer.json")
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "tiny-shakespeare")
    ap.add_argument("--no-save", action="store_true", help="throughput check: train, evaluate, save nothing")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--steps", type=int, default=2200)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-interval", type=int, default=100)
    ap.add_argument("--eval-windows", type=int, default=48, help="validation windows for the periodic estimate")
    ap.add_argument("--log-interval", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    tok = Tokenizer.from_file(str(args.tokenizer))
    assert tok.get_vocab_size() == 50257 and tok.token_to_id("<|endoftext|>") == EOT_ID
    train, val = load_tokens(args.data / "train.txt", tok), load_tokens(args.data / "val.txt", tok)
    print(f"train {len(train):,} tokens, val {len(val):,} tokens; "
          f"torch {torch.__version__}, transformers {transformers.__version__}, {args.threads} thread(s)", flush=True)

    model = make_model(args)
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters (tied embeddings)", flush=True)
    opt = make_optimizer(model, args)
    gen = torch.Generator().manual_seed(args.seed)
    t0, seen, run_loss, history = time.time(), 0, 0.0, []
    model.train()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        batch = random_batch(train, args.batch_size, args.ctx, gen)  # (B, ctx + 1)
        logits = model(batch[:, :-1]).logits  # (B, ctx, V)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seen += batch.shape[0] * args.ctx
        run_loss += loss.item()
        done = step + 1
        if done % args.log_interval == 0 or done == args.steps:
            el = time.time() - t0
            n = args.log_interval if done % args.log_interval == 0 else done % args.log_interval
            eta = (args.steps - done) * el / done / 60
            line = (f"step {done:5d}/{args.steps} | lr {lr_at(step, args):.2e} | train loss {run_loss / n:.4f} | "
                    f"{seen / el:,.0f} tok/s | {el / 60:5.1f} min | eta {eta:5.1f} min")
            run_loss = 0.0
            if done % args.eval_interval == 0 or done == args.steps:
                v = eval_loss(model, val, args.ctx, args.eval_windows)
                line += f" | val loss {v:.4f} (ppl {math.exp(v):.1f}, {args.eval_windows} windows)"
                history.append({"step": done, "val_loss_estimate": round(v, 4)})
            print(line, flush=True)
    train_seconds = time.time() - t0

    v32 = eval_loss(model, val, args.ctx)
    model16 = GPT2LMHeadModel(model.config)
    model16.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
    v16 = eval_loss(model16, val, args.ctx)
    print(f"final validation loss (all {len(val) // args.ctx} windows): float32 weights {v32:.4f} "
          f"(ppl {math.exp(v32):.2f}); float16-rounded weights {v16:.4f} (ppl {math.exp(v16):.2f}); "
          f"training took {train_seconds / 60:.1f} min for {seen:,} tokens ({seen / len(train):.2f} epochs)",
          flush=True)
    if args.no_save:
        return
    save(model, args.out, args.tokenizer)
    summary = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
               "train_tokens": len(train), "val_tokens": len(val), "tokens_seen": seen,
               "train_seconds": round(train_seconds, 1), "val_loss_f32": round(v32, 4), "val_loss_f16": round(v16, 4),
               "val_ppl_f16": round(math.exp(v16), 2), "history": history, "torch": torch.__version__,
               "transformers": transformers.__version__, "python": platform.python_version()}
    (args.data / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"saved {args.out}", flush=True)


if __name__ == "__main__":
    main()
