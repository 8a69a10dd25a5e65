"""Assisted and prompt-lookup decoding: golden parity with transformers 4.38.2, equality with plain greedy, plumbing.

Golden file: ``tools/golden/make_assisted_golden.py`` (see its docstring) ran ``model.generate(...,
assistant_model=...)`` and ``model.generate(..., prompt_lookup_num_tokens=...)`` on tiny random GPT-2s (the
assistants share the main model's vocabulary) and on the shipped tiny-shakespeare model with
``models/gpt2-tiny`` as the assistant. Sequences must be equal, the model must be called as many times
(one call per round, so the same number of candidates was accepted in every round), scores within 1e-4, and
the ``num_assistant_tokens`` left in the assistant's config equal. Sampling cases replay torch's multinomial
draws through ``draw=`` and its acceptance uniforms through ``uniform=``.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from conftest import GOLDEN, ROOT
from hypothesis import given
from hypothesis import strategies as st
from decode_golden import check
from random_models import random_model

from refdecode.decoding.assisted_decoding import assisted_decoding, count_matches, speculative_sampling
from refdecode.decoding.candidate_generator import PromptLookupCandidateGenerator
from refdecode.generate import generate
from refdecode.generation_config import GenerationConfig
from refdecode.model.modeling import GPT2
from refdecode.decoding.greedy import greedy_search
from refdecode.model.stand_ins import CountingModel, TableModel

pytestmark = pytest.mark.filterwarnings("ignore:Unfeasible length constraints:UserWarning")


@cache
def golden() -> tuple[dict, dict]:
    with np.load(GOLDEN / "decode_assisted.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(str(arrays.pop("meta"))), arrays


@cache
def load(path: str) -> GPT2:
    return GPT2.from_pretrained(ROOT / path)


def replay(arrays: dict, cid: str, kind: str, n: int):
    """Returns transformers' recorded draws (kind "draw") or uniforms (kind "uniform"), in order."""
    queue = [arrays[f"{cid}/{kind}{i:02d}"] for i in range(n)]

    def draw(probs, num_samples, replacement, rng):
        assert queue, "more draws than transformers made"
        d = queue.pop(0).astype(np.int64)
        assert d.shape == (probs.shape[0], num_samples)
        assert (np.take_along_axis(probs, d, axis=1) > 0).all(), "replayed token has zero probability here"
        return d

    def uniform(count, rng):
        assert queue, "more acceptance tests than transformers made"
        u = queue.pop(0)
        assert u.shape == (count,), f"{count} uniforms asked, transformers drew {u.shape}"
        return u
    fn = draw if kind == "draw" else uniform
    fn.remaining = queue
    return fn


def case_ids(*modes: str) -> list[str]:
    return [c["id"] for c in golden()[0]["cases"] if c["mode"] in modes]


def check_scores(cid: str, scores: tuple, arrays: dict) -> None:
    """test_generate.check_scores, with the sum of the finite scores also relative (V = 50257 sums to ~1e5)."""
    s = np.stack(scores)                                                   # (S, 1, V)
    assert s.dtype == np.float32
    ids = arrays[f"{cid}/top_ids"].astype(np.int64)
    assert s.shape[:2] == ids.shape[:2], f"{cid}: {s.shape[:2]} steps/rows != golden {ids.shape[:2]}"
    check(f"{cid} scores (golden top-8)", np.take_along_axis(s, ids, axis=-1), arrays[f"{cid}/top_values"], False)
    check(f"{cid} number of -inf", np.isneginf(s).sum(axis=-1), arrays[f"{cid}/n_neginf"], True)
    finite_sum = np.where(np.isfinite(s), s, 0.0).astype(np.float64).sum(axis=-1)
    np.testing.assert_allclose(finite_sum, arrays[f"{cid}/finite_sum"], atol=2e-3, rtol=1e-6, err_msg=f"{cid} sum")
    if f"{cid}/scores" in arrays:
        check(f"{cid} full scores", s, arrays[f"{cid}/scores"], False)


