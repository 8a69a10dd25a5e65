"""The speed targets in one run, one thread: the bandwidth bound, greedy, beam-4, prompt lookup, and the engines.

Not a test. Needs the package and ``models/gpt2-124m-shaped`` (``tools/engines/make_gpt2_124m_shaped.py``); the
engines' sides run when their environments exist (``examples/engines/onnxruntime-genai/setup.sh``,
``examples/engines/openvino-genai/setup.sh``)::

    .venv/bin/python benchmarks/speed_targets.py [--rounds 3] [--wall] [--no-engines] [--no-lookup]

Every side is a worker process of its own, single-threaded (``OPENBLAS_NUM_THREADS=1``; onnxruntime-genai's
session and OpenVINO GenAI's pipeline are set to one thread by their adapters), answering one command at a time; the
rounds alternate the sides (the order rotates every round) and the medians are printed with the load average,
so that a shared machine moves every figure alike. Timer: the CPU time of each worker process
(``time.process_time``; one compute thread each), or wall clock with ``--wall`` (a quiet machine).

1. **The bandwidth bound.** The refdecode worker measures what one thread can read: ``np.dot`` of the two halves of
   a 300 MB float32 array (OpenBLAS's sdot, two streams) and a 240 MB gemv (``x @ W``), the best of 5 each per round;
   the bound's bandwidth is the larger. One decoding step of the 124M-shaped model reads every block's weights,
   the layer norms, all of ``wte`` (the tied LM head) and one row of ``wpe`` (495 MB); bound = bandwidth / bytes,
   in tokens/s, and greedy's tokens/s is printed as a share of it.
2. **generate**, the engines' bench (``examples/engines/common/bench.json``: an 8-token prompt, exactly 64 new
   tokens): greedy and beam-4, refdecode's fast forward pass, onnxruntime-genai 0.18.0 and OpenVINO GenAI
   2026.4.1.0; beam-4 / greedy per side.
3. **A verification pass against a step**: the forward pass of 11 new tokens (prompt lookup's 10 drafts + 1) and of
   one token, at a 40-token cache, median of 5 each per round: the pass in "plain steps".
4. **Prompt lookup against plain greedy**: ``bench_generate.py``'s copy modes (the copy checkpoint of
   ``make_copy_checkpoint.py``, its 497-token copy prompt, exactly 256 new tokens, ``prompt_lookup_num_tokens=10``).
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
ENGINES = ROOT / "examples" / "engines"
SPEC = json.loads((ENGINES / "common" / "bench.json").read_text())
PROMPT, NEW = SPEC["prompt"], SPEC["new_tokens"]
CHECKPOINT = ROOT / SPEC["model"]
COPY_CHECKPOINT = ROOT / "benchmarks" / "_checkpoints" / "gpt2-124m-copy"
ENGINE_DIRS = {"onnxruntime-genai": ENGINES / "onnxruntime-genai", "openvino-genai": ENGINES / "openvino-genai"}
S = 40  # cache length of the timed steps
DRAFTS = 10  # prompt_lookup_num_tokens: a verification pass has DRAFTS + 1 rows


def timed(fn) -> tuple[float, float]:
    """(seconds, cpu seconds) of ``fn()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


# ----------------------------------------------------------------------------------------------------
# Workers: "greedy" / "beam4" -> {"seconds", "cpu_seconds", "tokens"}; refdecode also answers the others
# ----------------------------------------------------------------------------------------------------


