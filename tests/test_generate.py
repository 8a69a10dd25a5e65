"""generate(): golden parity with transformers 4.38.2, argument validation, config plumbing.

Golden files come from ``tools/golden/make_decode_golden.py`` (see its docstring): every case
replays one ``model.generate(...)`` call of transformers on a tiny random GPT-2 committed under
``tests/golden/models/decode-*``. Sequences and beam indices must be equal; scores and
sequences_scores within 1e-4. Sampling cases replay transformers' multinomial draws through the
``draw=`` hook (torch's random stream cannot be reproduced in NumPy).
"""

from __future__ import annotations


import numpy as np
import pytest
from decode_golden import CopiesComputedAlike, check, check_scores, golden, golden_model, replay
from conftest import MODELS

from refdecode.generate import generate
from refdecode.pipeline import logits_processors, logits_warpers
from refdecode.generation_config import GenerationConfig
from refdecode.model.modeling import GPT2
from refdecode.processors.logits_process import LogitsProcessorList, RepetitionPenaltyLogitsProcessor
from refdecode.decoding.stopping_criteria import MaxLengthCriteria, StoppingCriteriaList
from refdecode.model.stand_ins import TableModel

# some golden cases ask for min_length > max_length on purpose (transformers warns too)
pytestmark = pytest.mark.filterwarnings("ignore:Unfeasible length constraints:UserWarning")


def run_golden(file: str, cid: str) -> None:
    meta, arrays = golden(file)
    case = next(c for c in meta["cases"] if c["id"] == cid)
    model = CopiesComputedAlike(golden_model(case["model"]))
    ids = arrays[f"{cid}/input_ids"].astype(np.int64)
    mask = arrays[f"{cid}/attention_mask"].astype(np.int64) if case["attention_mask"] else None
    draw = replay(arrays, cid, case["n_draws"]) if case["n_draws"] else None
    out = generate(model, ids, attention_mask=mask, draw=draw, **case["kwargs"])
    if draw is not None:
        assert not draw.remaining, "fewer draws than transformers made"
    check(f"{cid} sequences", out.sequences, arrays[f"{cid}/sequences"], True)
    assert out.sequences.dtype == np.int64
    if f"{cid}/beam_indices" in arrays:
        check(f"{cid} beam_indices", out.beam_indices, arrays[f"{cid}/beam_indices"], True)
    elif hasattr(out, "beam_indices"):
        assert out.beam_indices is None
    if f"{cid}/sequences_scores" in arrays:
        check(f"{cid} sequences_scores", out.sequences_scores, arrays[f"{cid}/sequences_scores"], False)
    if f"{cid}/top_ids" in arrays:
        check_scores(cid, out.scores, arrays)
    else:
        assert out.scores is None


def case_ids(file: str, *modes: str) -> list[str]:
    meta, _ = golden(file)
    return [c["id"] for c in meta["cases"] if c["mode"] in modes]


def test_golden_meta_and_counts():
    """The files say how to regenerate them, and hold >= 100 greedy + beam + group beam cases."""
    meta, _ = golden("decode_search.npz")
    assert meta["format_version"] == 1 and meta["transformers"] == "4.38.2"
    assert "make_decode_golden" in meta["regenerate"]
    assert len(case_ids("decode_search.npz", "greedy_search", "beam_search", "group_beam_search")) >= 100


@pytest.mark.parametrize("cid", case_ids("decode_search.npz", "greedy_search"))
def test_golden_greedy(cid):
    run_golden("decode_search.npz", cid)


@pytest.mark.parametrize("cid", case_ids("decode_search.npz", "beam_search"))
def test_golden_beam_search(cid):
    run_golden("decode_search.npz", cid)


@pytest.mark.parametrize("cid", case_ids("decode_search.npz", "group_beam_search"))
def test_golden_group_beam_search(cid):
    run_golden("decode_search.npz", cid)


@pytest.mark.parametrize("cid", case_ids("decode_sampling.npz", "sample", "beam_sample"))
def test_golden_sampling_replay(cid):
    run_golden("decode_sampling.npz", cid)


# ---- validation: ValueError naming the argument

TINY = TableModel(np.random.default_rng(3).standard_normal((10, 10)).astype(np.float32), noise=0.3,
                  n_positions=12, eos_token_id=9)
PROMPT = np.array([[1, 2, 3]])