def run_golden(cid: str) -> None:
    meta, arrays = golden()
    case = next(c for c in meta["cases"] if c["id"] == cid)
    model = CountingModel(load(case["model"]))
    extra = {}
    if case["assistant"] is not None:
        assistant = load(case["assistant"])
        assistant.generation_config.num_assistant_tokens = case["num_assistant_tokens"]
        assistant.generation_config.num_assistant_tokens_schedule = case["schedule"]
        extra["assistant_model"] = assistant
    ids = arrays[f"{cid}/input_ids"].astype(np.int64)
    mask = arrays[f"{cid}/attention_mask"].astype(np.int64) if case["attention_mask"] else None
    draw, uniform = replay(arrays, cid, "draw", case["n_draws"]), replay(arrays, cid, "uniform", case["n_uniforms"])
    for _ in range(case["calls"]):
        out = generate(model, ids, attention_mask=mask, draw=draw, uniform=uniform, **extra, **case["kwargs"])
    assert not draw.remaining and not uniform.remaining, "fewer random numbers used than transformers drew"
    check(f"{cid} sequences", out.sequences, arrays[f"{cid}/sequences"], True)
    assert out.sequences.dtype == np.int64
    assert model.calls == case["rounds"], f"{cid}: {model.calls} model calls, transformers made {case['rounds']}"
    if case["assistant"] is not None:
        assert extra["assistant_model"].generation_config.num_assistant_tokens == case["num_assistant_tokens_after"]
    if f"{cid}/top_ids" in arrays:
        check_scores(cid, out.scores, arrays)
    else:
        assert out.scores is None
    if case["n_logits"]:
        assert len(out.logits) == case["n_logits"]
        for i, lg in enumerate(out.logits):  # 4.38.2: the raw (1, c + 1, V) logits of each round
            assert lg.dtype == np.float32
            check(f"{cid} logits of round {i}", lg, arrays[f"{cid}/logits{i:02d}"], False)
    else:
        assert out.logits is None


def test_golden_meta_and_counts():
    meta, _ = golden()
    assert meta["format_version"] == 1 and meta["transformers"] == "4.38.2"
    assert "make_assisted_golden" in meta["regenerate"]
    cases = meta["cases"]
    assert len(case_ids("assisted_greedy")) >= 25 and len(case_ids("lookup_greedy")) >= 25
    assert len(case_ids("assisted_sample")) >= 12 and len(case_ids("lookup_sample")) >= 8
    # the files exercise acceptance: some rounds accepted several tokens, with assistants and with lookup
    for mode in ("assisted_greedy", "lookup_greedy", "assisted_sample"):
        assert any(c["new_tokens"] > c["rounds"] for c in cases if c["mode"] == mode and c["calls"] == 1), mode


@pytest.mark.parametrize("cid", case_ids("assisted_greedy", "lookup_greedy", "assisted_sample", "lookup_sample"))
def test_golden(cid):
    """Assisted and prompt-lookup decoding, greedy and sampling: every golden case of transformers 4.38.2."""
    run_golden(cid)


# ---- properties: assisted and prompt-lookup greedy are greedy search


def table_model(seed: int, vocab: int, eos: int | None, noise: float = 0.5, n_positions: int = 64) -> TableModel:
    rng = np.random.default_rng(seed)
    return TableModel(rng.standard_normal((vocab, vocab)).astype(np.float32) * np.float32(2.0), noise=noise,
                      n_positions=n_positions, eos_token_id=eos)


def with_draft_length(model, num_assistant_tokens: int, schedule: str):
    model.generation_config = GenerationConfig(eos_token_id=model.config.eos_token_id,
                                               num_assistant_tokens=num_assistant_tokens,
                                               num_assistant_tokens_schedule=schedule)
    return model