def refdecode_worker() -> dict:
    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_generate import _copy_prompt  # the copy prompt of bench_generate's copy modes

    from refdecode import GPT2, generate

    model = GPT2.from_pretrained(CHECKPOINT, forward="fast")
    copy_model = [None]
    ids = np.array([PROMPT], dtype=np.int64)
    rng = np.random.default_rng(0)
    big = np.full(75_000_000, 0.5, dtype=np.float32)  # 300 MB
    w = rng.standard_normal((6000, 10000), dtype=np.float32)  # 240 MB; not a power of two (cache aliasing)
    x = rng.standard_normal((1, 6000), dtype=np.float32)

    def run(beams: int) -> dict:
        out = []
        sec, cpu = timed(lambda: out.append(generate(model, ids, max_new_tokens=NEW, min_new_tokens=NEW,
                                                     num_beams=beams, eos_token_id=50256, pad_token_id=50256)))
        return dict(seconds=sec, cpu_seconds=cpu, tokens=out[0][0, ids.shape[1]:].tolist())

    def copy(lookup: bool) -> dict:
        if copy_model[0] is None:
            copy_model[0] = GPT2.from_pretrained(COPY_CHECKPOINT, forward="fast")
        prompt = _copy_prompt()
        kw = dict(prompt_lookup_num_tokens=DRAFTS) if lookup else {}
        out = []
        sec, cpu = timed(lambda: out.append(generate(copy_model[0], prompt, attention_mask=np.ones_like(prompt),
                                                     max_new_tokens=256, min_new_tokens=256, do_sample=False, **kw)))
        return dict(seconds=sec, cpu_seconds=cpu, tokens=out[0][0, prompt.shape[1]:].tolist())

    def bandwidth() -> dict:
        half = big.size // 2
        best = {}
        for name, fn, nbytes in (("dot", lambda: np.dot(big[:half], big[half:]), big.nbytes),
                                 ("gemv", lambda: x @ w, w.nbytes)):
            times = [timed(fn) for _ in range(5)]
            best[name] = dict(bytes_per_s=nbytes / min(t[0] for t in times),
                              bytes_per_cpu_s=nbytes / min(t[1] for t in times))
        return best

    def steps() -> dict:
        """Median seconds (wall, cpu) of 5 forward passes of 1 and of DRAFTS + 1 new tokens at an S-token cache."""
        cache = model.new_cache(1, S + DRAFTS + 1)
        model(rng.integers(0, 50257, (1, S)), past_key_values=cache)
        out = {}
        for rows in (1, DRAFTS + 1):
            new = rng.integers(0, 50257, (1, rows))

            def forward() -> None:
                cache.crop(S)
                model(new, past_key_values=cache)

            forward()
            times = [timed(forward) for _ in range(5)]
            out[f"step_{rows}"] = dict(seconds=statistics.median(t[0] for t in times),
                                       cpu_seconds=statistics.median(t[1] for t in times))
        return out

    p = model.params
    step_bytes = sum(a.nbytes for layer in p["h"] for group in layer.values() for part in group.values()
                     for a in (part.values() if isinstance(part, dict) else [part]))
    step_bytes += sum(a.nbytes for a in p["ln_f"].values()) + p["wte"].nbytes + p["wpe"].shape[1] * 4
    return {"greedy": lambda: run(1), "beam4": lambda: run(4), "greedy_copy": lambda: copy(False),
            "lookup_copy": lambda: copy(True), "bandwidth": bandwidth, "steps": steps,
            "step_bytes": lambda: dict(bytes=step_bytes),
            "hello": lambda: dict(versions=f"numpy {np.__version__}, refdecode forward=fast")}


def onnxruntime_genai_worker() -> dict:
    import numpy as np

    sys.path.insert(0, str(ENGINE_DIRS["onnxruntime-genai"]))
    import adapter

    adapter.converted(CHECKPOINT)
    model = adapter.model_for(CHECKPOINT, [50256], 50256)
    og = adapter.og

    def run(beams: int) -> dict:
        seq = []

        def once() -> None:
            params = og.GeneratorParams(model)
            total = len(PROMPT) + NEW
            params.set_search_options(max_length=total, min_length=total, batch_size=1, num_beams=beams,
                                      num_return_sequences=1, do_sample=False, early_stopping=True)
            generator = og.Generator(model, params)
            generator.append_tokens(np.array([PROMPT], dtype=np.int32))
            while not generator.is_done():
                generator.generate_next_token()
            seq.append(generator.get_sequence(0))

        sec, cpu = timed(once)
        return dict(seconds=sec, cpu_seconds=cpu, tokens=[int(t) for t in seq[0][len(PROMPT):]])

    return {"greedy": lambda: run(1), "beam4": lambda: run(4),
            "hello": lambda: dict(versions=f"onnxruntime-genai {og.__version__}")}


