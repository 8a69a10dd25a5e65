"""refdecode.reference.diff: planted divergences are located to their step and stage, with the right verdict.

Each "other engine" is refdecode with one function deliberately broken (monkeypatched for one run):
a different token, a top-p that keeps one token too few, beam candidates K instead of 2K, a KV cache
that is not reordered, a length penalty on the total instead of the generated length. Near-ties are
made where refdecode's own scores tie, so the verdict can be checked both ways.
"""

from __future__ import annotations

import copy
import json
import sys

import numpy as np
import pytest
from conftest import MODELS

import refdecode.decoding.beam.beam_search  # noqa: F401  (the module, for monkeypatching; the package exports the function)
from refdecode import GPT2, Tokenizer, TopPLogitsWarper, generate
from refdecode.decoding.beam.beam_scorer import BeamHypotheses
from refdecode.reference.diff import first_divergence, load_other, main
from refdecode.model.kv_cache import KVCache
from refdecode.model.stand_ins import TableModel
from refdecode.reference.trace import TraceRecorder

BEAM = dict(num_beams=3, eos_token_id=[13, 198], pad_token_id=0, length_penalty=1.0)


@pytest.fixture(scope="module")
def shakespeare():
    model = GPT2.from_pretrained(MODELS / "tiny-shakespeare")
    ids, mask = Tokenizer(MODELS / "tiny-shakespeare").encode_batch(["ROMEO:\n"])
    return model, ids, mask


def _trace(model, ids, mask=None, **kwargs) -> dict:
    recorder = TraceRecorder()
    generate(model, ids, attention_mask=mask, trace=recorder, **kwargs)
    return json.loads(json.dumps(recorder.to_dict(), allow_nan=False))


def _beam_trace(shakespeare):
    model, ids, mask = shakespeare
    return _trace(model, ids, mask, max_new_tokens=8, **BEAM)


# ---- agreement


def test_a_trace_agrees_with_itself_and_with_its_own_token_ids(shakespeare):
    model, ids, mask = shakespeare
    trace = _trace(model, ids, mask, max_new_tokens=6)
    assert first_divergence(trace, copy.deepcopy(trace)) is None
    assert first_divergence(trace, trace["final"]["sequences"]) is None                       # prompt included
    assert first_divergence(trace, [row[ids.shape[1]:] for row in trace["final"]["sequences"]]) is None  # or not


# ---- planted divergences


def test_a_different_greedy_token_is_found_at_its_step(shakespeare):
    """Step 3 takes refdecode's runner-up: selection at step 3, algorithmic (margin far above 1e-4)."""
    model, ids, mask = shakespeare
    trace = _trace(model, ids, mask, max_new_tokens=6)
    rows = [list(r) for r in trace["final"]["sequences"]]
    runner_up = trace["steps"][3]["stages"][-1]["values"][0]["top_tokens"][1]
    rows[0][ids.shape[1] + 3] = runner_up
    found = first_divergence(trace, rows)
    assert (found.step, found.row, found.stage, found.verdict) == (3, 0, "selection/greedy_search", "algorithmic")
    assert found.other == f"token {runner_up}" and found.docs == "docs/greedy.md"
    assert found.function.startswith("refdecode.decoding.greedy.greedy_search")


def test_a_greedy_choice_between_tied_tokens_is_a_near_tie():
    """Tokens 1 and 2 have the same logit: refdecode takes 1 (lowest id), an engine that takes 2 drifted."""
    model = TableModel(np.array([[0.0, 2.0, 2.0, -1.0]] * 4, dtype=np.float32))
    trace = _trace(model, np.array([[0]]), max_new_tokens=2)
    found = first_divergence(trace, [[0, 2, 1]])
    assert (found.step, found.stage, found.verdict) == (0, "selection/greedy_search", "near-tie")


