"""refdecode.reference.conformance.cases_textbook: round rows on exact boundaries, transformers' answers, verdicts.

The golden file (tools/golden/make_textbook_golden.py) holds transformers 4.38.2's answers (min-p: 4.41.0) on
textbook rows: a ``test`` set that the ``textbook`` group exports and a ``heldout`` set (another seed) that only
these tests read, so refdecode is checked on rows the suite does not hold too.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from conformance_suites import run_check
from refdecode.reference.conformance.cases_textbook import WARPERS, _golden, compare_textbook, golden_rows
from refdecode.reference.conformance.export import export
from refdecode.reference.conformance.registry import REGISTRY, select


def _meta() -> dict:
    return json.loads(str(_golden()["meta"]))


def _probabilities(note: str) -> list[Fraction]:
    """The row's probabilities as written in its note ("multiples of 0.1: 0.6, 0.3, 0.1; ..."), exactly."""
    listed = note.split(": ", 1)[1].split(";", 1)[0]
    return [Fraction(x).limit_denominator(24) for x in listed.split(", ")]


def _refdecode_kept(warper: str, row: dict) -> np.ndarray:
    _, cls, _ = WARPERS[warper]
    out = cls(row["param"], min_tokens_to_keep=row["keep"])(None, row["scores"])
    assert out.dtype == np.float32
    finite = np.isfinite(out[0])
    np.testing.assert_array_equal(out[0][finite], row["scores"][0][finite])  # survivors keep their score
    return finite


# ----------------------------------------------------------------------------------------------
# the golden file


def test_golden_file_is_transformers_on_torch_2_13():
    meta = _meta()
    assert (meta["transformers"], meta["transformers_min_p"], meta["torch"][:6]) == ("4.38.2", "4.41.0", "2.13.0")
    for warper in WARPERS:
        test, heldout = golden_rows(warper, "test"), golden_rows(warper, "heldout")
        assert len(test) >= 240 and len(heldout) >= 240
        suite = {(r["scores"].tobytes(), r["param"], r["keep"]) for r in test}
        assert not any((r["scores"].tobytes(), r["param"], r["keep"]) in suite for r in heldout)   # other rows


@pytest.mark.parametrize("warper", ["top_p", "epsilon", "min_p"])
def test_every_threshold_sits_on_an_exact_boundary(warper):
    """In exact arithmetic the threshold equals a prefix sum (top-p) or a probability (epsilon, min-p x max p)."""
    for row in golden_rows(warper) + golden_rows(warper, "heldout"):
        probs = sorted(_probabilities(row["note"]), reverse=True)
        assert sum(probs) == 1, row["note"]
        if warper == "top_p":
            boundaries = {float(sum(probs[:j])) for j in range(1, len(probs))}
        elif warper == "epsilon":
            boundaries = {float(p) for p in probs}
        else:
            boundaries = {float(p / probs[0]) for p in probs}
        assert row["param"] in boundaries, row["note"]


def test_logits_are_float32_logs_of_the_round_probabilities():
    for row in golden_rows("top_p")[:60]:
        scores = row["scores"][0]
        finite = scores[np.isfinite(scores)]
        assert scores.dtype == np.float32
        probs = np.exp(finite.astype(np.float64) - np.logaddexp.reduce(finite.astype(np.float64)))
        listed = sorted(float(p) for p in _probabilities(row["note"]))
        np.testing.assert_allclose(np.sort(probs), listed, rtol=4e-6)   # float32(log p) + a shift up to 30


@pytest.mark.parametrize("warper", list(WARPERS))
def test_the_last_bit_decides_on_many_rows(warper):
    """On at least 1 row in 20 some other float32 arithmetic keeps other tokens than torch's (the group's point);
    on most of those rows torch's own value at the cut is within one ulp of the threshold (eta's threshold is
    itself computed, from the entropy: a few ulps)."""
    rows = golden_rows(warper)
    moved = [r for r in rows if (r["alternatives"] != r["kept"][None]).any()]
    assert len(moved) >= len(rows) // 20, (warper, len(moved))
    assert np.median([r["cut_ulps"] for r in moved]) <= (4.0 if warper == "eta" else 1.0)


def test_tie_rows_are_longer_than_16_and_a_stable_sort_keeps_other_tokens():
    """Top-p ties in rows of 17..40 entries: on some rows, keeping the same number of tokens by a stable sort
    (token-id order among equal scores) keeps other tokens than transformers: torch's introsort order decides.
    (Typical's tie rows have them too, but typical keeps every token whose distance equals the one at the cut,
    so there the sort order reaches the answer only through the order of the cumulative sum.)"""
    assert all(r["scores"].shape[1] > 16 for r in golden_rows("typical") if "entries, ties" in r["note"])
    ties = [r for r in golden_rows("top_p") if "entries, ties" in r["note"]]
    assert len(ties) >= 40 and all(r["scores"].shape[1] > 16 for r in ties)
    differ = 0
    for r in ties:
        order = np.argsort(r["scores"][0], kind="stable")               # ascending, ties by id
        count = int(r["kept"].sum())
        stable = np.zeros_like(r["kept"])
        stable[order[len(order) - count:]] = True
        differ += not np.array_equal(stable, r["kept"])
    assert differ >= 3, differ


