"""Golden answers of the truncation warpers on textbook rows -> tests/golden/textbook.npz.

Textbook rows are the rows people write by hand in unit tests and lectures: probabilities that are
multiples of 0.05, 0.1, 0.125, 0.2, 0.25, 1/3 or 1/6, logits ``float32(log p)`` (some rows shifted by a
constant, some with ``-inf`` tokens), and the threshold put ON an exact boundary in decimal arithmetic:

* ``top_p``: ``top_p`` equals the mass of the j most probable tokens (``TopPLogitsWarper``);
* ``typical``: ``mass`` equals a prefix sum in the typical order (``TypicalLogitsWarper``);
* ``epsilon``: ``epsilon`` equals one of the probabilities (``EpsilonLogitsWarper``);
* ``eta``: ``min(epsilon, sqrt(epsilon) exp(-H))`` equals one of the probabilities (``EtaLogitsWarper``);
* ``min_p``: ``min_p * max p`` equals one of the probabilities (``MinPLogitsWarper`` of transformers
  **4.41.0**, the first release that has it);
* ``top_p`` / ``typical`` ``ties``: rows of 17 to 40 entries with tie groups that straddle the cut, so the
  survivors are decided by torch's CPU sort (libstdc++'s introsort above 16 entries, not stable).

On such rows the cut falls within a float32 ulp of the threshold, so the last bit of torch's softmax and
cumulative sum decides which tokens survive. For each row the file also holds the answers of the same
transformers ``__call__`` when its softmax / log_softmax / cumsum are replaced by other float32 arithmetic
(``VARIANTS``: NumPy's ``exp(x - m) / s``, a correctly rounded softmax, a float32 sequential cumsum, the whole
call in float64, and for eta its entropy moved by 1, 2 or 4 ulps): ``refdecode conformance check`` calls a port's differing row a departure "on the last bit"
when it equals one of them, and "on the rule" otherwise.

Two sets with different seeds: ``test`` (the conformance ``textbook`` group) and ``heldout`` (used only by
tests/reference/conformance/test_cases_textbook.py, never exported), so rows other than the suite's are checked.

Layout: for set ``s`` in (test, heldout), warper ``w`` and kind ``k`` in (round, ties), arrays
``{s}/{w}/{k}/scores`` float32 (N, V) padded with NaN past each row's ``vocab`` (int32 (N,)), ``param``
float64 (N,) (top_p, mass, epsilon or min_p), ``keep`` int32 (N,) (min_tokens_to_keep), ``kept`` bool (N, V)
(transformers' survivors: their output is the input score, every other entry -inf), ``alternatives`` bool
(N, A, V) (the survivors under each of ``VARIANTS``), ``cut_ulps`` float64 (N,) (the distance from torch's own
float32 deciding value at the cut to the float32 threshold, in ulps of the threshold); ``meta`` (JSON) holds
the format version, the versions, the variants, one note per row and this command.

Run in the oracle venv (torch 2.13.0 + transformers 4.38.2), giving the python of a venv with transformers
4.41.0 and the same torch for min-p (the script runs itself there with ``--min-p-only``)::

    python3 -m venv .venv-tf441 && .venv-tf441/bin/pip install torch==2.13.0 transformers==4.41.0
    ATEN_CPU_CAPABILITY=avx512 PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_textbook_golden.py \
        --tf441 .venv-tf441/bin/python

**The answers depend on torch's CPU kernel.** They are made with the AVX-512 kernel (what torch 2.13.0 picks on
the reference machine, an AMD EPYC with AVX-512; the script refuses any other). With ``ATEN_CPU_CAPABILITY=avx2``
10 of the 1,280 ``test`` rows keep other tokens (6 of the 1,280 held-out rows), with ``default`` 16 (12): the lane
width of the vectorised softmax changes the last bit of its sum.

It imports nothing of refdecode.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "textbook.npz"
FORMAT_VERSION = 1
REGENERATE = ("ATEN_CPU_CAPABILITY=avx512 PYTHONPATH=$PWD .venv-oracle/bin/python "
              "tools/golden/make_textbook_golden.py --tf441 .venv-tf441/bin/python")
WARPERS = ["top_p", "typical", "epsilon", "eta", "min_p"]
SETS = {"test": 2929, "heldout": 92929}       # seeds
ROUND_ROWS = 240                              # per warper and set
TIE_ROWS = 40                                 # per tie warper and set
UNITS = {"0.05": Fraction(1, 20), "0.1": Fraction(1, 10), "0.125": Fraction(1, 8), "0.2": Fraction(1, 5),
         "0.25": Fraction(1, 4), "1/3": Fraction(1, 3), "1/6": Fraction(1, 6)}
SHIFTS = [0.0, 0.0, 0.0, 1.5, -2.25, 7.0, -30.0]
ENTROPY_ULPS = [-4, -2, -1, 1, 2, 4]   # eta: the row's entropy moved by this many float32 ulps
VARIANTS = ["numpy softmax, float32 cumsum", "numpy softmax, torch cumsum", "correctly rounded softmax",
            "correctly rounded softmax, float32 cumsum", "exp in float64 times float32 reciprocal",
            "float64 throughout"] + [f"entropy {k:+d} ulp" for k in ENTROPY_ULPS]


# ----------------------------------------------------------------------------------------------
# textbook rows


def _composition(rng: np.random.Generator, total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` positive integers, uniformly among compositions."""
    cuts = sorted(int(c) for c in rng.choice(np.arange(1, total), parts - 1, replace=False))
    return list(np.diff([0, *cuts, total]))