@given(st.integers(0, 2**31), st.integers(3, 8), st.integers(1, 6), st.integers(1, 8),
       st.sampled_from(["heuristic", "constant"]), st.booleans(), st.integers(1, 14))
def test_assisted_greedy_equals_greedy_on_table_models(seed, vocab, prompt_len, n_draft, schedule, eos_on, new):
    """Whatever the assistant proposes (here an unrelated bigram model, or the model itself), every accepted token is
    the main model's argmax after the same prefix: tokens and scores are greedy search's."""
    rng = np.random.default_rng(seed)
    eos = int(rng.integers(0, vocab)) if eos_on else None
    model = table_model(seed, vocab, eos)
    assistant = model if seed % 3 == 0 else table_model(seed + 1, vocab, eos, noise=float(rng.choice([0.0, 2.0])))
    with_draft_length(assistant, n_draft, schedule)
    ids = rng.integers(0, vocab, size=(1, prompt_len))
    kw = dict(max_new_tokens=new, return_dict_in_generate=True, output_scores=True, pad_token_id=0)
    plain = generate(model, ids, **kw)
    out = generate(model, ids, assistant_model=assistant, **kw)
    if eos is not None and ids[0, -1] == eos and new == 1:  # 4.38.2's edge case, see the test below
        np.testing.assert_array_equal(out.sequences, ids)
        return
    np.testing.assert_array_equal(out.sequences, plain.sequences)
    np.testing.assert_array_equal(np.stack(out.scores), np.stack(plain.scores))


def test_prompt_ending_in_eos_with_one_token_to_go_gives_no_token():
    """4.38.2 (checked with the oracle): one token left -> the assistant drafts none; the "last candidate is eos" rule
    then looks at the prompt's last token, counts -1 matches and appends nothing. Plain greedy appends one token."""
    model = table_model(0, 6, 5)
    ids = np.array([[1, 3, 5]])
    assert generate(model, ids, max_new_tokens=1, assistant_model=model).tolist() == [[1, 3, 5]]
    assert generate(model, ids, max_new_tokens=1).shape == (1, 4)


def assert_prompt_lookup_is_greedy(out, plain, eos: list[int] | None) -> None:
    """Equal up to greedy's end; longer only if greedy ended on eos (4.38.2 checks eos at the end of a round only)."""
    g = plain.sequences
    np.testing.assert_array_equal(out.sequences[:, : g.shape[1]], g)
    np.testing.assert_array_equal(np.stack(out.scores[: len(plain.scores)]), np.stack(plain.scores))
    if out.sequences.shape[1] > g.shape[1]:
        assert eos is not None and int(g[0, -1]) in eos


@given(st.integers(0, 2**31), st.integers(3, 8), st.integers(1, 4), st.integers(1, 10), st.booleans(),
       st.integers(1, 14), st.integers(1, 3))
def test_prompt_lookup_greedy_equals_greedy_on_table_models(seed, vocab, phrase_len, n_lookup, eos_on, new, ngram):
    rng = np.random.default_rng(seed)
    eos = int(rng.integers(0, vocab)) if eos_on else None
    model = table_model(seed, vocab, eos, noise=float(rng.choice([0.0, 0.3])))
    phrase = rng.integers(0, vocab, size=phrase_len)
    ids = np.concatenate([phrase, rng.integers(0, vocab, size=2), phrase])[None, :]  # (1, T), with a repeat
    kw = dict(max_new_tokens=new, return_dict_in_generate=True, output_scores=True, pad_token_id=0)
    out = generate(model, ids, prompt_lookup_num_tokens=n_lookup, max_matching_ngram_size=ngram, **kw)
    assert_prompt_lookup_is_greedy(out, generate(model, ids, **kw), None if eos is None else [eos])


def tiny_gpt2(seed: int, n_layer: int, n_embd: int = 32) -> GPT2:
    return random_model(n_embd=n_embd, n_head=2, n_layer=n_layer, n_positions=64, seed=seed)


