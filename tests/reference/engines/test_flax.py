"""The switches of transformers 4.38.2's Flax generate (examples/engines/transformers-4.38.2-flax/FINDINGS.md FX1-FX7).

The models are tables of next-token logits by prefix, so every expected row and score below follows from Flax's
source as read (generation/flax_utils.py, flax_logits_process.py of transformers 4.38.2) and from numpy's
log-softmax of the table, not from the code under test.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from refdecode.reference.engines import PROFILES, EngineRules, decode_as
from refdecode.reference.engines.beam_loops import FLAX_NEG

from engine_records import decode_case, differing, recorded

FLAX = PROFILES["transformers-4.38.2-flax"]
V = 6
FLOOR = -40.0   # every token the table does not name


class Table:
    """``model(ids)`` -> logits (1, 1, V): ``rows[prefix]`` names some tokens' logits; the rest FLOOR."""

    def __init__(self, rows: dict[tuple[int, ...], dict[int, float]], fallback: dict[int, float]):
        self.rows, self.fallback = rows, fallback

    def __call__(self, ids: np.ndarray):
        logits = np.full((1, 1, V), FLOOR, dtype=np.float32)
        for tok, value in self.rows.get(tuple(map(int, ids[0])), self.fallback).items():
            logits[0, 0, tok] = value
        return type("Out", (), {"logits": logits})()


def logp(named: dict[int, float], tok: int) -> float:
    """log-softmax of a table row, by hand (float64)."""
    values = list(named.values()) + [FLOOR] * (V - len(named))
    return named[tok] - math.log(sum(math.exp(v) for v in values))


def rows(profile, model, ids, cfg, mask=None) -> list[list[int]]:
    return decode_as(profile, model, np.array(ids), mask, cfg)["sequences"].tolist()


# ---- greedy: FX1 full width, FX3 missing processors, FX4 min_length inclusive

EOS_FIRST = Table({}, fallback={0: 0.0, 4: -0.5})          # eos 0 on top everywhere, then 4


def test_full_width_pads_every_row_to_max_length():
    """FX1: Flax's sequences are (B, T + max_new_tokens), filled with pad_token_id (flax_utils.py:585)."""
    cfg = dict(max_new_tokens=4, eos_token_id=[0], pad_token_id=1)
    assert rows(EngineRules(), EOS_FIRST, [[5]], cfg) == [[5, 0]]
    assert rows(EngineRules(full_width=True), EOS_FIRST, [[5]], cfg) == [[5, 0, 1, 1, 1]]


def test_min_length_is_inclusive():
    """FX4: eos is masked while cur_len <= min_length (4.38.2: <). Prompt [5] (T 1), min_length 2: 4.38.2 allows
    eos at cur_len 2 (the second new token), Flax at cur_len 3."""
    cfg = dict(max_new_tokens=4, eos_token_id=[0], pad_token_id=1, min_length=2)
    assert rows(EngineRules(), EOS_FIRST, [[5]], cfg) == [[5, 4, 0]]
    assert rows(EngineRules(min_length_inclusive=True), EOS_FIRST, [[5]], cfg) == [[5, 4, 4, 0]]
    assert rows(FLAX, EOS_FIRST, [[5]], cfg) == [[5, 4, 4, 0, 1]]


@pytest.mark.parametrize("option", [dict(repetition_penalty=10.0), dict(no_repeat_ngram_size=1),
                                    dict(min_new_tokens=2)])
def test_missing_processors_are_ignored(option):
    """FX3: no Flax processor for these: the raw argmax stands. The prompt's token 5 leads (logit 1.0, then 4 at
    0.5): a penalty of 10 (1.0 -> 0.1) or a banned 1-gram turns 4.38.2 to 4; min_new_tokens 2 masks the eos."""
    model = Table({}, fallback={5: 1.0, 4: 0.5, 0: -3.0}) if "min_new_tokens" not in option else EOS_FIRST
    cfg = dict(max_new_tokens=2, eos_token_id=[0], pad_token_id=1, **option)
    control, flax = rows(EngineRules(), model, [[5]], cfg), rows(EngineRules(missing_processors=True), model, [[5]], cfg)
    if "min_new_tokens" in option:
        assert (control, flax) == ([[5, 4, 4]], [[5, 0]])
    else:
        assert control[0][1] == 4 and flax == [[5, 5, 5]]


# ---- beam search: loop="flax" (FX5-FX7)

BEAM = dict(max_new_tokens=2, eos_token_id=[0], pad_token_id=1, num_beams=2, length_penalty=0.0,
            early_stopping=False)
#: step 0 ranks 2, 3, then the eos 0 at rank 2 (>= K); step 1 continues both beams with 4, the eos far down
STEP0 = {2: 0.0, 3: -0.1, 0: -0.2}
LATER = {4: 0.0, 2: -1.0, 3: -1.0, 5: -1.0}
EOS_LATE = Table({(5,): STEP0}, fallback=LATER)


def test_an_eos_of_rank_k_or_more_is_kept_and_no_finalize():
    """FX5 + FX6: Flax offers the eos at rank 2 (K 2) to its slots (4.38.2 skips ranks >= K); at the end a prompt
    with a finished slot returns its slots, the better running beam [5, 2, 4] is never added (no finalize);
    num_return_sequences 2 returns the empty slot: a row of pad_token_id, score -1e7."""
    control = decode_as(EngineRules(), EOS_LATE, np.array([[5]]), None, BEAM)
    assert control["sequences"].tolist() == [[5, 2, 4]]
    flax = decode_as(FLAX, EOS_LATE, np.array([[5]]), None, {**BEAM, "num_return_sequences": 2})
    assert flax["sequences"].tolist() == [[5, 0, 1], [1, 1, 1]]
    assert flax["sequences_scores"][0] == pytest.approx(logp(STEP0, 0), abs=1e-5)
    assert flax["sequences_scores"][1] == np.float32(-1e7) == FLAX_NEG