def openvino_genai_worker() -> dict:
    import numpy as np

    sys.path.insert(0, str(ENGINE_DIRS["openvino-genai"]))
    import adapter

    adapter.converted(CHECKPOINT)
    pipe = adapter.pipeline_for(CHECKPOINT)
    og, ov = adapter.og, adapter.ov
    inputs = og.TokenizedInputs(ov.Tensor(np.array([PROMPT], dtype=np.int64)),
                                ov.Tensor(np.ones((1, len(PROMPT)), dtype=np.int64)))

    def run(beams: int) -> dict:
        config = og.GenerationConfig()
        config.max_new_tokens = NEW
        config.eos_token_id = 50256
        config.stop_token_ids = {50256}
        config.num_beams = beams
        config.ignore_eos = beams == 1
        out = []
        sec, cpu = timed(lambda: out.append(pipe.generate(inputs, config).tokens))
        tokens = [int(t) for t in out[0][0]]
        if len(tokens) != NEW:
            raise RuntimeError(f"openvino-genai generated {len(tokens)} tokens, expected {NEW}")
        return dict(seconds=sec, cpu_seconds=cpu, tokens=tokens)

    return {"greedy": lambda: run(1), "beam4": lambda: run(4),
            "hello": lambda: dict(versions=f"openvino-genai {og.__version__}")}


WORKERS = {"refdecode": refdecode_worker, "onnxruntime-genai": onnxruntime_genai_worker,
           "openvino-genai": openvino_genai_worker}


