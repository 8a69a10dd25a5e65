"""How decoding cost grows: context length, batch, beams, model size; refdecode vs transformers, same run.

Not a test. Same venvs and worker set-up as ``bench_generate.py`` (``.venv-bench`` with transformers 5.x,
or ``.venv-oracle`` with 4.38.2); from the repository root::

    .venv-bench/bin/python benchmarks/bench_scaling.py [--rounds 3] [--threads 2] [--only context,batch,beams,355m]

refdecode runs ``GPT2.from_pretrained(path, forward="fast")``. Checkpoints (random weights, float32, made once by transformers, gitignored): ``benchmarks/_checkpoints/
gpt2-124m-random`` (``GPT2Config()``) and ``gpt2-355m-random`` (GPT-2 medium's shape: n_embd 1024, 24 layers,
16 heads). Every case runs in both libraries, alternating, ``--rounds`` times; reported: the median
tokens/s, the ratio, and the case's **bound**: the tokens/s of a step that only streams the bytes it must
read at the gemv bandwidth measured in the same run. A step reads all weights once (whatever the rows) and
the KV cache of every row: ``bytes = weights + 2 (k, v) * n_layer * rows * S * E * 4`` with S the cached
length, so the bound is ``rows_emitting * bandwidth / bytes``.

Cases:

* context: batch 1 greedy, prompt S in {64, 256, 512, 990}, decoding speed at that context:
  32 tokens / (time for 33 new tokens - time for 1 new token), i.e. without the prefill (the last case
  ends at 1023 tokens); also ms per step and the share of the step that the context adds over S = 64
  (attention over the cached keys/values; everything else in a step does not depend on S);
* batch: B in {1, 2, 4, 8} different 32-token prompts, greedy, 16 new tokens each; tokens/s counts all rows
  (B * 16 / time, prefill included, as bench_generate);
* beams: K in {1, 2, 4, 8} beams, one 32-token prompt, 16 new tokens; tokens/s = 16 / time (the sequence
  grows one token per step whatever K); also steps/s relative to greedy (K = 1) in the same round;
* 355m: the GPT-2-medium-shaped checkpoint, greedy and beam-4, 32-token prompt, 16 new tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_generate import Worker  # noqa: E402  (the same worker processes: one JSON line per command)
CHECKPOINTS = {"124m": ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-random",
               "355m": ROOT / "benchmarks" / "_checkpoints" / "gpt2-355m-random"}
NEW = 16  # new tokens per batch / beams / 355M case
DECODE = 32  # context cases: decoding speed over this many tokens


def cases(only: set[str]) -> list[dict]:
    """Every case: model, prompt length S, rows B, beams K, new tokens (and 'base' for the context cases)."""
    out = []
    if "context" in only:
        for S in (64, 256, 512, 990):  # 990 + 1 + DECODE = 1023 <= n_positions
            for new in (1, 1 + DECODE):
                out.append(dict(group="context", model="124m", S=S, B=1, K=1, new=new))
    if "batch" in only:
        out += [dict(group="batch", model="124m", S=32, B=B, K=1, new=NEW) for B in (1, 2, 4, 8)]
    if "beams" in only:
        out += [dict(group="beams", model="124m", S=32, B=1, K=K, new=NEW) for K in (1, 2, 4, 8)]
    if "355m" in only:
        out += [dict(group="355m", model="355m", S=32, B=1, K=K, new=NEW) for K in (1, 4)]
    return out


def key(case: dict) -> str:
    return json.dumps(case, sort_keys=True)


# ---- workers


def prompt(case: dict, vocab: int):
    import numpy as np

    return np.random.default_rng(case["S"] + 7 * case["B"]).integers(0, vocab, size=(case["B"], case["S"]),
                                                                     dtype=np.int64)


def gen_kwargs(case: dict) -> dict:
    return dict(max_new_tokens=case["new"], min_new_tokens=case["new"], num_beams=case["K"], do_sample=False)


def worker_refdecode() -> None:
    import numpy as np

    from refdecode import GPT2, generate

    models = {name: GPT2.from_pretrained(path, forward="fast") for name, path in CHECKPOINTS.items()}

    def run(case: dict) -> dict:
        model = models[case["model"]]
        ids = prompt(case, model.config.vocab_size)
        t0 = time.perf_counter()
        out = generate(model, ids, attention_mask=np.ones_like(ids), **gen_kwargs(case))
        return dict(seconds=time.perf_counter() - t0, tokens=out[:, ids.shape[1]:].tolist())

    def gemv() -> dict:
        rng = np.random.default_rng(0)
        w = rng.standard_normal((6000, 10000), dtype=np.float32)
        x = rng.standard_normal(6000, dtype=np.float32)
        best = float("inf")
        for _ in range(10):
            t0 = time.perf_counter()
            x[None] @ w
            best = min(best, time.perf_counter() - t0)
        return dict(bytes_per_s=w.nbytes / best)

    def sizes() -> dict:
        out = {}
        for name, m in models.items():
            c = m.config
            weights = sum(a.nbytes for layer in m.params["h"] for group in layer.values() for part in group.values()
                          for a in (part.values() if isinstance(part, dict) else [part]))
            weights += sum(a.nbytes for a in m.params["ln_f"].values()) + m.params["wte"].nbytes + c.n_embd * 4
            out[name] = dict(weights=weights, kv_per_token_row=2 * c.n_layer * c.n_embd * 4)
        return out

    serve(run, dict(gemv=gemv, sizes=sizes), f"numpy {np.__version__}")


def worker_transformers(threads: int) -> None:
    import torch
    import transformers
    from transformers import GPT2LMHeadModel

    torch.set_num_threads(threads)
    models = {name: GPT2LMHeadModel.from_pretrained(path).eval() for name, path in CHECKPOINTS.items()}

    def run(case: dict) -> dict:
        model = models[case["model"]]
        ids = torch.from_numpy(prompt(case, model.config.vocab_size))
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), pad_token_id=model.config.eos_token_id,
                                 **gen_kwargs(case))
        return dict(seconds=time.perf_counter() - t0, tokens=out[:, ids.shape[1]:].tolist())

    serve(run, {}, f"torch {torch.__version__}, transformers {transformers.__version__}")


def serve(run, extra: dict, versions: str) -> None:
    print(json.dumps(dict(versions=versions)), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "quit":
            break
        print(json.dumps(extra[cmd]() if cmd in extra else run(json.loads(cmd))), flush=True)


# ---- driver


def make_checkpoints() -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    shapes = {"124m": GPT2Config(), "355m": GPT2Config(n_embd=1024, n_layer=24, n_head=16)}
    for name, path in CHECKPOINTS.items():
        if not (path / "model.safetensors").exists():
            torch.manual_seed(0)
            GPT2LMHeadModel(shapes[name]).save_pretrained(path, safe_serialization=True)
            print(f"created {path.relative_to(ROOT)}")


def main(args: argparse.Namespace) -> None:
    make_checkpoints()
    libs = ("refdecode", "transformers")
    workers = {lib: Worker(lib, args.threads, script=__file__) for lib in libs}
    todo = cases(set(args.only.split(",")))
    secs: dict[tuple[str, str], list[float]] = {(key(c), lib): [] for c in todo for lib in libs}
    same: dict[str, bool] = {}
    for model in sorted({c["model"] for c in todo}):  # warm-up: one short call per model and library
        for lib in libs:
            workers[lib].ask(key(dict(group="warm-up", model=model, S=32, B=1, K=1, new=2)))
    bandwidth = []
    for r in range(args.rounds):
        for c in todo:
            answers = {lib: workers[lib].ask(key(c)) for lib in (libs if r % 2 == 0 else libs[::-1])}
            for lib in libs:
                secs[key(c), lib].append(answers[lib]["seconds"])
            same[key(c)] = answers["refdecode"]["tokens"] == answers["transformers"]["tokens"]
        bandwidth.append(workers["refdecode"].ask("gemv")["bytes_per_s"])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    sizes = workers["refdecode"].ask("sizes")
    for w in workers.values():
        w.close()
    bw = statistics.median(bandwidth)

    def med(c: dict, lib: str) -> float:
        return statistics.median(secs[key(c), lib])

    def bound(c: dict, rows: int, S: float) -> float:
        s = sizes[c["model"]]
        return bw / (s["weights"] + s["kv_per_token_row"] * rows * S)

    print(f"{time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores, {args.threads} threads | "
          f"{workers['refdecode'].hello['versions']} | {workers['transformers'].hello['versions']} | gemv "
          f"{bw / 1e9:.1f} GB/s | median of {args.rounds} alternating rounds\n")
    print("| case | refdecode tok/s | transformers tok/s | ratio | bound tok/s | refdecode / bound | same tokens |")
    print("|---|---:|---:|---:|---:|---:|---|")
    by_group: dict[str, list[dict]] = {}
    step_ms: dict[int, dict[str, float]] = {}
    for c in todo:
        by_group.setdefault(c["group"], []).append(c)
    for c in by_group.get("context", []):
        if c["new"] == 1:
            continue
        base = next(b for b in by_group["context"] if b["S"] == c["S"] and b["new"] == 1)
        a, t = (DECODE / (med(c, lib) - med(base, lib)) for lib in libs)
        b = bound(c, 1, c["S"] + DECODE / 2)
        print(f"| context S = {c['S']} (decoding only) | {a:.1f} | {t:.1f} | {a / t:.2f}x | {b:.1f} | "
              f"{100 * a / b:.0f}% | {same[key(c)]} |")
        step_ms[c["S"]] = {lib: 1e3 / x for lib, x in zip(libs, (a, t))}
    for group in ("batch", "beams", "355m"):  # (after the context rows)
        for c in by_group.get(group, []):
            rows = c["B"] * c["K"]
            n = c["B"] * c["new"]
            a, t = (n / med(c, lib) for lib in libs)
            b = c["B"] * bound(c, rows, c["S"] + c["new"] / 2)
            kind = "greedy" if c["K"] == 1 else f"beams K = {c['K']}"
            label = {"batch": f"batch B = {c['B']}", "beams": f"beams K = {c['K']}", "355m": f"355M, {kind}"}[group]
            print(f"| {label} | {a:.1f} | {t:.1f} | {a / t:.2f}x | {b:.1f} | {100 * a / b:.0f}% | {same[key(c)]} |")
    if step_ms:
        first = min(step_ms)
        print(f"\ncontext: ms per decoding step (refdecode / transformers), and the share the context adds over "
              f"S = {first} (refdecode / transformers):")
        for S, ms in step_ms.items():
            grow = {lib: (ms[lib] - step_ms[first][lib]) / ms[lib] for lib in libs}
            print(f"  S = {S}: {ms['refdecode']:.1f} / {ms['transformers']:.1f} ms, context adds "
                  f"{100 * grow['refdecode']:.0f}% / {100 * grow['transformers']:.0f}%")
    beams = by_group.get("beams", [])
    if beams:
        greedy = next(c for c in beams if c["K"] == 1)
        for c in beams[1:]:
            per_round = [g / s for g, s in zip(secs[key(greedy), "refdecode"], secs[key(c), "refdecode"])]
            print(f"\nbeam-{c['K']} steps/s over greedy steps/s (refdecode, same round): median "
                  f"{statistics.median(per_round):.2f} (rounds {min(per_round):.2f}-{max(per_round):.2f})", end="")
        print()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="context,batch,beams,355m")
    ap.add_argument("--worker", choices=("refdecode", "transformers"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "refdecode":
        worker_refdecode()
    elif a.worker == "transformers":
        worker_transformers(a.threads)
    else:
        main(a)
