"""refdecode.cli: the README's command, its errors (exit 2, one line, no traceback), streaming, Ctrl-C, I/O errors.

Every test runs the command in a subprocess, as a user does (``python -m refdecode`` is the same
entry point as the ``refdecode`` script).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from conftest import MODELS, ROOT

MODEL = ["--model", str(MODELS / "tiny-shakespeare")]


def run(*args: str, stdout=subprocess.PIPE, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "refdecode", *args], stdout=stdout, stderr=subprocess.PIPE,
                          timeout=timeout, env={**os.environ, "PYTHONWARNINGS": "", "COLUMNS": "200"})


def text(b: bytes | None) -> str:
    return (b or b"").decode("utf-8", "replace")


@pytest.mark.slow
def test_cli_prints_the_prompt_and_a_continuation():
    out = run("ROMEO:", *MODEL, "--max-new-tokens", "8")
    assert out.returncode == 0, text(out.stderr)
    assert text(out.stdout).startswith("ROMEO:") and len(out.stdout) > len("ROMEO:\n")
    assert text(out.stdout).endswith("\n") and not text(out.stdout).endswith("\n\n") and out.stderr == b""


@pytest.mark.slow
def test_version_and_help_show_defaults_without_rest_markup():
    version = run("--version")
    assert version.returncode == 0 and text(version.stdout).startswith("refdecode 0.")
    helptext = text(run("--help").stdout)
    assert "``" not in helptext and ":class:" not in helptext
    assert "(default: 1)" in helptext and "else 40)" in helptext and "tiny-shakespeare" in helptext


@pytest.mark.slow
def test_stop_strings_and_the_newer_warpers_are_options():
    out = run("ROMEO:", *MODEL, "--max-new-tokens", "20", "--stop", "not", "--stop", "zzz")
    assert out.returncode == 0 and text(out.stdout).rstrip("\n").endswith("not"), text(out.stdout)
    sampled = run("ROMEO:", *MODEL, "--max-new-tokens", "5", "--do-sample", "--min-p", "0.1", "--typical-p", "0.9")
    assert sampled.returncode == 0 and sampled.stderr == b"", text(sampled.stderr)


@pytest.mark.slow
def test_serving_penalties_and_logit_bias_are_options_run_as_the_library_runs_them():
    """--frequency-penalty / --presence-penalty / --logit-bias become a logits_processor list with the prompt's
    length: the printed text equals generate(..., logits_processor=[...]) in-process, token for token."""
    from refdecode import (FrequencyPenaltyLogitsProcessor, GPT2, LogitBiasLogitsProcessor,
                           PresencePenaltyLogitsProcessor, Tokenizer, generate)

    model, tokenizer = GPT2.from_pretrained(MODELS / "tiny-shakespeare"), Tokenizer(MODELS / "tiny-shakespeare")
    inputs = tokenizer(["ROMEO:"], return_tensors="np")
    n = inputs["input_ids"].shape[1]
    processors = [FrequencyPenaltyLogitsProcessor(2.0, n), PresencePenaltyLogitsProcessor(1.5, n)]
    expected = tokenizer.decode(generate(model, **inputs, max_new_tokens=12, logits_processor=processors)[0],
                                skip_special_tokens=True)
    plain = run("ROMEO:", *MODEL, "--max-new-tokens", "12")
    out = run("ROMEO:", *MODEL, "--max-new-tokens", "12", "--frequency-penalty", "2", "--presence-penalty", "1.5")
    assert out.returncode == 0, text(out.stderr)
    assert text(out.stdout) == expected + "\n" != text(plain.stdout)
    token = int(tokenizer(["!"], return_tensors="np")["input_ids"][0, 0])
    biased = run("ROMEO:", *MODEL, "--max-new-tokens", "3", "--logit-bias", f"{token}:100")
    assert biased.returncode == 0 and text(biased.stdout) == "ROMEO:!!!\n", text(biased.stdout)


# ---- usage errors: exit 2, one short line on stderr, no traceback

USAGE_ERRORS = {
    "top_p_out_of_range": (["ROMEO:", "--do-sample", "--top-p", "1.5"], "`--top-p`"),
    "empty_prompt": ([""], "the prompt is empty"),
    "missing_model_dir": (["ROMEO:", "--model", "/nonexistent/model"], "--model /nonexistent/model: no such directory"),
    "diversity_without_groups": (["ROMEO:", "--num-beams", "4", "--diversity-penalty", "1.0"], "`--num-beam-groups`"),
    "negative_num_beams": (["ROMEO:", "--num-beams", "-1"], "`--num-beams`"),
    "not_a_number": (["ROMEO:", "--num-beams", "four"], "invalid int value: 'four'"),
    "unknown_flag": (["ROMEO:", "--beams", "4"], "unrecognized arguments: --beams"),
    "too_many_tokens": (["ROMEO:", "--max-new-tokens", "300"], "`--max-new-tokens` is too large"),
    "frequency_penalty_out_of_range": (["ROMEO:", "--frequency-penalty", "2.5"],
                                       "`--frequency-penalty` has to be a float in [-2.0, 2.0], but is 2.5"),
    "presence_penalty_out_of_range": (["ROMEO:", "--presence-penalty", "-3"],
                                      "`--presence-penalty` has to be a float in [-2.0, 2.0], but is -3.0"),
    "logit_bias_not_id_colon_bias": (["ROMEO:", "--logit-bias", "50"], "--logit-bias 50: give ID:BIAS"),
    "logit_bias_outside_the_vocabulary": (["ROMEO:", "--logit-bias", "99999:1"],
                                          "`--logit-bias` has to hold token ids in [0, "),
    "return_more_than_beams": (["ROMEO:", "--num-beams", "2", "--num-return-sequences", "3"],
                               "`--num-return-sequences` (3) has to be smaller or equal to `--num-beams` (2)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(USAGE_ERRORS))
def test_usage_errors_end_with_status_2_and_one_line(case):
    args, expected = USAGE_ERRORS[case]
    out = run(*args, *(MODEL if "--model" not in args else []))
    err = text(out.stderr)
    assert out.returncode == 2, err
    assert "Traceback" not in err and expected in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("refdecode: error:")]
    assert len(lines) == 1 and len(err.splitlines()) <= 2, err  # argparse's errors add a short usage line
    assert out.stdout == b""


def test_invalid_utf8_prompt(tmp_path):
    out = subprocess.run([sys.executable, "-m", "refdecode", b"ROMEO\xff:", *MODEL], capture_output=True,
                         timeout=120)
    assert out.returncode == 2 and text(out.stderr) == "refdecode: error: the prompt is not valid UTF-8 " \
        "(byte 0xff at character 5)\n"


def test_a_broken_checkpoint_is_a_usage_error_naming_the_file(tmp_path):
    for name in ("config.json", "tokenizer.json", "generation_config.json"):
        (tmp_path / name).write_bytes((MODELS / "tiny-shakespeare" / name).read_bytes())
    (tmp_path / "model.safetensors").write_bytes((MODELS / "tiny-shakespeare" / "model.safetensors").read_bytes()[:999])
    out = run("ROMEO:", "--model", str(tmp_path))
    err = text(out.stderr)
    assert out.returncode == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith(f"refdecode: error: --model {tmp_path}: cannot load the checkpoint:") and "model.safetensors" in err


@pytest.mark.slow
def test_warnings_are_one_line_each_and_name_the_flags():
    """4.38.2 warns when a sampling flag is given without sampling; the CLI says it with the flags' names."""
    out = run("ROMEO:", *MODEL, "--max-new-tokens", "3", "--top-p", "0.5", "--top-k", "3")
    err = text(out.stderr).splitlines()
    assert out.returncode == 0 and len(err) == 2, err
    assert err[0].startswith("refdecode: warning: `--do-sample` is not given. However, `--top-p` is set to `0.5`")
    assert "You should set `--do-sample` or unset `--top-k`." in err[1]