def serve(side: str) -> None:
    commands = WORKERS[side]()
    print(json.dumps(commands["hello"]()), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "quit":
            break
        print(json.dumps(commands[cmd]()), flush=True)


class Worker:
    def __init__(self, side: str, python: str) -> None:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([python, __file__, "--worker", side], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
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


# ----------------------------------------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------------------------------------


def main(args: argparse.Namespace) -> None:
    if not (CHECKPOINT / "model.safetensors").exists():
        sys.exit(f"no {CHECKPOINT}: make it with tools/engines/make_gpt2_124m_shaped.py")
    if not args.no_lookup and not (COPY_CHECKPOINT / "model.safetensors").exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_copy_checkpoint.py"), str(COPY_CHECKPOINT)],
                       check=True)
    key = "seconds" if args.wall else "cpu_seconds"
    bw_key = "bytes_per_s" if args.wall else "bytes_per_cpu_s"
    workers = {"refdecode": Worker("refdecode", sys.executable)}
    for side, folder in ENGINE_DIRS.items():
        python = folder / "env" / "bin" / "python"
        if not args.no_engines and python.exists():
            workers[side] = Worker(side, str(python))
        elif not args.no_engines:
            print(f"({side}: no env; run examples/engines/{side}/setup.sh)", file=sys.stderr)
    ref = workers["refdecode"]
    modes = ["greedy", "beam4"]
    ref_modes = modes + ([] if args.no_lookup else ["greedy_copy", "lookup_copy"])
    times: dict[tuple[str, str], list[float]] = {}
    tokens: dict[tuple[str, str], list[int]] = {}
    extra: dict[str, list[dict]] = {"bandwidth": [], "steps": []}
    loads = [os.getloadavg()[0]]
    sides = list(workers)
    for r in range(args.rounds + 1):  # round 0: warm-up, not counted
        order = sides[r % len(sides):] + sides[: r % len(sides)]
        for side in order:
            for mode in (ref_modes if side == "refdecode" else modes):
                answer = workers[side].ask(mode)
                tokens[side, mode] = answer["tokens"]
                if r:
                    times.setdefault((side, mode), []).append(answer[key])
            if side == "refdecode" and r:
                for cmd in extra:
                    extra[cmd].append(ref.ask(cmd))
        loads.append(os.getloadavg()[0])
        print(f"round {r}/{args.rounds}, load {loads[-1]:.1f}", file=sys.stderr, flush=True)
    step_bytes = ref.ask("step_bytes")["bytes"]
    hello = {side: w.hello["versions"] for side, w in workers.items()}
    for w in workers.values():
        w.close()
    report(args, times, tokens, extra, step_bytes, hello, loads, key, bw_key)


def report(args, times, tokens, extra, step_bytes, hello, loads, key, bw_key) -> None:
    import platform

    def tok_s(side: str, mode: str, n: int = NEW) -> float:
        return n / statistics.median(times[side, mode])

    clock = "wall clock" if args.wall else "CPU time of each worker process"
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC | {platform.machine()}, {os.cpu_count()} cores, 1 thread each | "
          f"{clock} | {args.rounds} alternating rounds (medians, per-round min-max) | load average "
          f"{min(loads):.1f}-{max(loads):.1f} (1 min, sampled each round) | {' | '.join(hello.values())}\n")
    bws = {k: statistics.median(e[k][bw_key] for e in extra["bandwidth"]) for k in ("dot", "gemv")}
    bw = max(bws.values())
    bound = bw / step_bytes
    greedy = tok_s("refdecode", "greedy")
    print(f"(c) bandwidth: np.dot {bws['dot'] / 1e9:.1f} GB/s, gemv {bws['gemv'] / 1e9:.1f} GB/s -> "
          f"{bw / 1e9:.1f} GB/s; a step reads {step_bytes / 1e6:.0f} MB -> bound {bound:.1f} tok/s; refdecode greedy "
          f"{greedy:.1f} tok/s = {100 * greedy / bound:.0f}% of it (target 90%; the greedy step alone, without "
          f"generate's prefill and loop: {100 * step_bytes / bw / _step(extra, 1, key):.0f}%)")
    one, eleven = _step(extra, 1, key), _step(extra, DRAFTS + 1, key)
    ratios = [s[f"step_{DRAFTS + 1}"][key] / s["step_1"][key] for s in extra["steps"]]
    print(f"(a) verification pass ({DRAFTS + 1} rows) {1e3 * eleven:.1f} ms vs a step {1e3 * one:.1f} ms = "
          f"{eleven / one:.2f} plain steps ({min(ratios):.2f}-{max(ratios):.2f}; target <= 2)")
    if ("refdecode", "lookup_copy") in times:
        lk, gr = tok_s("refdecode", "lookup_copy", 256), tok_s("refdecode", "greedy_copy", 256)
        rr = [g / l for g, l in zip(times["refdecode", "greedy_copy"], times["refdecode", "lookup_copy"])]
        same = tokens["refdecode", "lookup_copy"] == tokens["refdecode", "greedy_copy"]
        print(f"(a) prompt lookup {lk:.1f} tok/s vs plain greedy {gr:.1f} tok/s = {lk / gr:.2f}x "
              f"({min(rr):.2f}-{max(rr):.2f}; target >= 2.5x); same tokens: {same}")
    print("\n| side | greedy tok/s | beam-4 tok/s | beam-4 / greedy (rounds) | greedy vs refdecode | beam-4 vs refdecode "
          "| greedy tokens = refdecode's |\n|---|---:|---:|---:|---:|---:|---|")
    for side in hello:
        g, b = tok_s(side, "greedy"), tok_s(side, "beam4")
        rr = [tg / tb for tg, tb in zip(times[side, "greedy"], times[side, "beam4"])]
        print(f"| {side} | {g:.1f} | {b:.1f} | {g and b / g:.2f} ({min(rr):.2f}-{max(rr):.2f}) | "
              f"{g / tok_s('refdecode', 'greedy'):.2f}x | {b / tok_s('refdecode', 'beam4'):.2f}x | "
              f"{tokens[side, 'greedy'] == tokens['refdecode', 'greedy']} |")
    print("\n(b) target: refdecode beam-4 / greedy >= 0.6")


def _step(extra: dict, rows: int, key: str) -> float:
    return statistics.median(s[f"step_{rows}"][key] for s in extra["steps"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wall", action="store_true", help="time wall clock instead of each process's CPU time")
    ap.add_argument("--no-engines", action="store_true")
    ap.add_argument("--no-lookup", action="store_true", help="skip the prompt-lookup modes (copy checkpoint)")
    ap.add_argument("--worker", choices=tuple(WORKERS), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        serve(a.worker)
    else:
        main(a)
