"""Where one decoding step of refdecode spends its time: greedy, sampling and beam search (4 beams).

Not a test. Needs only the package (plus the checkpoint that ``bench_generate.py`` creates); from the
repository root::

    OPENBLAS_NUM_THREADS=2 .venv-bench/bin/python benchmarks/profile_step.py [--cache-len 96] [--reps 20]

It replays one decoding step of GPT-2-124M with a timer around each stage, calling the same functions
``refdecode.model.fast.forward.gpt2_fast`` (what ``GPT2(..., forward="fast")`` runs) calls (``layer_norm_``, ``linear``,
``attention_scores``, ``softmax_``, ``gelu_new_``, the LM head ``x @ wte.T``, ``KVCache.append``), and then the search-side stages the decode loops call
(torch's ``log_softmax``, the processors and warpers ``generate`` builds, the candidate selection, the draw,
``BeamSearchScorer.process``, ``KVCache.reorder``). The cache holds ``--cache-len`` tokens (96 = the end of
a 32 + 64 run). It prints milliseconds per step for each stage, then one step with and without a KV
cache at a long sequence (the reason the cache exists), batched vs row-by-row beams, and the plain forward
pass (``refdecode.model.gpt2``, the default) against the fast one (``refdecode.model.fast``), on the same weights.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import numpy as np  # noqa: E402

from refdecode import GPT2, BeamSearchScorer  # noqa: E402
from refdecode.decoding.beam.bookkeeping import top_candidates  # noqa: E402
from refdecode.pipeline import logits_processors, logits_warpers  # noqa: E402
from refdecode.generation_config import GenerationConfig  # noqa: E402
from refdecode.model.gpt2 import attention_scores  # noqa: E402
from refdecode.model.fast.forward import FEW_ROWS, gelu_new_, layer_norm_, linear, softmax_  # noqa: E402
from refdecode.model.fast.layout import head_rows  # noqa: E402
from refdecode.model.fast.products import product  # noqa: E402
from refdecode.numerics import softmax, torch_log_softmax  # noqa: E402
from refdecode.decoding.randomness import multinomial  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-random"
#: The stage timer: wall time, or with ``--cpu`` the calling thread's CPU time (a shared machine; one thread).
CLOCK = time.perf_counter


def full_sort_candidates(total: np.ndarray, n: int):
    """The first n of a stable argsort of all K*V negated scores: what top_candidates' partition avoids."""
    batch, beams, vocab = total.shape
    flat = total.reshape(batch, beams * vocab)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :n]
    return np.take_along_axis(flat, order, axis=1), order // vocab, order % vocab


class Timer:
    def __init__(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)

    def __call__(self, name: str, f, *args, **kwargs):
        t0 = CLOCK()
        out = f(*args, **kwargs)
        self.ms[name] += 1e3 * (CLOCK() - t0)
        return out


