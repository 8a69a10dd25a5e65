"""Train the tiny-shakespeare Llama (oracle venv: torch + transformers; never imported by the package).

The Llama twin of ``tools/shakespeare/train.py``: same corpus (``data/tiny-shakespeare/{train,val}.txt`` from
``build_corpus.py``), same GPT-2 tokenizer (``models/tiny-shakespeare/tokenizer.json``, copied byte for byte),
same batches, optimiser, learning-rate schedule and validation windows. The data, the optimiser and the
evaluation are imported from ``train.py``; only the model and the loop (which writes checkpoints) are here.
Out: ``models/tiny-shakespeare-llama/`` in Hugging Face's ``save_pretrained`` layout (``config.json``,
float16 ``model.safetensors``, ``generation_config.json``, ``tokenizer.json``) and
``data/tiny-shakespeare/train_summary_llama.json`` with the numbers quoted in the model card.

Model: transformers' ``LlamaForCausalLM`` with 4 layers, width 128, 4 query heads sharing 2 key/value heads
(grouped-query attention, head size 32), SwiGLU MLP of width 384, RMSNorm (eps 1e-5), rotary position
embeddings (theta 10000), context 256, tied input and output embeddings, no biases, no dropout. With the
MLP at 384 the blocks have exactly as many weights as GPT-2's (196,608 per layer; GPT-2 adds biases and a
position table), so the two models differ in architecture, not in size.

``config.json`` has ``bos_token_id = eos_token_id = 50256`` but no ``pad_token_id``: LlamaModel passes
``pad_token_id`` to ``nn.Embedding(padding_idx=...)``, which would zero the ``<|endoftext|>`` row and never
train it (and, tied, the LM head would then give that token a constant logit 0). ``generation_config.json``
sets pad = eos = bos = 50256, as for the GPT-2 model.

Schedule: ``--decay-steps 0`` is train.py's (warm-up, then a cosine over the whole run). ``--decay-steps D``
holds the peak rate after the warm-up and runs the same cosine over the last D steps only (warm-up, stable,
decay), so the rate before the decay does not depend on ``--steps``; with ``--finish-by UNIX_TIME`` the run
measures its own speed and starts the decay when the time left is just enough for it (and ``--reserve``
seconds for the final evaluation), printing the ``--steps`` that reproduces it. The shipped model was
trained that way on a machine whose speed was not known in advance (its model card).

Every ``--checkpoint-interval`` steps the float16 model is saved to ``--out`` (so a run stopped late still
leaves a usable model) together with a resume state (float32 weights, optimiser, random generator) in
``data/tiny-shakespeare/llama_resume.pt``; ``--resume`` continues from it with the same batches. The state
at the start of the decay is also kept (``llama_resume_before_decay.pt``): ``--resume-from`` it with a
larger ``--steps`` continues the stable phase into a longer run.

Usage (one thread; the ``MALLOC_*`` variables as in train.py)::

    export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=17179869184 MALLOC_TOP_PAD_=1073741824
    .venv-oracle/bin/python tools/shakespeare/train_llama.py --steps 20 --no-save    # throughput check first
    .venv-oracle/bin/python tools/shakespeare/train_llama.py --steps STEPS --decay-steps 80 \\
        > models/tiny-shakespeare-llama/training_log.txt                            # the shipped model
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train import EOT_ID, eval_loss, load_tokens, lr_at, make_optimizer, random_batch, write_generation_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def make_model(args: argparse.Namespace) -> LlamaForCausalLM:
    """LlamaForCausalLM, default initialisation (normal, std 0.02); no pad_token_id (see the module docstring)."""
    config = LlamaConfig(vocab_size=50257, hidden_size=args.width, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, hidden_act="silu", max_position_embeddings=args.ctx,
                         rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True, attention_bias=False,
                         attention_dropout=0.0, bos_token_id=EOT_ID, eos_token_id=EOT_ID, pad_token_id=None)
    return LlamaForCausalLM(config)


def lr_wsd(step: int, args: argparse.Namespace) -> float:
    """Warm-up, stable, decay: linear warm-up over ``warmup`` steps, the peak ``lr`` until the last
    ``decay_steps`` steps, then train.py's cosine from ``lr`` down to ``lr * min_lr_ratio`` over those.

    Unlike train.py's cosine over the whole run, the rate before the decay does not depend on ``steps``, so a
    run can be resumed from any checkpoint of the stable phase with a different ``--steps`` and give exactly
    what a fresh run with that ``--steps`` gives. ``--decay-steps 0`` falls back to train.py's ``lr_at``.
    """
    if args.decay_steps == 0:
        return lr_at(step, args)
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    start = args.steps - args.decay_steps
    if step < start:
        return args.lr
    progress = (step - start) / args.decay_steps
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def save(model: LlamaForCausalLM, out: Path, tokenizer_json: Path) -> None:
    """float16 ``save_pretrained`` layout + generation_config.json (special ids only) + tokenizer.json."""
    out.mkdir(parents=True, exist_ok=True)
    half = LlamaForCausalLM(model.config)
    half.load_state_dict(model.state_dict())
    half.half().save_pretrained(out, safe_serialization=True)
    write_generation_config(out)
    shutil.copyfile(tokenizer_json, out / "tokenizer.json")


def checkpoint(path: Path, model, opt, gen: torch.Generator, step: int, seen: int, seconds: float,
               history: list) -> None:
    """Everything ``--resume`` needs to continue with the same batches."""
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(), "step": step,
                "seen": seen, "seconds": seconds, "history": history}, path)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "tiny-shakespeare")
    ap.add_argument("--tokenizer", type=Path, default=ROOT / "models" / "tiny-shakespeare" / "tokenizer.json")
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "tiny-shakespeare-llama")
    ap.add_argument("--no-save", action="store_true", help="throughput check: train, evaluate, save nothing")
    ap.add_argument("--resume", action="store_true", help="continue from data/tiny-shakespeare/llama_resume.pt")
    ap.add_argument("--resume-from", type=Path, default=None,
                    help="another resume state, e.g. data/tiny-shakespeare/llama_resume_before_decay.pt")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--intermediate", type=int, default=384)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--steps", type=int, default=2200)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--decay-steps", type=int, default=0,
                    help="warm-up/stable/decay schedule with a cosine over the last N steps; 0: train.py's cosine")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-interval", type=int, default=100)
    ap.add_argument("--eval-windows", type=int, default=48, help="validation windows for the periodic estimate")
    ap.add_argument("--log-interval", type=int, default=10)
    ap.add_argument("--checkpoint-interval", type=int, default=200)
    ap.add_argument("--finish-by", type=float, default=None, metavar="UNIX_TIME",
                    help="start the decay early enough that it (and --reserve seconds for the final evaluation) "
                         "ends by then: sets --steps once, at the step where the decay must begin")
    ap.add_argument("--reserve", type=float, default=420.0, help="seconds kept for the final evaluation and saving")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=1)
    return ap.parse_args()


def train_step(model, opt, batch: torch.Tensor) -> float:
    """One AdamW step on a (B, ctx + 1) batch; returns the mean cross-entropy."""
    logits = model(batch[:, :-1]).logits  # (B, ctx, V)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    tok = Tokenizer.from_file(str(args.tokenizer))
    assert tok.get_vocab_size() == 50257 and tok.token_to_id("<|endoftext|>") == EOT_ID
    train, val = load_tokens(args.data / "train.txt", tok), load_tokens(args.data / "val.txt", tok)
    print(f"train {len(train):,} tokens, val {len(val):,} tokens; torch {torch.__version__}, "
          f"transformers {transformers.__version__}, {args.threads} thread(s)",
          flush=True)

    model = make_model(args)
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters (tied embeddings); "
          f"attention: {model.config._attn_implementation}", flush=True)
    opt = make_optimizer(model, args)
    gen = torch.Generator().manual_seed(args.seed)
    resume_path = args.data / "llama_resume.pt"
    start, seen, before, history = 0, 0, 0.0, []
    if args.resume or args.resume_from:
        state = torch.load(args.resume_from or resume_path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        start, seen, before, history = state["step"], state["seen"], state["seconds"], state["history"]
        print(f"resumed at step {start}", flush=True)
    t0, run_loss = time.time() - before, 0.0
    t_resumed = time.time()
    model.train()
    step = start
    while step < args.steps:
        if args.finish_by is not None and step > start and step < args.steps - args.decay_steps:
            per_step = (time.time() - t_resumed) / (step - start)
            if time.time() + per_step * args.decay_steps + args.reserve >= args.finish_by:
                args.steps, args.finish_by = step + args.decay_steps, None
                print(f"the decay starts at step {step} ({per_step:.1f} s/step): this run is "
                      f"--steps {args.steps} --decay-steps {args.decay_steps}", flush=True)
                if not args.no_save:   # a longer run can continue the stable phase from here
                    checkpoint(args.data / "llama_resume_before_decay.pt", model, opt, gen, step, seen,
                               time.time() - t0, history)
        for g in opt.param_groups:
            g["lr"] = lr_wsd(step, args)
        run_loss += train_step(model, opt, random_batch(train, args.batch_size, args.ctx, gen))
        seen += args.batch_size * args.ctx
        done = step + 1
        if done % args.log_interval == 0 or done == args.steps:
            el = time.time() - t0
            n = args.log_interval if done % args.log_interval == 0 else done % args.log_interval
            eta = (args.steps - done) * el / done / 60
            line = (f"step {done:5d}/{args.steps} | lr {lr_wsd(step, args):.2e} | train loss {run_loss / n:.4f} | "
                    f"{seen / el:,.0f} tok/s | {el / 60:5.1f} min | eta {eta:5.1f} min")
            run_loss = 0.0
            if done % args.eval_interval == 0 or done == args.steps:
                v = eval_loss(model, val, args.ctx, args.eval_windows)
                line += f" | val loss {v:.4f} (ppl {math.exp(v):.1f}, {args.eval_windows} windows)"
                history.append({"step": done, "val_loss_estimate": round(v, 4)})
            print(line, flush=True)
        if not args.no_save and done % args.checkpoint_interval == 0 and done < args.steps:
            save(model, args.out, args.tokenizer)
            checkpoint(resume_path, model, opt, gen, done, seen, time.time() - t0, history)
            print(f"checkpoint at step {done}: {args.out.name}/ and {resume_path.name}", flush=True)
        step += 1
    train_seconds = time.time() - t0

    v32 = eval_loss(model, val, args.ctx)
    model16 = LlamaForCausalLM(model.config)
    model16.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
    v16 = eval_loss(model16, val, args.ctx)
    print(f"final validation loss (all {len(val) // args.ctx} windows): float32 weights {v32:.4f} "
          f"(ppl {math.exp(v32):.2f}); float16-rounded weights {v16:.4f} (ppl {math.exp(v16):.2f}); "
          f"training took {train_seconds / 60:.1f} min for {seen:,} tokens ({seen / len(train):.2f} epochs, "
          f"{seen / train_seconds:,.0f} tok/s)", flush=True)
    if args.no_save:
        return
    save(model, args.out, args.tokenizer)
    summary = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
               "parameters": sum(p.numel() for p in model.parameters()),
               "train_tokens": len(train), "val_tokens": len(val), "tokens_seen": seen,
               "train_seconds": round(train_seconds, 1), "val_loss_f32": round(v32, 4), "val_loss_f16": round(v16, 4),
               "val_ppl_f16": round(math.exp(v16), 2), "history": history, "torch": torch.__version__,
               "transformers": transformers.__version__, "python": platform.python_version()}
    (args.data / "train_summary_llama.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"saved {args.out.name}/", flush=True)


if __name__ == "__main__":
    main()