def _logits(probs: list[Fraction], n_inf: int, shift: float, rng: np.random.Generator) -> tuple[np.ndarray, list]:
    """float32 logits ``float32(log p) + shift`` (the shift in float32), ``n_inf`` -inf entries, permuted."""
    row = [np.float32(math.log(p)) + np.float32(shift) for p in probs] + [np.float32(-np.inf)] * n_inf
    exact = list(probs) + [Fraction(0)] * n_inf
    order = rng.permutation(len(row))
    return np.array(row, dtype=np.float32)[order], [exact[i] for i in order]


def round_row(rng: np.random.Generator) -> tuple[np.ndarray, list, str]:
    name = str(rng.choice(list(UNITS)))
    total = int(1 / UNITS[name])
    n = int(rng.integers(2, min(total, 8) + 1))
    probs = [k * UNITS[name] for k in _composition(rng, total, n)]
    n_inf, shift = int(rng.choice([0, 0, 0, 1, 2])), float(rng.choice(SHIFTS))
    scores, exact = _logits(probs, n_inf, shift, rng)
    note = f"multiples of {name}: " + ", ".join(str(float(p)) for p in sorted(probs, reverse=True))
    return scores, exact, note + (f"; +{shift:g}" if shift else "") + (f"; {n_inf} x -inf" if n_inf else "")


