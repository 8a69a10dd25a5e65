"""refdecode's Llama against the newest transformers' ``LlamaForCausalLM``: greedy and beam-4, same run, alternating.

Not a test. Needs ``.venv-bench`` (torch 2.13.0 + transformers 5.x, see README.md here). The checkpoint is the
124M-class Llama of ``make_llama_checkpoint.py`` (width 768, 12 layers, 12 heads, 4 key-value heads, SwiGLU 2,048,
vocab 50,257, tied head; random weights), created on first use. As ``bench_generate.py`` (whose worker protocol
this reuses): one worker process per library (so peak RSS is its own), the modes warmed up once, then ``--rounds``
alternating rounds (the order of the libraries flips every round), median tokens/s; batch 1, a 32-token prompt,
exactly 64 new tokens; greedy, beam search with 4 beams (and ``--modes sampling,prefill512`` as there)::

    .venv-bench/bin/python benchmarks/bench_llama.py [--rounds 5] [--threads 1] [--cpu] [--forward plain,fast]

``--cpu`` times each run by its process's CPU time (steadier on a shared machine; use with ``--threads 1``).
The bandwidth bound is bench_generate's: a large gemv's bytes/s over the bytes of weights one step reads.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_generate import NEW_TOKENS, PREFILL_LEN, PROMPT_LEN, Worker, _gen_kwargs, _prompt, _serve  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "benchmarks" / "_checkpoints" / "llama-124m-random"
MODES = ("greedy", "beam4", "sampling", "prefill512")


def worker_refdecode(forward: str, threads: int) -> None:
    import numpy as np

    from refdecode import Llama, generate

    t0 = time.perf_counter()
    model = Llama.from_pretrained(CHECKPOINT, forward=forward)
    load = time.perf_counter() - t0

    def run(mode: str) -> dict:
        prompt = _prompt(mode, model.config.vocab_size)
        t0, c0 = time.perf_counter(), time.process_time()
        out = generate(model, prompt, attention_mask=np.ones_like(prompt), seed=0, **_gen_kwargs(mode))
        return dict(seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0,
                    tokens=out[0, prompt.shape[1]:].tolist())

    def gemv() -> dict:
        rng = np.random.default_rng(0)
        w = rng.standard_normal((6000, 10000), dtype=np.float32)  # 240 MB (bench_generate's gemv)
        x = rng.standard_normal(6000, dtype=np.float32)
        best = best_cpu = float("inf")
        for _ in range(10):
            t0, c0 = time.perf_counter(), time.process_time()
            x[None] @ w
            best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
        return dict(bytes_per_s=w.nbytes / best, bytes_per_cpu_s=w.nbytes / best_cpu)

    def step_bytes() -> dict:
        def total(tree) -> int:
            return sum(total(v) for v in tree.values()) if isinstance(tree, dict) else \
                sum(total(v) for v in tree) if isinstance(tree, list) else tree.nbytes
        return dict(bytes=total({k: v for k, v in model.params.items() if k != "head_rows"}))

    _serve(load, run, dict(gemv=gemv, step_bytes=step_bytes), f"numpy {np.__version__}, Llama forward={forward}")


def worker_transformers(threads: int) -> None:
    import torch
    import transformers
    from transformers import LlamaForCausalLM

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    model = LlamaForCausalLM.from_pretrained(CHECKPOINT, torch_dtype=torch.float32).eval()
    load = time.perf_counter() - t0

    def run(mode: str) -> dict:
        prompt = torch.from_numpy(_prompt(mode, model.config.vocab_size))
        torch.manual_seed(0)
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.inference_mode():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), pad_token_id=50256,
                                 **_gen_kwargs(mode))
        return dict(seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0,
                    tokens=out[0, prompt.shape[1]:].tolist())

    _serve(load, run, {}, f"torch {torch.__version__}, transformers {transformers.__version__}, "
                          f"attn {model.config._attn_implementation}")


def main(args: argparse.Namespace) -> None:
    if not (CHECKPOINT / "model.safetensors").exists():
        import make_llama_checkpoint

        make_llama_checkpoint.main(CHECKPOINT)
    forwards = args.forward.split(",")
    libs = tuple(f"refdecode {f}" for f in forwards) + ("transformers",)
    modes = [m for m in MODES if m in args.modes.split(",")]
    workers = {lib: Worker(lib.split()[0], args.threads, ("--forward", lib.split()[-1]), script=__file__)
               for lib in libs}
    key = "cpu_seconds" if args.cpu else "seconds"
    seconds = {(m, lib): [] for m in modes for lib in libs}
    tokens = {(m, lib): workers[lib].ask(m)["tokens"] for m in modes for lib in libs}  # warm-up
    bandwidth, first = [], libs[0]
    for r in range(args.rounds):
        for mode in modes:
            for lib in (libs if r % 2 == 0 else libs[::-1]):
                seconds[mode, lib].append(workers[lib].ask(mode)[key])
        bandwidth.append(workers[first].ask("gemv")["bytes_per_cpu_s" if args.cpu else "bytes_per_s"])
    step = workers[first].ask("step_bytes")["bytes"]
    rss = {lib: workers[lib].ask("rss")["rss_mb"] for lib in libs}
    for w in workers.values():
        w.close()

    def tok_s(mode: str, lib: str) -> float:
        return (PREFILL_LEN if mode == "prefill512" else NEW_TOKENS) / statistics.median(seconds[mode, lib])

    ref = "transformers"
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC | {platform.machine()}, {os.cpu_count()} cores, {args.threads} "
          f"threads | {workers[first].hello['versions']} | {workers[ref].hello['versions']}")
    print(f"{'CPU time of each process (--cpu)' if args.cpu else 'wall time'}; load average "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end; 124M-class Llama (random), batch 1, prompt "
          f"{PROMPT_LEN}, exactly {NEW_TOKENS} new tokens, median of {args.rounds} alternating rounds\n")
    print("| mode | " + " | ".join(f"{lib} tok/s" for lib in libs) + " | " +
          " | ".join(f"{lib} / transformers (rounds)" for lib in libs[:-1]) + " | same tokens |")
    print("|---|" + "---:|" * (2 * len(libs) - 1) + "---|")
    for mode in modes:
        cells = [f"{tok_s(mode, lib):.1f}" for lib in libs]
        for lib in libs[:-1]:
            per_round = [t / r for r, t in zip(seconds[mode, lib], seconds[mode, ref])]
            cells.append(f"**{tok_s(mode, lib) / tok_s(mode, ref):.2f}x** ({min(per_round):.2f}-{max(per_round):.2f})")
        same = "n/a (different RNGs)" if mode == "sampling" else \
            ", ".join(str(tokens[mode, lib] == tokens[mode, ref]) for lib in libs[:-1])
        print(f"| {mode} | " + " | ".join(cells) + f" | {same} |")
    print("| peak RSS (MB, whole process) | " + " | ".join(f"{rss[lib]:.0f}" for lib in libs) + " | " +
          " | ".join(f"{rss[lib] / rss[ref]:.2f}x" for lib in libs[:-1]) + " | |")
    print("| load time (s) | " + " | ".join(f"{workers[lib].hello['load_seconds']:.2f}" for lib in libs) + " |" +
          " |" * len(libs))
    bound = statistics.median(bandwidth) / step
    print(f"\nbandwidth bound: gemv {statistics.median(bandwidth) / 1e9:.1f} GB/s, {step / 1e6:.0f} MB per step -> "
          f"{bound:.1f} tok/s" + ("; greedy: " + ", ".join(f"{lib} {100 * tok_s('greedy', lib) / bound:.0f}%"
                                                          for lib in libs) if "greedy" in modes else ""))
    if {"greedy", "beam4"} <= set(modes):
        print("beam-4 / greedy (tokens/s): " + ", ".join(
            f"{lib} {tok_s('beam4', lib) / tok_s('greedy', lib):.2f}" for lib in libs))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="greedy,beam4", help=f"a subset of {','.join(MODES)} (default greedy,beam4)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpu", action="store_true", help="time by each process's CPU time instead of wall time")
    ap.add_argument("--forward", default="plain,fast",
                    help="refdecode's Llama forward passes, one worker each (Llama.from_pretrained(..., forward=...)); "
                         "default plain,fast")
    ap.add_argument("--worker", choices=("refdecode", "transformers"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "refdecode":
        worker_refdecode(a.forward, a.threads)
    elif a.worker == "transformers":
        worker_transformers(a.threads)
    else:
        main(a)
