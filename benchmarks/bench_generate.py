"""refdecode.generate vs the newest transformers generate, GPT-2-124M-shaped, same run, alternating rounds.

Not a test. Needs the ``bench`` extra (torch 2.13.0 CPU, transformers 5.x) in its own venv; from the
repository root::

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install torch==2.13.0 && .venv-bench/bin/pip install -e ".[bench]"
    .venv-bench/bin/python benchmarks/bench_generate.py [--rounds 3] [--threads 2] [--forward fast|plain]

With the ``oracle`` extra instead (``.venv-oracle``, transformers 4.38.2) the same script compares against
4.38.2, the version the golden files come from.

What it does:

1) Creates ``benchmarks/_checkpoints/gpt2-124m-random/`` once (gitignored): transformers' ``GPT2LMHeadModel``
   with the default ``GPT2Config`` (124M parameters), random init, float32 safetensors, then reads the file
   once so both libraries load it from the page cache.
2) Starts one worker process per library (``bench_generate.py --worker refdecode|transformers``), so each
   library's peak RSS is its own. refdecode loads ``GPT2.from_pretrained(path, forward="fast")`` (the fast
   forward pass, ``refdecode/model/fast/``; ``--forward plain`` measures the readable default instead). Each worker loads the model (load time), then answers commands on stdin
   with one JSON line each. Threads: ``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=2`` and ``torch.set_num_threads(2)``.
3) Modes, batch 1, prompt 32 random token ids, exactly 64 new tokens (``min_new_tokens = max_new_tokens = 64``):
   greedy; sampling (top_k=50, top_p=0.9, temperature=0.8); beam search with 4 beams; and prefill: a 512-token
   prompt and one new token (time to first token; prefill tokens/s = 512 / that time); greedy_copy and
   lookup_copy: plain greedy and prompt lookup (``prompt_lookup_num_tokens=10``) on a copy-heavy prompt (a
   passage, "Repeat the text above word for word:", its first words; 497 tokens), exactly 256 new tokens,
   on ``--copy-checkpoint``: by default ``benchmarks/_checkpoints/gpt2-124m-copy/``, GPT-2 124M's shapes with
   a hand-built induction circuit that copies (``make_copy_checkpoint.py``; the random checkpoint does not
   copy, and no trained GPT-2 is available offline; a downloaded one can be passed instead), in workers of
   their own. Each mode is run once as
   warm-up, then ``--rounds`` times per library, alternating the libraries (and which goes first) each round,
   so a change in machine load hits both alike. Reported: the median tokens/s and the ratio refdecode/transformers.
4) The bandwidth bound: the refdecode worker times a large float32 gemv (a 240 MB matrix times a vector, best of
   10 in each of two orientations; NumPy/OpenBLAS, same threads) -> bytes/s; divided by the bytes of weights
   one decoding step reads (every block matrix and layer norm, all of wte as the tied LM head, one row of
   wpe) gives the tokens/s a step that only streams its weights could reach. Greedy tokens/s is reported
   as a share of it, and so is prompt lookup's, which can pass 100 %: it reads the weights once for several
   tokens (the refdecode worker counts the model calls).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-random"
COPY_CHECKPOINT = ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-copy"  # make_copy_checkpoint.py
MODES = ("greedy", "sampling", "beam4", "prefill512", "greedy_copy", "lookup_copy")
PROMPT_LEN, NEW_TOKENS, PREFILL_LEN = 32, 64, 512
COPY_NEW_TOKENS = 256  # the copy modes: repeating the ~350-token passage is a long output
LOOKUP_TOKENS = 10  # prompt_lookup_num_tokens of lookup_copy
COPY_MODES = ("greedy_copy", "lookup_copy")  # run on --copy-checkpoint, by workers of their own


# ----------------------------------------------------------------------------------------------------
# Workers: one process per library, commands on stdin, one JSON line per answer on stdout
# ----------------------------------------------------------------------------------------------------


def _copy_prompt():
    """(1, T) int64: a passage (the start of README.md), an instruction to repeat it, and its first words.

    The kind of input prompt lookup is for (summaries, edits, "repeat the text"), tokenized with the GPT-2
    tokenizer of models/gpt2-tiny so that both libraries get the same ids.
    """
    import numpy as np
    from tokenizers import Tokenizer

    passage = (ROOT / "README.md").read_text(encoding="utf-8")[:1500]
    text = passage + "\n\nRepeat the text above word for word:\n\n" + passage[:200]
    ids = Tokenizer.from_file(str(ROOT / "models" / "gpt2-tiny" / "tokenizer.json")).encode(text).ids
    return np.array([ids], dtype=np.int64)


def _prompt(mode: str, vocab: int):
    import numpy as np

    if mode in ("greedy_copy", "lookup_copy"):
        return _copy_prompt()
    length = PREFILL_LEN if mode == "prefill512" else PROMPT_LEN
    return np.random.default_rng(0).integers(0, vocab, size=(1, length), dtype=np.int64)


def _new_tokens(mode: str) -> int:
    return COPY_NEW_TOKENS if mode in COPY_MODES else NEW_TOKENS


def _gen_kwargs(mode: str) -> dict:
    """The generation arguments of a mode; identical for both libraries."""
    n = 1 if mode == "prefill512" else _new_tokens(mode)
    kw = dict(min_new_tokens=n, max_new_tokens=n)
    if mode == "sampling":
        kw.update(do_sample=True, top_k=50, top_p=0.9, temperature=0.8)
    elif mode == "beam4":
        kw.update(num_beams=4, do_sample=False)
    elif mode == "lookup_copy":
        kw.update(do_sample=False, prompt_lookup_num_tokens=LOOKUP_TOKENS)
    else:
        kw.update(do_sample=False)
    return kw


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def worker_refdecode(forward: str, checkpoint: Path) -> None:
    import numpy as np

    from refdecode import GPT2, generate

    t0 = time.perf_counter()
    model = GPT2.from_pretrained(checkpoint, forward=forward)
    load = time.perf_counter() - t0

    class Counting:  # the model, counting and timing forward passes (prompt lookup: one per round)
        def __init__(self, model):
            self.model, self.seconds, self.cpu_seconds = model, [], []

        def __getattr__(self, name):
            return getattr(self.model, name)

        def __call__(self, *args, **kwargs):
            t0, c0 = time.perf_counter(), time.process_time()
            out = self.model(*args, **kwargs)
            self.seconds.append(time.perf_counter() - t0)
            self.cpu_seconds.append(time.process_time() - c0)
            return out

    def run(mode: str) -> dict:
        prompt = _prompt(mode, model.config.vocab_size)
        counting = Counting(model)
        t0, c0 = time.perf_counter(), time.process_time()
        out = generate(counting, prompt, attention_mask=np.ones_like(prompt), seed=0, **_gen_kwargs(mode))
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        # calls after the first (the prefill; prompt lookup's first call also verifies its first drafts)
        later, later_cpu = sorted(counting.seconds[1:]) or [0.0], sorted(counting.cpu_seconds[1:]) or [0.0]
        return dict(seconds=dt, cpu_seconds=cpu, tokens=out[0, prompt.shape[1]:].tolist(), calls=len(counting.seconds),
                    later_call_ms=1e3 * later[len(later) // 2], later_call_cpu_ms=1e3 * later_cpu[len(later_cpu) // 2])

    def gemv() -> dict:
        rng = np.random.default_rng(0)
        # 240 MB, far larger than any cache; not a power of two (8192 x 8192 runs ~2x slower: cache aliasing)
        w = rng.standard_normal((6000, 10000), dtype=np.float32)
        x, y = rng.standard_normal(6000, dtype=np.float32), rng.standard_normal(10000, dtype=np.float32)
        best = best_cpu = float("inf")
        for f in (lambda: x[None] @ w, lambda: w @ y):  # the model's (1, E) @ (E, E_out), and W @ y
            for _ in range(10):
                t0, c0 = time.perf_counter(), time.process_time()
                f()
                best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
        return dict(bytes_per_s=w.nbytes / best, bytes_per_cpu_s=w.nbytes / best_cpu)

    def step_bytes() -> dict:
        p = model.params
        total = sum(a.nbytes for layer in p["h"] for group in layer.values() for part in group.values()
                    for a in (part.values() if isinstance(part, dict) else [part]))
        total += sum(a.nbytes for a in p["ln_f"].values()) + p["wte"].nbytes + p["wpe"].shape[1] * 4
        return dict(bytes=total)

    _serve(load, run, dict(gemv=gemv, step_bytes=step_bytes), f"numpy {np.__version__}, forward={forward}")


def worker_transformers(threads: int, checkpoint: Path) -> None:
    import torch
    import transformers
    from transformers import GPT2LMHeadModel

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    model = GPT2LMHeadModel.from_pretrained(checkpoint).eval()
    load = time.perf_counter() - t0

    def run(mode: str) -> dict:
        prompt = torch.from_numpy(_prompt(mode, model.config.vocab_size))
        torch.manual_seed(0)
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.inference_mode():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), pad_token_id=model.config.eos_token_id,
                                 **_gen_kwargs(mode))
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        return dict(seconds=dt, cpu_seconds=cpu, tokens=out[0, prompt.shape[1]:].tolist())

    _serve(load, run, {}, f"torch {torch.__version__}, transformers {transformers.__version__}, "
                          f"attn {model.config._attn_implementation}")


def _serve(load: float, run, extra: dict, versions: str) -> None:
    """Answer commands from stdin: a mode name -> timing; an extra command -> its dict; 'rss' -> peak RSS."""
    print(json.dumps(dict(load_seconds=load, versions=versions, rss_mb=_peak_rss_mb())), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "quit":
            break
        result = run(cmd) if cmd in MODES else extra[cmd]() if cmd in extra else dict(rss_mb=_peak_rss_mb())
        print(json.dumps(result), flush=True)


# ----------------------------------------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------------------------------------


def make_checkpoint(copy_checkpoint: Path) -> None:
    """The random GPT-2 124M in save_pretrained layout (float32) and, for the copy modes, the copying one of
    make_copy_checkpoint.py, each created once, in a process of its own (a worker forked from a driver that
    once held a model would inherit its peak RSS); then read into the page cache."""
    if not (CHECKPOINT / "model.safetensors").exists():
        make = ("import torch; from transformers import GPT2Config, GPT2LMHeadModel; torch.manual_seed(0); "
                f"GPT2LMHeadModel(GPT2Config()).save_pretrained({str(CHECKPOINT)!r}, safe_serialization=True)")
        subprocess.run([sys.executable, "-c", make], check=True)
        print(f"created {CHECKPOINT.relative_to(ROOT)}")
    if copy_checkpoint == COPY_CHECKPOINT and not (COPY_CHECKPOINT / "model.safetensors").exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_copy_checkpoint.py"), str(COPY_CHECKPOINT)],
                       check=True)
    for path in (CHECKPOINT, copy_checkpoint):
        with open(path / "model.safetensors", "rb") as f:
            while f.read(1 << 24):
                pass


class Worker:
    """A worker process (``script --worker LIB --threads N`` + ``extra``) answering one JSON line per command;
    bench_scaling.py uses it too."""

    def __init__(self, lib: str, threads: int, extra: tuple[str, ...] = (), script: str = __file__) -> None:
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false")
        self.proc = subprocess.Popen([sys.executable, script, "--worker", lib, "--threads", str(threads), *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        self.hello = self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker died: {self.proc.args}")
        return json.loads(line)

    def ask(self, cmd: str) -> dict:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait()


def main(args: argparse.Namespace) -> None:
    copy_checkpoint = Path(args.copy_checkpoint)
    make_checkpoint(copy_checkpoint)
    libs = ("refdecode", "transformers")
    modes = [m for m in MODES if m in args.modes.split(",")]
    # the copy modes run in workers of their own on their checkpoint; peak RSS is the random checkpoint's
    kinds = sorted({"copy" if m in COPY_MODES else "random" for m in modes})
    paths = dict(random=CHECKPOINT, copy=copy_checkpoint)
    workers = {(kind, lib): Worker(lib, args.threads, ("--forward", args.forward, "--checkpoint", str(paths[kind])))
               for kind in kinds for lib in libs}

    def ask(mode: str, lib: str) -> dict:
        return workers["copy" if mode in COPY_MODES else "random", lib].ask(mode)

    first = kinds[-1]  # "random" when any random-checkpoint mode runs: its workers report RSS and load time
    seconds: dict[tuple[str, str], list[float]] = {(m, lib): [] for m in modes for lib in libs}
    tokens: dict[tuple[str, str], list[int]] = {}
    calls: dict[str, int] = {}
    call_ms: dict[str, float] = {}  # refdecode, warm-up run: median ms of a model call after the first
    bandwidth: list[float] = []
    for mode in modes:  # warm-up: first-call allocations, page faults
        for lib in libs:
            answer = ask(mode, lib)
            tokens[mode, lib] = answer["tokens"]
            if lib == "refdecode":
                calls[mode] = answer["calls"]
                call_ms[mode] = answer["later_call_cpu_ms" if args.cpu else "later_call_ms"]
    for r in range(args.rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        for mode in modes:
            for lib in order:
                seconds[mode, lib].append(ask(mode, lib)["cpu_seconds" if args.cpu else "seconds"])
        bandwidth.append(workers[first, "refdecode"].ask("gemv")["bytes_per_cpu_s" if args.cpu else "bytes_per_s"])
    step_bytes = workers[first, "refdecode"].ask("step_bytes")["bytes"]
    rss = {lib: workers[first, lib].ask("rss")["rss_mb"] for lib in libs}
    hello = {lib: workers[first, lib].hello for lib in libs}
    for w in workers.values():
        w.close()

    def tok_s(mode: str, lib: str) -> float:
        n = PREFILL_LEN if mode == "prefill512" else _new_tokens(mode)
        return n / statistics.median(seconds[mode, lib])

    import platform

    print(f"{time.strftime('%Y-%m-%d %H:%M')} | {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads | "
          f"{hello['refdecode']['versions']} | {hello['transformers']['versions']}")
    print(f"{'CPU time of each process (--cpu)' if args.cpu else 'wall time'}, load average "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    print(f"batch 1, prompt {PROMPT_LEN}, exactly {NEW_TOKENS} new tokens; median of {args.rounds} alternating "
          f"rounds (prefill: {PREFILL_LEN}-token prompt, tokens/s = {PREFILL_LEN} / time to first token; "
          f"{', '.join(COPY_MODES)}: {COPY_NEW_TOKENS} new tokens after the copy prompt, on {copy_checkpoint.name})\n")
    print("| mode | refdecode tok/s | transformers tok/s | ratio | ratio per round (min-max) | same tokens |")
    print("|---|---:|---:|---:|---:|---|")
    for mode in modes:
        a, b = tok_s(mode, "refdecode"), tok_s(mode, "transformers")
        # each round ran both libraries back to back, so its own ratio shows how much the machine moved
        per_round = [t / r for r, t in zip(seconds[mode, "refdecode"], seconds[mode, "transformers"])]
        same = "n/a (different RNGs)" if mode == "sampling" else str(tokens[mode, libs[0]] == tokens[mode, libs[1]])
        extra = f" (TTFT {1e3 * statistics.median(seconds[mode, 'refdecode']):.0f} ms vs " \
                f"{1e3 * statistics.median(seconds[mode, 'transformers']):.0f} ms)" if mode == "prefill512" else ""
        print(f"| {mode}{extra} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {min(per_round):.2f}-{max(per_round):.2f}x "
              f"| {same} |")
    load = {lib: hello[lib]["load_seconds"] for lib in libs}
    print(f"| peak RSS (MB, whole process) | {rss['refdecode']:.0f} | {rss['transformers']:.0f} | "
          f"{rss['refdecode'] / rss['transformers']:.2f}x | | |")
    print(f"| load time (s, page cache) | {load['refdecode']:.3f} | {load['transformers']:.3f} | "
          f"{load['refdecode'] / load['transformers']:.2f}x | | |")
    bw = statistics.median(bandwidth)
    bound = bw / step_bytes
    print(f"\nbandwidth bound: gemv streams {bw / 1e9:.1f} GB/s; one decoding step reads {step_bytes / 1e6:.0f} MB "
          f"of weights -> {bound:.1f} tok/s.", end="")
    if "greedy" in modes:
        print(f" refdecode greedy = {100 * tok_s('greedy', 'refdecode') / bound:.0f}% of it, "
              f"transformers greedy = {100 * tok_s('greedy', 'transformers') / bound:.0f}%.", end="")
    print()
    if not {"lookup_copy", "greedy_copy"} <= set(modes):
        return
    lookup, plain = tok_s("lookup_copy", "refdecode"), tok_s("greedy_copy", "refdecode")
    per_round = [p / q for p, q in zip(seconds["greedy_copy", "refdecode"], seconds["lookup_copy", "refdecode"])]
    print(f"\nprompt lookup (prompt_lookup_num_tokens={LOOKUP_TOKENS}) on the copy prompt "
          f"({len(_copy_prompt()[0])} tokens), refdecode, same run: {lookup:.1f} tok/s vs plain greedy {plain:.1f} "
          f"tok/s = {lookup / plain:.2f}x (rounds {min(per_round):.2f}-{max(per_round):.2f}x); "
          f"{COPY_NEW_TOKENS} tokens in {calls['lookup_copy']} model calls (plain: {calls['greedy_copy']}), a "
          f"verification pass ({LOOKUP_TOKENS + 1} rows) {call_ms['lookup_copy']:.1f} ms = "
          f"{call_ms['lookup_copy'] / call_ms['greedy_copy']:.2f} plain steps ({call_ms['greedy_copy']:.1f} ms); "
          f"identical tokens: {tokens['lookup_copy', 'refdecode'] == tokens['greedy_copy', 'refdecode']}; "
          f"{100 * lookup / bound:.0f}% of the bandwidth bound (plain greedy {100 * plain / bound:.0f}%).")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES), help=f"a subset of {','.join(MODES)} (default: all)")
    ap.add_argument("--threads", type=int, default=2, help="threads for torch and for NumPy's OpenBLAS (default 2)")
    ap.add_argument("--forward", choices=("fast", "plain"), default="fast",
                    help="refdecode's forward pass, GPT2.from_pretrained(..., forward=...) (default: fast)")
    ap.add_argument("--copy-checkpoint", default=str(COPY_CHECKPOINT),
                    help="checkpoint of greedy_copy and lookup_copy (default: the copying GPT-2-124M-shaped one of "
                         "make_copy_checkpoint.py, created on first use; a trained GPT-2 directory works too)")
    ap.add_argument("--cpu", action="store_true",
                    help="time each run (and the gemv of the bound) by its process's CPU time instead of wall time: "
                         "steadier on a shared machine (use with --threads 1)")
    ap.add_argument("--worker", choices=("refdecode", "transformers"), help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", default=str(CHECKPOINT), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "refdecode":
        worker_refdecode(args.forward, Path(args.checkpoint))
    elif args.worker == "transformers":
        worker_transformers(args.threads, Path(args.checkpoint))
    else:
        main(args)