@cache
def tiny_pair(seed: int) -> tuple[GPT2, GPT2]:
    return tiny_gpt2(seed, 2), tiny_gpt2(seed + 100, 1, n_embd=16)


def min_gap(scores: tuple) -> float:
    top2 = -np.partition(-np.stack(scores)[:, 0], 1, axis=-1)[:, :2]  # (S, 2)
    return float((top2[:, 0] - top2[:, 1]).min())


@pytest.mark.slow
@given(st.integers(0, 3), st.integers(0, 2**31), st.integers(1, 8), st.integers(1, 6), st.booleans(),
       st.integers(0, 2))
def test_assisted_and_prompt_lookup_greedy_equal_greedy_on_tiny_gpt2(pair, seed, prompt_len, n_draft, mask_on, n_pad):
    """Tiny random GPT-2s (the assistant a smaller one, or the model itself), with or without a left-padded mask:
    verifying c + 1 positions in one forward pass gives greedy's tokens, and its scores to float32 rounding."""
    model, small = tiny_pair(pair)
    rng = np.random.default_rng(seed)
    phrase = rng.integers(0, 97, size=prompt_len)
    ids = np.concatenate([np.zeros(n_pad, dtype=np.int64), phrase, phrase[: max(1, prompt_len // 2)]])[None, :]
    mask = np.ones_like(ids)
    mask[0, :n_pad] = 0
    kw = dict(max_new_tokens=12, return_dict_in_generate=True, output_scores=True, eos_token_id=int(rng.integers(97)),
              attention_mask=mask if (mask_on or n_pad) else None)
    plain = generate(model, ids, **kw)
    if min_gap(plain.scores) < 1e-4:  # a near-tie could flip with the rounding of a longer forward pass
        return
    assistant = with_draft_length(model if seed % 4 == 0 else small, n_draft, "heuristic")
    out = generate(model, ids, assistant_model=assistant, **kw)
    np.testing.assert_array_equal(out.sequences, plain.sequences)
    np.testing.assert_allclose(np.stack(out.scores), np.stack(plain.scores), atol=1e-4, rtol=0)
    lookup = generate(model, ids, prompt_lookup_num_tokens=n_draft, **kw)
    np.testing.assert_array_equal(lookup.sequences[:, : plain.sequences.shape[1]], plain.sequences)


# ---- the pieces


def test_count_matches_caps_at_max_matches_and_stops_before_a_trailing_eos():
    assert count_matches(np.array([1, 2, 3]), np.array([1, 2, 3, 4]), False, 10) == 3
    assert count_matches(np.array([1, 2, 3]), np.array([1, 2, 3, 4]), False, 1) == 1
    assert count_matches(np.array([1, 2, 3]), np.array([1, 2, 3, 4]), True, 10) == 2
    assert count_matches(np.array([5, 2, 3]), np.array([1, 2, 3, 4]), True, 10) == 0


def inverse_cdf(probs, num_samples, replacement, rng):
    """A light one-row draw (the chi-square test below runs 4000 rounds)."""
    cdf = np.cumsum(probs[0], dtype=np.float64)
    return np.array([[min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), probs.shape[1] - 1)]])


def test_speculative_sampling_keeps_the_model_distribution_chi_square():
    """One round with one candidate drawn from q: the token that comes out is distributed as p (the point of the rule,
    Leviathan et al. theorem 1), though q is far from p. 4000 rounds, chi-square at significance 0.001."""
    from numeric_checks import CHI2_CRIT, chi_square
    rng = np.random.default_rng(5)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    p_scores = np.log(np.array([p, [0.25, 0.25, 0.25, 0.25]], dtype=np.float32))
    q_scores = np.log(np.array([[0.1, 0.2, 0.3, 0.4]], dtype=np.float32))
    counts = np.zeros(4)
    for _ in range(4000):
        candidate = inverse_cdf(np.exp(q_scores), 1, False, rng)[0]  # (1,) the assistant's draft
        tokens, n = speculative_sampling(candidate, q_scores, p_scores, False, 10, rng, inverse_cdf,
                                         lambda k, g: g.random(k))
        counts[tokens[0]] += 1
    assert chi_square(counts, 4000 * p) < CHI2_CRIT[3]
    # the drafts themselves (q, no acceptance rule) would be far from p: the test can fail
    assert chi_square(4000 * np.exp(q_scores[0]), 4000 * p) > 100 * CHI2_CRIT[3]


def test_speculative_sampling_accepts_everything_when_assistant_equals_model():
    scores = np.log(np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]], dtype=np.float32))
    rng = np.random.default_rng(0)
    for _ in range(50):
        tokens, n = speculative_sampling(np.array([0, 1]), scores[:2], scores, False, 10, rng,
                                         lambda p, k, r, g: np.array([[1]]), lambda k, g: g.random(k))
        assert n == 2 and tokens.tolist() == [0, 1, 1]