def test_no_finished_slot_returns_the_running_beams_with_raw_sums():
    """FX6: no eos ever reaches the 2K candidates: Flax returns the running beams and their sums of log-probs,
    not divided by length ** lp (4.38.2's finalize divides: length_penalty 1, two tokens, half the sum)."""
    first = {2: 0.0, 3: -0.1, 4: -1.0, 5: -1.0}      # the eos 0 at FLOOR: never among the 2K = 4
    model = Table({(5,): first}, fallback=LATER)
    cfg = {**BEAM, "length_penalty": 1.0}
    total = logp(first, 2) + logp(LATER, 4)
    control = decode_as(EngineRules(), model, np.array([[5]]), None, cfg)
    flax = decode_as(FLAX, model, np.array([[5]]), None, cfg)
    assert control["sequences"].tolist() == flax["sequences"].tolist() == [[5, 2, 4]]
    assert control["sequences_scores"][0] == pytest.approx(total / 2, abs=1e-5)
    assert flax["sequences_scores"][0] == pytest.approx(total, abs=1e-5)


def test_the_flax_profile_and_its_checks():
    assert FLAX.loop == "flax" and FLAX.full_width and FLAX.missing_processors and FLAX.min_length_inclusive
    with pytest.raises(TypeError, match="full_width"):
        replace(FLAX, full_width="yes")
    with pytest.raises(ValueError, match="loop"):
        EngineRules(loop="jax")


# ---- sampling: warpers="flax", sample_one_row (FX8)

def test_flax_top_k_keeps_exactly_k_and_top_p_breaks_ties_by_index():
    """FlaxTopKLogitsWarper keeps k tokens by lax.top_k (ties: the lower index), 4.38.2 every token tied with the
    k-th; FlaxTopPLogitsWarper walks the tokens in descending order, ties by the lower index: of two tied tokens
    with probability 0.42 each and top_p 0.4 it keeps the first only (4.38.2's ascending sort keeps the other)."""
    from refdecode.reference.engines.sampling import flax_chain

    kept = np.isfinite(flax_chain(np.array([2.0, 2.0, 1.0, 0.0], dtype=np.float32), 1.0, 1, 1.0))
    assert kept.tolist() == [True, False, False, False]
    kept = np.isfinite(flax_chain(np.array([1.0, 1.0, 0.0], dtype=np.float32), 1.0, 0, 0.4))
    assert kept.tolist() == [True, False, False]
    from refdecode.generation_config import GenerationConfig
    from refdecode.pipeline import logits_warpers

    control = logits_warpers(GenerationConfig(do_sample=True, top_k=0, top_p=0.4))
    assert np.isfinite(control(np.array([[3]]), np.array([[1.0, 1.0, 0.0]], dtype=np.float32)))[0].tolist() == \
        [False, True, False]
    tempered = flax_chain(np.array([1.0, -1.0], dtype=np.float32), 0.5, 0, 1.0)
    assert tempered.tolist() == [2.0, -2.0] and tempered.dtype == np.float32


def test_sampling_gives_one_row_per_prompt():
    """FX8: Flax's _sample ignores num_return_sequences: one row per prompt (4.38.2: num_return_sequences)."""
    cfg = dict(max_new_tokens=2, eos_token_id=[0], pad_token_id=1, do_sample=True, num_return_sequences=2,
               top_k=0)
    uniforms = np.full(8, 0.99)
    control = decode_as(EngineRules(), EOS_LATE, np.array([[5]]), None, cfg, uniforms)["sequences"]
    flax = decode_as(FLAX, EOS_LATE, np.array([[5]]), None, cfg, uniforms)["sequences"]
    assert control.shape[0] == 2 and flax.shape == (1, 3)


# ---- the engine's own answers (examples/engines/transformers-4.38.2-flax/responses.jsonl, recorded from Flax)

def test_profile_reproduces_recorded_flax_answers():
    """Flax's answers that differ from 4.38.2's, greedy and beam, token for token; beam scores within float32 noise
    (XLA's kernels against NumPy's, sums of up to 24 steps)."""
    cases = differing("transformers-4.38.2-flax")
    beams = [r for r in cases if int(r["config"].get("num_beams") or 1) > 1][:4]
    greedy = [r for r in cases if int(r["config"].get("num_beams") or 1) == 1][:3]
    assert len(beams) == 4 and len(greedy) == 3
    for r in beams + greedy:
        out = decode_case(FLAX, r)
        assert out["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]
        if "sequences_scores" in r["response"]["output"]:
            np.testing.assert_allclose(out["sequences_scores"], r["response"]["output"]["sequences_scores"],
                                       rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.heavy  # every recorded answer, tiny-shakespeare beams included: `pytest --heavy` (CI)
def test_profile_reproduces_every_recorded_flax_answer():
    for r in recorded("transformers-4.38.2-flax"):
        assert decode_case(FLAX, r)["sequences"].tolist() == r["response"]["output"]["sequences"], r["id"]