def test_a_top_p_that_keeps_one_token_too_few_is_found_at_the_warper(shakespeare, monkeypatch):
    """The broken warper also drops the lowest token the correct one keeps (the one that reaches p)."""
    model, ids, mask = shakespeare
    settings = dict(max_new_tokens=4, do_sample=True, top_p=0.8, top_k=0, seed=3)
    expected = _trace(model, ids, mask, **settings)
    correct = TopPLogitsWarper.__call__

    def one_too_few(self, input_ids, scores, **kwargs):
        out = correct(self, input_ids, scores, **kwargs)
        for row in out:
            kept = np.flatnonzero(np.isfinite(row))
            if kept.size > 1:
                row[kept[np.argmin(row[kept])]] = -np.inf
        return out

    monkeypatch.setattr(TopPLogitsWarper, "__call__", one_too_few)
    found = first_divergence(expected, _trace(model, ids, mask, **settings))
    assert (found.step, found.row, found.stage, found.verdict) == (0, 0, "TopPLogitsWarper", "algorithmic")
    assert "kept" in found.expected and "filtered" in found.other and found.docs == "docs/top-p.md"
    assert "against top_p = 0.8" in found.detail


def test_a_top_p_decision_on_the_boundary_is_a_near_tie():
    """p = (.5, .3, .2), top_p = 0.8: token 2 has exactly 0.8 above it, so refdecode drops it (kept iff < p);
    an engine whose float sum lands just under 0.8 keeps it: a near-tie (hand-edited trace)."""
    model = TableModel(np.log(np.array([[.5, .3, .2]] * 3, dtype=np.float32)))
    expected = _trace(model, np.array([[0]]), max_new_tokens=1, do_sample=True, top_p=0.8, top_k=0, seed=0)
    other = copy.deepcopy(expected)
    row = other["steps"][0]["stages"][-1]["values"][0]
    assert row["values"][2] == "-inf"                          # refdecode filtered it
    row["values"][2], row["n_neg_inf"] = float(np.log(np.float32(.2))), 0
    found = first_divergence(expected, other)
    assert (found.stage, found.verdict) == ("TopPLogitsWarper", "near-tie")


