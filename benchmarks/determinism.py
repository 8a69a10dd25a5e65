"""Which products of a GPT-2 step change their bits with the OpenBLAS thread count, the weight layout or alignment.

"Same seed, same output" holds only as far as the logits are bit-identical: a sampled draw compares a
uniform against a cumulative sum of probabilities, so a change in the last bit of one logit can move a
draw that falls near a boundary. This script measures, on this machine and this NumPy/OpenBLAS build,
which of the products of one decoding step (GPT-2 124M shapes, one row, 32 cached tokens) give different
bits when

1. the OpenBLAS thread count changes (each configuration runs in its own process, since OpenBLAS reads
   ``OPENBLAS_NUM_THREADS`` once at start-up);
2. the weight is stored row-major (``load_params(mmap=True)``, a view of the file) or column-major
   (``mmap=False``, see refdecode/model/checkpoint.py);
3. the weight's first byte sits at a different offset modulo 64 (``arr.ctypes.data % 64``: a memory-mapped
   tensor starts wherever the file puts it, a NumPy allocation at 16 or 64).

Run: ``python benchmarks/determinism.py`` (about 20 s). It prints one line per product and configuration,
and the OpenBLAS kernel in use (threadpoolctl, if installed). Results of a run: docs/golden-reference.md,
"When does the same seed give the same output?".
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np

E, V, F, H, D, S = 768, 50257, 3072, 12, 64, 32  # GPT-2 124M; S cached tokens


def operands() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The products of one decoding step, with fixed random operands: name -> (x, W), product x @ W."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, E), dtype=np.float32)
    h = rng.standard_normal((1, F), dtype=np.float32)
    w = lambda r, c: (rng.standard_normal((r, c), dtype=np.float32) * np.float32(0.02))  # noqa: E731
    return {"c_attn (1x768 @ 768x2304)": (x, w(E, 3 * E)), "attn c_proj (1x768 @ 768x768)": (x, w(E, E)),
            "c_fc (1x768 @ 768x3072)": (x, w(E, F)), "mlp c_proj (1x3072 @ 3072x768)": (h, w(F, E)),
            "lm head (1x768 @ 768x50257)": (x, w(E, V))}


def attention_operands() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    q = rng.standard_normal((1, H, 1, D), dtype=np.float32)
    k = rng.standard_normal((1, H, S, D), dtype=np.float32)
    p = rng.random((1, H, 1, S), dtype=np.float32)
    return q, k, p


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


def with_offset(a: np.ndarray, offset: int, order: str) -> np.ndarray:
    """A copy of ``a`` in ``order`` ("C" or "F") whose data starts ``offset`` bytes past a 64-byte boundary."""
    buf = np.empty(a.nbytes + 128, dtype=np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    out = buf[start:start + a.nbytes].view(np.float32)
    out = out.reshape(a.shape if order == "C" else a.shape[::-1])
    if order == "F":
        out = out.T
    out[...] = a
    assert out.ctypes.data % 64 == offset and out.flags[f"{order}_CONTIGUOUS"]
    return out


def product(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """refdecode.model.fast.forward.linear's choice: (W^T x^T)^T for a column-major W, else x @ W."""
    from refdecode.model.fast.forward import linear
    return linear(x, w, np.zeros(w.shape[1], dtype=np.float32))


def measure() -> dict[str, str]:
    """In this process: digest of every product per layout and alignment."""
    out = {}
    for name, (x, w) in operands().items():
        for order, layout in (("C", "row-major (mmap=True)"), ("F", "column-major (mmap=False)")):
            for offset in (0, 4, 16, 32, 60):
                out[f"{name} | {layout} | data % 64 = {offset}"] = digest(product(x, with_offset(w, offset, order)))
    q, k, p = attention_operands()
    out["attention scores q @ k^T (12 x 1x64 @ 64x32)"] = digest(q @ k.swapaxes(-1, -2))
    out["attention output p @ v (12 x 1x32 @ 32x64)"] = digest(p @ k)
    return out


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(f"{i['internal_api']} {i['version']} kernel {i.get('architecture')} "
                     f"threads {i['num_threads']}" for i in info)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps({"blas": blas_info(), "digests": measure()}))
        return
    runs = {}
    for threads in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads)
        done = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True,
                              check=True)
        runs[threads] = json.loads(done.stdout)
        print(f"OPENBLAS_NUM_THREADS={threads}: {runs[threads]['blas']}")
    print(f"numpy {np.__version__}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}")
    one, two = runs["1"]["digests"], runs["2"]["digests"]
    by_product: dict[str, list[str]] = {}
    for key in one:
        by_product.setdefault(key.split(" | ")[0], []).append(key)
    for name, keys in by_product.items():
        layouts = {k.split(" | ")[1] for k in keys} if len(keys) > 1 else {"-"}
        print(f"\n{name}")
        for layout in sorted(layouts):
            ks = [k for k in keys if layout == "-" or k.split(" | ")[1] == layout]
            same_align = all(len({d[k] for k in ks}) == 1 for d in (one, two))
            same_threads = all(one[k] == two[k] for k in ks)
            print(f"  {layout:28s} alignment changes bits: {'no ' if same_align else 'YES'}   "
                  f"1 vs 2 threads changes bits: {'no' if same_threads else 'YES'}")
        if len(layouts) == 2:
            row = [k for k in keys if "row-major" in k][0]
            col = [k for k in keys if "column-major" in k][0]
            print(f"  row-major vs column-major changes bits: {'no' if one[row] == one[col] else 'YES'} (1 thread), "
                  f"{'no' if two[row] == two[col] else 'YES'} (2 threads)")


if __name__ == "__main__":
    main()
