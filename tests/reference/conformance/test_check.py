"""refdecode.reference.conformance: export (deterministic, schema-valid), the protocol, the verdicts, and check vs serve.

Two exports per session keep this fast: ``unit_suite`` holds every unit case (processors,
warpers, BeamHypotheses) in full, ``decode_suite`` the first few cases of each decode type and of
BeamSearchScorer. The whole suite (>= 1,000 cases) is exported and checked against ``serve`` by
``.ci/run``; ``test_full_suite_counts`` builds it without running the decodes twice.
"""

from __future__ import annotations

import sys
import time

import pytest

import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)
from conformance_suites import SERVE, python_implementation, run_check, scaled_timeout

# ----------------------------------------------------------------------------------------------
# export


# ----------------------------------------------------------------------------------------------
# the toy model


# ----------------------------------------------------------------------------------------------
# protocol and verdicts


# ----------------------------------------------------------------------------------------------
# check against serve


@pytest.mark.slow
def test_check_with_serve_passes_every_unit_case(unit_suite):
    status, lines = run_check(unit_suite)
    n = sum(1 for _ in (unit_suite / "cases").glob("*.jsonl") for _ in _.read_text().splitlines())
    assert (status, lines) == (0, [f"{n} passed, 0 failed"])


@pytest.mark.slow
def test_check_with_serve_passes_every_decode_case(decode_suite):
    status, lines = run_check(decode_suite)
    n = sum(1 for _ in (decode_suite / "cases").glob("*.jsonl") for _ in _.read_text().splitlines())
    # every type exported, each up to DECODE_LIMIT cases (llama_beam_sample has 2)
    assert len(list((decode_suite / "cases").glob("*.jsonl"))) == len(DECODE_TYPES) and n <= len(DECODE_TYPES) * DECODE_LIMIT
    assert (status, lines) == (0, [f"{n} passed, 0 failed"])


@pytest.mark.slow
def test_check_only_and_a_failing_implementation(unit_suite):
    """--only narrows the run; an implementation that answers nothing useful fails every case, exit 1."""
    status, lines = run_check(unit_suite, only="min_length")
    assert status == 0 and lines == ["40 passed, 0 failed"]
    liar = f'"{sys.executable}" -c "import sys, json; [print(json.dumps({{\\"id\\": json.loads(l)[\\"id\\"], ' \
           f'\\"output\\": {{}}}}), flush=True) for l in sys.stdin]"'
    status, lines = run_check(unit_suite, liar, only="min_length")
    assert status == 1 and lines[-1] == "0 passed, 40 failed" and len(lines) == 41
    assert lines[0].startswith("FAIL min_length/0000") and "missing field 'scores'" in lines[0]


def test_check_survives_an_implementation_that_exits(unit_suite):
    """It is restarted for the next case; after 3 cases in a row without an answer check stops."""
    status, lines = run_check(unit_suite, f'"{sys.executable}" -c "pass"', only="min_length")
    assert status == 1 and lines[-1] == "0 passed, 3 failed, 37 not run" and "exited" in lines[0]
    assert lines[-2].startswith("STOPPED: 3 cases in a row got no answer")




# ---- misbehaving implementations: each got a hang, a shifted answer, a flood or a traceback


ECHO_SERVE = '''
from refdecode.reference.conformance.serve import answer
for n, line in enumerate(sys.stdin):
    {before}
    print(answer(line), flush=True)
'''


def _impl(tmp_path, before: str = "pass") -> str:
    return python_implementation(tmp_path, ECHO_SERVE.format(before=before))


@pytest.mark.slow
def test_a_closed_stdout_with_a_running_process_is_no_answer_not_a_hang(unit_suite, tmp_path):
    """Before: ``check`` waited forever for ``exec >&-; sleep 600`` (it waited for the exit to print its code)."""
    start = time.monotonic()
    status, lines = run_check(unit_suite, "exec >&-; sleep 600", only="min_length", timeout=2)
    assert status == 1 and "closed its standard output but keeps running" in lines[0]
    assert lines[-1] == "0 passed, 3 failed, 37 not run" and time.monotonic() - start < 30