def model_step(model: GPT2, tokens: np.ndarray, cache, t: Timer) -> np.ndarray:
    """One token per row through the model, as refdecode.model.fast.forward.gpt2_fast does it (forward="fast"),
    with a timer per stage."""
    p, c = model.params, model.config
    B, eps = tokens.shape[0], c.layer_norm_epsilon
    E, H = c.n_embd, c.n_head
    x = t("embeddings", lambda: p["wte"][tokens] + p["wpe"][np.full_like(tokens, cache.length)])  # (B, E)
    for i, lp in enumerate(p["h"]):
        h = t("layer norms", layer_norm_, x, **lp["ln_1"], eps=eps)
        qkv = t("qkv matmul (c_attn)", linear, h, **lp["attn"]["c_attn"])  # (B, 3E)
        qkv = qkv.reshape(B, 1, 3, H, E // H).transpose(2, 0, 3, 1, 4)  # (3, B, H, 1, D)
        k, v = t("KV cache append", cache.append, i, qkv[1], qkv[2])
        w = t("attention (scores, softmax, @v)", attention_scores, qkv[0], k, i, c)
        a = t("attention (scores, softmax, @v)", lambda: softmax_(w) @ v).transpose(0, 2, 1, 3).reshape(B, E)
        x += t("attn out matmul (c_proj)", linear, a, **lp["attn"]["c_proj"])
        h = t("layer norms", layer_norm_, x, **lp["ln_2"], eps=eps)
        h = t("mlp matmul (c_fc)", linear, h, **lp["mlp"]["c_fc"])
        h = t("gelu_new", gelu_new_, h)
        x += t("mlp matmul (c_proj)", linear, h, **lp["mlp"]["c_proj"])
    cache.advance(1)
    x = t("layer norms", layer_norm_, x, **p["ln_f"], eps=eps)
    if 1 < x.shape[0] <= FEW_ROWS:  # as gpt2_fast: the way measured fastest (maybe on the row-major copy)
        return t("lm_head (x @ wte.T)",
                 lambda: np.ascontiguousarray(product(x, p["wte"].T, other=lambda: head_rows(p).T)))
    return t("lm_head (x @ wte.T)", lambda: x @ p["wte"].T)  # (B, V)


def profile(model: GPT2, mode: str, cache_len: int, reps: int, quiet: bool = False) -> dict[str, float]:
    """Milliseconds per step of each stage, averaged over ``reps`` steps at cache length ``cache_len``."""
    rows = 4 if mode == "beam4" else 1
    rng = np.random.default_rng(0)
    ids = rng.integers(0, model.config.vocab_size, size=(rows, cache_len), dtype=np.int64)
    cfg = GenerationConfig(max_length=cache_len + 64, min_new_tokens=64, eos_token_id=50256, pad_token_id=50256)
    if mode == "sampling":
        cfg.update(do_sample=True, top_k=50, top_p=0.9, temperature=0.8)
    if mode == "beam4":
        cfg.update(num_beams=4)
    procs, warpers = logits_processors(cfg, cache_len - 1), logits_warpers(cfg)
    t, plain_ms = Timer(), []
    for _ in range(reps):
        cache = model.new_cache(rows, cache_len + 1)  # holding cache_len tokens of random keys and values
        for i in range(model.config.n_layer):
            kv = rng.standard_normal((rows, model.config.n_head, cache_len, model.config.head_dim), dtype=np.float32)
            cache.append(i, kv, kv)
        cache.advance(cache_len)
        logits = model_step(model, ids[:, -1], cache, t)  # (rows, V)
        if mode == "greedy":
            scores = t("processors (min_new_tokens)", procs, ids, logits)
            t("argmax", np.argmax, scores, axis=-1)
        elif mode == "sampling":
            scores = t("processors (min_new_tokens)", procs, ids, logits)
            scores = t("warpers (temperature, top-k, top-p)", warpers, ids, scores)
            probs = t("softmax + multinomial draw", softmax, scores)
            t("softmax + multinomial draw", multinomial, probs, 1, False, rng)  # what sample() draws with
        else:
            scores = t("log_softmax (torch's, bit for bit)", torch_log_softmax, logits)  # what beam_search calls
            scores = t("processors (min_new_tokens)", procs, ids, scores)
            total = scores.reshape(1, 4, -1) + np.zeros((1, 4, 1), dtype=np.float32)
            cand = t("top-2K candidates (partition + small sort)", top_candidates, total, 8)
            plain_ms.append(Timer())
            plain_ms[-1]("plain", full_sort_candidates, total, 8)  # a stable argsort of all K*V, reported apart
            scorer = BeamSearchScorer(batch_size=1, num_beams=4, max_length=cache_len + 64)
            step = t("scorer.process", scorer.process, ids, *cand[:1], cand[2], cand[1], pad_token_id=50256,
                     eos_token_id=50256, decoder_prompt_len=cache_len - 1)
            t("cache.reorder", cache.reorder, step["next_beam_indices"])
    if plain_ms and not quiet:
        print(f"(beam4: a stable argsort of all K*V scores, instead of top_candidates' partition, takes "
              f"{sum(p.ms['plain'] for p in plain_ms) / reps:.2f} ms per step)")
    return {k: v / reps for k, v in t.ms.items()}


def cache_vs_no_cache(model: GPT2, seq_len: int, reps: int = 3) -> tuple[float, float]:
    """ms for the next token after ``seq_len`` tokens: one cached step vs recomputing all seq_len + 1."""
    ids = np.random.default_rng(1).integers(0, model.config.vocab_size, size=(1, seq_len + 1), dtype=np.int64)
    cache = model.new_cache(1, seq_len + 1)
    model(ids[:, :-1], past_key_values=cache, logits_to_keep=1)
    with_cache, without = float("inf"), float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        model(ids[:, -1:], past_key_values=cache)
        with_cache = min(with_cache, time.perf_counter() - t0)
        cache.length -= 1  # forget the token again, so every rep is the same step
        t0 = time.perf_counter()
        model(ids, logits_to_keep=1)  # no cache: all seq_len + 1 tokens again
        without = min(without, time.perf_counter() - t0)
    return 1e3 * with_cache, 1e3 * without


def batched_vs_row_by_row(model: GPT2, cache_len: int, rows: int = 4, reps: int = 5) -> tuple[float, float]:
    """ms for one step of ``rows`` beams: one batched (rows, E) pass vs ``rows`` single-row passes."""
    ids = np.random.default_rng(2).integers(0, model.config.vocab_size, size=(rows, cache_len), dtype=np.int64)
    batched = model.new_cache(rows, cache_len + 1)
    model(ids[:, :-1], past_key_values=batched, logits_to_keep=1)
    singles = [model.new_cache(1, cache_len + 1) for _ in range(rows)]
    for r, c in enumerate(singles):
        model(ids[r : r + 1, :-1], past_key_values=c, logits_to_keep=1)
    one, many = float("inf"), float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        model(ids[:, -1:], past_key_values=batched)
        one = min(one, time.perf_counter() - t0)
        batched.length -= 1
        t0 = time.perf_counter()
        for r, c in enumerate(singles):
            model(ids[r : r + 1, -1:], past_key_values=c)
            c.length -= 1
        many = min(many, time.perf_counter() - t0)
    return 1e3 * one, 1e3 * many


def plain_vs_fast(model: GPT2, seq_len: int = 512, rows: int = 4, reps: int = 5) -> dict[str, tuple[float, float]]:
    """ms of the plain forward (``forward="plain"``, refdecode.model.gpt2.gpt2) and the fast one (refdecode.model.fast) on the
    same weights, alternating: a ``seq_len``-token prefill (logits_to_keep=1), a 1-row and a ``rows``-row
    decoding step."""
    rng = np.random.default_rng(3)
    prompt = rng.integers(0, model.config.vocab_size, size=(1, seq_len), dtype=np.int64)
    best = {k: [float("inf"), float("inf")] for k in ("prefill", "step1", f"step{rows}")}
    caches = {}
    for n in (1, rows):
        caches[n] = model.new_cache(n, 97)
        model(np.tile(prompt[:, :96], (n, 1)), past_key_values=caches[n], logits_to_keep=1)
    models = [GPT2(model.config, model.params, forward=forward) for forward in ("plain", "fast")]
    for _ in range(reps):
        for j, m in enumerate(models):
            t0 = time.perf_counter()
            m(prompt, logits_to_keep=1)
            best["prefill"][j] = min(best["prefill"][j], time.perf_counter() - t0)
            for n in (1, rows):
                t0 = time.perf_counter()
                m(np.tile(prompt[:, 96:97], (n, 1)), past_key_values=caches[n])
                best[f"step{n}"][j] = min(best[f"step{n}"][j], time.perf_counter() - t0)
                caches[n].length -= 1
    return {k: (1e3 * a, 1e3 * b) for k, (a, b) in best.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-len", type=int, default=96)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cpu", action="store_true", help="time the stages by the thread's CPU time (a shared machine)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.cpu else time.perf_counter
    model = GPT2.from_pretrained(CHECKPOINT, forward="fast")
    results = {}
    for mode in ("greedy", "sampling", "beam4"):
        profile(model, mode, args.cache_len, 2, quiet=True)  # warm-up
        results[mode] = profile(model, mode, args.cache_len, args.reps)
    stages = list(dict.fromkeys(k for r in results.values() for k in r))
    print(f"ms per decoding step, GPT-2-124M, cache holding {args.cache_len} tokens, mean of {args.reps} steps, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']} (greedy/sampling: 1 row; beam4: 4 rows); "
          f"{'CPU time' if args.cpu else 'wall time'}, load average {os.getloadavg()[0]:.1f}\n")
    print("| stage | greedy | sampling | beam4 |")
    print("|---|---:|---:|---:|")
    for s in stages:
        print(f"| {s} | " + " | ".join(f"{results[m][s]:.2f}" if s in results[m] else "" for m in results) + " |")
    print("| **total** | " + " | ".join(f"**{sum(r.values()):.2f}**" for r in results.values()) + " |")
    for n in (128, 512):
        a, b = cache_vs_no_cache(model, n)
        print(f"\nnext token after {n} tokens: with KV cache {a:.1f} ms, without (recompute {n + 1} tokens) "
              f"{b:.1f} ms -> {b / a:.0f}x", end="")
    a, b = batched_vs_row_by_row(model, args.cache_len)
    print(f"\n4 beams, one step: batched as one (4, E) pass {a:.1f} ms, row by row (4 passes) {b:.1f} ms "
          f"-> {b / a:.2f}x")
    print("\n| forward pass | plain (refdecode.model.gpt2) ms | fast (refdecode.model.fast) ms | speed-up |")
    print("|---|---:|---:|---:|")
    for name, (plain, fast) in plain_vs_fast(model).items():
        label = {"prefill": "prefill, 512-token prompt", "step1": "decoding step, 1 row"}.get(name, "decoding step, 4 rows")
        print(f"| {label} | {plain:.1f} | {fast:.1f} | {plain / fast:.2f}x |")


if __name__ == "__main__":
    main()