def test_speculative_sampling_draws_from_the_residual_after_a_rejection():
    """Candidate 0 (token 0) rejected (r = 0.9 > p/q = 0.2/0.8): the draw sees max(p - q, 0) = [0, 0.6] renormalised."""
    q = np.log(np.array([[0.8, 0.2]], dtype=np.float32))
    p = np.log(np.array([[0.2, 0.8], [0.5, 0.5]], dtype=np.float32))
    seen = []

    def draw(probs, k, replacement, rng):
        seen.append(probs.copy())
        return np.array([[1]])
    tokens, n = speculative_sampling(np.array([0]), q, p, False, 10, np.random.default_rng(0), draw,
                                     lambda k, g: np.array([0.9]))
    assert n == 0 and tokens.tolist() == [1]
    np.testing.assert_allclose(seen[0], [[0.0, 1.0]], atol=1e-6)


def test_prompt_lookup_rounds_cost_one_model_call_for_several_tokens():
    """A model that repeats a 4-cycle: the lookup proposes the cycle, every candidate is accepted."""
    table = np.full((5, 5), -5.0, dtype=np.float32)
    for a, b in ((1, 2), (2, 3), (3, 4), (4, 1)):
        table[a, b] = 5.0
    model = TableModel(table, n_positions=64)
    ids = np.array([[1, 2, 3, 4, 1]])
    out = generate(model, ids, max_new_tokens=20, prompt_lookup_num_tokens=8)
    assert model.calls == [(1, 9), (1, 9), (1, 9)]  # prompt + 4 candidates (5 tokens kept), then 8 (9 kept), 8 (6)
    np.testing.assert_array_equal(out, generate(model, ids, max_new_tokens=20))
    assert len(model.calls) == 3 + 20  # greedy: a prefill and 19 steps


def test_prompt_lookup_can_run_past_an_eos_it_accepted_mid_round():
    """4.38.2 tests only the last token of a round for eos: a copied ``eos, x`` is accepted whole and generation goes on
    (plain greedy stops at the eos); the tokens up to it are greedy's."""
    table = np.full((5, 5), -5.0, dtype=np.float32)
    for a, b in ((1, 2), (2, 0), (0, 3), (3, 1)):
        table[a, b] = 5.0  # 1 -> 2 -> eos (0) -> 3 -> 1
    model = TableModel(table, eos_token_id=0)
    ids = np.array([[1, 2, 0, 3, 1]])
    plain = generate(model, ids, max_new_tokens=6)
    lookup = generate(model, ids, max_new_tokens=6, prompt_lookup_num_tokens=4)
    assert plain.tolist() == [[1, 2, 0, 3, 1, 2, 0]]
    assert lookup.shape[1] > plain.shape[1] and lookup[:, : plain.shape[1]].tolist() == plain.tolist()