@pytest.mark.slow
def test_a_late_answer_does_not_shift_the_later_cases(unit_suite, tmp_path):
    """Before: the late answer to case 1 was taken as case 2's, and every later case failed on its id. The timeout
    is scaled to the machine's load (a start and an answer, measured), the late answer comes after any of them."""
    timeout = scaled_timeout(_impl(tmp_path), least=15)
    late = 'time.sleep(3600) if json.loads(line)["id"] == "min_length/0001" else None'
    status, lines = run_check(unit_suite, _impl(tmp_path, late), only="min_length", timeout=timeout)
    assert status == 1 and lines[-1] == "39 passed, 0 failed, 1 timed out"
    assert lines[0].startswith("TIMEOUT min_length/0001")
    assert f"no response within {timeout} s (the implementation is restarted)" in lines[0]


@pytest.mark.slow
def test_a_flood_fails_its_case_without_holding_it_in_memory(unit_suite, tmp_path, monkeypatch):
    """Before: ``head -c 1500000000 /dev/zero`` grew check to 1.5 GB; now a line is bounded (a small bound here)."""
    from refdecode.reference.conformance import check as check_module

    monkeypatch.setattr(check_module, "MAX_RESPONSE_BYTES", 4096)
    status, lines = run_check(unit_suite, "head -c 1000000 /dev/zero", only="min_length", timeout=5)
    assert status == 1 and "longer than 4096 bytes" in lines[0]


@pytest.mark.slow
def test_junk_huge_numbers_and_deep_nesting_fail_their_case_only(unit_suite, tmp_path):
    """Before: a response holding 10**400 crashed check with an OverflowError."""
    junk = ('print({0: "not json", 1: json.dumps({"id": json.loads(line)["id"], "output": {"scores": [[10**400]]}}), '
            '2: "[" * 100000, 3: "\\\\xff"}.get(n, answer(line)), flush=True)')
    body = ECHO_SERVE.replace("    print(answer(line), flush=True)\n", "").replace("{before}", junk)
    status, lines = run_check(unit_suite, python_implementation(tmp_path, body), only="min_length")
    assert status == 1 and lines[-1] == "36 passed, 4 failed"
    assert "not JSON" in lines[0] and "could not be compared" in lines[1] and "not JSON" in lines[2]


@pytest.mark.slow
def test_an_implementation_that_does_not_read_its_input_is_no_answer(unit_suite):
    """Requests larger than the pipe buffer: ``check`` wrote into a pipe nobody read, forever."""
    status, lines = run_check(unit_suite, "sleep 600", only="top_p", timeout=1)
    assert status == 1 and lines[-1].startswith("0 passed, 0 failed, 3 timed out, ") and lines[-1].endswith("not run")
    assert lines[0].startswith("TIMEOUT top_p/") and "within 1 s" in lines[0]


@pytest.mark.slow
def test_unsupported_cases_are_counted_apart_and_never_pass(unit_suite, tmp_path):
    body = ECHO_SERVE.replace("print(answer(line), flush=True)",
                              'print(json.dumps({"id": json.loads(line)["id"], "unsupported": "no min_length here"}) '
                              'if n % 2 else answer(line), flush=True)').replace("{before}", "pass")
    status, lines = run_check(unit_suite, python_implementation(tmp_path, body), only="min_length",
                              list_unsupported=True)
    assert status == 0 and lines[-1] == "20 passed, 0 failed, 20 unsupported"
    assert lines[0] == f"UNSUPPORTED min_length/0001 ({lines[0].split('(')[1].split(')')[0]}): no min_length here"


