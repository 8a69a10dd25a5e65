"""The 5.x, CTranslate2 and keras-hub beam loops reproduce those engines' recorded answers."""

from __future__ import annotations

import numpy as np
import pytest

from refdecode.reference.engines import PROFILES

from engine_records import decode_case, differing, recorded

LOOPS = ["transformers-5", "ctranslate2", "keras-hub"]


@pytest.mark.parametrize("engine", LOOPS)
def test_profile_reproduces_differing_beams(engine):
    cases = [r for r in differing(engine) if int(r["config"].get("num_beams") or 1) > 1][:3]
    assert cases, f"no recorded beam case where {engine} differs from 4.38.2"
    for r in cases:
        out = decode_case(engine, r)
        assert out["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]
        theirs = r["response"]["output"].get("sequences_scores")
        if theirs is not None:   # float32 sums of up to 12 steps, engines' own kernels
            np.testing.assert_allclose(out["sequences_scores"], theirs, rtol=1e-3, atol=2e-4)


def test_ctranslate2_scores_count_the_prompt():
    """C5: the length penalty's length adds len(prompt) - 1: the same tokens score differently."""
    r = next(r for r in recorded("ctranslate2") if float(r["config"].get("length_penalty", 1)) == 2.0
             and int(r["config"].get("num_beams") or 1) > 1 and len(r["input_ids"][0]) > 2)
    with_offset = decode_case(PROFILES["ctranslate2"], r)["sequences_scores"]
    from dataclasses import replace

    without = decode_case(replace(PROFILES["ctranslate2"], offset=False), r)["sequences_scores"]
    assert not np.allclose(with_offset, without)


@pytest.mark.slow
@pytest.mark.heavy  # 10 s of CPU or more: `pytest --heavy` (CI) runs it
@pytest.mark.parametrize("engine", LOOPS)
def test_profile_reproduces_every_answer(engine):
    for r in recorded(engine):
        assert decode_case(engine, r)["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]
