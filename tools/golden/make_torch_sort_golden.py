"""Golden tie orders of torch's CPU sort and the warpers that sort -> tests/golden/torch_sort.npz.

Runs in the oracle venv (torch 2.13.0 + transformers 4.38.2); it imports nothing of refdecode::

    PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_torch_sort_golden.py

Two kinds of cases, every row with ties and longer than 16 entries (where torch's sort is not stable):

* ``sort``: ``torch.sort(x, dim=-1, descending=d).indices`` for d in (False, True) on 1-D and 2-D float32
  rows of 17..300 entries (all equal, a few tie groups, repeated values, -inf, NaN/+inf/-0.0, sorted and
  reversed, McIlroy's adversary that drives the introsort into its heapsort), 1,000..5,000 and 50,257
  entries. Arrays ``sort_{i}_values`` float32; ``sort_{i}_asc`` / ``sort_{i}_desc`` int32 indices, or, for
  rows over 5,000 entries, only their SHA-256 in ``meta`` (int64 little-endian bytes of the (B, V) array).
* ``warp``: transformers 4.38.2's ``TopPLogitsWarper`` and ``TypicalLogitsWarper`` (``filter_value`` -inf)
  on rows of 17..50,257 entries whose cut falls inside a tie group, so which tied tokens survive is
  decided by torch's sort. Arrays ``warp_{i}_scores`` float32 (B, V) and ``warp_{i}_kept`` uint8 (packed
  bits of the (B, V) mask of tokens whose output is the input score; the rest are -inf). ``meta``
  gives the class, its arguments, and ``permutation_sensitive``: True if permuting the vocabulary
  changes which tokens 4.38.2 keeps (a stable sort, or any tie rule but torch's, gets these wrong).

``meta`` (JSON) also holds the format version, the versions and this command.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import TopPLogitsWarper, TypicalLogitsWarper

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "torch_sort.npz"
FORMAT_VERSION = 1
REGENERATE = "PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_torch_sort_golden.py"
V = 50257
DIGEST_ABOVE = 5000


def adversary(n: int) -> np.ndarray:
    """McIlroy's "killer adversary" against libstdc++'s introsort, float32 (n,): it reaches the heapsort.

    The sort runs on items whose values are decided lazily ("gas" until compared with another gas item,
    then "frozen" to the next small integer, the pivot candidate first): the partitions come out as
    unbalanced as the median of three allows, the depth limit 2*floor(log2 n) runs out and the rest is
    heapsorted. Once the heapsort starts, gas items stay gas and compare equal, so the returned row
    (frozen values, then every gas item = n) is sorted along exactly that path with a large tie group
    inside the heapsort.
    """
    gas = n
    val = [gas] * n
    state = {"solid": 0, "candidate": 0, "heap": False}

    def less(x: int, y: int) -> bool:
        if val[x] == gas and val[y] == gas:
            if state["heap"]:
                return False
            z = x if x == state["candidate"] else y
            val[z] = state["solid"]
            state["solid"] += 1
        if val[x] == gas:
            state["candidate"] = x
        elif val[y] == gas:
            state["candidate"] = y
        return val[x] < val[y]

    a = list(range(n))

    def adjust(base: int, hole: int, length: int, value: int) -> None:
        # libstdc++'s __adjust_heap, as refdecode/numerics/introsort.py has it, but through the adversary's less()
        top = second = hole
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if less(a[base + second], a[base + second - 1]):
                second -= 1
            a[base + hole] = a[base + second]
            hole = second
        if length % 2 == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            a[base + hole] = a[base + second - 1]
            hole = second - 1
        parent = (hole - 1) // 2
        while hole > top and less(a[base + parent], value):
            a[base + hole] = a[base + parent]
            hole, parent = parent, (parent - 1) // 2
        a[base + hole] = value

    def intro(first: int, last: int, depth: int) -> None:
        while last - first > 16:
            if depth == 0:
                state["heap"] = True
                length = last - first
                for p in range((length - 2) // 2, -1, -1):
                    adjust(first, p, length, a[first + p])
                while last - first > 1:
                    last -= 1
                    value, a[last] = a[last], a[first]
                    adjust(first, 0, last - first, value)
                return
            depth -= 1
            mid, x, z = first + (last - first) // 2, first + 1, last - 1
            if less(a[x], a[mid]):
                m = mid if less(a[mid], a[z]) else (z if less(a[x], a[z]) else x)
            else:
                m = x if less(a[x], a[z]) else (z if less(a[mid], a[z]) else mid)
            a[first], a[m] = a[m], a[first]
            lo, hi = first + 1, last
            while True:
                while less(a[lo], a[first]):
                    lo += 1
                hi -= 1
                while less(a[first], a[hi]):
                    hi -= 1
                if not lo < hi:
                    break
                a[lo], a[hi] = a[hi], a[lo]
                lo += 1
            intro(lo, last, depth)
            last = lo

    intro(0, n, 2 * (n.bit_length() - 1))
    assert state["heap"], n
    return np.array(val, dtype=np.float32)


def sha(indices: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(indices, dtype="<i8").tobytes()).hexdigest()


def sort_inputs(rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    out: list[tuple[str, np.ndarray]] = []
    for n in list(range(17, 70)) + [100, 127, 128, 129, 200, 255, 256, 257, 300]:
        out.append(("all_equal", np.zeros(n, np.float32)))
    for n in (17, 18, 24, 31, 32, 33, 50, 64, 65, 99, 150, 300):
        groups = rng.integers(0, int(rng.integers(2, 5)), n)
        out.append(("few_groups", rng.normal(size=4).astype(np.float32)[groups]))
        out.append(("repeated", (rng.integers(0, max(2, n // 3), n) / 7).astype(np.float32)))
        x = rng.integers(0, 10, n).astype(np.float32)
        x[rng.random(n) < 0.3] = -np.inf
        out.append(("neginf", x))
        x = rng.normal(size=n).astype(np.float32)
        for value in (np.nan, np.inf, -np.inf, -0.0, 0.0):
            x[rng.random(n) < 0.08] = value
        out.append(("specials", x))
        out.append(("sorted", np.sort(rng.integers(0, 5, n)).astype(np.float32)))
        out.append(("reversed", np.sort(rng.integers(0, 5, n))[::-1].astype(np.float32).copy()))
        out.append(("batch_2d", rng.integers(0, 3, (3, n)).astype(np.float32)))
    for n in (64, 257, 1000):
        out.append(("heapsort_adversary", adversary(n)))
    for n in (1000, 4097, 5000):
        out.append(("repeated", rng.integers(0, 50, n).astype(np.float32)))
    out.append(("vocab_all_equal", np.zeros(V, np.float32)))
    out.append(("vocab_3_values", rng.integers(0, 3, V).astype(np.float32)))
    out.append(("vocab_rounded_logits", np.round(rng.normal(size=V) * 4, 1).astype(np.float32)))
    x = np.full(V, -np.inf, np.float32)
    x[rng.integers(0, V, 60)] = rng.integers(0, 4, 60)
    out.append(("vocab_after_top_k", x))
    out.append(("vocab_2d", np.round(rng.normal(size=(2, V)) * 3, 1).astype(np.float32)))
    return out


def kept(cls, kwargs: dict, scores: np.ndarray) -> np.ndarray:
    """The (B, V) mask of tokens 4.38.2's warper keeps (output == input score)."""
    out = cls(**kwargs)(torch.zeros((scores.shape[0], 1), dtype=torch.long), torch.from_numpy(scores.copy())).numpy()
    mask = out == scores
    assert np.all(mask | np.isneginf(out)), "a warper output that is neither the score nor -inf"
    return mask | (np.isneginf(scores) & np.isneginf(out))