@pytest.mark.slow
def test_a_failing_decode_names_the_step_row_and_stage_where_it_departs(decode_suite):
    """for a failing decode case, check runs the diff itself (refdecode's trace of the case against
    the implementation's token ids) and prints the first divergent step, row and stage with the verdict; when the
    tokens agree but the scores differ, the step and row, and which of refdecode's stages the scores match."""
    status, lines = run_check(decode_suite, SERVE + " --plant top_p_boundary", only="sample,gpt2_sample")
    fails = [i for i, line in enumerate(lines) if line.startswith("FAIL ")]
    assert status == 1 and fails and all(lines[i + 1].startswith("    ") for i in fails)
    located = [lines[i + 1: i + 7] for i in fails if "first divergence" in lines[i + 1]]
    assert located and all(", stage TopPLogitsWarper" in d[0] for d in located)   # the same uniforms on both sides
    assert all(any("verdict:   algorithmic" in line and "keeps one token too few" in line for line in d)
               for d in located)
    status, lines = run_check(decode_suite, SERVE + " --plant repetition_penalty_sign", only="greedy")
    hints = [line for line in lines if line.startswith("    the tokens agree; the scores first differ at step")]
    assert status == 1 and hints and all("RepetitionPenaltyLogitsProcessor" in h for h in hints)


# ---- timeouts: apart from wrong answers, and scaled with the case's size


def test_the_timeout_scales_with_the_decodes_size_only(tmp_path):
    """SECONDS covers 64 token positions of GPT-2 124M (124M x 64 parameter-positions); a larger decode waits
    in proportion; processor cases and the tiny models wait SECONDS."""
    import json

    import numpy as np

    from refdecode.reference.conformance.check import case_timeout

    (tmp_path / "config.json").write_text(json.dumps({"n_layer": 12, "n_embd": 768, "vocab_size": 50257,
                                                      "n_positions": 1024}))
    parameters = 12 * 12 * 768 * 768 + (50257 + 1024) * 768        # 124,318,464: GPT-2 124M
    ids = np.zeros((3, 10), dtype=np.int64)                         # 3 prompts of 10 tokens
    beam = {"input": {"model": {"kind": "gpt2", "path": str(tmp_path)}, "input_ids": ids,
                      "config": {"num_beams": 5, "num_return_sequences": 2, "max_new_tokens": 20}}}
    positions = 3 * 5 * (10 + 20)                                   # rows x (prompt + new)
    assert case_timeout(beam, 60.0) == pytest.approx(60.0 * parameters * positions / (124_000_000 * 64))
    assert 420 < case_timeout(beam, 60.0) < 425
    short = {"input": dict(beam["input"], input_ids=ids[:1, :2], config={"max_new_tokens": 4})}
    assert case_timeout(short, 60.0) == 60.0                        # 6 positions: below the unit
    tiny = {"input": dict(beam["input"], model={"kind": "gpt2", "path": str(tmp_path / "missing")})}
    assert case_timeout(tiny, 60.0) == 60.0                         # no config.json: no size known
    assert case_timeout({"input": {"scores": np.zeros((1, 4), np.float32)}}, 60.0) == 60.0


@pytest.mark.slow
def test_a_timeout_is_counted_apart_from_a_wrong_answer(unit_suite, tmp_path):
    """Before: one slow answer was 'FAIL ... no response within 60 s', counted among the wrong answers."""
    body = ECHO_SERVE.replace("print(answer(line), flush=True)",
                              'print(answer(line).replace("0.", "1.", 1) if n == 3 else answer(line), flush=True)')
    late = 'time.sleep(40) if json.loads(line)["id"] == "min_length/0001" else None'
    status, lines = run_check(unit_suite, python_implementation(tmp_path, body.format(before=late)), only="min_length",
                              timeout=15)
    assert status == 1 and lines[-1] == "38 passed, 1 failed, 1 timed out"
    assert lines[0].startswith("TIMEOUT min_length/0001") and lines[1].startswith("FAIL min_length/")
