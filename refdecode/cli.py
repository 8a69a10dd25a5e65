"""The ``refdecode`` command: generate text from a prompt with a model in ``models/``.

Contract: prompt text in, generated text on stdout; every generation option is a
:class:`~refdecode.generation_config.GenerationConfig` field, defaulting to the model's own
``generation_config.json``. Nothing is downloaded: ``--model`` is a local directory.

    refdecode "ROMEO:"                                   # the model's default decoding
    refdecode "ROMEO:" --num-beams 4 --num-return-sequences 2
    refdecode "ROMEO:" --do-sample --top-p 0.9 --temperature 0.8 --seed 0
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .generate import generate
from .gpt2 import GPT2
from .tokenizer import Tokenizer

#: The shipped model the command uses unless ``--model`` names another directory.
DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "models" / "tiny-shakespeare"

# (flag, GenerationConfig field, type)
_OPTIONS = [
    ("--max-new-tokens", "max_new_tokens", int),
    ("--min-new-tokens", "min_new_tokens", int),
    ("--num-beams", "num_beams", int),
    ("--num-beam-groups", "num_beam_groups", int),
    ("--diversity-penalty", "diversity_penalty", float),
    ("--num-return-sequences", "num_return_sequences", int),
    ("--length-penalty", "length_penalty", float),
    ("--temperature", "temperature", float),
    ("--top-k", "top_k", int),
    ("--top-p", "top_p", float),
    ("--repetition-penalty", "repetition_penalty", float),
    ("--no-repeat-ngram-size", "no_repeat_ngram_size", int),
]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="refdecode", description=__doc__.splitlines()[0])
    ap.add_argument("prompt", help="text to continue")
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL,
                    help="directory with config.json, model.safetensors, tokenizer.json (default: %(default)s)")
    for flag, field, kind in _OPTIONS:
        ap.add_argument(flag, dest=field, type=kind, default=None, help=f"GenerationConfig.{field}")
    ap.add_argument("--do-sample", dest="do_sample", action="store_true", default=None, help="sample instead of search")
    ap.add_argument("--early-stopping", dest="early_stopping", choices=["true", "false", "never"], default=None)
    ap.add_argument("--seed", type=int, default=0, help="seed of the random generator when sampling (default 0)")
    return ap


# ---- subcommands
# ``refdecode NAME ...`` runs a subcommand when NAME is a key of SUBCOMMANDS; anything else is a prompt
# for the generation command. To register one, add ``"name": "refdecode.module:function"`` here, where
# ``function(argv: list[str]) -> int`` parses ``argv`` (the arguments after NAME) itself and returns the
# exit status. The module is imported only when its subcommand runs, so cli.py imports none of them.
# (A prompt that equals a subcommand's name can still be generated from: ``refdecode -- NAME``.)
SUBCOMMANDS: dict[str, str] = {"conformance": "refdecode.conformance.cli:main"}


def _run_subcommand(name: str, argv: list[str]) -> int:
    """Import ``SUBCOMMANDS[name]`` ("module:function") and call it on the remaining arguments."""
    import importlib

    module, _, function = SUBCOMMANDS[name].partition(":")
    return int(getattr(importlib.import_module(module), function)(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        return _run_subcommand(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    model = GPT2.from_pretrained(args.model)
    tokenizer = Tokenizer(args.model)
    options = {field: getattr(args, field) for _, field, _ in _OPTIONS if getattr(args, field) is not None}
    if args.do_sample:
        options["do_sample"] = True
    if args.early_stopping is not None:
        options["early_stopping"] = {"true": True, "false": False}.get(args.early_stopping, "never")
    if model.generation_config.max_new_tokens is None:  # the library default (max_length=20) is too short here
        options.setdefault("max_new_tokens", 40)
    input_ids, attention_mask = tokenizer.encode_batch([args.prompt])
    sequences = generate(model, input_ids, attention_mask=attention_mask, seed=args.seed, **options)
    try:
        for i, row in enumerate(sequences):
            if len(sequences) > 1:
                print(f"--- sequence {i}")
            print(tokenizer.decode(row, skip_special_tokens=True), flush=True)
    except BrokenPipeError:  # `refdecode ... | head`: the reader left; stop quietly (Python docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