# ---- streaming, progress, interrupts, output errors

_COUNTING = """
import sys
from refdecode import cli

load = cli._load


class Counting:  # the model, writing one NUL byte to stdout per forward pass (same stream as the text)
    def __init__(self, model):
        self.model = model

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, *args, **kwargs):
        sys.stdout.write("\\0")
        sys.stdout.flush()
        return self.model(*args, **kwargs)


def counting_load(model_dir):
    model, tokenizer = load(model_dir)
    return Counting(model), tokenizer


cli._load = counting_load
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--do-sample", "--seed", "3"]], ids=["greedy", "sample"])
def test_output_is_streamed_before_the_last_token_is_generated(mode):
    """Read the pipe as it is written: generated text must appear before the model's last forward pass
    (a NUL marks each pass on the same stream, so the order is exact; no timing involved)."""
    proc = subprocess.Popen([sys.executable, "-c", _COUNTING, "ROMEO:", *MODEL, "--max-new-tokens", "30",
                             "--min-new-tokens", "30", *mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks = []
    while chunk := os.read(proc.stdout.fileno(), 64):
        chunks.append(chunk)
    proc.wait(timeout=120)
    stream = b"".join(chunks)
    assert proc.returncode == 0, text(proc.stderr.read())
    passes = stream.count(b"\0")
    assert passes == 30  # prefill + 29 decode steps = 30 new tokens
    first_generated = stream.index(b"ROMEO:") + len(b"ROMEO:") + 1  # after the prompt (whitespace follows it)
    text_positions = [i for i, c in enumerate(stream) if c not in b"\0\n " and i >= first_generated]
    last_pass = stream.rindex(b"\0")
    assert text_positions and text_positions[0] < last_pass, stream
    assert stream[:text_positions[0]].count(b"\0") < passes // 2  # the first words came early, not at the end
    assert len(chunks) > 1  # the reader got the output in pieces


@pytest.mark.slow
def test_beam_search_shows_progress_on_stderr_and_prints_at_the_end():
    out = run("ROMEO:", *MODEL, "--max-new-tokens", "6", "--num-beams", "3", "--progress")
    assert out.returncode == 0 and text(out.stdout).startswith("ROMEO:")
    assert "beam search" in text(out.stderr) and "Traceback" not in text(out.stderr)
    quiet = run("ROMEO:", *MODEL, "--max-new-tokens", "6", "--num-beams", "3")  # stderr is a pipe: no bar
    assert quiet.stderr == b"" and quiet.stdout == out.stdout


@pytest.mark.slow
def test_ctrl_c_ends_quietly_with_what_was_generated():
    """As from a terminal: SIGINT at its default disposition in the child (a shell that starts a job in the
    background, as a CI runner may, ignores SIGINT for it, and Python then keeps ignoring it)."""
    proc = subprocess.Popen([sys.executable, "-m", "refdecode", "ROMEO:", *MODEL, "--max-new-tokens", "250",
                             "--min-new-tokens", "250"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = os.read(proc.stdout.fileno(), 1024)  # the prompt line: generation has started
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, text(err)
    assert text(err) == "refdecode: interrupted\n"
    assert (first + rest).startswith(b"ROMEO:") and (first + rest).endswith(b"\n")


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_status_1():
    with open("/dev/full", "w") as full:
        out = run("ROMEO:", *MODEL, "--max-new-tokens", "5", stdout=full)
    assert out.returncode == 1 and text(out.stderr) == "refdecode: error: cannot write the output: No space left " \
        "on device\n"


@pytest.mark.slow
def test_a_closed_pipe_ends_the_cli_without_a_traceback():
    proc = subprocess.Popen([sys.executable, "-m", "refdecode", "ROMEO:", *MODEL],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is printed (loading the model takes longer)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err.decode(), err.decode()
    assert proc.returncode == 1


@pytest.mark.slow
def test_the_default_model_is_found_from_any_directory(tmp_path):
    """Without --model the shipped tiny-shakespeare is used, whatever the working directory."""
    out = subprocess.run([sys.executable, "-m", "refdecode", "ROMEO:", "--max-new-tokens", "3"], cwd=tmp_path,
                         capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and text(out.stdout).startswith("ROMEO:"), text(out.stderr)


# ---- subcommands (other commands register in cli.SUBCOMMANDS)

_SEEN: list[list[str]] = []


def _record_argv(argv):
    _SEEN.append(argv)
    return 3


def test_a_registered_subcommand_gets_the_remaining_arguments(monkeypatch):
    """``refdecode NAME args`` calls the registered ``module:function`` with ``args`` and returns its status."""
    from refdecode import cli

    _SEEN.clear()
    monkeypatch.setitem(cli.SUBCOMMANDS, "echo-test", f"{__name__}:_record_argv")  # this module, as pytest named it
    assert cli.main(["echo-test", "a", "--b"]) == 3
    assert _SEEN == [["a", "--b"]]


def test_help_lists_the_subcommands_and_how_to_generate_from_a_prompt_named_like_one(capsys):
    from refdecode import cli

    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert done.value.code == 0
    for name in cli.SUBCOMMANDS:
        assert f"refdecode {name}" in text
    assert "refdecode -- explain" in text


def test_a_trace_path_that_cannot_be_written_is_refused_before_loading_anything(tmp_path, capsys):
    """Before: the whole generation ran, then the trace failed with a traceback. Now the path is checked first: the
    model folder given here does not even exist, and the error is still the trace's."""
    from refdecode import cli

    for trace, why in [(tmp_path / "missing" / "t.json", "does not exist"), (tmp_path, "is a directory")]:
        with pytest.raises(SystemExit) as done:
            cli.main(["ROMEO:", "--model", str(tmp_path / "no-model"), "--trace", str(trace)])
        err = capsys.readouterr().err
        assert done.value.code == 2 and f"--trace {trace}" in err and why in err
