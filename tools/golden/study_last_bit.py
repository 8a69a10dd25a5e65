"""The figures of docs/last-bit.md: where the last bit of softmax decides, and whether refdecode's wing matches torch.

Runs in the oracle venv (torch + transformers 4.38.2) with this checkout first on the path::

    PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/study_last_bit.py kernels   # bit-equal rows
    ATEN_CPU_CAPABILITY=avx2 PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/study_last_bit.py kernels
    PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/study_last_bit.py rules     # kept sets, textbook rows

``kernels``: ``torch.softmax`` / ``torch.log_softmax`` against ``refdecode.numerics.torch_softmax`` /
``torch_log_softmax`` (the capability torch runs with) on textbook rows, random rows with ``-inf`` (lengths
1..40 and 50,257, 60 and 4 rows per length) and 6 GPT-2-like rows of 50,257 entries: bit-equal rows per kind.

``rules``: 3,000 textbook rows (two seeds of 1,500: probabilities k/d for d in 20, 10, 8, 5, 4, 3, 6 over
2..24 tokens; the threshold on an exact cumulative boundary) through transformers 4.38.2's top-p, typical,
epsilon and eta warpers and 4.41.0's min-p rule (written out in torch below), against refdecode's pure
functions with the wing (``torch_softmax``...) and with NumPy's softmax swapped in: rows with equal kept sets.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

F32 = np.float32
DENOMINATORS = (20, 10, 8, 5, 4, 3, 6)


def textbook_row(rng: np.random.RandomState, n: int) -> tuple[np.ndarray, np.ndarray]:
    d = DENOMINATORS[rng.randint(len(DENOMINATORS))]
    k = rng.multinomial(d, np.ones(n) / n)
    p = k / d
    with np.errstate(divide="ignore"):
        return p, np.log(p.astype(F32)).astype(F32)


def kernels() -> None:
    from refdecode.numerics import torch_log_softmax, torch_softmax

    cap = {"AVX512": "avx512", "AVX2": "avx2"}.get(torch.backends.cpu.get_cpu_capability(), "avx2")
    rng = np.random.RandomState(0)
    groups: dict[str, list[np.ndarray]] = {"textbook": [], "random": []}
    for n in list(range(1, 41)) + [50257]:
        count = 60 if n < 1000 else 4
        groups["textbook"].append(np.array([textbook_row(rng, n)[1] for _ in range(count)]))
        x = (rng.randn(count, n) * 3).astype(F32)
        x[rng.rand(count, n) < 0.15] = -np.inf
        x[:, rng.randint(n)] = 1.0
        groups["random"].append(x)
    g = (rng.randn(6, 50257) * 3 - 80).astype(F32)
    g[:, rng.randint(50257, size=20)] += 20
    groups["gpt2-like"] = [g]

    def same(a, b):
        return np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b)), axis=-1)

    for name, arrays in groups.items():
        counts = [0, 0, 0]
        for x in arrays:
            t = torch.from_numpy(x)
            with np.errstate(invalid="ignore"):
                counts[0] += same(torch_softmax(x, cap), torch.softmax(t, -1).numpy()).sum()
                counts[1] += same(torch_log_softmax(x, cap), torch.log_softmax(t, -1).numpy()).sum()
            counts[2] += len(x)
        print(f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}), {name}: softmax "
              f"{counts[0]}/{counts[2]}, log_softmax {counts[1]}/{counts[2]}")


def min_p_441(scores: torch.Tensor, min_p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """transformers 4.41.0's ``MinPLogitsWarper.__call__`` (4.38.2 has no min-p)."""
    probs = torch.softmax(scores, dim=-1)
    top_probs, _ = probs.max(dim=-1, keepdim=True)
    tokens_to_remove = probs < min_p * top_probs
    sorted_indices = torch.argsort(scores, descending=True, dim=-1)
    sorted_indices_to_remove = torch.gather(tokens_to_remove, dim=-1, index=sorted_indices)
    sorted_indices_to_remove[..., :min_tokens_to_keep] = False
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return scores.masked_fill(indices_to_remove, -float("inf"))


def rules() -> None:
    from transformers.generation.logits_process import (EpsilonLogitsWarper, EtaLogitsWarper, TopPLogitsWarper,
                                                        TypicalLogitsWarper)

    from refdecode.numerics import log_softmax, softmax
    from refdecode.processors import logits_warp, truncation_warpers

    def run(plain: bool) -> dict[str, int]:
        saved = {m: (m.torch_softmax, getattr(m, "torch_log_softmax", None)) for m in (logits_warp, truncation_warpers)}
        if plain:  # NumPy's softmax in place of torch's: what refdecode did before the wing
            for m in saved:
                m.torch_softmax = softmax
                if hasattr(m, "torch_log_softmax"):
                    m.torch_log_softmax = log_softmax
        equal = dict.fromkeys(["top-p", "typical", "epsilon", "eta", "min-p"], 0)
        try:
            for seed in (0, 1):
                rng = np.random.RandomState(seed)
                for _ in range(1500):
                    p, x = textbook_row(rng, rng.randint(2, 25))
                    top = np.sort(p[p > 0])[::-1]
                    boundary = min(max(float(np.sum(top[: rng.randint(1, len(top) + 1)])), 0.05), 0.95)
                    eps = min(max(float(top[rng.randint(len(top))]), 0.01), 0.95)
                    min_p = float(top[-1] / top[0])
                    t, s = torch.from_numpy(x[None]), x[None]
                    pairs = {"top-p": (TopPLogitsWarper(boundary)(None, t), logits_warp.top_p_warp(s, boundary)),
                             "typical": (TypicalLogitsWarper(boundary)(None, t),
                                         truncation_warpers.typical_warp(s, boundary)),
                             "epsilon": (EpsilonLogitsWarper(eps)(None, t), truncation_warpers.epsilon_warp(s, eps)),
                             "eta": (EtaLogitsWarper(eps)(None, t), truncation_warpers.eta_warp(s, eps)),
                             "min-p": (min_p_441(t, min_p), truncation_warpers.min_p_warp(s, min_p))}
                    for name, (want, got) in pairs.items():
                        equal[name] += bool(np.array_equal(np.isfinite(want.numpy()), np.isfinite(got)))
        finally:
            for m, (sm, lsm) in saved.items():
                m.torch_softmax = sm
                if lsm is not None:
                    m.torch_log_softmax = lsm
        return equal

    plain, wing = run(True), run(False)
    print("| rule | NumPy's softmax | the wing |\n|---|---:|---:|")
    for name in plain:
        print(f"| {name} | {plain[name]:,} / 3,000 | {wing[name]:,} / 3,000 |")


if __name__ == "__main__":
    {"kernels": kernels, "rules": rules}[sys.argv[1] if len(sys.argv) > 1 else "rules"]()