@pytest.mark.parametrize("kwargs, name", [
    (dict(num_beams=0), "num_beams"),
    (dict(num_beams=4, num_beam_groups=3, diversity_penalty=1.0), "num_beam_groups"),
    (dict(num_beams=2, num_return_sequences=3), "num_return_sequences"),
    (dict(do_sample=True, temperature=0.0), "temperature"),
    (dict(do_sample=True, temperature=-1.0), "temperature"),
    (dict(max_new_tokens=10), "max_new_tokens"),
    (dict(max_length=13), "max_length"),
    (dict(max_length=3), "max_length"),
    (dict(eos_token_id=10), "eos_token_id"),
    (dict(pad_token_id=12), "pad_token_id"),
    (dict(max_new_token=3), "max_new_token"),
    (dict(do_sample=True, top_k=-1), "top_k"),
    (dict(do_sample=True, top_p=1.5), "top_p"),
])
def test_invalid_generation_arguments(kwargs, name):
    kwargs = {"max_new_tokens": 2, **kwargs} if "max_length" not in kwargs else kwargs
    with pytest.raises(ValueError, match=f"`{name}`"):
        generate(TINY, PROMPT, **kwargs)


@pytest.mark.parametrize("ids, mask, name", [
    (np.array([[1, 10]]), None, "input_ids"), (np.array([[-1, 2]]), None, "input_ids"),
    (np.array([[1.0, 2.0]]), None, "input_ids"), (np.array([1, 2]), None, "input_ids"),
    (np.array([[1, 2]]), np.array([[1, 1, 1]]), "attention_mask"),
    (np.array([[1, 2]]), np.array([[1, 2]]), "attention_mask"),
])
def test_invalid_inputs(ids, mask, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        generate(TINY, ids, attention_mask=mask, max_new_tokens=2)


def test_nan_scores_while_sampling():
    with pytest.raises(ValueError, match="NaN"):
        generate(TINY, PROMPT, do_sample=True, seed=0, max_new_tokens=2,
                 logits_processor=[lambda ids, s, **kw: np.full_like(s, np.nan)])


def test_duplicate_processor_type_raises_and_custom_processors_come_last():
    cfg = GenerationConfig(repetition_penalty=1.2, no_repeat_ngram_size=2, min_length=5, eos_token_id=9,
                           min_new_tokens=2, num_beams=4, num_beam_groups=2, diversity_penalty=1.0)
    names = [type(p).__name__ for p in logits_processors(cfg, 3, [lambda i, s, **kw: s])]
    assert names == ["HammingDiversityLogitsProcessor", "RepetitionPenaltyLogitsProcessor",
                     "NoRepeatNGramLogitsProcessor", "MinLengthLogitsProcessor",
                     "MinNewTokensLengthLogitsProcessor", "function"]
    with pytest.raises(ValueError, match="custom logits processor"):
        generate(TINY, PROMPT, repetition_penalty=1.2, max_new_tokens=2,
                 logits_processor=LogitsProcessorList([RepetitionPenaltyLogitsProcessor(1.5)]))
    with pytest.raises(ValueError, match="custom stopping criteria"):
        generate(TINY, PROMPT, max_new_tokens=2, stopping_criteria=StoppingCriteriaList([MaxLengthCriteria(4)]))


def test_warpers_order_and_min_tokens_to_keep():
    """temperature -> top-k -> top-p; beam methods keep len(eos)+1 (2 for an int eos); top_k=50 by default."""
    warpers = logits_warpers(GenerationConfig(do_sample=True, temperature=0.5, top_p=0.9))
    assert [type(w).__name__ for w in warpers] == ["TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper"]
    assert warpers[1].top_k == 50
    beam = logits_warpers(GenerationConfig(do_sample=True, num_beams=2, top_k=1, eos_token_id=[1, 2, 3]))
    assert beam[0].top_k == 4          # max(top_k, min_tokens_to_keep = 3 + 1)
    assert logits_warpers(GenerationConfig(do_sample=True, num_beams=2, top_k=1, eos_token_id=1))[0].top_k == 2
    assert logits_warpers(GenerationConfig(do_sample=True, top_k=0)) == []


def test_pad_defaults_to_eos_and_mask_inferred_only_when_pad_is_not_eos():
    """With pad = eos (GPT-2) a left-padded prompt without a mask attends to its padding (4.38.2)."""
    ids = np.array([[9, 9, 4], [1, 2, 3]])
    seen = []

    class Spy(TableModel):
        def __call__(self, input_ids, attention_mask=None, **kw):
            seen.append(None if attention_mask is None else attention_mask.copy())
            return super().__call__(input_ids, attention_mask=attention_mask, **kw)
    spy = Spy(TINY.table, noise=0.3, n_positions=12, eos_token_id=9)
    generate(spy, ids, max_new_tokens=1)
    assert seen[0].tolist() == [[1, 1, 1], [1, 1, 1]]
    generate(spy, ids, max_new_tokens=1, pad_token_id=9, eos_token_id=8)
    assert seen[-1].tolist() == [[0, 0, 1], [1, 1, 1]]


def test_expansion_prefills_each_prompt_once():
    model = TableModel(TINY.table, noise=0.3, n_positions=12, eos_token_id=9)
    out = generate(model, np.array([[1, 2], [3, 4]]), num_beams=3, num_return_sequences=2, max_new_tokens=3)
    assert model.calls[0] == (2, 2) and all(c == (6, 1) for c in model.calls[1:])
    assert out.shape[0] == 4
    model.calls.clear()
    out = generate(model, np.array([[1, 2]]), do_sample=True, num_return_sequences=3, max_new_tokens=3, seed=0)
    assert model.calls[0] == (1, 2) and out.shape == (3, 5)


def test_same_seed_same_output_for_sampling_modes():
    for kw in (dict(do_sample=True), dict(do_sample=True, num_beams=3, num_return_sequences=2)):
        a = generate(TINY, PROMPT, max_new_tokens=5, seed=11, **kw)
        np.testing.assert_array_equal(a, generate(TINY, PROMPT, max_new_tokens=5, rng=np.random.default_rng(11), **kw))


def test_generation_config_argument_and_kwargs_override():
    cfg = GenerationConfig(max_new_tokens=2, eos_token_id=9)
    assert generate(TINY, PROMPT, generation_config=cfg).shape == (1, 5)
    assert generate(TINY, PROMPT, generation_config=cfg, max_new_tokens=4).shape[1] <= 7
    assert cfg.max_new_tokens == 2 and cfg.pad_token_id is None      # the caller's config is not modified


def test_default_max_length_20_counts_the_prompt():
    model = TableModel(TINY.table, n_positions=64, eos_token_id=None)
    assert generate(model, PROMPT).shape == (1, 20)
    assert generate(model, PROMPT, max_new_tokens=4).shape == (1, 7)


def test_max_time_and_output_logits():
    model = TableModel(TINY.table, n_positions=64, eos_token_id=None)
    assert generate(model, PROMPT, max_time=0.0, max_new_tokens=10).shape == (1, 4)   # elapsed > 0 after a step
    out = generate(model, PROMPT, max_new_tokens=3, output_logits=True, return_dict_in_generate=True)
    assert len(out.logits) == 3 and out.scores is None
    np.testing.assert_array_equal(out.logits[0], TINY.table[[3]])   # raw logits of the last prompt token


# ---- bad-input catalogue


@pytest.mark.parametrize("draw, match", [
    (lambda p, n, r, g: np.zeros((p.shape[0],), dtype=np.int64), r"shape \(1, 1\) .* got a int64 array of shape \(1,\)"),
    (lambda p, n, r, g: np.zeros((p.shape[0], n)), "got a float64 array"),
    (lambda p, n, r, g: np.full((p.shape[0], n), 1000), r"indices in \[0, 10\)"),
    (lambda p, n, r, g: [[0]], None),  # a nested list of the right shape is fine
])
def test_draw_hook_output_is_checked(draw, match):
    """A ``draw`` returning the wrong shape failed with an IndexError inside the loop."""
    if match is None:
        assert generate(TINY, PROMPT, do_sample=True, max_new_tokens=2, draw=draw).shape == (1, 5)
        return
    with pytest.raises(ValueError, match="`draw` must return " + ".*" + match):
        generate(TINY, PROMPT, do_sample=True, max_new_tokens=2, draw=draw)
    with pytest.raises(ValueError, match="`draw` must return"):  # beam sample draws from K*V = 20 columns
        generate(TINY, PROMPT, do_sample=True, num_beams=2, max_new_tokens=2, draw=draw)


def test_draw_seed_and_custom_lists_of_the_wrong_type_are_named():
    for kwargs, name in [(dict(draw=5), "draw"), (dict(seed=-1), "seed"), (dict(seed=1.5), "seed"),
                         (dict(seed="0"), "seed"), (dict(logits_processor=5), "logits_processor"),
                         (dict(logits_processor=[5]), "logits_processor"),
                         (dict(stopping_criteria="max"), "stopping_criteria")]:
        with pytest.raises((TypeError, ValueError), match=f"`{name}` must be"):
            generate(TINY, PROMPT, do_sample=True, max_new_tokens=2, **kwargs)


def test_all_zero_attention_mask_row_is_refused():
    """A row of padding only has no token to continue from; transformers computes its first token from the
    padding itself (attention is uniform over masked keys) without a word."""
    ids, mask = np.array([[1, 2, 3], [1, 2, 3]]), np.array([[1, 1, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match=r"`attention_mask` has to mark at least one real token .* rows \[1\]"):
        generate(TINY, ids, attention_mask=mask, max_new_tokens=2)


def test_huge_num_beams_is_refused_before_allocating():
    """``num_beams=10**6`` ran for 22 s into a MemoryError; the request is sized first."""
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")  # V = 50257: 10**6 rows x V x 16 bytes = 804 GB
    with pytest.raises(ValueError, match=r"generate\(\) would need [\d.]+ [GTP]iB \(batch 1 x `num_beams`=1000000: 1000000 rows "
                                         r"x vocabulary .* more than this machine's memory"):
        generate(model, PROMPT, num_beams=10**6, max_new_tokens=2)


def test_memory_estimate_counts_kept_scores(monkeypatch):
    from refdecode import validation
    monkeypatch.setattr(validation, "memory_limit", lambda: 100_000)
    model = TableModel(np.zeros((10, 10), dtype=np.float32), n_positions=64)
    generate(model, PROMPT, max_new_tokens=40, num_beams=64)  # 4 arrays x 4 bytes x 64 rows x 10 = 10 kB
    with pytest.raises(ValueError, match=r"1 x 40 steps x 64 rows x 10 kept scores/logits"):  # + 102 kB
        generate(model, PROMPT, num_beams=64, max_new_tokens=40, output_scores=True, return_dict_in_generate=True)


# ---- Hypothesis over every generation argument: succeed, or ValueError/TypeError naming one

import dataclasses  # noqa: E402
import re  # noqa: E402
import warnings  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FIELDS = sorted(f.name for f in dataclasses.fields(GenerationConfig))
ARGUMENTS = set(FIELDS) | {"input_ids", "attention_mask", "generation_config", "logits_processor", "seed", "rng",
                           "stopping_criteria", "draw", "streamer", "assistant_model", "uniform",
                           "prefix_allowed_tokens_fn", "negative_prompt_ids", "negative_prompt_attention_mask"}
FUZZ_MODEL = TableModel(np.random.default_rng(5).standard_normal((10, 10)).astype(np.float32), noise=0.3,
                        n_positions=16, eos_token_id=9)
WILD = st.one_of(
    st.none(), st.booleans(), st.sampled_from([np.True_, np.False_]),
    st.integers(-3, 20), st.integers(-3, 20).map(np.int64), st.sampled_from([10**6, 10**12, -(10**9), 2**63]),
    st.floats(-3, 3), st.floats(allow_nan=True, allow_infinity=True), st.floats(-3, 3).map(np.float32),
    st.sampled_from(["", "never", "yes", "false", "heuristic", "constant"]),
    st.lists(st.integers(-2, 12), max_size=3), st.lists(st.lists(st.integers(-1, 11), max_size=3), max_size=2),
    st.dictionaries(st.tuples(st.integers(-1, 11)), st.floats(-2, 2), max_size=2),
    st.just(np.array([1, 2])), st.just(object()),
)


def _names_an_argument(message: str) -> bool:
    return any(name in ARGUMENTS for name in re.findall(r"`(\w+)`", message))


#: examples per fuzz test: 300 in CI (a few seconds); REFDECODE_FUZZ_EXAMPLES=20000 for a long local hunt
from json_fuzz import FUZZ_EXAMPLES  # noqa: E402


#: a mode to start from, so that random fields also reach the beam, sampling and group code paths
MODES = st.sampled_from([{}, {"do_sample": True}, {"num_beams": 2}, {"num_beams": 3, "do_sample": True},
                         {"num_beams": 4, "num_beam_groups": 2, "diversity_penalty": 1.0},
                         {"num_beams": 2, "num_return_sequences": 2, "output_scores": True,
                          "return_dict_in_generate": True}])


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=20_000)
@given(mode=MODES, kwargs=st.dictionaries(st.sampled_from(FIELDS), WILD, max_size=6), seed=st.integers(0, 3))
def test_any_generation_arguments_succeed_or_name_the_argument(mode, kwargs, seed):
    """Random types and values for every GenerationConfig field: each call returns int64 sequences, or raises
    a ValueError/TypeError whose message names (in backticks) an argument of generate(); nothing else
    (IndexError, ZeroDivisionError, OverflowError, AttributeError, a comparison's TypeError naming nothing),
    and no call runs past the deadline (the model has 10 tokens and 16 positions)."""
    kwargs = {"max_new_tokens": 3, **mode, **kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = generate(FUZZ_MODEL, PROMPT, seed=seed, **kwargs)
        except (ValueError, TypeError) as e:
            assert _names_an_argument(str(e)), f"{type(e).__name__} names no argument: {e}"
            return
    sequences = out["sequences"] if not isinstance(out, np.ndarray) else out
    assert sequences.dtype == np.int64 and sequences.ndim == 2


def test_copies_computed_alike_only_evens_out_the_last_bits_of_copies():
    """The golden replays' stand-in (decode_golden.CopiesComputedAlike) gives copies of a beam one row's logits;
    rows with another history keep the model's own, and the copies differed from it by float32 noise at most."""
    model = golden_model("decode-a")
    alike = CopiesComputedAlike(model)
    ids = np.array([[5, 6, 7], [5, 6, 7], [8, 9, 7], [5, 6, 7]], dtype=np.int64)
    mask = np.array([[1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 1, 1]], dtype=np.int64)
    bare = model(ids, attention_mask=mask, past_key_values=model.new_cache(4, 8), logits_to_keep=1).logits
    even = alike(ids, attention_mask=mask, past_key_values=alike.new_cache(4, 8), logits_to_keep=1).logits
    assert np.array_equal(even[0], even[1])                      # copies: identical, the first row's
    assert np.array_equal(even[0], bare[0])
    assert np.array_equal(even[2], bare[2]) and np.array_equal(even[3], bare[3])  # other history or mask: own
    assert np.abs(bare[1] - bare[0]).max() <= 1e-5
    cache = alike.new_cache(4, 8)
    alike(ids, attention_mask=mask, past_key_values=cache, logits_to_keep=1)
    cache.reorder(np.array([2, 2, 0, 1]))                        # rows 0, 1 now continue row 2; row 2 row 0
    step = alike(np.array([[4], [4], [4], [4]]), attention_mask=np.concatenate([mask, np.ones((4, 1), int)], 1),
                 past_key_values=cache, logits_to_keep=1).logits
    assert np.array_equal(step[0], step[1]) and not np.array_equal(step[0], step[2])


# ---- one request, one way: the config merged once, the mode worked out once (tools/profile_request.py)


def _profile_request():
    import importlib.util
    import sys
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "tools" / "profile_request.py"
    spec = importlib.util.spec_from_file_location("profile_request", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("options", [["--do-sample", "--top-p", "0.9"], ["--num-beams", "4"]],
                         ids=["sampling", "beam search"])
def test_a_request_merges_the_config_once_and_works_out_the_mode_once(options):
    """The command line merged the config a second time to choose its output path, and loop_defaults read the
    model's config a third time; the mode was worked out 2 (sampling) or 3 (beam search) times per request."""
    tool = _profile_request()
    found = tool.profile(["ROMEO:", "--model", str(MODELS / "gpt2-tiny"), "--max-new-tokens", "3", *options])
    assert (found.merges, found.updates, found.modes) == (1, 1, 1)
    assert "refdecode/dispatch.py" in found.files and "refdecode/pipeline.py" in found.files  # the profiler saw them
    # one way: cli -> generate -> dispatch; nothing below calls back up, and the CLI talks to generate only
    assert ("cli.py", "generate.py") in found.edges and ("generate.py", "dispatch.py") in found.edges
    assert not {edge for edge in found.edges if edge[0] == "cli.py"} - {("cli.py", "generate.py")}
    assert not {edge for edge in found.edges if edge[0] == "dispatch.py" or edge[1] == "cli.py"}
