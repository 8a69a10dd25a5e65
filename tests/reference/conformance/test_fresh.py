"""``refdecode conformance fresh``: seeded, valid, near-ties labelled, the genai regime reached, serve passes them."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from refdecode.reference.conformance import cli
from refdecode.reference.conformance.cases_decode import decode, model_for, smallest
from refdecode.reference.conformance.check import check
from refdecode.reference.conformance.export import case_schema
from refdecode.reference.conformance.fresh import NEAR_TIE, fresh_cases, write_fresh
from refdecode.reference.conformance.registry import REGISTRY
from refdecode.reference.engines import decode_as
from refdecode.reference.schema import validate

N, SEED = 9, 5


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("fresh")
    write_fresh(root, N, SEED)
    return root


def _lines(root) -> list[dict]:
    manifest = json.loads((root / "manifest.json").read_text())
    return [json.loads(line) for t in manifest["case_types"] for line in (root / t["file"]).read_text().splitlines()]


def test_the_same_seed_gives_the_same_suite_byte_for_byte(suite, tmp_path):
    write_fresh(tmp_path, N, SEED)
    for name in ("engines_greedy", "engines_beam_search"):
        assert (tmp_path / "cases" / f"{name}.jsonl").read_bytes() == (suite / "cases" / f"{name}.jsonl").read_bytes()


def test_another_seed_gives_other_cases():
    a = [c.note for cs in fresh_cases(4, 1).values() for c in cs]
    b = [c.note for cs in fresh_cases(4, 2).values() for c in cs]
    assert len(a) == 4 and a != b


def test_every_case_matches_its_schema_and_the_groups_take_turns(suite):
    lines = _lines(suite)
    assert len(lines) == N
    for case in lines:
        assert validate(case, case_schema(REGISTRY[case["type"]]), "case") == []
    groups = sorted(int(c["note"].split("#")[1].split()[0]) for c in lines)
    assert groups == list(range(N))
    assert sum(" greedy on " in c["note"] for c in lines) == 3 and sum(" eos_heavy " in c["note"] for c in lines) == 3


def test_prompts_are_left_padded_batches(suite):
    shapes = [np.array(c["input"]["attention_mask"]) for c in _lines(suite)]
    assert any(m.shape[0] > 1 and (m == 0).any() for m in shapes)
    for m in shapes:
        assert (m[:, -1] == 1).all() and (np.diff(m, axis=1) >= 0).all()   # pads on the left only


def test_near_ties_are_labelled_and_only_they(suite):
    for case in _lines(suite):
        margins = [m for step in case["margins"] for m in step if m is not None]
        near = bool(margins) and min(margins) <= NEAR_TIE
        assert ("near-tie: margin" in case["note"]) == near, case["id"]


def test_eos_heavy_cases_reach_genais_short_walk():
    cases = fresh_cases(6, 11, ("eos_heavy",))["engines_beam_search"]
    assert len(cases) == 6
    for case in cases:
        inp = case.input
        events: list = []
        decode_as("onnxruntime-genai", model_for(inp["model"], inp["config"]), inp["input_ids"],
                  inp["attention_mask"], inp["config"], events=events)
        assert events and all(e["filled"] < e["num_beams"] for e in events)
        assert len(inp["config"]["eos_token_id"]) >= 2


def test_every_fresh_case_decodes_without_an_exact_tie():
    """The expected answers are refdecode's own (docs/conformance.md says so); what is checked independently of
    that code is the transformers 4.38.2 control in CI and the engine profile below (a separate reimplementation)."""
    for cases in fresh_cases(3, 3, ("greedy", "beam_search")).values():
        for case in cases:
            _, margins = decode(case.input)
            assert smallest(margins) > 0


def test_serve_as_the_control_profile_passes_them(suite, capsys):
    cmd = f"{sys.executable} -m refdecode conformance serve --as transformers-4.38.2"
    assert check(suite, cmd, timeout=120) == 0
    assert f"{N} passed, 0 failed" in capsys.readouterr().out


@pytest.mark.parametrize("n, groups, message", [(0, ("greedy",), "`n`"), (2, ("sampling",), "`groups`"),
                                                (2, (), "`groups`")])
def test_bad_arguments_name_the_parameter(n, groups, message):
    with pytest.raises(ValueError, match=message):
        fresh_cases(n, 0, groups)


def test_the_cli_writes_and_reports(tmp_path, capsys):
    assert cli.main(["fresh", str(tmp_path / "s"), "--n", "2", "--seed", "4", "--groups", "greedy"]) == 0
    assert "wrote 2 fresh cases (seed 4" in capsys.readouterr().err
    assert cli.main(["fresh", str(tmp_path / "t"), "--n", "0", "--seed", "4"]) == 2



def test_the_groups_for_engines_without_beams_sample_and_penalise_only(tmp_path):
    """plain_greedy / sample (named in --groups only): no n-gram, no minimum length; sampled cases carry one uniform
    per row and step and are gpt2_sample cases; the 4.38.2 profile (decode_as, a separate reimplementation of the
    loop) gives their expected sequences with those uniforms."""
    groups = ("plain_greedy", "sample")
    write_fresh(tmp_path, 4, 11, groups)
    for case in _lines(tmp_path):
        assert validate(case, case_schema(REGISTRY[case["type"]]), "case") == []
    cases = fresh_cases(4, 11, groups)
    assert len(cases["engines_greedy"]) == 2 and len(cases["gpt2_sample"]) == 2 and not cases["engines_beam_search"]
    for name, found in cases.items():
        for case in found:
            inp, cfg = case.input, case.input["config"]
            assert cfg["no_repeat_ngram_size"] == 0 and cfg["min_new_tokens"] == 0 and cfg["min_length"] == 0
            assert cfg["do_sample"] == (name == "gpt2_sample")
            if cfg["do_sample"]:
                rows = inp["input_ids"].shape[0] * cfg["num_return_sequences"]
                assert inp["uniforms"].shape == (cfg["max_new_tokens"] * rows,)
            got = decode_as("transformers-4.38.2", model_for(inp["model"], cfg), inp["input_ids"],
                            inp["attention_mask"], cfg, inp.get("uniforms"))["sequences"]
            np.testing.assert_array_equal(got, decode(inp)[0]["sequences"], err_msg=case.note)


def test_a_stream_is_other_cases_of_the_same_seed_and_reproducible():
    zero = [c.note for cs in fresh_cases(3, SEED).values() for c in cs]
    one = [c.note for cs in fresh_cases(3, SEED, stream=1).values() for c in cs]
    again = [c.note for cs in fresh_cases(3, SEED, stream=1).values() for c in cs]
    assert one == again and one != zero
    assert all(f"fresh seed {SEED}.1 #" in note for note in one)
    assert all(f"fresh seed {SEED} #" in note for note in zero)
    with pytest.raises(ValueError, match="stream"):
        fresh_cases(3, SEED, stream=-1)


def test_a_fit_changes_the_input_before_the_expected_answers_are_computed(tmp_path, capsys):
    def one_eos(case):
        config = dict(case.input["config"], eos_token_id=[case.input["config"]["eos_token_id"][0]])
        return type(case)(case.note + "; one eos", {**case.input, "config": config})

    write_fresh(tmp_path, 4, SEED, ("beam_search",), fit=one_eos)
    for case in _lines(tmp_path):
        assert len(case["input"]["config"]["eos_token_id"]) == 1 and case["note"].endswith("; one eos")
    # the expected answers are those of the fitted input: refdecode's 4.38.2 profile, reading the fitted input, agrees
    cmd = f"{sys.executable} -m refdecode conformance serve --as transformers-4.38.2"
    assert check(tmp_path, cmd, timeout=120) == 0


# ---- shards: independent streams of one seed


@pytest.mark.slow
def test_shards_are_the_streams_of_one_seed_and_split_n(tmp_path, capsys):
    """--shard K/N writes stream K of the seed (shard 0: the unsharded draw's start), n // N cases, one more for the
    first n % N shards."""
    from refdecode.reference.conformance.fresh import shard_size

    notes = {}
    for k in range(3):
        assert cli.main(["fresh", str(tmp_path / str(k)), "--n", "7", "--seed", str(SEED), "--shard", f"{k}/3"]) == 0
        notes[k] = [case["note"] for case in _lines(tmp_path / str(k))]
    assert [len(notes[k]) for k in range(3)] == [3, 2, 2] == [shard_size(7, k, 3) for k in range(3)]
    assert sorted(notes[0]) == sorted(c.note for cs in fresh_cases(3, SEED).values() for c in cs)
    assert sorted(notes[2]) == sorted(c.note for cs in fresh_cases(2, SEED, stream=2).values() for c in cs)
    assert notes[1][0].startswith(f"fresh seed {SEED}.1 #0 ") and notes[2][0].startswith(f"fresh seed {SEED}.2 #0 ")
    assert not set(notes[0]) & set(notes[1]) and not set(notes[1]) & set(notes[2])
    assert "shard 1/3: stream 1" in capsys.readouterr().err


@pytest.mark.parametrize("shard", ["3/3", "-1/3", "1", "a/b"])
def test_a_bad_shard_is_refused_before_anything_is_drawn(tmp_path, capsys, shard):
    with pytest.raises(SystemExit):
        cli.main(["fresh", str(tmp_path / "out"), "--n", "7", "--seed", "1", f"--shard={shard}"])
    assert "has to be K/N with" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_fewer_cases_than_shards_is_refused(tmp_path, capsys):
    assert cli.main(["fresh", str(tmp_path / "out"), "--n", "3", "--seed", "1", "--shard", "0/4"]) == 2
    assert "`--n` has to be at least the number of shards (4) with --shard, but is 3" in capsys.readouterr().err


def test_the_llama_family_draws_llama_cases_that_serve_passes(tmp_path):
    """``--family llama``: the engines' types on the Llama family (the shipped Llama and the tiny ones), valid,
    answered by refdecode; the GPT-2 draw of the same seed holds no Llama model."""
    write_fresh(tmp_path, 6, SEED, ("greedy", "beam_search", "sample"), family="llama")
    lines = _lines(tmp_path)
    assert sorted({c["type"] for c in lines}) == ["engines_llama_beam_search", "engines_llama_greedy", "llama_sample"]
    for case in lines:
        assert case["input"]["model"]["kind"] == "llama"
        assert validate(case, case_schema(REGISTRY[case["type"]]), "case") == []
    assert all(c.input["model"]["kind"] == "gpt2" for cs in fresh_cases(3, SEED).values() for c in cs)
    cmd = f"{sys.executable} -m refdecode.cli conformance serve"
    assert check(tmp_path, cmd, timeout=120.0) == 0
    with pytest.raises(ValueError, match="`family` must be one of"):
        fresh_cases(1, SEED, family="opt")
