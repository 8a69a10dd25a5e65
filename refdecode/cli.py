"""The ``refdecode`` command: generate text from a prompt with a model in ``models/``.

Contract: prompt text in, generated text on stdout; every generation option is a
:class:`~refdecode.generation_config.GenerationConfig` field, defaulting to the model's own
``generation_config.json``, except the serving API's ``--frequency-penalty``, ``--presence-penalty`` and
``--logit-bias``, which no version of transformers has: they become a ``logits_processor`` list. Nothing is downloaded: ``--model`` is a local directory.

    refdecode "ROMEO:"                                   # the model's default decoding, streamed
    refdecode "ROMEO:" --num-beams 4 --num-return-sequences 2
    refdecode "ROMEO:" --do-sample --top-p 0.9 --temperature 0.8 --seed 0
    python -m refdecode --help                           # the same command
    refdecode "ROMEO:" --num-beams 3 --trace trace.json  # also write a step trace (docs/traces.md)
    refdecode explain "ROMEO:" --num-beams 3 --max-new-tokens 8   # each step as a table
    refdecode diff trace.json other.json                 # where another engine departs from refdecode

Greedy search and sampling (one sequence) print each word as it is generated (a
:class:`~refdecode.text.streamers.TextStreamer`); beam methods show a progress bar on stderr (tqdm,
when stderr is a terminal, or with ``--progress``) and print the result at the end.

How it ends (the status is what scripts see):

- 0: done.
- 2: a usage error (argparse's convention): a bad or inconsistent option (the message names the
  ``--flag``), an empty or non-UTF-8 prompt, a missing or unreadable ``--model`` directory. One
  line on stderr, no traceback.
- 1: the output could not be written (a full disk, ``> /dev/full``; a closed pipe, ``| head``).
- 130: interrupted (Ctrl-C); streamed text generated so far is flushed first.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, NoReturn

from . import __version__
from .text.streamers import TextStreamer

PROG = "refdecode"
#: Default ``--max-new-tokens`` when the model's generation_config.json sets none (the library's own
#: default, ``max_length=20`` counting the prompt, is too short to read).
DEFAULT_MAX_NEW_TOKENS = 40


# ---- the default model: found in a source checkout and after a non-editable install


def default_model_dir() -> Path:
    """``models/tiny-shakespeare``: next to the package in a checkout (or an editable install), else the copy
    that ``pip install .`` puts in ``<prefix>/share/refdecode/models/`` (pyproject's ``data-files``)."""
    import site

    name = Path("models") / "tiny-shakespeare"
    candidates = [Path(__file__).resolve().parent.parent / name,
                  Path(sys.prefix) / "share" / "refdecode" / name,
                  Path(site.getuserbase()) / "share" / "refdecode" / name]
    return next((c for c in candidates if (c / "config.json").is_file()), candidates[0])


# ---- options: (flag, GenerationConfig field, type, help)

_OPTIONS = [
    ("--max-new-tokens", "max_new_tokens", int,
     f"new tokens to generate, prompt not counted (default: the model's generation_config.json, "
     f"else {DEFAULT_MAX_NEW_TOKENS})"),
    ("--min-new-tokens", "min_new_tokens", int, "forbid eos before this many new tokens (default: none)"),
    ("--num-beams", "num_beams", int, "beams per prompt; > 1 selects beam search (default: 1)"),
    ("--num-beam-groups", "num_beam_groups", int,
     "diverse (group) beam search: groups of beams, needs --diversity-penalty (default: 1)"),
    ("--diversity-penalty", "diversity_penalty", float,
     "Hamming penalty between beam groups, needs --num-beam-groups > 1 (default: 0.0)"),
    ("--num-return-sequences", "num_return_sequences", int,
     "sequences to print: <= --num-beams, or any number with --do-sample (default: 1)"),
    ("--length-penalty", "length_penalty", float, "beam score = sum of log-probs / length ** this (default: 1.0)"),
    ("--temperature", "temperature", float, "divide the logits by this when sampling (default: 1.0)"),
    ("--top-k", "top_k", int, "sample from the k most likely tokens; 0 = off (default: 50)"),
    ("--top-p", "top_p", float, "sample from the smallest set of tokens with probability >= p (default: 1.0 = off)"),
    ("--repetition-penalty", "repetition_penalty", float, "penalise tokens already present; 1.0 = off (default: 1.0)"),
    ("--no-repeat-ngram-size", "no_repeat_ngram_size", int, "forbid repeating any n-gram of this size (default: 0)"),
    ("--typical-p", "typical_p", float, "locally typical sampling mass; 1.0 = off (default: 1.0)"),
    ("--epsilon-cutoff", "epsilon_cutoff", float, "drop tokens with probability < this when sampling (default: 0.0)"),
    ("--eta-cutoff", "eta_cutoff", float, "eta sampling cutoff; 0.0 = off (default: 0.0)"),
    ("--min-p", "min_p", float, "drop tokens below this fraction of the top probability (transformers 4.41; "
     "default: off)"),
    ("--max-time", "max_time", float, "stop after this many seconds (default: none)"),
]
_FLAGS = {field: flag for flag, field, _, _ in _OPTIONS} | {"do_sample": "--do-sample",
                                                            "early_stopping": "--early-stopping",
                                                            "stop_strings": "--stop",
                                                            "frequency_penalty": "--frequency-penalty",
                                                            "presence_penalty": "--presence-penalty",
                                                            "logit_bias": "--logit-bias"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Two lines instead of argparse's full usage (a dozen lines with every option) and the error."""
        self.exit(2, f"{PROG}: error: {message}\nusage: {PROG} [OPTIONS] PROMPT   ({PROG} --help lists the options)\n")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Generate text from a prompt with a local GPT-2 checkpoint, decoding exactly as\n"
                    "Hugging Face transformers 4.38.2 does.",
        epilog="examples:\n"
               f"  {PROG} \"ROMEO:\"\n"
               f"  {PROG} \"ROMEO:\" --num-beams 4 --num-return-sequences 2\n"
               f"  {PROG} \"ROMEO:\" --do-sample --top-p 0.9 --temperature 0.8 --seed 0\n\n"
               "Options not given come from the model's generation_config.json, else from transformers'\n"
               "defaults. Exit status: 0 done, 2 usage error, 1 output not written, 130 interrupted.\n\n"
               "subcommands (refdecode NAME --help for each):\n"
               + "".join(f"  {PROG} {name:<12} {text}\n" for name, text in SUBCOMMAND_HELP.items())
               + f"A prompt that equals a subcommand's name follows --: {PROG} -- explain")
    ap.add_argument("prompt", help="text to continue (use -- before a prompt that starts with '-' or that equals "
                                   "a subcommand's name)")
    ap.add_argument("--model", type=Path, default=None, metavar="DIR",
                    help="directory with config.json (gpt2, llama, mistral, qwen2), model.safetensors, "
                         f"tokenizer.json (default: {default_model_dir()})")
    for flag, field, kind, text in _OPTIONS:
        ap.add_argument(flag, dest=field, type=kind, default=None, metavar=field.split("_")[-1].upper()
                        if kind is int else "X", help=text)
    ap.add_argument("--do-sample", dest="do_sample", action="store_true", default=None,
                    help="sample instead of searching (default: off)")
    ap.add_argument("--early-stopping", dest="early_stopping", choices=["true", "false", "never"], default=None,
                    help="when beam search stops (default: false)")
    ap.add_argument("--stop", dest="stop_strings", action="append", default=None, metavar="TEXT",
                    help="stop when the text ends with TEXT; repeatable (transformers 4.41's stop_strings)")
    ap.add_argument("--frequency-penalty", dest="frequency_penalty", type=float, default=None, metavar="X",
                    help="subtract X per earlier occurrence among the generated tokens, in [-2, 2] (OpenAI's "
                         "frequency_penalty; not in transformers 4.38.2; default: off)")
    ap.add_argument("--presence-penalty", dest="presence_penalty", type=float, default=None, metavar="X",
                    help="subtract X from every token already generated, in [-2, 2] (OpenAI's presence_penalty; "
                         "not in transformers 4.38.2; default: off)")
    ap.add_argument("--logit-bias", dest="logit_bias", action="append", default=None, metavar="ID:BIAS",
                    help="add BIAS to token ID's logit at every step; repeatable (OpenAI's logit_bias; not in "
                         "transformers 4.38.2)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random generator when sampling (default: 0)")
    ap.add_argument("--trace", type=Path, default=None, metavar="FILE",
                    help="also write a step trace (JSON) to FILE, for `refdecode diff` (docs/traces.md)")
    ap.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress bar on stderr when the text is printed at the end: beam methods, several "
                         "sampled sequences (default: when stderr is a terminal)")
    ap.add_argument("--version", action="version", version=f"{PROG} {__version__} (decoding of transformers 4.38.2)")
    return ap