# ----------------------------------------------------------------------------------------------
# refdecode against transformers, on the suite's rows and on held-out rows


@pytest.mark.parametrize("set_name", ["test", "heldout"])
@pytest.mark.parametrize("warper", WARPERS)
def test_refdecode_keeps_what_transformers_keeps_on_every_textbook_row(warper, set_name):
    rows = golden_rows(warper, set_name)
    wrong = [r["note"] for r in rows if not np.array_equal(_refdecode_kept(warper, r), r["kept"])]
    assert not wrong, f"{len(wrong)} of {len(rows)} rows differ from transformers, e.g. {wrong[:3]}"


# eta: ``min(eps, sqrt(eps) * exp(-H))`` takes torch's elementwise sqrt and exp, MKL's vmsSqrt / vmsExp (vmsSqrt is
# not correctly rounded on about one float32 input in six); tests/golden/textbook_eta_mkl.npz holds torch's two
# scalars per row (tools/golden/make_textbook_mkl_golden.py), which the wing's numerics/mkl_vml.py must give.

def _mkl(set_name: str) -> tuple[np.ndarray, np.ndarray]:
    from pathlib import Path
    z = np.load(Path(__file__).resolve().parents[2] / "golden" / "textbook_eta_mkl.npz")
    return z[f"{set_name}/sqrt_epsilon"], z[f"{set_name}/exp_neg_entropy"]


@pytest.mark.parametrize("set_name", ["test", "heldout"])
def test_eta_sqrt_and_exp_are_torchs_on_every_row(set_name):
    """refdecode's sqrt(eps) and exp(-H) are torch's bits on every eta row; correctly rounded values are not (on
    those rows the kept set moved: 15 of the 480 before the wing computed MKL's kernels)."""
    from refdecode.numerics import categorical_entropy, torch_exp, torch_sqrt
    rows, (sqrt_eps, exp_neg_h) = golden_rows("eta", set_name), _mkl(set_name)
    assert len(rows) == len(sqrt_eps) == len(exp_neg_h)
    eps = np.array([r["param"] for r in rows], np.float32)
    entropy = np.concatenate([categorical_entropy(r["scores"]) for r in rows])
    np.testing.assert_array_equal(torch_sqrt(eps), sqrt_eps)
    np.testing.assert_array_equal(torch_exp(-entropy), exp_neg_h)
    assert (np.sqrt(eps) != sqrt_eps).sum() >= 20   # a correctly rounded sqrt misses torch's on these rows


# ----------------------------------------------------------------------------------------------
# the group and the verdicts


def test_the_group_is_opt_in_and_its_answers_are_transformers():
    names = select("textbook")
    assert names == [f"textbook_{w}" for w in WARPERS]
    assert not set(names) & set(select(None))
    for name in names:
        cases = list(REGISTRY[name].build())
        warper = name.removeprefix("textbook_")
        for case, row in zip(cases, golden_rows(warper)):
            expected = case.expected["scores"]
            assert expected.dtype == np.float32
            np.testing.assert_array_equal(np.isfinite(expected[0]), row["kept"])
            assert case.last_bit[0]["cut_ulps"] == row["cut_ulps"]
            assert list(np.flatnonzero(row["kept"])) not in case.last_bit[0]["alternatives"]


def _case(name: str, n: int) -> dict:
    case = list(REGISTRY[name].build())[n]
    return {"id": f"{name}/{n:04d}", "type": name, "note": case.note, "input": case.input, "expected": case.expected,
            "last_bit": case.last_bit}


def _answer(case: dict, kept: list[int]) -> dict:
    scores = case["input"]["scores"][0]
    return {"scores": [[float(v) if i in kept else "-inf" for i, v in enumerate(scores)]]}


