"""Golden bits of torch's CPU sum / nansum / logsumexp / Categorical entropy and its elementwise exp and sqrt
-> tests/golden/torch_reduce.npz.

Runs in the oracle venv (torch 2.13.0 + transformers 4.38.2), one thread, on the AVX-512 machine; it imports
nothing of refdecode::

    ATEN_CPU_CAPABILITY=avx512 PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_torch_reduce_golden.py

Arrays (``n`` a row length):

* ``sum_rows_{n}`` float32 (20, n): normal rows at scales 1e-3, 1 and 1e3 (3 rows above 1,000 entries);
  ``sum_{n}`` their ``x.sum(-1)``; ``nansum_rows_{n}`` the same rows with 20% NaN, ``nansum_{n}`` their
  ``x.nansum(-1)`` (up to 1,000 entries). n = 1..40 and a few long lengths (64 .. 33,000: the first three
  levels of the cascade).
* ``lse_rows_{n}`` float32 (40, n), n = 1..40: 20 textbook rows (``float32(log(k / d))``, zeros as ``-inf``,
  some shifted) and 20 random rows with ``-inf``; ``logsumexp_{n}`` their ``x.logsumexp(-1)``, ``entropy_{n}``
  their ``torch.distributions.Categorical(logits=x).entropy()``; ``unary_rounded_{n}`` bool (40,): True where
  torch's elementwise ``exp(x - max)`` and ``log(sum)`` inside logsumexp equal the correctly rounded values
  (MKL's VML rounds otherwise on about 1% of inputs).
* ``exp_x`` float32 (10000,) in [-20, 5) and ``exp`` their ``torch.exp``; ``sqrt_x`` float32 (10000,) in (0, 1)
  and ``sqrt`` their ``torch.sqrt`` (MKL's ``vsExp`` / ``vsSqrt``).

``meta`` (JSON): the format version, the versions, the CPU capability and this command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "torch_reduce.npz"
FORMAT_VERSION = 1
REGENERATE = ("ATEN_CPU_CAPABILITY=avx512 PYTHONPATH=$PWD .venv-oracle/bin/python "
              "tools/golden/make_torch_reduce_golden.py")
SUM_LENGTHS = list(range(1, 41)) + [64, 100, 257, 1000, 4099, 9000, 33000]
LONG = 1000  # rows longer than this: 3 per length, not 20
DENOMINATORS = (20, 10, 8, 5, 4, 3, 6)
F32 = np.float32


def lse_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.empty((40, n), F32)
    for r in range(20):
        d = DENOMINATORS[rng.integers(len(DENOMINATORS))]
        k = rng.multinomial(d, np.ones(n) / n)
        with np.errstate(divide="ignore"):
            out[r] = np.log((k / d).astype(F32)) + F32(rng.choice([0.0, 0.0, 1.5, -2.25, 7.0]))
    x = (rng.standard_normal((20, n)) * 3).astype(F32)
    x[rng.random((20, n)) < 0.15] = -np.inf
    x[np.arange(20), rng.integers(0, n, 20)] = 1.0
    out[20:] = x
    return out


def rounded(fn, x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return fn(x.astype(np.float64)).astype(F32)


def main() -> int:
    assert torch.__version__.startswith("2.13.0") and transformers.__version__ == "4.38.2"
    assert torch.backends.cpu.get_cpu_capability() == "AVX512", "run with ATEN_CPU_CAPABILITY=avx512"
    torch.set_num_threads(1)  # a long row of one output is split across threads otherwise
    rng = np.random.default_rng(20260)
    arrays: dict[str, np.ndarray] = {}
    for n in SUM_LENGTHS:
        scale = np.repeat([1e-3, 1.0, 1e3], [7, 7, 6]) if n <= LONG else np.array([1e-3, 1.0, 1e3])
        x = (rng.standard_normal((len(scale), n)) * scale[:, None]).astype(F32)
        arrays[f"sum_rows_{n}"], arrays[f"sum_{n}"] = x, torch.from_numpy(x).sum(-1).numpy()
        if n > LONG:
            continue
        x = x.copy()
        x[rng.random(x.shape) < 0.2] = np.nan
        arrays[f"nansum_rows_{n}"], arrays[f"nansum_{n}"] = x, torch.from_numpy(x).nansum(-1).numpy()
    for n in range(1, 41):
        x = lse_rows(rng, n)
        t = torch.from_numpy(x)
        arrays[f"lse_rows_{n}"] = x
        arrays[f"logsumexp_{n}"] = t.logsumexp(-1).numpy()
        arrays[f"entropy_{n}"] = torch.distributions.Categorical(logits=t).entropy().numpy()
        m = x.max(-1, keepdims=True)
        e = torch.exp(torch.from_numpy(x - m))
        s = e.sum(-1)
        arrays[f"unary_rounded_{n}"] = ((e.numpy() == rounded(np.exp, x - m)).all(-1)
                                        & (torch.log(s).numpy() == rounded(np.log, s.numpy())))
    arrays["exp_x"] = rng.uniform(-20, 5, 10000).astype(F32)
    arrays["exp"] = torch.exp(torch.from_numpy(arrays["exp_x"])).numpy()
    arrays["sqrt_x"] = rng.uniform(0, 1, 10000).astype(F32)
    arrays["sqrt"] = torch.sqrt(torch.from_numpy(arrays["sqrt_x"])).numpy()
    meta = {"format_version": FORMAT_VERSION, "torch": torch.__version__, "transformers": transformers.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "sum_lengths": SUM_LENGTHS,
            "regenerate": REGENERATE}
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