# ---- subcommands
# ``refdecode NAME ...`` runs a subcommand when NAME is a key of SUBCOMMANDS; anything else is a prompt
# for the generation command. To register one, add ``"name": "refdecode.module:function"`` here, where
# ``function(argv: list[str]) -> int`` parses ``argv`` (the arguments after NAME) itself and returns the
# exit status. The module is imported only when its subcommand runs, so cli.py imports none of them.
# (A prompt that equals a subcommand's name can still be generated from: ``refdecode -- NAME``.)
SUBCOMMANDS: dict[str, str] = {
    "conformance": "refdecode.reference.conformance.cli:main",
    "diff": "refdecode.reference.diff:main",
    "explain": "refdecode.reference.explain:main",
}
#: one line per subcommand, for ``refdecode --help``
SUBCOMMAND_HELP = {
    "conformance": "export the conformance suite, check an implementation against it, serve refdecode's answers",
    "diff": "the first step, row and stage where another engine's trace departs from refdecode's",
    "explain": "generate and print each step as tables (probabilities, candidates, hypotheses)",
}


# ---- for the subcommands that generate too (refdecode explain): the same flags, checkpoint and options


def generation_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The generation command's parser (prompt, ``--model``, every option) under another name."""
    ap = _parser()
    ap.prog, ap.description, ap.epilog = prog, description, None
    return ap