def test_a_row_that_moves_only_with_the_last_bit_is_a_last_bit_departure_else_a_rule_one():
    name = "textbook_top_p"
    n = next(i for i, c in enumerate(REGISTRY[name].build()) if c.last_bit[0]["alternatives"])
    case = _case(name, n)
    expected_kept = [int(i) for i in np.flatnonzero(np.isfinite(case["expected"]["scores"][0]))]
    assert compare_textbook(case, _answer(case, expected_kept)) == ("pass", "")
    verdict, message = compare_textbook(case, _answer(case, case["last_bit"][0]["alternatives"][0]))
    assert verdict == "last-bit" and "LAST BIT" in message and "ulp" in message
    verdict, message = compare_textbook(case, _answer(case, []))        # no survivor: no arithmetic gives that
    assert verdict == "fail" and "RULE" in message
    shifted = _answer(case, case["last_bit"][0]["alternatives"][0])
    first = next(i for i, v in enumerate(shifted["scores"][0]) if v != "-inf")
    shifted["scores"][0][first] += 1.0                                  # a survivor whose score changed: the rule
    verdict, message = compare_textbook(case, shifted)
    assert verdict == "fail" and "RULE" in message
    for junk in ("nan", "inf"):                                         # the alternative's survivors, junk elsewhere
        filled = _answer(case, case["last_bit"][0]["alternatives"][0])
        filled["scores"][0] = [junk if v == "-inf" else v for v in filled["scores"][0]]
        assert compare_textbook(case, filled)[0] == "fail", junk
    doubled = _answer(case, expected_kept)
    doubled["scores"] = doubled["scores"] * 2                            # a (2, V) answer to a (1, V) case
    assert compare_textbook(case, doubled)[0] == "fail"


_PORT = """
import json, sys
import numpy as np
KEEP_AT_EQUALITY = sys.argv[1] == "keep-at-equality"
for line in sys.stdin:
    req = json.loads(line)
    inp = req["input"]
    scores = np.array(inp["scores"], dtype=np.float32)
    out = scores.copy()
    for b, row in enumerate(scores):
        order = np.argsort(row, kind="stable")          # ascending; ties in id order (not torch's introsort)
        x = row[order]
        e = np.exp(x - x.max())
        cumulative = np.cumsum(e / e.sum(), dtype=np.float32)   # plain NumPy float32 softmax and cumsum
        threshold = np.float32(1 - inp["top_p"])
        remove = cumulative < threshold if KEEP_AT_EQUALITY else cumulative <= threshold
        remove[max(0, len(row) - inp["min_tokens_to_keep"]):] = False
        out[b, order[remove]] = -np.inf
    print(json.dumps({"id": req["id"], "output": {"scores": [[v if np.isfinite(v) else "-inf" for v in r.tolist()]
                                                             for r in out]}}), flush=True)
"""


@pytest.fixture(scope="module")
def textbook_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("textbook_suite")
    export(root, types=["textbook_top_p"])
    port = root.parent / "textbook_port.py"
    port.write_text(_PORT)
    return root, port


def _failures(lines: list[str], kind: str, ties: bool) -> int:
    return sum(1 for line in lines if line.startswith("FAIL") and kind in line and ("entries, ties" in line) == ties)


@pytest.mark.slow
def test_check_tells_a_numpy_softmax_port_it_departs_on_the_last_bit(textbook_suite):
    """A plain NumPy top-p with the right rule: every round row it gets wrong is a last-bit departure (and passes
    with --tolerate-last-bit); the rows over 16 entries with ties it gets wrong by its stable sort (the tie rule)."""
    import sys

    root, port = textbook_suite
    status, lines = run_check(root, f'"{sys.executable}" "{port}" plain', only="textbook")
    assert status == 1
    assert _failures(lines, "LAST BIT", ties=False) >= 3
    assert _failures(lines, "on the RULE", ties=False) == 0
    assert _failures(lines, "on the RULE", ties=True) >= 3
    status, tolerated = run_check(root, f'"{sys.executable}" "{port}" plain', only="textbook", tolerate_last_bit=True)
    assert sum(line.startswith("LAST-BIT") for line in tolerated) == _failures(lines, "LAST BIT", ties=False)
    assert not any(line.startswith("FAIL") and "entries, ties" not in line for line in tolerated)


@pytest.mark.slow
def test_check_tells_a_port_that_keeps_the_token_at_equality_it_departs_on_the_rule(textbook_suite):
    import sys

    root, port = textbook_suite
    status, lines = run_check(root, f'"{sys.executable}" "{port}" keep-at-equality', only="textbook",
                              tolerate_last_bit=True)
    assert status == 1 and _failures(lines, "on the RULE", ties=False) >= 20


@pytest.mark.slow
def test_serve_passes_the_textbook_group(tmp_path):
    """Every row of every textbook case passes strictly, eta's included (no ``--tolerate-last-bit``)."""
    export(tmp_path, types=select("textbook"))
    total = sum(len(golden_rows(w)) for w in WARPERS)
    status, lines = run_check(tmp_path, only="textbook")
    assert (status, lines[-1]) == (0, f"{total} passed, 0 failed"), [line for line in lines if "FAIL" in line][:5]


def test_eta_boundaries_use_the_rows_entropy():
    """eta rows: min(epsilon, sqrt(epsilon) exp(-H)) equals one of the probabilities, H the exact entropy."""
    for row in golden_rows("eta")[:80]:
        probs = _probabilities(row["note"])
        h = -sum(float(p) * math.log(p) for p in probs)
        eta = min(row["param"], math.sqrt(row["param"]) * math.exp(-h))
        assert min(abs(eta - float(p)) for p in probs) < 1e-12, row["note"]
