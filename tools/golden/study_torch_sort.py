"""Study of torch's CPU sort on ties: which order does ``torch.sort(stable=False)`` give?

Runs in the oracle venv (torch 2.13.0 + transformers 4.38.2); refdecode is pure NumPy and is imported
from the work tree to compare::

    PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/study_torch_sort.py [--out FILE.npz]

For many rows with ties (all-equal rows of 1..300 entries, a few tie groups, random rows with repeated
values, -inf/+inf/NaN/-0.0 entries, already sorted and reversed rows, rows built by McIlroy's adversary
to drive libstdc++'s introsort into its heapsort fallback, and GPT-2-sized rows of 50,257 entries), 1-D
and 2-D, ascending and descending, it records ``torch.sort(x).indices`` (``--out``: an .npz, default
none) and counts the rows where torch's order equals

- a stable sort (``np.argsort(kind="stable")``): what refdecode assumed before;
- ``refdecode.numerics.introsort.torch_cpu_sort_order`` (libstdc++'s ``std::sort``, reproduced);
- ``std_sort_literal`` (the same algorithm transliterated line by line, pure Python; rows up to 5,000).

It also re-runs itself under ``ATEN_CPU_CAPABILITY=default|avx2|avx512`` and with 1 and 2 threads and
checks the recorded orders are identical (the order does not depend on the CPU kernel chosen), and
prints torch's and refdecode's times on (1, 50257).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time

import numpy as np
import torch

from refdecode.numerics.introsort import sort_keys, std_sort_literal, torch_cpu_sort_order

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_torch_sort_golden import adversary  # noqa: E402

V = 50257


def inputs(rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """(family, float32 1-D or 2-D array) pairs: every row has ties unless the family says otherwise."""
    out: list[tuple[str, np.ndarray]] = []
    for n in range(1, 301):
        out.append(("all_equal", np.zeros(n, np.float32)))
        out.append(("all_equal_value", np.full(n, np.float32(rng.normal())), ))
        groups = rng.integers(0, int(rng.integers(2, 5)), n)
        out.append(("few_groups", rng.normal(size=4).astype(np.float32)[groups]))
        out.append(("repeated", rng.integers(0, max(2, n // 3), n).astype(np.float32) / 7))
        x = rng.integers(0, 10, n).astype(np.float32)
        x[rng.random(n) < 0.3] = -np.inf
        out.append(("neginf", x))
        x = rng.normal(size=n).astype(np.float32)
        for value in (np.nan, np.inf, -np.inf, -0.0, 0.0):
            x[rng.random(n) < 0.08] = value
        out.append(("specials", x))
        out.append(("sorted", np.sort(rng.integers(0, 5, n)).astype(np.float32)))
        out.append(("reversed", np.sort(rng.integers(0, 5, n))[::-1].astype(np.float32).copy()))
        out.append(("batch2d", rng.integers(0, 3, (3, n)).astype(np.float32)))
    for n in (64, 65, 100, 257, 1000, 5000):
        out.append(("heapsort_adversary", adversary(n)))
    for n in (511, 512, 513, 1024, 4097):
        out.append(("repeated", rng.integers(0, 50, n).astype(np.float32)))
    out.append(("vocab_all_equal", np.zeros(V, np.float32)))
    out.append(("vocab_3_values", rng.integers(0, 3, V).astype(np.float32)))
    out.append(("vocab_rounded_logits", np.round(rng.normal(size=V) * 4, 1).astype(np.float32)))
    out.append(("vocab_after_top_k", np.where(rng.random(V) < 0.999, -np.inf, rng.normal(size=V)).astype(np.float32)))
    logits = (rng.normal(size=(2, V)) * 3).astype(np.float32)
    logits[:, rng.integers(0, V, 40)] = logits[0, 7]  # a tie group of the row's value at id 7
    out.append(("vocab_logits_2d", logits))
    return out


def digest(rows: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(np.ascontiguousarray(r).tobytes())
    return h.hexdigest()[:16]


def record(cases: list[tuple[str, np.ndarray]]) -> dict[tuple[int, bool], np.ndarray]:
    return {(i, d): torch.sort(torch.from_numpy(x), descending=d).indices.numpy()
            for i, (_, x) in enumerate(cases) for d in (False, True)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write torch's orders to this .npz")
    ap.add_argument("--digest-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, capability {torch.backends.cpu.get_cpu_capability()}, "
          f"threads {torch.get_num_threads()}", file=sys.stderr)
    cases = inputs(np.random.default_rng(2024))
    torch_orders = record(cases)
    if args.digest_only:
        print(digest([torch_orders[k] for k in sorted(torch_orders)]))
        return
    table: dict[str, list[int]] = {}
    for (i, d), t in sorted(torch_orders.items()):
        family, x = cases[i]
        rows = x.reshape(-1, x.shape[-1])
        trows = t.reshape(rows.shape)
        stable = np.argsort(sort_keys(rows, d), axis=-1, kind="stable")
        ours = torch_cpu_sort_order(rows, d)
        c = table.setdefault(family, [0, 0, 0, 0, 0])
        for b in range(rows.shape[0]):
            c[0] += 1
            c[1] += int(np.array_equal(trows[b], stable[b]))
            c[2] += int(np.array_equal(trows[b], ours[b]))
            if rows.shape[1] <= 5000:
                c[3] += 1
                c[4] += int(np.array_equal(trows[b], std_sort_literal(sort_keys(rows[b], d).tolist())))
    print(f"{'family':24s} {'rows':>5s} {'=stable':>8s} {'=refdecode':>10s} {'=literal':>12s}")
    total = [0, 0, 0, 0, 0]
    for family, c in table.items():
        print(f"{family:24s} {c[0]:5d} {c[1]:8d} {c[2]:10d} {c[4]:6d}/{c[3]:<5d}")
        total = [a + b for a, b in zip(total, c)]
    print(f"{'total':24s} {total[0]:5d} {total[1]:8d} {total[2]:10d} {total[4]:6d}/{total[3]:<5d}")
    small = [(n, np.array_equal(torch.sort(torch.zeros(n)).indices.numpy(), np.arange(n))) for n in range(1, 40)]
    print("all-equal rows torch keeps in id order (stable): n =", [n for n, s in small if s])

    # The order does not depend on the CPU kernel (capability) or the thread count.
    here = digest([torch_orders[k] for k in sorted(torch_orders)])
    runs = {"this run": here}
    for cap in ("default", "avx2", "avx512"):
        for threads in ("1", "2"):
            env = dict(os.environ, ATEN_CPU_CAPABILITY=cap, OMP_NUM_THREADS=threads)
            r = subprocess.run([sys.executable, __file__, "--digest-only"], env=env, capture_output=True, text=True,
                               check=True)
            runs[f"{cap}, {threads} thread(s)"] = r.stdout.strip()
    for name, d in runs.items():
        print(f"digest of torch's orders, {name:22s} {d}  {'same' if d == here else 'DIFFERENT'}")

    # Timings on (1, 50257): best of 5 (a shared machine); refdecode's first call on a row includes filling
    # the cache of equal-range arrangements (torch_sort._equal_range_order), so it is timed apart.
    rng = np.random.default_rng(0)
    for name, row in [("normal logits", rng.normal(size=(1, V)).astype(np.float32)),
                      ("logits rounded to 0.1", np.round(rng.normal(size=(1, V)) * 4, 1).astype(np.float32)),
                      ("all equal", np.zeros((1, V), np.float32))]:
        def best(f) -> float:
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                f()
                times.append(time.perf_counter() - t0)
            return 1e3 * min(times)
        t0 = time.perf_counter()
        torch_cpu_sort_order(row)
        first = 1e3 * (time.perf_counter() - t0)
        print(f"(1, {V}) {name}: torch.sort {best(lambda: torch.sort(torch.from_numpy(row))):.1f} ms, "
              f"torch_cpu_sort_order {best(lambda: torch_cpu_sort_order(row)):.1f} ms (first call {first:.1f} ms)")

    if args.out:
        np.savez_compressed(args.out, **{f"{i}_{'desc' if d else 'asc'}_{cases[i][0]}": t
                                         for (i, d), t in torch_orders.items()})
        print("wrote", args.out)


if __name__ == "__main__":
    main()
