"""``GenerationConfig(semantics="5")``: transformers 5.x's repetition penalty (left padding not penalised).

Golden file ``tests/golden/decode_semantics5.npz`` made by transformers **5.x** (not the 4.38.2 pin)
through ``tools/golden/make_semantics5_golden.py``. Compared: ``sequences`` exactly, per-step
``scores`` within 1e-4 of the step's scale, ``sequences_scores`` within 1e-4, and ``beam_indices`` on
the positions 5.x fills (5.x does not pad them with -1 to refdecode's width, so only the common
prefix of each row, up to its first -1, is compared). Beam search ``scores`` are compared on the
first 3 steps only: once a prompt's hypotheses are complete, 4.38.2 (and refdecode) feed its beams
pad tokens while 5.x's vectorised beam search (4.50) keeps decoding them, so later rows of a
finished prompt differ (4 of 20 cases; its tokens and ``sequences_scores`` are unaffected). The default (``"4.38"``) is tested against the
4.38.2 goldens by ``test_generate.py``; here it must differ from 5.x on some cases, which shows the
golden file exercises the change.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from conftest import GOLDEN

from refdecode.generate import generate
from refdecode.generation_config import GenerationConfig
from refdecode.processors.transformers5 import RepetitionPenaltyLogitsProcessor, repetition_penalty_process
from refdecode.model.modeling import GPT2

FILE = GOLDEN / "decode_semantics5.npz"


@cache
def _golden() -> tuple[dict, dict]:
    with np.load(FILE) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(str(arrays.pop("meta"))), arrays


@cache
def _model(name: str) -> GPT2:
    return GPT2.from_pretrained(GOLDEN / "models" / name)


def _cases() -> list[dict]:
    return _golden()[0]["cases"]


def _run(case: dict, semantics: str):
    _, a = _golden()
    cid = case["id"]
    return generate(_model(case["model"]), a[f"{cid}/input_ids"].astype(np.int64),
                    attention_mask=a[f"{cid}/attention_mask"].astype(np.int64), semantics=semantics,
                    **case["kwargs"])


def test_golden_file_is_transformers_5():
    meta, _ = _golden()
    assert meta["transformers"].startswith("5.")
    modes = [c["mode"] for c in meta["cases"]]
    assert modes.count("greedy_search") >= 20 and modes.count("beam_search") >= 20


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['id']}-{c['mode']}")
def test_semantics5_matches_transformers_5(case):
    _, a = _golden()
    cid = case["id"]
    out = _run(case, "5")
    np.testing.assert_array_equal(out.sequences, a[f"{cid}/sequences"])
    want = a[f"{cid}/scores"]
    got = np.stack(out.scores)
    if case["mode"] == "beam_search":
        _check_beams(out, a, cid)
        want, got = want[:3], got[:3]  # see the module docstring: later steps may score a finished prompt
    assert got.dtype == np.float32 and got.shape == want.shape
    finite = np.isfinite(want)
    assert (np.isfinite(got) == finite).all()
    scale = max(1.0, float(np.abs(want[finite]).max()))
    np.testing.assert_allclose(got[finite], want[finite], atol=1e-4 * scale, rtol=0)


def _check_beams(out, a: dict, cid: str) -> None:
    """Beam search: sequences_scores and the beam_indices 5.x fills (see the module docstring)."""
    np.testing.assert_allclose(out.sequences_scores, a[f"{cid}/sequences_scores"], atol=1e-4, rtol=0)
    for mine, theirs in zip(out.beam_indices, a[f"{cid}/beam_indices"]):
        n = int(np.argmax(theirs == -1)) if (theirs == -1).any() else len(theirs)
        np.testing.assert_array_equal(mine[:n], theirs[:n])


def test_default_semantics_differs_from_5_on_some_cases():
    """4.38.2 penalises the padding (= eos): on these cases that changes the tokens somewhere."""
    _, a = _golden()
    differ = sum(not np.array_equal(_run(c, "4.38").sequences, a[f"{c['id']}/sequences"]) for c in _cases())
    assert differ >= 3, differ


def test_semantics_is_validated():
    assert GenerationConfig().semantics == "4.38"
    with pytest.raises(ValueError, match="semantics"):
        GenerationConfig(semantics="4.39")


def test_prompt_ignore_length():
    s = np.array([[2.0, -2.0, 1.0, 3.0]] * 2, dtype=np.float32)
    ids = np.array([[3, 0, 1], [3, 3, 1]])
    out = repetition_penalty_process(ids, s, 2.0, np.array([1, 2]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[1.0, -4.0, 1.0, 3.0], [2.0, -4.0, 1.0, 3.0]])
    np.testing.assert_array_equal(repetition_penalty_process(ids, s, 2.0, 0), repetition_penalty_process(ids, s, 2.0))
    for bad in (-1, np.array([[1]]), np.array([0.5]), "2"):
        with pytest.raises(ValueError, match="prompt_ignore_length"):
            RepetitionPenaltyLogitsProcessor(2.0, bad)
    with pytest.raises(ValueError, match="prompt_ignore_length"):
        RepetitionPenaltyLogitsProcessor(2.0, np.array([1, 2, 3]))(ids, s)
