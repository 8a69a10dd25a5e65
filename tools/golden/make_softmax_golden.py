"""Golden bits of torch's CPU softmax / log_softmax, and the rows of docs/last-bit.md -> tests/golden/softmax.npz.

Runs in the oracle venv (torch 2.13.0 + transformers 4.38.2); it imports nothing of refdecode::

    PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_softmax_golden.py

It runs itself once more per CPU capability (``ATEN_CPU_CAPABILITY=avx2``, then the machine's default,
``avx512`` where the CPU has it: torch picks the widest), because the capability is fixed when torch loads.

* ``rows``: float32 rows on which the last bit of softmax is at stake: *textbook* rows (probabilities that
  are multiples of 1/20, 1/10, 1/8, 1/5, 1/4, 1/3 or 1/6, logits ``float32(log p)``, zeros as ``-inf``)
  and *random* rows (normal logits with ``-inf`` entries), lengths 1..40, 10 of each kind per length.
  Arrays ``rows_{n}`` float32 (20, n); ``softmax_{cap}_{n}`` / ``log_softmax_{cap}_{n}`` their results.
* ``long``: rows of 50,257 entries (GPT-2's vocabulary) made from ``np.random.RandomState(seed)`` as
  :func:`long_rows` says (the test rebuilds them; RandomState's stream is fixed across NumPy versions):
  only the SHA-256 of the result bits is stored, in ``meta``.
* ``warp``: the worked rows of docs/last-bit.md through transformers 4.38.2's ``TopPLogitsWarper`` and
  ``TypicalLogitsWarper``: ``warp_{i}_scores`` float32 (1, V) and ``warp_{i}_kept`` bool (1, V) (tokens
  whose output is the input score); ``meta["warp"][i]`` names the class and its argument.

``meta`` (JSON) also holds the format version, the versions and this command.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "softmax.npz"
FORMAT_VERSION = 1
REGENERATE = "PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_softmax_golden.py"
LENGTHS = range(1, 41)
DENOMINATORS = (20, 10, 8, 5, 4, 3, 6)
LONG_SEEDS = (0, 1, 2)
#: (probabilities, warper, argument): the worked rows of docs/last-bit.md.
WARP_ROWS = [
    ([0.3, 0.2, 0.2, 0.2, 0.1], "TopPLogitsWarper", 0.9),
    ([0.6, 0.3, 0.1], "TopPLogitsWarper", 0.9),
    ([0.6, 0.4], "TypicalLogitsWarper", 0.6),
    ([0.5, 0.25, 0.125, 0.125], "TopPLogitsWarper", 0.75),
]


def textbook_rows(rng: np.random.RandomState, n: int, count: int) -> np.ndarray:
    """float32 (count, n): log of probabilities k_i / d (d from DENOMINATORS, k multinomial), zeros -> -inf."""
    out = np.empty((count, n), np.float32)
    for r in range(count):
        d = DENOMINATORS[rng.randint(len(DENOMINATORS))]
        k = rng.multinomial(d, np.ones(n) / n)
        with np.errstate(divide="ignore"):
            out[r] = np.log((k / d).astype(np.float32))
    return out


def random_rows(rng: np.random.RandomState, n: int, count: int) -> np.ndarray:
    x = (rng.randn(count, n) * 3).astype(np.float32)
    x[rng.rand(count, n) < 0.15] = -np.inf
    x[np.arange(count), rng.randint(n, size=count)] = 1.0  # at least one finite entry
    return x


def long_rows(seed: int) -> np.ndarray:
    """float32 (2, 50257): GPT-2-like logits, N(-80, 3) with 20 tokens raised by 20; row 1 has 10% -inf."""
    rng = np.random.RandomState(seed)
    x = (rng.randn(2, 50257) * 3 - 80).astype(np.float32)
    x[:, rng.randint(50257, size=20)] += 20
    x[1, rng.rand(50257) < 0.1] = -np.inf
    return x


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, np.float32).view(np.uint32).astype("<u4").tobytes()).hexdigest()


def all_rows() -> dict[int, np.ndarray]:
    rng = np.random.RandomState(2026)
    return {n: np.concatenate([textbook_rows(rng, n, 10), random_rows(rng, n, 10)]) for n in LENGTHS}


def worker(out: Path) -> None:
    """Run in a child with ATEN_CPU_CAPABILITY set: torch's results on all rows, saved to ``out``."""
    import torch

    cap = torch.backends.cpu.get_cpu_capability().lower()
    arrays = {}
    for n, x in all_rows().items():
        t = torch.from_numpy(x)
        arrays[f"softmax_{n}"] = torch.softmax(t, dim=-1).numpy()
        arrays[f"log_softmax_{n}"] = torch.log_softmax(t, dim=-1).numpy()
    long = {}
    for seed in LONG_SEEDS:
        t = torch.from_numpy(long_rows(seed))
        long[str(seed)] = {"softmax": digest(torch.softmax(t, -1).numpy()),
                           "log_softmax": digest(torch.log_softmax(t, -1).numpy())}
    np.savez(out, cap=np.array(cap), long=np.array(json.dumps(long)), **arrays)


def main() -> None:
    import torch
    import transformers
    from transformers import TopPLogitsWarper, TypicalLogitsWarper

    arrays = {f"rows_{n}": x for n, x in all_rows().items()}
    meta = {"format_version": FORMAT_VERSION, "regenerate": REGENERATE, "torch": torch.__version__,
            "transformers": transformers.__version__, "capabilities": [], "long": {}, "long_seeds": list(LONG_SEEDS),
            "warp": []}
    for setting in ("avx2", None):  # None: torch's own choice (AVX-512 where the CPU has it)
        env = dict(os.environ)
        env.pop("ATEN_CPU_CAPABILITY", None)
        if setting:
            env["ATEN_CPU_CAPABILITY"] = setting
        tmp = OUT.with_suffix(f".{setting or 'default'}.tmp.npz")
        subprocess.run([sys.executable, __file__, "--worker", str(tmp)], check=True, env=env)
        with np.load(tmp) as z:
            cap = str(z["cap"])
            if cap in meta["capabilities"]:
                continue
            meta["capabilities"].append(cap)
            meta["long"][cap] = json.loads(str(z["long"]))
            for key in z.files:
                if key not in ("cap", "long"):
                    kind, n = key.rsplit("_", 1)  # softmax_7 -> softmax_avx2_7
                    arrays[f"{kind}_{cap}_{n}"] = z[key]
        tmp.unlink()
    classes = {"TopPLogitsWarper": TopPLogitsWarper, "TypicalLogitsWarper": TypicalLogitsWarper}
    for i, (probs, name, arg) in enumerate(WARP_ROWS):
        scores = np.log(np.array([probs], np.float32))
        out = classes[name](arg)(None, torch.from_numpy(scores)).numpy()
        arrays[f"warp_{i}_scores"], arrays[f"warp_{i}_kept"] = scores, out == scores
        meta["warp"].append({"probs": probs, "class": name, "arg": arg})
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes): capabilities {meta['capabilities']}, torch {torch.__version__}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(Path(sys.argv[2]))
    else:
        main()