def test_candidates_past_n_positions_are_cut():
    """transformers would index past the position table; none of those candidates could be accepted anyway."""
    model = table_model(3, 6, None, n_positions=12)
    ids = np.array([[1, 2, 3, 1, 2, 3, 1, 2]])
    out = generate(model, ids, max_length=12, prompt_lookup_num_tokens=10)
    np.testing.assert_array_equal(out, generate(model, ids, max_length=12))


def test_assisted_decoding_direct_call_and_output_types():
    model = table_model(2, 5, 4)
    out = assisted_decoding(model, np.array([[1, 2, 1]]), PromptLookupCandidateGenerator(3), max_length=9, pad_token_id=0,
                            return_dict_in_generate=True, output_scores=True, output_logits=True)
    assert out.sequences.dtype == np.int64 and all(s.dtype == np.float32 and s.shape == (1, 5) for s in out.scores)
    assert all(lg.ndim == 3 and lg.shape[0] == 1 for lg in out.logits)  # (1, c + 1, V) per round
    with pytest.raises(ValueError, match="batch_size = 1"):
        assisted_decoding(model, np.array([[1], [2]]), PromptLookupCandidateGenerator(3), max_length=5, pad_token_id=0)


# ---- arguments


MODEL = table_model(0, 6, 5)


@pytest.mark.parametrize("kwargs, match", [
    (dict(prompt_lookup_num_tokens=0), r"`prompt_lookup_num_tokens` must be an integer >= 1 or None, got 0"),
    (dict(prompt_lookup_num_tokens=True), r"`prompt_lookup_num_tokens` must be an integer >= 1 or None, got True"),
    (dict(prompt_lookup_num_tokens=3, max_matching_ngram_size=0), r"`max_matching_ngram_size` must be an integer >= 1"),
    (dict(num_assistant_tokens=0), r"`num_assistant_tokens` must be an integer >= 1, got 0"),
    (dict(num_assistant_tokens_schedule="fast"), r"`num_assistant_tokens_schedule` must be one of 'heuristic', "
                                                 r"'heuristic_transient', 'constant', got 'fast'"),
    (dict(prompt_lookup_num_tokens=3, num_beams=2), "only supported with Greedy Search and Sample"),
    (dict(prompt_lookup_num_tokens=3, do_sample=True, num_return_sequences=2), "num_return_sequences has to be 1"),
    (dict(prompt_lookup_num_tokens=3, use_cache=False), "requires `use_cache=True`"),
])
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        generate(MODEL, np.array([[1, 2]]), max_new_tokens=3, **kwargs)


def test_one_prompt_only():
    with pytest.raises(ValueError, match="batch_size = 1, but the batch has 2 prompts"):
        generate(MODEL, np.array([[1, 2], [2, 3]]), max_new_tokens=3, prompt_lookup_num_tokens=2)


def test_assistant_must_share_the_vocabulary_and_reach_max_length():
    with pytest.raises(ValueError, match=r"`assistant_model` has to have the model's vocabulary \(6 tokens\), but has 7"):
        generate(MODEL, np.array([[1]]), max_new_tokens=3, assistant_model=table_model(0, 7, 5))
    with pytest.raises(ValueError, match="`assistant_model` has n_positions=4, less than max_length=6"):
        generate(MODEL, np.array([[1]]), max_new_tokens=5, assistant_model=table_model(0, 6, 5, n_positions=4))
    with pytest.raises(TypeError, match="`assistant_model` has to be a model"):
        generate(MODEL, np.array([[1]]), max_new_tokens=3, assistant_model="gpt2")


def test_num_assistant_tokens_given_to_generate_warns_that_4382_reads_the_assistants():
    assistant = with_draft_length(table_model(0, 6, 5), 3, "constant")
    with pytest.warns(UserWarning, match="reads it from assistant_model.generation_config"):
        generate(MODEL, np.array([[1]]), max_new_tokens=3, assistant_model=assistant, num_assistant_tokens=7)
    assert assistant.generation_config.num_assistant_tokens == 3