def permutation_sensitive(cls, kwargs: dict, scores: np.ndarray, rng: np.random.Generator) -> bool:
    base = kept(cls, kwargs, scores)
    for _ in range(3):
        p = rng.permutation(scores.shape[1])
        if not np.array_equal(kept(cls, kwargs, scores[:, p])[:, np.argsort(p)], base):
            return True
    return False


def warp_inputs(rng: np.random.Generator) -> list[tuple[str, str, dict, np.ndarray]]:
    """(family, class name, kwargs, scores (B, V)) for TopP and Typical."""
    out = []
    for n in (17, 18, 33, 64, 300):
        for top_p in (0.1, 0.5, 0.9):
            out.append(("zeros", "TopPLogitsWarper", {"top_p": top_p}, np.zeros((1, n), np.float32)))
    out.append(("zeros_min_tokens", "TopPLogitsWarper", {"top_p": 0.0, "min_tokens_to_keep": 5},
                np.zeros((1, 40), np.float32)))
    for n in (17, 40, 100, 1000):
        for top_p in (0.3, 0.6, 0.9):
            out.append(("few_values", "TopPLogitsWarper", {"top_p": top_p},
                        rng.integers(-2, 3, (2, n)).astype(np.float32)))
    for top_p in (0.5, 0.9, 0.95):
        out.append(("vocab_rounded_logits", "TopPLogitsWarper", {"top_p": top_p},
                    np.round(rng.normal(size=(2, V)) * 2, 1).astype(np.float32)))
    x = np.full((1, V), -np.inf, np.float32)
    x[0, rng.integers(0, V, 50)] = rng.integers(0, 3, 50)
    out.append(("vocab_after_top_k", "TopPLogitsWarper", {"top_p": 0.7}, x))
    out.append(("vocab_zeros", "TopPLogitsWarper", {"top_p": 0.5}, np.zeros((1, V), np.float32)))
    out.append(("vocab_zeros_min_tokens", "TopPLogitsWarper", {"top_p": 0.0, "min_tokens_to_keep": 7},
                np.zeros((1, V), np.float32)))
    # Typical: the cut that a tie group can straddle is min_tokens_to_keep (tokens past the mass are removed
    # only if their distance exceeds the boundary's, so a tie group is kept or removed whole otherwise).
    for n in (17, 40, 257, 1000):
        for m in (3, 6, 12):
            s = np.zeros((1, n), np.float32)
            s[0, : n // 4] = 2.0  # a few likely tokens, a big tied group, a tail
            s[0, n // 4 : n // 2] = np.float32(rng.normal())
            s[0, n // 2 :] = -3.0
            out.append(("groups", "TypicalLogitsWarper", {"mass": 0.05, "min_tokens_to_keep": m},
                        s[:, rng.permutation(n)].copy()))
    for mass in (0.2, 0.9):
        out.append(("few_values", "TypicalLogitsWarper", {"mass": mass, "min_tokens_to_keep": 8},
                    rng.integers(-2, 3, (2, 100)).astype(np.float32)))
    s = np.round(rng.normal(size=(1, V)) * 2, 1).astype(np.float32)
    out.append(("vocab_rounded_logits", "TypicalLogitsWarper", {"mass": 0.001, "min_tokens_to_keep": 300}, s))
    out.append(("vocab_rounded_logits", "TypicalLogitsWarper", {"mass": 0.9}, s))
    return out


def main() -> None:
    assert transformers.__version__ == "4.38.2", transformers.__version__
    torch.set_num_threads(1)
    assert torch.__version__.startswith("2.13.0"), torch.__version__
    rng = np.random.default_rng(924)
    arrays: dict[str, np.ndarray] = {}
    meta: dict = {"format_version": FORMAT_VERSION, "torch": torch.__version__,
                  "transformers": transformers.__version__, "regenerate": REGENERATE,
                  "sort": [], "warp": []}
    for i, (family, x) in enumerate(sort_inputs(rng)):
        case = {"id": i, "family": family, "shape": list(x.shape)}
        arrays[f"sort_{i}_values"] = x
        for d, name in ((False, "asc"), (True, "desc")):
            idx = torch.sort(torch.from_numpy(x), descending=d).indices.numpy()
            if x.shape[-1] > DIGEST_ABOVE:
                case[f"{name}_sha256"] = sha(idx)
            else:
                arrays[f"sort_{i}_{name}"] = idx.astype(np.int32)
        meta["sort"].append(case)
    classes = {"TopPLogitsWarper": TopPLogitsWarper, "TypicalLogitsWarper": TypicalLogitsWarper}
    sensitive = 0
    for i, (family, cls_name, kwargs, scores) in enumerate(warp_inputs(rng)):
        cls = classes[cls_name]
        mask = kept(cls, kwargs, scores)
        flag = permutation_sensitive(cls, kwargs, scores, rng)
        sensitive += flag
        arrays[f"warp_{i}_scores"] = scores
        arrays[f"warp_{i}_kept"] = np.packbits(mask, axis=-1)
        meta["warp"].append({"id": i, "family": family, "class": cls_name, "kwargs": kwargs,
                             "shape": list(scores.shape), "permutation_sensitive": bool(flag)})
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(meta['sort'])} sort cases, {len(meta['warp'])} warper cases "
          f"({sensitive} permutation-sensitive), {OUT.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