def tie_row(rng: np.random.Generator) -> tuple[np.ndarray, list, str]:
    """17 to 40 entries, tie groups of equal probabilities (e.g. twenty tokens of 0.05), -inf filling the rest."""
    name = str(rng.choice(["0.05", "0.05", "0.1", "1/6", "0.125"]))
    total = int(1 / UNITS[name])
    n = int(rng.integers(max(2, total // 2), total + 1))
    probs = [k * UNITS[name] for k in _composition(rng, total, n)]
    length = int(rng.integers(max(17, n), 41))
    shift = float(rng.choice(SHIFTS))
    scores, exact = _logits(probs, length - n, shift, rng)
    note = f"{length} entries, ties, multiples of {name}: " + ", ".join(
        str(float(p)) for p in sorted(probs, reverse=True))
    return scores, exact, note + (f"; +{shift:g}" if shift else "")


def entropy(exact: list[Fraction]) -> float:
    return -sum(float(p) * math.log(p) for p in exact if p > 0)


def threshold(warper: str, exact: list[Fraction], rng: np.random.Generator) -> float | None:
    """A threshold on an exact boundary of the row (decimal arithmetic), or None if the row has none."""
    nonzero = sorted((p for p in exact if p > 0), reverse=True)
    if warper in ("top_p", "typical"):
        if warper == "typical":
            h = entropy(exact)
            nonzero = sorted(nonzero, key=lambda p: abs(-math.log(p) - h))
        prefix = [sum(nonzero[:j]) for j in range(1, len(nonzero))]
        return float(prefix[int(rng.integers(0, len(prefix)))]) if prefix else None
    if warper == "epsilon":
        below_one = [p for p in nonzero if p < 1]
        return float(below_one[int(rng.integers(0, len(below_one)))]) if below_one else None
    if warper == "eta":
        p = nonzero[int(rng.integers(0, len(nonzero)))]
        h = entropy(exact)
        if math.sqrt(p) <= math.exp(-h) and p < 1:
            return float(p)                                # eta = epsilon = p
        epsilon = (float(p) * math.exp(h)) ** 2            # eta = sqrt(epsilon) exp(-H) = p
        return epsilon if epsilon < 1 else None
    if warper == "min_p":
        ratio = nonzero[int(rng.integers(0, len(nonzero)))] / nonzero[0]
        return float(ratio)
    raise ValueError(warper)


def rows(seed: int, warper: str, kind: str, exclude: set) -> list[tuple[np.ndarray, float, int, str]]:
    """(scores (V,), parameter, min_tokens_to_keep, note) of one set, warper and kind; deterministic in the seed.

    A row whose (scores, parameter, min_tokens_to_keep) is in ``exclude`` (the test set's) is drawn again, so the
    held-out rows are other rows; ``exclude`` gains the rows returned."""
    rng = np.random.default_rng([seed, WARPERS.index(warper), kind == "ties"])
    out = []
    while len(out) < (ROUND_ROWS if kind == "round" else TIE_ROWS):
        scores, exact, note = round_row(rng) if kind == "round" else tie_row(rng)
        param = threshold(warper, exact, rng)
        if param is None:
            continue
        keep = int(rng.choice([1, 1, 1, 1, 2, 3])) if kind == "round" else 1
        if (scores.tobytes(), param, keep) in exclude:
            continue
        exclude.add((scores.tobytes(), param, keep))
        out.append((scores, param, keep, note))
    return out


# ----------------------------------------------------------------------------------------------
# the warpers, and the same __call__ with other float32 arithmetic


def make_warper(warper: str, param: float, keep: int):
    from transformers import generation
    cls = {"top_p": "TopPLogitsWarper", "typical": "TypicalLogitsWarper", "epsilon": "EpsilonLogitsWarper",
           "eta": "EtaLogitsWarper", "min_p": "MinPLogitsWarper"}[warper]
    return getattr(generation.logits_process, cls)(param, min_tokens_to_keep=keep)


def _np_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def _np_log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return (x - m) - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _rounded_softmax(x: np.ndarray) -> np.ndarray:
    return _np_softmax(x.astype(np.float64)).astype(np.float32)


def _rounded_log_softmax(x: np.ndarray) -> np.ndarray:
    return _np_log_softmax(x.astype(np.float64)).astype(np.float32)


def _exp64_recip32(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True)).astype(np.float32)
    return e * (np.float32(1) / e.sum(axis=-1, keepdims=True, dtype=np.float32))


def _finite_minus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):      # -inf - -inf at the -inf entries; only the row's maximum is read
        return a - b


def _np_entropy(logits: np.ndarray, log_softmax) -> np.ndarray:
    """-sum p log p with p = exp(log p), log p clamped at float32's lowest (as Categorical clamps -inf)."""
    logp = np.maximum(log_softmax(logits), np.finfo(np.float32).min)
    return (-np.sum(logp * np.exp(logp), axis=-1)).astype(np.float32)


@contextlib.contextmanager
def arithmetic(variant: str):
    """Replace torch's float32 softmax / log_softmax / cumsum, as the warpers call them, by ``variant``'s."""
    softmax, log_softmax, cumsum = {
        VARIANTS[0]: (_np_softmax, _np_log_softmax, True), VARIANTS[1]: (_np_softmax, _np_log_softmax, False),
        VARIANTS[2]: (_rounded_softmax, _rounded_log_softmax, False),
        VARIANTS[3]: (_rounded_softmax, _rounded_log_softmax, True),
        VARIANTS[4]: (_exp64_recip32, _np_log_softmax, False)}[variant]
    saved = torch.Tensor.softmax, torch.Tensor.log_softmax, torch.Tensor.cumsum, torch.softmax, torch.Tensor.logsumexp

    def wrap(fn, original):
        def call(self, dim=-1, *args, **kwargs):
            if self.dtype != torch.float32:
                return original(self, dim, *args, **kwargs)
            assert dim in (-1, self.dim() - 1), dim
            return torch.from_numpy(np.ascontiguousarray(fn(self.detach().numpy())).astype(np.float32))
        return call

    torch.Tensor.softmax = wrap(softmax, saved[0])
    torch.Tensor.log_softmax = wrap(log_softmax, saved[1])
    torch.softmax = lambda t, dim=-1, **kw: torch.Tensor.softmax(t, dim)
    # eta's entropy: Categorical(logits=x) normalises with logsumexp, then sums -p log p
    torch.Tensor.logsumexp = wrap(
        lambda a: np.take_along_axis(_finite_minus(a, log_softmax(a)), a.argmax(axis=-1)[..., None], axis=-1), saved[4])
    saved_exp = torch.exp
    if softmax is _np_softmax:      # typical's p = exp(log p), eta's exp(-H): NumPy's float32 exp
        torch.exp = lambda t: torch.from_numpy(np.exp(t.detach().numpy())) if t.dtype == torch.float32 else saved_exp(t)
    categorical = torch.distributions.Categorical
    saved_entropy = categorical.entropy
    categorical.entropy = lambda self: torch.from_numpy(_np_entropy(self.logits.detach().numpy(), log_softmax))
    if cumsum:
        torch.Tensor.cumsum = wrap(lambda a: np.cumsum(a, axis=-1, dtype=np.float32), saved[2])
    try:
        yield
    finally:
        (torch.Tensor.softmax, torch.Tensor.log_softmax, torch.Tensor.cumsum, torch.softmax,
         torch.Tensor.logsumexp) = saved
        categorical.entropy, torch.exp = saved_entropy, saved_exp


@contextlib.contextmanager
def nudged_entropy(ulps: int):
    """torch's own entropy (eta's, through ``Categorical``) moved by ``ulps`` float32 ulps: a port whose entropy
    sum rounds differently moves eta's threshold by a few ulps (a last-bit difference, not a rule)."""
    categorical = torch.distributions.Categorical
    saved = categorical.entropy

    def entropy(self):
        h = saved(self).numpy()
        for _ in range(abs(ulps)):
            h = np.nextafter(h, np.float32(np.inf if ulps > 0 else -np.inf))
        return torch.from_numpy(np.asarray(h, dtype=np.float32))

    categorical.entropy = entropy
    try:
        yield
    finally:
        categorical.entropy = saved


def survivors(warper: str, scores: np.ndarray, param: float, keep: int, variant: str | None = None) -> np.ndarray:
    """The tokens transformers keeps (bool (V,)); its output is the input score there and -inf elsewhere."""
    call = make_warper(warper, param, keep)
    x = torch.from_numpy(scores[None].copy())
    if variant == VARIANTS[5]:
        out = call(None, x.double())
    elif variant is not None and variant.startswith("entropy"):
        with nudged_entropy(ENTROPY_ULPS[VARIANTS.index(variant) - 6]):
            out = call(None, x)
    elif variant is not None:
        with arithmetic(variant):
            out = call(None, x)
    else:
        out = call(None, x)
        finite = torch.isfinite(out[0])
        assert torch.equal(out[0][finite], x[0][finite]) and out.dtype == torch.float32
    return torch.isfinite(out[0]).numpy()


def _ulps(value: float, target: np.float32) -> float:
    return abs(float(value) - float(target)) / float(np.spacing(target))


def cut_ulps(warper: str, scores: np.ndarray, param: float) -> float:
    """torch's own float32 deciding value nearest to the float32 threshold, in ulps of the threshold."""
    x = torch.from_numpy(scores[None].copy())
    if warper == "top_p":
        cumulative = torch.sort(x, descending=False)[0].softmax(dim=-1).cumsum(dim=-1)[0].numpy()
        return min(_ulps(c, np.float32(1 - param)) for c in cumulative)
    if warper == "typical":
        normalized = torch.nn.functional.log_softmax(x, dim=-1)
        shifted = torch.abs((-normalized) - (-(normalized * torch.exp(normalized)).nansum(-1, keepdim=True)))
        order = torch.sort(shifted, descending=False)[1]
        cumulative = x.gather(-1, order).softmax(dim=-1).cumsum(dim=-1)[0].numpy()
        return min(_ulps(c, np.float32(param)) for c in cumulative)
    probs = x.softmax(dim=-1)[0]
    if warper == "epsilon":
        cut = np.float32(param)
    elif warper == "eta":
        eps = torch.tensor(param)
        cut = torch.min(eps, torch.sqrt(eps) * torch.exp(-torch.distributions.Categorical(logits=x).entropy()))
        cut = np.float32(cut.item())
    else:
        cut = np.float32((param * torch.softmax(x, dim=-1).max(dim=-1, keepdim=True)[0]).item())
    return min(_ulps(p, cut) for p in probs.numpy() if p > 0)


def build(warpers: list[str]) -> tuple[dict, dict]:
    arrays, notes = {}, {}
    seen: dict[str, set] = {warper: set() for warper in warpers}   # no row twice, within or across the sets
    for set_name, seed in SETS.items():
        for warper in warpers:
            for kind in ("round", "ties") if warper in ("top_p", "typical") else ("round",):
                found = rows(seed, warper, kind, seen[warper])
                width = max(len(s) for s, *_ in found)
                key = f"{set_name}/{warper}/{kind}"
                scores = np.full((len(found), width), np.nan, dtype=np.float32)
                kept = np.zeros((len(found), width), dtype=bool)
                alternatives = np.zeros((len(found), len(VARIANTS), width), dtype=bool)
                for i, (row, param, keep, _) in enumerate(found):
                    scores[i, : len(row)] = row
                    kept[i, : len(row)] = survivors(warper, row, param, keep)
                    for a, variant in enumerate(VARIANTS):
                        alternatives[i, a, : len(row)] = survivors(warper, row, param, keep, variant)
                arrays[f"{key}/scores"] = scores
                arrays[f"{key}/vocab"] = np.array([len(s) for s, *_ in found], dtype=np.int32)
                arrays[f"{key}/param"] = np.array([p for _, p, _, _ in found], dtype=np.float64)
                arrays[f"{key}/keep"] = np.array([k for _, _, k, _ in found], dtype=np.int32)
                arrays[f"{key}/kept"] = kept
                arrays[f"{key}/alternatives"] = alternatives
                arrays[f"{key}/cut_ulps"] = np.array([cut_ulps(warper, s, p) for s, p, _, _ in found])
                notes[key] = [n for *_, n in found]
                moved = int((alternatives != kept[:, None]).any(axis=2).any(axis=1).sum())
                print(f"{key}: {len(found)} rows, {moved} where another arithmetic moves the cut", file=sys.stderr)
    return arrays, notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tf441", help="python of a venv with transformers 4.41.0 and torch 2.13.0 (min-p)")
    parser.add_argument("--out", default=str(OUT), help="where to write (default: tests/golden/textbook.npz)")
    parser.add_argument("--min-p-only", help=argparse.SUPPRESS)  # internal: write the min-p arrays here
    args = parser.parse_args()
    assert torch.__version__.startswith("2.13.0"), torch.__version__
    capability = torch.backends.cpu.get_cpu_capability()
    assert capability == "AVX512", f"torch uses its {capability} kernel: run with ATEN_CPU_CAPABILITY=avx512"
    if args.min_p_only:
        assert transformers.__version__ == "4.41.0", transformers.__version__
        arrays, notes = build(["min_p"])
        np.savez(args.min_p_only, meta=np.array(json.dumps(notes)), **arrays)
        return 0
    assert transformers.__version__ == "4.38.2", transformers.__version__
    if not args.tf441:
        parser.error("--tf441 is required: min-p is checked against transformers 4.41.0")
    arrays, notes = build(["top_p", "typical", "epsilon", "eta"])
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([args.tf441, __file__, "--min-p-only", f"{tmp}/min_p.npz"], check=True)
        with np.load(f"{tmp}/min_p.npz") as z:
            notes.update(json.loads(str(z["meta"])))
            arrays.update({k: z[k] for k in z.files if k != "meta"})
    meta = {"format_version": FORMAT_VERSION, "torch": torch.__version__, "transformers": transformers.__version__,
            "transformers_min_p": "4.41.0", "variants": VARIANTS, "notes": notes, "regenerate": REGENERATE,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    np.savez_compressed(args.out, meta=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {args.out} ({Path(args.out).stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