def test_greedy_search_is_untouched_by_the_new_config_fields():
    ids = np.array([[1, 2, 3]])
    np.testing.assert_array_equal(generate(MODEL, ids, max_new_tokens=4, num_assistant_tokens=9),
                                  greedy_search(MODEL, ids, max_length=7, pad_token_id=0))


def test_streamer_gets_the_prompt_then_each_rounds_tokens():
    """As 4.38.2: ``streamer.put(valid_tokens)`` once per round (n + 1 tokens), then ``end()``."""
    class Recording:
        def __init__(self):
            self.puts, self.ended = [], False

        def put(self, value):
            self.puts.append(np.asarray(value).ravel().tolist())

        def end(self):
            self.ended = True
    table = np.full((5, 5), -5.0, dtype=np.float32)
    for a, b in ((1, 2), (2, 3), (3, 4), (4, 1)):
        table[a, b] = 5.0
    streamer = Recording()
    out = generate(TableModel(table), np.array([[1, 2, 3, 4, 1]]), max_new_tokens=8, prompt_lookup_num_tokens=4,
                   streamer=streamer)
    assert streamer.puts == [[1, 2, 3, 4, 1], [2, 3, 4, 1, 2], [3, 4, 1]] and streamer.ended
    assert sum(streamer.puts, []) == out[0].tolist()


def test_heuristic_schedule_grows_on_full_acceptance_and_is_kept_by_the_assistant():
    model = table_model(1, 6, None, noise=0.0)
    assistant = with_draft_length(model, 2, "heuristic")  # the model itself: every draft accepted
    generate(model, np.array([[1]]), max_new_tokens=12, assistant_model=assistant)
    # rounds draft 2, 4, 6 (accepted, +2 each; the 3rd is cut by max_length) -> the count kept for the next call
    assert assistant.generation_config.num_assistant_tokens > 2
    transient = with_draft_length(table_model(1, 6, None, noise=0.0), 2, "heuristic_transient")
    generate(model, np.array([[1]]), max_new_tokens=12, assistant_model=transient)
    assert transient.generation_config.num_assistant_tokens == 2


def _assisted_sampling(u: float) -> np.ndarray:
    """Target p and assistant q over 3 tokens, each row certain but the first; one drafted token per round."""
    from refdecode import GenerationConfig

    inf = -np.inf
    p = np.array([[inf, np.log(.6), np.log(.4)], [0, inf, inf], [0, inf, inf]], dtype=np.float32)   # after 0: .6/.4
    q = np.array([[inf, inf, 0], [0, inf, inf], [0, inf, inf]], dtype=np.float32)                   # after 0: 2 surely
    assistant = TableModel(q)
    assistant.generation_config = GenerationConfig(num_assistant_tokens=1, num_assistant_tokens_schedule="constant")
    uniforms = iter([u])
    return generate(TableModel(p), np.array([[0]]), assistant_model=assistant, do_sample=True, max_new_tokens=2,
                    top_k=0, uniform=lambda n, rng: np.array([next(uniforms) for _ in range(n)]), seed=0)


def test_assisted_sampling_accepts_a_draft_with_probability_p_over_q_and_else_draws_the_residual():
    """generate(assistant_model=..., do_sample=True) crashed (the draw hook reached the assistant as None).

    Worked by hand: the assistant drafts 2 (q = 1); the target gives it p = 0.4, so it is accepted iff u <= 0.4/1.
    Accepted (u = 0.2): then the bonus token after [0, 2] is 0 (p = 1) -> [0, 2, 0]. Rejected (u = 0.7): the
    residual max(p - q, 0) = [0, 0.6, 0] leaves only token 1 -> [0, 1, ...], then 0 after 1 (p = 1)."""
    assert _assisted_sampling(0.2).tolist() == [[0, 2, 0]]
    assert _assisted_sampling(0.7).tolist() == [[0, 1, 0]]