def test_beam_candidates_k_instead_of_2k_are_found_at_the_first_step(shakespeare, monkeypatch):
    """(One eos id, the model's: with K candidates an eos among them would make ``process`` raise.)"""
    model, ids, mask = shakespeare
    expected = _trace(model, ids, mask, max_new_tokens=6, num_beams=3)
    module = sys.modules["refdecode.decoding.beam.beam_search"]          # where the beam loop looks top_candidates up
    full = module.top_candidates
    monkeypatch.setattr(module, "top_candidates", lambda total, n: full(total, n // 2))  # 2K -> K
    found = first_divergence(expected, _trace(model, ids, mask, max_new_tokens=6, num_beams=3))
    assert (found.step, found.stage, found.verdict, found.prompt) == (0, "candidates", "algorithmic", 0)
    assert (found.expected, found.other) == ("6 candidates", "3 candidates")


def test_a_missing_cache_reorder_is_found_where_the_moved_beams_are_fed(shakespeare, monkeypatch):
    """Rows keep their old cache: the first model output after a step whose beam_idx moved rows differs.

    Step 0's beam_idx is [0, 0, 0], but all rows hold the same prompt then, so the first step that
    moves *different* rows is the first one after step 0 with beam_idx != [0, 1, 2].
    """
    expected = _beam_trace(shakespeare)
    monkeypatch.setattr(KVCache, "reorder", lambda self, beam_idx: None)
    found = first_divergence(expected, _beam_trace(shakespeare))
    moved = next(s["step"] for s in expected["steps"][1:] if s["selected"][0]["beam_idx"] != [0, 1, 2])
    assert (found.step, found.stage, found.verdict) == (moved + 1, "log_softmax", "algorithmic")
    assert "KVCache.reorder" in found.detail


def test_a_length_penalty_on_the_total_length_is_found_at_the_first_hypothesis(shakespeare, monkeypatch):
    """4.35's rule (whole hypothesis, prompt included) instead of 4.38's generated length (eos included)."""
    expected = _beam_trace(shakespeare)
    correct = BeamHypotheses.add
    monkeypatch.setattr(BeamHypotheses, "add", lambda self, hyp, score, beam_indices=None, *, generated_len:
                        correct(self, hyp, score, beam_indices, generated_len=len(hyp)))
    found = first_divergence(expected, _beam_trace(shakespeare))
    first = next(s for s in expected["steps"] if s.get("hypotheses"))
    hyp = first["hypotheses"][0]
    assert (found.step, found.stage, found.verdict) == (first["step"], "hypotheses", "algorithmic")
    assert found.row == hyp["row"]
    assert f"implies a length of {first['cur_len'] - 1:.4g}" in found.detail     # the stored tokens, prompt included
    assert found.function == "refdecode.decoding.beam.beam_scorer.BeamHypotheses.add"


def test_swapped_candidates_with_equal_scores_are_a_near_tie():
    """Two candidates tie exactly (same logit after the same beam): ranking them the other way is drift."""
    model = TableModel(np.array([[0.0, 1.0, 1.0, -2.0, -3.0]] * 5, dtype=np.float32))
    expected = _trace(model, np.array([[0]]), max_new_tokens=2, num_beams=2, pad_token_id=0)
    other = copy.deepcopy(expected)
    cand = other["steps"][0]["candidates"][0]
    assert cand["scores"][0] == cand["scores"][1] and cand["tokens"][:2] == [1, 2]
    cand["tokens"][:2] = [2, 1]
    found = first_divergence(expected, other)
    assert (found.step, found.stage, found.verdict) == (0, "candidates", "near-tie")


# ---- sampling with token ids only, stages, stopping, finalize


def test_sampled_ids_name_the_filter_or_call_it_a_different_draw(shakespeare):
    model, ids, mask = shakespeare
    trace = _trace(model, ids, mask, max_new_tokens=3, do_sample=True, top_k=5, seed=0)
    rows = [list(r) for r in trace["final"]["sequences"]]
    stage = trace["steps"][1]["stages"]
    allowed = [t for t in stage[-1]["values"][0]["top_tokens"] if t != rows[0][ids.shape[1] + 1]][0]
    filtered = stage[0]["values"][0]["top_tokens"][5]            # 6th best logit: top-k=5 removes it
    rows[0][ids.shape[1] + 1] = filtered
    found = first_divergence(trace, rows)
    assert (found.step, found.stage, found.verdict) == (1, "TopKLogitsWarper", "algorithmic")
    rows[0][ids.shape[1] + 1] = allowed
    found = first_divergence(trace, rows)
    assert (found.step, found.stage, found.verdict) == (1, "selection/sample", "random draw")


def test_a_missing_processor_and_an_early_stop_and_another_final_choice():
    model = TableModel(np.random.default_rng(1).standard_normal((9, 9)).astype(np.float32), noise=0.3)
    expected = _trace(model, np.array([[1, 2]]), max_new_tokens=4, repetition_penalty=1.5)
    other = _trace(model, np.array([[1, 2]]), max_new_tokens=4)
    found = first_divergence(expected, other)
    assert (found.step, found.stage, found.verdict) == (0, "RepetitionPenaltyLogitsProcessor", "algorithmic")
    assert found.other == ["logits"]
    shorter = copy.deepcopy(expected)
    shorter["steps"].pop()
    assert first_divergence(expected, shorter).stage == "stopping"
    beams = _trace(model, np.array([[1, 2]]), max_new_tokens=3, num_beams=2, num_return_sequences=2)
    swapped = copy.deepcopy(beams)
    swapped["final"]["sequences"].reverse()
    found = first_divergence(beams, swapped)
    assert (found.step, found.stage) == (None, "finalize")


def test_token_ids_alone_are_refused_for_beam_traces():
    model = TableModel(np.zeros((4, 4), dtype=np.float32))
    trace = _trace(model, np.array([[1]]), max_new_tokens=2, num_beams=2)
    with pytest.raises(ValueError, match="token ids alone can be compared for greedy_search and sample traces only"):
        first_divergence(trace, [[1, 0, 0]])


# ---- files and the command


def test_the_command_prints_the_divergence_and_exits_1(tmp_path, capsys):
    model = TableModel(np.array([[0.0, 2.0, 2.0, -1.0]] * 4, dtype=np.float32))
    recorder = TraceRecorder()
    generate(model, np.array([[0]]), max_new_tokens=2, trace=recorder)
    recorder.save(tmp_path / "expected.json")
    (tmp_path / "ids.txt").write_text("0 2 1\n")
    (tmp_path / "same.json").write_text("[[0, 1, 1]]")
    assert main([str(tmp_path / "expected.json"), str(tmp_path / "ids.txt")]) == 1
    out = capsys.readouterr().out
    assert "first divergence: step 0, row 0, stage selection/greedy_search" in out and "near-tie" in out
    assert main([str(tmp_path / "expected.json"), str(tmp_path / "same.json")]) == 0
    assert capsys.readouterr().out.strip() == "no divergence in 2 steps"
    assert main([str(tmp_path / "expected.json"), str(tmp_path / "ids.txt"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "near-tie"


def test_unreadable_other_files_are_refused_with_their_name(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 x\n")
    with pytest.raises(ValueError, match="bad.txt: neither JSON nor lines of integer token ids"):
        load_other(bad)
    (tmp_path / "obj.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a refdecode trace"):
        load_other(tmp_path / "obj.json")


def test_an_engine_that_stops_a_finished_row_is_not_a_divergence_but_a_short_running_row_is():
    """refdecode pads a row after its eos while another row runs; ids that end at the eos agree."""
    model = TableModel(np.log(np.array([[.1, .2, .7], [.6, .3, .1], [.2, .5, .3]], dtype=np.float32)))
    recorder = TraceRecorder()
    out = generate(model, np.array([[0], [2]]), max_length=5, eos_token_id=1, pad_token_id=0, trace=recorder)
    assert out.tolist() == [[0, 2, 1], [2, 1, 0]]
    assert first_divergence(recorder.to_dict(), [[0, 2, 1], [2, 1]]) is None
    found = first_divergence(recorder.to_dict(), [[0, 2], [2, 1, 0]])
    assert (found.step, found.row, found.stage) == (1, 0, "stopping")




def test_same_draws_turn_a_random_stream_verdict_into_the_filter_that_explains_it(tmp_path):
    """on a sampling trace, a real top-p bug was reported as "random streams differ". A conformance
    case's trace records the uniforms each step drew; with --same-draws, diff names the warper and the rule."""
    from refdecode.reference.conformance.export import export
    from refdecode.reference.conformance.plants import planted
    from refdecode.reference.conformance.registry import REGISTRY
    from refdecode.reference.conformance.suite import load_suite
    from refdecode.reference.conformance.tracing import trace_case

    export(tmp_path, types=["sample"], limit=3)
    _, cases = load_suite(tmp_path)
    case = cases[0]
    trace = trace_case(case)
    with planted("top_p_boundary"):
        other = REGISTRY["sample"].run(REGISTRY["sample"].inputs.decode(case["input"]))["sequences"].tolist()
    assert first_divergence(trace, other).verdict == "random draw"
    found = first_divergence(trace, other, same_draws=True)
    assert (found.stage, found.verdict) == ("TopPLogitsWarper", "algorithmic")
    assert "keeps one token too few" in found.detail
    (tmp_path / "t.json").write_text(json.dumps(trace))
    (tmp_path / "o.json").write_text(json.dumps(other))
    assert main([str(tmp_path / "t.json"), str(tmp_path / "o.json"), "--same-draws"]) == 1


# ---- hostile input: every wrong input is one line and status 2; 1 only means a divergence


@pytest.fixture()
def greedy_files(tmp_path):
    model = TableModel(np.array([[0.0, 2.0, 2.5, -1.0]] * 4, dtype=np.float32))
    recorder = TraceRecorder()
    generate(model, np.array([[0], [1]]), max_new_tokens=2, trace=recorder)
    recorder.save(tmp_path / "expected.json")
    return tmp_path, tmp_path / "expected.json"


def _status(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("content, message", [
    (None, "file not found"),
    ("folder", "is a directory; only a regular file can be read"),
    (b"\xff\xfe[1]", "not UTF-8"),
    ("", "the file is empty"),
    ("   \n", "the file is empty"),
    ('{"format": "refdecode-trace"}', "missing required field 'version'"),
    ('{"format": "refdecode-trace", "version": 1, "steps": [{"step": "x"}]}', "$.steps[0]"),
    ("[[0, 2, 9]]", "token id 9 is outside the vocabulary: ids are [0, 4)"),
    ("[[0, -1, 2]]", "token id -1 is outside the vocabulary"),
    ("[[0, true, 2]]", "rows of integer token ids"),
    ("[]", "non-empty list"),
    ("[" * 100000, "nested too deeply"),
])
def test_a_wrong_other_file_is_one_line_and_status_2(greedy_files, capsys, content, message):
    root, expected = greedy_files
    other = root / "other"
    if content == "folder":
        other.mkdir()
    elif isinstance(content, bytes):
        other.write_bytes(content)
    elif content is not None:
        other.write_text(content)
    code, err = _status(capsys, expected, other)
    assert code == 2 and message in err and "Traceback" not in err and err.count("\n") == 1, err


def test_a_wrong_expected_file_or_rtol_is_status_2(greedy_files, capsys, tmp_path):
    root, expected = greedy_files
    (root / "ids.txt").write_text("0 2 2\n1 2 2\n")
    (root / "list.json").write_text("[1, 2]")
    assert _status(capsys, root / "list.json", root / "ids.txt")[0] == 2
    for rtol in ("nan", "-1", "0", "inf"):
        code, err = _status(capsys, expected, root / "ids.txt", "--rtol", rtol)
        assert code == 2 and "--rtol has to be a finite number > 0" in err


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_is_refused_without_waiting_for_a_writer(greedy_files, capsys):
    import os
    root, expected = greedy_files
    os.mkfifo(root / "pipe")
    code, err = _status(capsys, expected, root / "pipe")
    assert code == 2 and "is a FIFO; only a regular file can be read" in err
    code, err = _status(capsys, root / "pipe", expected)
    assert code == 2 and "is a FIFO; only a regular file can be read" in err


def test_an_extra_or_missing_row_in_other_is_reported_as_a_divergence(greedy_files, capsys):
    root, expected = greedy_files
    trace = json.loads(expected.read_text())
    rows = [[0] + [s["selected"][0]["tokens"][0] for s in trace["steps"]],
            [1] + [s["selected"][0]["tokens"][1] for s in trace["steps"]]]
    (root / "same.json").write_text(json.dumps(rows))
    assert _status(capsys, expected, root / "same.json")[0] == 0
    (root / "extra.json").write_text(json.dumps(rows + [rows[0]]))
    found = first_divergence(trace, rows + [rows[0]])
    assert found.stage == "rows" and "3 rows" in found.other and "too many" in found.detail
    assert _status(capsys, expected, root / "extra.json")[0] == 1
    other = copy.deepcopy(trace)
    other["steps"][1]["selected"][0]["tokens"].pop()
    assert first_divergence(trace, other).stage == "rows"


@pytest.mark.slow
def test_diff_never_crashes_on_mutated_traces(tmp_path, shakespeare):
    """300 mutations of real traces (greedy, sampling, beam search): a key removed, a value of another type, a
    list cut or grown. diff answers each with a divergence, agreement, or a one-line error: never a traceback."""
    model, ids, mask = shakespeare
    traces = [_trace(model, ids, mask, max_new_tokens=4), _beam_trace(shakespeare),
              _trace(model, ids, mask, max_new_tokens=4, do_sample=True, top_k=5, seed=1)]
    for t in traces:
        (tmp_path / f"expected{traces.index(t)}.json").write_text(json.dumps(t))
    rng = np.random.default_rng(0)
    replacements = [None, "x", -1, 1.5, [], {}, [1, "a"], True, 10**30]
    outcomes = {0: 0, 1: 0, 2: 0}
    for n in range(300):
        which = n % 3
        other = copy.deepcopy(traces[which])
        node, parent, key = other, None, None
        for _ in range(int(rng.integers(1, 6))):          # walk down a random path
            if isinstance(node, dict) and node:
                key = list(node)[int(rng.integers(len(node)))]
            elif isinstance(node, list) and node:
                key = int(rng.integers(len(node)))
            else:
                break
            parent, node = node, node[key]
        if parent is None:
            continue
        action = int(rng.integers(3))
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(node, list):
            parent[key] = node[: len(node) // 2] if rng.integers(2) else node + node[:1]
        else:
            parent[key] = replacements[int(rng.integers(len(replacements)))]
        path = tmp_path / "other.json"
        path.write_text(json.dumps(other))
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = main([str(tmp_path / f"expected{which}.json"), str(path)])
        assert code in (0, 1, 2), code
        assert code != 2 or err.getvalue().count("\n") == 1
        outcomes[code] += 1
    assert outcomes[1] > 0 and outcomes[2] > 0   # both kinds of answer were exercised
