r"""The textbook group: the rows people write by hand, where the last bit of softmax decides.

Contract: registers ``textbook_top_p``, ``textbook_typical``, ``textbook_epsilon``, ``textbook_eta`` and
``textbook_min_p`` (group ``textbook``, opt-in: ``--only textbook``), one row per case, with the requests and
answers of ``top_p``, ``typical``, ``epsilon``, ``eta`` and ``min_p``. The rows are round probabilities
(multiples of 0.05, 0.1, 0.125, 0.2, 0.25, 1/3 or 1/6; logits ``float32(log p)``, some shifted, some with
``-inf``) with the threshold ON an exact boundary in decimal (``top_p = 0.9`` on 0.6, 0.3, 0.1), and, for top-p
and typical, rows of 17 to 40 entries whose tie groups straddle the cut (torch's introsort order decides).

The **expected answers are transformers'** (4.38.2; min-p 4.41.0), read from ``tests/golden/textbook.npz``
(``tools/golden/make_textbook_golden.py``; the export needs no torch), not refdecode's: ``serve`` answers with
refdecode, so the group checks refdecode too. On these rows the cut lies within a float32 ulp of the threshold:
a port whose softmax or cumulative sum differs from torch's in the last bit keeps one token more or less.
Each case carries ``last_bit``: per row, ``cut_ulps`` (how far torch's own float32 value at the cut is from the
float32 threshold, in ulps of the threshold) and ``alternatives`` (the ids transformers' rule keeps when its
softmax, log_softmax, cumsum and exp are NumPy's, correctly rounded or float64 ones). ``compare_textbook`` uses
them for the verdict: a differing row equal to an alternative departs **on the last bit**; any other departs
**on the rule**. docs/conformance.md ("Textbook rows") says how a port reaches the last bit or declares a tolerance.

The golden file also holds a held-out set (another seed) that is never exported; the tests check refdecode on it.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import numpy as np

import refdecode as rd

from .cases_decode import GOLDEN
from .compare import first_difference
from .kinds import F32, FLOAT, INT, obj
from .registry import Case, CaseType, register

__all__ = ["TEXTBOOK", "WARPERS", "golden_rows", "compare_textbook", "kept_ids"]

TEXTBOOK = GOLDEN / "textbook.npz"
#: case type suffix -> (parameter name, refdecode's class, the version whose answers are expected)
WARPERS = {"top_p": ("top_p", rd.TopPLogitsWarper, "4.38.2"), "typical": ("mass", rd.TypicalLogitsWarper, "4.38.2"),
           "epsilon": ("epsilon", rd.EpsilonLogitsWarper, "4.38.2"), "eta": ("epsilon", rd.EtaLogitsWarper, "4.38.2"),
           "min_p": ("min_p", rd.MinPLogitsWarper, "4.41.0")}
_BOUNDARY = {"top_p": "top_p is the mass of the most probable tokens", "typical": "mass is a prefix sum in the "
             "typical order", "epsilon": "epsilon is one of the probabilities", "eta": "eta = min(epsilon, "
             "sqrt(epsilon) exp(-H)) is one of the probabilities", "min_p": "min_p * max p is one of the probabilities"}


@functools.cache
def _golden() -> dict[str, Any]:
    if not TEXTBOOK.is_file():
        raise ValueError(f"the textbook cases need {TEXTBOOK} (made by tools/golden/make_textbook_golden.py in a "
                         "refdecode checkout)")
    with np.load(TEXTBOOK) as z:
        return {k: z[k] for k in z.files}


def golden_rows(warper: str, set_name: str = "test") -> list[dict]:
    """The golden rows of one warper: dicts with ``scores`` float32 (1, V), ``param``, ``keep``, ``kept`` bool (V,),
    ``alternatives`` bool (A, V), ``cut_ulps``, ``note``; ``set_name`` "test" (exported) or "heldout" (tests only)."""
    g = _golden()
    notes = json.loads(str(g["meta"]))["notes"]
    out = []
    for kind in ("round", "ties"):
        key = f"{set_name}/{warper}/{kind}"
        if f"{key}/scores" not in g:
            continue
        for i, vocab in enumerate(g[f"{key}/vocab"]):
            out.append({"scores": g[f"{key}/scores"][i, :vocab][None].copy(), "param": float(g[f"{key}/param"][i]),
                        "keep": int(g[f"{key}/keep"][i]), "kept": g[f"{key}/kept"][i, :vocab],
                        "alternatives": g[f"{key}/alternatives"][i, :, :vocab],
                        "cut_ulps": float(g[f"{key}/cut_ulps"][i]), "note": notes[key][i]})
    return out


def kept_ids(mask: np.ndarray) -> list[int]:
    return [int(i) for i in np.flatnonzero(mask)]


def _build(warper: str) -> list[Case]:
    param = WARPERS[warper][0]
    cases = []
    for row in golden_rows(warper):
        expected = np.where(row["kept"], row["scores"][0], np.float32(-np.inf)).astype(np.float32)[None]
        alternatives = sorted({tuple(kept_ids(a)) for a in row["alternatives"]} - {tuple(kept_ids(row["kept"]))})
        cases.append(Case(f"{row['note']}; {param} = {row['param']!r} ({_BOUNDARY[warper]})",
                          {"scores": row["scores"], param: row["param"], "min_tokens_to_keep": row["keep"]},
                          expected={"scores": expected},
                          last_bit=[{"cut_ulps": row["cut_ulps"], "alternatives": [list(a) for a in alternatives]}]))
    return cases


def _run(warper: str, inp: dict) -> dict:
    param, cls, _ = WARPERS[warper]
    return {"scores": cls(inp[param], min_tokens_to_keep=inp["min_tokens_to_keep"])(None, inp["scores"])}


def compare_textbook(case: dict, output: Any) -> tuple[str, str]:
    """pass, or where the row departs: "last-bit" (the row is what transformers' rule gives with a softmax /
    cumsum that differs from torch's in the last bit: one of the case's alternatives) or "fail" (the rule)."""
    from .registry import REGISTRY

    diff = first_difference(REGISTRY[case["type"]].outputs, case["expected"], output)
    if diff is None:
        return "pass", ""
    row = diff.index[0] if diff.index else 0
    info = (case.get("last_bit") or [{}])[row]
    ulps = info.get("cut_ulps")
    at_cut = f"torch's float32 value at the cut is {ulps:g} ulp from the threshold" if ulps is not None else ""
    try:
        answer = F32(2).decode(output["scores"])
        if answer.shape != np.shape(case["expected"]["scores"]):
            return "fail", diff.message
        got, scores = answer[row], F32(2).decode(case["input"]["scores"])[row]
        # a kept token keeps its score and every other one is exactly -inf (NaN or +inf fillers are junk)
        same_values = np.array_equal(got, np.where(np.isfinite(got), scores, np.float32(-np.inf)))
    except (KeyError, TypeError, ValueError, IndexError):
        return "fail", diff.message
    kept = kept_ids(np.isfinite(got))
    if same_values and kept in info.get("alternatives", []):
        return "last-bit", (f"{diff.message}; departs on the LAST BIT of softmax, not on the rule: {at_cut}, and the "
                            f"tokens kept, {kept}, are what transformers' rule keeps when its softmax / cumsum "
                            "differs from torch's in the last bit (docs/conformance.md, \"Textbook rows\": follow the "
                            "numerics wing or declare a tolerance with --tolerate-last-bit)")
    same_count = len(kept) == np.count_nonzero(np.isfinite(case["expected"]["scores"][row]))
    ties = ("; as many tokens as transformers keeps, but others: which of equal scores survive is torch's sort "
            "order's (the tie rule of the plain type)") if same_count else ""
    return "fail", (f"{diff.message}; departs on the RULE: no float32 softmax that differs from torch's in the last "
                    f"bit keeps {kept}" + (f" ({at_cut})" if at_cut else "") + ties)


for _warper, (_param, _cls, _version) in WARPERS.items():
    register(CaseType(
        name=f"textbook_{_warper}", groups=("textbook",),
        summary=f"{_cls.__name__} (as the {_warper} type) on textbook rows: round probabilities, the threshold on "
                f"an exact boundary ({_BOUNDARY[_warper]}); expected: transformers {_version}'s answer, bit for bit",
        tie_rule="as the plain type; here the last bit of torch's float32 softmax and cumulative sum decides",
        inputs=obj(scores=F32(2), **{_param: FLOAT}, min_tokens_to_keep=INT), outputs=obj(scores=F32(2)),
        build=functools.partial(_build, _warper), run=functools.partial(_run, _warper),
        compare=compare_textbook))