@pytest.mark.slow
def test_assisted_sampling_through_generate_keeps_the_targets_distribution():
    """Leviathan et al.'s guarantee, end to end: the first new token of assisted sampling is distributed as the
    target's p, whatever the assistant's q (chi-square, 2 degrees of freedom, p < 0.001 to fail)."""
    from numeric_checks import CHI2_CRIT, chi_square

    from refdecode import GenerationConfig

    p = np.log(np.array([[.5, .3, .2]] * 3, dtype=np.float32))
    q = np.log(np.array([[.2, .2, .6]] * 3, dtype=np.float32))
    target, assistant = TableModel(p), TableModel(q)
    assistant.generation_config = GenerationConfig(num_assistant_tokens=1, num_assistant_tokens_schedule="constant")
    n = 3000
    firsts = [int(generate(target, np.array([[0]]), assistant_model=assistant, do_sample=True, max_new_tokens=2,
                           top_k=0, seed=s)[0, 1]) for s in range(n)]
    counts = np.bincount(firsts, minlength=3)
    assert chi_square(counts, n * np.array([.5, .3, .2])) < CHI2_CRIT[2], counts


def test_speculative_sampling_with_transformers_argument_order():
    """4.38.2's ``_speculative_sampling(candidate_input_ids, candidate_logits, candidate_length,
    new_logits, last_assistant_token_is_eos, max_matches)``. The assistant is sure of 1, 4, 5; the model agrees with
    1 and 4 (p = 1) and gives 5 no mass, so 5 is rejected whatever the uniform, and the residual after it is token 8
    alone: [1, 4, 8], two matches (the case of transformers' own test)."""
    from refdecode import _speculative_sampling

    def sure(token: int, vocab: int = 10) -> np.ndarray:
        row = np.full(vocab, -np.inf, dtype=np.float32)
        row[token] = 0.0
        return row

    candidate_input_ids = np.array([[8, 0, 3, 9, 8, 1, 4, 5]])
    candidate_logits = np.stack([sure(1), sure(4), sure(5)])[None]          # (1, 3, V)
    new_logits = np.stack([sure(1), sure(4), sure(8), sure(2)])[None]       # (1, 4, V)
    tokens, n = _speculative_sampling(candidate_input_ids, candidate_logits, 3, new_logits, False, 5)
    assert tokens.tolist() == [[1, 4, 8]] and n.item() == 2


@pytest.mark.parametrize("assistant", ["itself", "other"])
def test_assisted_and_prompt_lookup_greedy_equal_greedy_on_each_family(family_model, assistant):
    """GPT-2 and Llama: a draft verified in one forward pass (c + 1 positions, the cache cropped after a rejection)
    gives greedy's tokens and scores. The Llama's other assistant is a Mistral (same vocabulary, its own cache)."""
    from conftest import GOLDEN
    from refdecode import from_pretrained

    model = family_model
    other = GOLDEN / "models" / ("mistral-window" if getattr(model.config, "model_type", "gpt2") == "llama" else "decode-a")
    draft = with_draft_length(from_pretrained(other), 4, "heuristic")
    ids = np.array([[5, 17, 9, 30, 21, 5, 17]])
    kw = dict(max_new_tokens=10, return_dict_in_generate=True, output_scores=True, eos_token_id=-1)
    plain = generate(model, ids, **kw)
    assert min_gap(plain.scores) > 1e-4
    out = generate(model, ids, assistant_model=draft if assistant == "other" else model, **kw)
    np.testing.assert_array_equal(out.sequences, plain.sequences)
    np.testing.assert_allclose(np.stack(out.scores), np.stack(plain.scores), atol=1e-4, rtol=0)
    lookup = generate(model, ids, prompt_lookup_num_tokens=3, **kw)
    np.testing.assert_array_equal(lookup.sequences, plain.sequences)