def load_generation(args: argparse.Namespace) -> tuple[Any, Any, dict[str, Any]]:
    """Parsed flags -> (model, tokenizer, ``generate`` keyword arguments), as the generation command does.

    Raises :class:`UsageError` for an empty prompt or a directory that does not hold a checkpoint.
    """
    _check_prompt(args.prompt)
    model, tokenizer = _load(args.model or default_model_dir())
    options = _options(args)
    if model.generation_config.max_new_tokens is None:  # the library default (max_length=20) is too short here
        options.setdefault("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
    return model, tokenizer, options


def _run_subcommand(name: str, argv: list[str]) -> int:
    """Import ``SUBCOMMANDS[name]`` ("module:function") and call it on the remaining arguments."""
    import importlib

    module, _, function = SUBCOMMANDS[name].partition(":")
    return int(getattr(importlib.import_module(module), function)(argv) or 0)


# ---- messages: library names -> command-line flags


def _flags(message: str) -> str:
    """Name the command line's flags in a library message: `num_beam_groups` -> `--num-beam-groups`."""
    message = message.replace("`do_sample` is set to `False`.", "`--do-sample` is not given.").replace(" or None,", ",")
    message = re.sub(r"`do_sample=True`", "`--do-sample`", message)
    message = re.sub(r"`num_beams>1`", "`--num-beams` > 1", message)
    return re.sub(r"`(\w+)`", lambda m: f"`{_FLAGS.get(m.group(1), m.group(1))}`", message)


class UsageError(Exception):
    """A problem with the command line (exit status 2)."""


def _fail(message: str, status: int) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(status)


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """One line per warning, with flag names (instead of Python's "file:line: UserWarning: ..." and source)."""
    print(f"{PROG}: warning: {_flags(str(message))}", file=sys.stderr)


# ---- the generation command


class _LineStreamer(TextStreamer):
    """TextStreamer whose output ends with exactly one newline (transformers' prints an empty line after
    text that already ended with one)."""

    ends_with_newline = True

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        if text:
            self.ends_with_newline = text.endswith("\n")
        print(text, end="\n" if stream_end and not self.ends_with_newline else "", flush=True)


def _check_prompt(prompt: str) -> None:
    if prompt == "":
        raise UsageError("the prompt is empty: give some text to continue, e.g. refdecode \"ROMEO:\"")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as e:  # argv bytes that are not UTF-8 arrive as lone surrogates
        bad = prompt[e.start].encode("utf-8", "surrogateescape")
        raise UsageError(f"the prompt is not valid UTF-8 (byte 0x{bad.hex()} at character {e.start})") from None


def _check_trace_path(path: Path | None) -> None:
    """``--trace FILE`` must be writable before generating (not found out after the whole generation)."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"--trace {path}: is a directory; give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"--trace {path}: the folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"--trace {path}: not writable")


def _load(model_dir: Path) -> tuple[Any, Any]:
    """The model and its tokenizer; any failure is the directory's fault: a UsageError naming it."""
    from .model.auto import from_pretrained
    from .text.tokenizer import Tokenizer

    if not model_dir.is_dir():
        raise UsageError(f"--model {model_dir}: no such directory")
    try:
        return from_pretrained(model_dir), Tokenizer(model_dir)  # GPT-2 or a Llama, by config.json's model_type
    except Exception as e:  # noqa: BLE001 -- a broken checkpoint can fail in numpy, safetensors or tokenizers
        detail = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UsageError(f"--model {model_dir}: cannot load the checkpoint: {detail}") from None


def _options(args: argparse.Namespace) -> dict[str, Any]:
    options = {field: getattr(args, field) for _, field, _, _ in _OPTIONS if getattr(args, field) is not None}
    if args.do_sample:
        options["do_sample"] = True
    if args.stop_strings:
        options["stop_strings"] = args.stop_strings
    if args.early_stopping is not None:
        options["early_stopping"] = {"true": True, "false": False}.get(args.early_stopping, "never")
    return options


def _serving_processors(args: argparse.Namespace, prompt_length: int, vocab_size: int) -> list[Any]:
    """``--frequency-penalty``, ``--presence-penalty``, ``--logit-bias`` as a ``logits_processor`` list (they are not
    GenerationConfig fields: no version of transformers has them), in OpenAI's order."""
    from .processors.serving_penalties import (
        FrequencyPenaltyLogitsProcessor,
        LogitBiasLogitsProcessor,
        PresencePenaltyLogitsProcessor,
    )

    processors: list[Any] = []
    if args.frequency_penalty is not None:
        processors.append(FrequencyPenaltyLogitsProcessor(args.frequency_penalty, prompt_length))
    if args.presence_penalty is not None:
        processors.append(PresencePenaltyLogitsProcessor(args.presence_penalty, prompt_length))
    if args.logit_bias:
        bias = {}
        for item in args.logit_bias:
            token, _, value = item.partition(":")
            try:
                bias[int(token)] = float(value)
            except ValueError:
                raise UsageError(f"--logit-bias {item}: give ID:BIAS, e.g. 50256:-100") from None
        processors.append(LogitBiasLogitsProcessor(bias, vocab_size))
    return processors


def _progress_criterion(total: int, enabled: bool | None, label: str) -> Any:
    """A stopping criterion that never stops and advances a tqdm bar on stderr (tqdm ships with tokenizers)."""
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is installed along with tokenizers; without it, no bar
        return None
    bar = tqdm(total=total, desc=label, unit="tok", file=sys.stderr, leave=False,
               disable=None if enabled is None else not enabled)

    def advance(input_ids: Any, scores: Any, **kwargs: Any) -> bool:
        bar.update(1)
        return False

    advance.close = bar.close  # type: ignore[attr-defined]
    return advance


def _generate(args: argparse.Namespace, out: Any) -> None:
    """Load, resolve the request once (its mode says whether to stream), generate, print (streamed for one
    greedy/sampled sequence)."""
    from .generate import decode, prepare
    from .reference.trace import TraceRecorder

    _check_trace_path(args.trace)
    model, tokenizer, options = load_generation(args)
    inputs = tokenizer([args.prompt], return_tensors="np")
    try:
        request = prepare(model, **inputs, **options)   # the config merged and the mode worked out, once
    except (ValueError, TypeError) as e:
        raise UsageError(_flags(str(e))) from None
    config = request.config
    try:
        serving = _serving_processors(args, inputs["input_ids"].shape[1], model.config.vocab_size)
    except (ValueError, TypeError) as e:
        raise UsageError(_flags(str(e))) from None
    streamed = request.loop.streams and config.num_return_sequences == 1
    extra: dict[str, Any] = {}
    if streamed:
        extra["streamer"] = out.streamer = _LineStreamer(tokenizer, skip_special_tokens=True)
    else:
        progress = _progress_criterion(config.max_new_tokens or config.max_length, args.progress,
                                       request.mode.replace("_", " "))
        extra["stopping_criteria"] = [progress] if progress is not None else None
    trace = TraceRecorder() if args.trace is not None else None
    try:
        sequences = decode(request, seed=args.seed, tokenizer=tokenizer, trace=trace,
                           logits_processor=serving or None, **extra)
    except (ValueError, TypeError) as e:
        raise UsageError(_flags(str(e))) from None
    finally:
        if not streamed and extra["stopping_criteria"]:
            extra["stopping_criteria"][0].close()
    if trace is not None:
        trace.save(args.trace)
    if not streamed:
        for i, row in enumerate(sequences):
            if len(sequences) > 1:
                print(f"--- sequence {i}", flush=True)
            decoded = tokenizer.decode(row, skip_special_tokens=True)
            print(decoded, end="" if decoded.endswith("\n") else "\n", flush=True)  # one newline, as streamed


def main(argv: list[str] | None = None) -> int:
    """Run the command on ``argv`` (default ``sys.argv[1:]``); returns the exit status (see the module doc)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        return _run_subcommand(argv[0], argv[1:])
    args = _parser().parse_args(argv)  # usage errors: argparse prints them and exits with 2
    state = argparse.Namespace(streamer=None)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            _generate(args, state)
    except UsageError as e:
        _fail(str(e), 2)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            if state.streamer is not None:
                state.streamer.end()  # print the words held back, so the output shows all generated so far
        _stdout_to_devnull()
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `refdecode ... | head`: the reader left; stop quietly (Python docs' recipe)
        _stdout_to_devnull()
        return 1
    except OSError as e:  # e.g. `> /dev/full`: ENOSPC when the text is flushed
        _stdout_to_devnull()
        _fail(f"cannot write the output: {e.strerror or e}", 1)
    return 0


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush of buffered text cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
