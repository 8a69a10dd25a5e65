"""Beam-4 against greedy on one thread: where refdecode's beam step goes, and where onnxruntime-genai's comes from.

Not a test. The engines' speed table (docs/engines.md) runs every engine single-threaded on the GPT-2-124M-shaped
checkpoint (``models/gpt2-124m-shaped``, made by ``tools/engines/make_gpt2_124m_shaped.py``); a beam-4 step is 4 rows
of the model plus the search. This script measures, in one run, alternating over ``--rounds`` rounds::

    .venv/bin/python benchmarks/beam_gap.py [--rounds 5] [--wall] [--no-genai] [--json FILE]

1. **The weight products of one step** (48 Conv1D matrices + the tied LM head, 124M: 495 MB) for 1, 4 and 11 rows
   (greedy, beam-4, prompt lookup's verification), each way NumPy can call OpenBLAS: one call ``W^T @ X^T`` (the
   fast pass before the blocks; OpenBLAS's GEMM packs a copy of the weight first), and blocks of W^T's rows under
   OpenBLAS's small-matrix bound (``refdecode.model.fast.forward.few_rows_product``, what the fast pass runs now).
2. **The other stages of a beam step**, 4 rows against 1: the whole forward pass (fast), log_softmax over
   4 x 50,257 (``torch_log_softmax``, torch's bits, what the beam step runs; and NumPy's plain expression), the
   top-2K candidates (``top_candidates``), the KV cache reorder.
3. **generate()**, greedy and beam-4 (the engines' bench: 8-token prompt, 64 new tokens), plain and fast forward,
   and onnxruntime-genai's (when ``examples/engines/onnxruntime-genai/env`` exists; its ``setup.sh`` makes it): its
   generator step, its model alone (an onnxruntime session on the same ONNX file, 1 and 4 rows) and its matrix
   products (onnxruntime's profiler: the share of ``Gemm`` nodes, the Conv1D layers, and of the LM head's ``MatMul``,
   times the session's time).

Timer: the CPU time of the calling thread (``time.thread_time``) by default, OPENBLAS_NUM_THREADS=1 and
onnxruntime single-threaded, so the figures hold on a shared machine (other processes still compete for memory
bandwidth and caches: the spread is printed); ``--wall`` times wall clock (a quiet machine). The profiler's
shares are of wall-clock node times whatever the flag.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GENAI = ROOT / "examples" / "engines" / "onnxruntime-genai"
SPEC = json.loads((ROOT / "examples" / "engines" / "common" / "bench.json").read_text())
PROMPT, NEW = SPEC["prompt"], SPEC["new_tokens"]
CHECKPOINT = ROOT / SPEC["model"]
S = 40  # cache length of the timed steps: the prompt + half the new tokens


def clock(wall: bool):
    return time.perf_counter if wall else time.thread_time


def timed(fn, now) -> float:
    t0 = now()
    fn()
    return 1e3 * (now() - t0)  # ms


# ----------------------------------------------------------------------------------------------------
# onnxruntime-genai's side (runs in its env: onnxruntime + onnxruntime_genai, no refdecode)
# ----------------------------------------------------------------------------------------------------


def genai_worker(wall: bool) -> None:
    """Answer "round" with one JSON line: genai's generate (greedy, beam-4), its mean step, its model alone."""
    import onnxruntime as ort
    import onnxruntime_genai as og

    sys.path.insert(0, str(GENAI))
    import adapter

    now = clock(wall)
    folder = adapter.converted(CHECKPOINT)
    model = adapter.model_for(CHECKPOINT, [50256], 50256)
    sessions = {}
    for rows in (1, 4):
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tempfile.gettempdir()) / f"beam_gap_ort{rows}")
        sess = ort.InferenceSession(str(folder / "onnx" / "model.onnx"), so, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {i.name: rng.standard_normal((rows, 12, S, 64), dtype=np.float32)
                 for i in sess.get_inputs() if i.name.startswith("past")}
        feeds.update(input_ids=rng.integers(0, 50257, (rows, 1)), attention_mask=np.ones((rows, S + 1), np.int64),
                     position_ids=np.full((rows, 1), S, np.int64))
        sessions[rows] = (sess, feeds)

    def generate(beams: int) -> tuple[float, float]:
        params = og.GeneratorParams(model)
        total = len(PROMPT) + NEW
        params.set_search_options(max_length=total, min_length=total, batch_size=1, num_beams=beams,
                                  num_return_sequences=1, do_sample=False, early_stopping=True)
        steps, t0 = [], now()
        g = og.Generator(model, params)
        g.append_tokens(np.array([PROMPT], dtype=np.int32))
        while not g.is_done():
            steps.append(timed(g.generate_next_token, now))
        return NEW / (now() - t0), statistics.median(steps)

    print(json.dumps({"ready": og.__version__}), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        out = {}
        for name, beams in (("greedy", 1), ("beam4", 4)):
            out[f"{name}_tok_s"], out[f"{name}_step_ms"] = generate(beams)
        for rows, (sess, feeds) in sessions.items():
            out[f"model_{rows}_ms"] = timed(lambda: sess.run(None, feeds), now)
        print(json.dumps(out), flush=True)
    for rows, (sess, _) in sessions.items():  # the profiler: each kind's share of the nodes' time (wall clock)
        path = Path(sess.end_profiling())
        nodes = [e for e in json.loads(path.read_text())
                 if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
        path.unlink()
        kinds = {"Gemm": 0.0, "LM head": 0.0}
        for e in nodes:
            kind = "LM head" if "50257" in json.dumps(e["args"].get("output_type_shape", "")) else e["args"]["op_name"]
            if kind in kinds:
                kinds[kind] += e["dur"]
        total = sum(e["dur"] for e in nodes) or 1
        print(json.dumps({"profile_rows": rows, **{k: v / total for k, v in kinds.items()}}), flush=True)


# ----------------------------------------------------------------------------------------------------
# refdecode's side
# ----------------------------------------------------------------------------------------------------


def refdecode_round(models: dict, now) -> dict:
    """One round of every refdecode measurement (ms, or tok/s for generate)."""
    from refdecode import generate
    from refdecode.decoding.beam.bookkeeping import top_candidates
    from refdecode.model.fast.forward import few_rows_product
    from refdecode.model.fast.layout import head_rows
    from refdecode.numerics import log_softmax as numpy_log_softmax
    from refdecode.numerics import torch_log_softmax

    fast = models["fast"]
    p = fast.params
    mats = [blk[part][name]["weight"].T for blk in p["h"] for part, name in
            (("attn", "c_attn"), ("attn", "c_proj"), ("mlp", "c_fc"), ("mlp", "c_proj"))]  # W^T (E_out, E_in)
    wte_cm, wte_rows = p["wte"].T, head_rows(p)  # (E, V) row-major (the 1-row head), (V, E) row-major
    rng = np.random.default_rng(0)
    xs = {k: {e: rng.standard_normal((k, e), dtype=np.float32) for e in (768, 3072)} for k in (1, 4, 11)}
    out: dict[str, float] = {}
    out["products_1"] = timed(lambda: ([w @ xs[1][w.shape[1]][0] for w in mats], xs[1][768] @ wte_cm), now)
    for k in (4, 11):
        x = xs[k]
        out[f"products_{k}_one_call"] = timed(lambda: ([np.ascontiguousarray((w @ x[w.shape[1]].T).T) for w in mats],
                                                       x[768] @ wte_cm), now)
        out[f"products_{k}_blocks"] = timed(lambda: ([few_rows_product(x[w.shape[1]], w) for w in mats],
                                                     few_rows_product(x[768], wte_rows)), now)
    for rows in (1, 4):
        cache = fast.new_cache(rows, S + 1)
        fast(rng.integers(0, 50257, (rows, S)), past_key_values=cache)
        step = rng.integers(0, 50257, (rows, 1))

        def forward() -> None:
            cache.crop(S)
            fast(step, past_key_values=cache)

        out[f"forward_{rows}"] = timed(forward, now)
    logits = rng.standard_normal((4, 50257), dtype=np.float32)
    out["log_softmax_exact"] = timed(lambda: torch_log_softmax(logits), now)
    out["log_softmax_numpy"] = timed(lambda: numpy_log_softmax(logits), now)
    out["top_2k"] = timed(lambda: top_candidates(logits.reshape(1, 4, -1), 8), now)
    cache.crop(S)
    out["reorder"] = timed(lambda: cache.reorder(np.array([0, 0, 1, 2])), now)
    ids = np.array([PROMPT], dtype=np.int64)
    for name, model in models.items():
        for beams in (1, 4):
            ms = timed(lambda: generate(model, ids, max_new_tokens=NEW, min_new_tokens=NEW, num_beams=beams,
                                        eos_token_id=50256, pad_token_id=50256), now)
            out[f"{name}_{beams}_tok_s"] = 1e3 * NEW / ms
    return out


def med(rounds: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def spread(rounds: list[dict], key: str) -> str:
    values = [r[key] for r in rounds]
    return f"{min(values):.2f}-{max(values):.2f}"


def report(ref: list[dict], genai: list[dict], profile: dict, args: argparse.Namespace) -> dict:
    """Print the tables; return their figures (``--json``: report.py's paragraph on beam-4 in docs/engines.md)."""
    kind = "wall clock" if args.wall else "CPU time of the thread"
    summary = {"date": time.strftime("%Y-%m-%d %H:%M UTC"), "load": round(os.getloadavg()[0], 1), "clock": kind,
               "rounds": len(ref)}
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}, one thread, {kind}, {len(ref)} alternating rounds (median, min-max); "
          f"{CHECKPOINT.name}, prompt {len(PROMPT)}, {NEW} new tokens, steps at a {S}-token cache\n")
    one = med(ref, "products_1")
    print("| weight products of one step (48 Conv1D + LM head) | ms | x one row (min-max) |\n|---|---:|---:|")
    print(f"| 1 row: W^T @ x (gemv), head x @ wte.T | {one:.1f} | 1.00 |")
    for k in (4, 11):
        for way, text in (("one_call", "one call, W^T @ X^T (OpenBLAS packs W^T)"),
                          ("blocks", "blocks under the small-matrix bound (the fast pass)")):
            key = f"products_{k}_{way}"
            ratios = [r[key] / r["products_1"] for r in ref]
            print(f"| {k} rows: {text} | {med(ref, key):.1f} | {statistics.median(ratios):.2f} "
                  f"({min(ratios):.2f}-{max(ratios):.2f}) |")
            summary[f"products_{k}_{way}_x"] = round(statistics.median(ratios), 2)
    print("\n| stage of a step | 1 row ms | 4 rows ms | 4 rows / 1 row |\n|---|---:|---:|---:|")
    f1, f4 = med(ref, "forward_1"), med(ref, "forward_4")
    print(f"| refdecode forward (fast) | {f1:.1f} | {f4:.1f} | {f4 / f1:.2f} |")
    summary.update(forward_1_ms=round(f1, 2), forward_4_x=round(f4 / f1, 2))
    for key, text in (("log_softmax_exact", "log_softmax 4 x 50,257, torch's bits (torch_log_softmax)"),
                      ("log_softmax_numpy", "log_softmax 4 x 50,257, NumPy's plain expression"),
                      ("top_2k", "top-2K candidates (top_candidates)"), ("reorder", "KV cache reorder [0, 0, 1, 2]")):
        print(f"| {text} | | {med(ref, key):.2f} ({spread(ref, key)}) | |")
        summary[f"{key}_ms"] = round(med(ref, key), 2)
    if genai:
        m1, m4 = med(genai, "model_1_ms"), med(genai, "model_4_ms")
        print(f"| onnxruntime-genai: its model alone (onnxruntime session) | {m1:.1f} | {m4:.1f} | {m4 / m1:.2f} |")
        summary["genai_model_4_x"] = round(m4 / m1, 2)
        s1, s4 = med(genai, "greedy_step_ms"), med(genai, "beam4_step_ms")
        print(f"| onnxruntime-genai: generate_next_token (model + search + cache) | {s1:.1f} | {s4:.1f} | "
              f"{s4 / s1:.2f} |")
        summary["genai_step_4_x"] = round(s4 / s1, 2)
        for kind, text in (("Gemm", "the 48 Conv1D products (Gemm nodes)"), ("LM head", "the LM head (MatMul node)")):
            a, b = (profile.get(rows, {}).get(kind, 0.0) * m for rows, m in ((1, m1), (4, m4)))
            if a and b:  # the profiler's share of the nodes' time x the session's time
                print(f"| onnxruntime-genai: {text}, est. | {a:.1f} | {b:.1f} | {b / a:.2f} |")
                summary[f"genai_{kind.replace(' ', '_').lower()}_4_x"] = round(b / a, 2)
    print("\n| generate, tok/s | greedy | beam-4 | beam-4 / greedy per round (min-max) |\n|---|---:|---:|---:|")
    rows = [(name, f"refdecode, {name} forward", ref, f"{name}_1_tok_s", f"{name}_4_tok_s")
            for name in ("plain", "fast")]
    if genai:
        rows.append(("genai", "onnxruntime-genai", genai, "greedy_tok_s", "beam4_tok_s"))
    for name, text, rounds, g, b in rows:
        ratios = [r[b] / r[g] for r in rounds]
        print(f"| {text} | {med(rounds, g):.2f} | {med(rounds, b):.2f} | {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f}) |")
        summary[f"{name}_beam4_over_greedy"] = round(statistics.median(ratios), 2)
        summary[f"{name}_beam4_over_greedy_range"] = [round(min(ratios), 2), round(max(ratios), 2)]
    return summary


def main(args: argparse.Namespace) -> None:
    from refdecode import GPT2

    if not (CHECKPOINT / "model.safetensors").exists():
        sys.exit(f"no {CHECKPOINT}: make it with tools/engines/make_gpt2_124m_shaped.py")
    now = clock(args.wall)
    models = {name: GPT2.from_pretrained(CHECKPOINT, forward=name) for name in ("plain", "fast")}
    worker = None
    if not args.no_genai and (GENAI / "env" / "bin" / "python").exists():
        worker = subprocess.Popen([str(GENAI / "env" / "bin" / "python"), __file__, "--genai-worker"]
                                  + (["--wall"] if args.wall else []), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        json.loads(worker.stdout.readline())
    elif not args.no_genai:
        print(f"(no {GENAI / 'env'}: run examples/engines/onnxruntime-genai/setup.sh for genai's side)\n")
    ref, genai, profile = [], [], {}
    refdecode_round(models, now)  # warm-up (and the LM head's row-major copy)
    for r in range(args.rounds + 1):
        sides = ["refdecode", "genai"] if r % 2 else ["genai", "refdecode"]
        for side in sides:
            if side == "refdecode" and r:
                ref.append(refdecode_round(models, now))
            elif side == "genai" and worker:
                worker.stdin.write("round\n")
                worker.stdin.flush()
                line = json.loads(worker.stdout.readline())
                if r:  # round 0 warms genai up
                    genai.append(line)
        print(f"round {r}/{args.rounds}", file=sys.stderr, flush=True)
    if worker:
        worker.stdin.write("quit\n")
        worker.stdin.flush()
        for line in worker.stdout:
            found = json.loads(line)
            profile[found.pop("profile_rows")] = found
        worker.wait()
    summary = report(ref, genai, profile, args)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--wall", action="store_true", help="time wall clock instead of the thread's CPU time")
    ap.add_argument("--no-genai", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here (report.py --beam-gap)")
    ap.add_argument("--genai-worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.genai_worker:
        genai_worker(a.wall)
    else:
        main(a)
