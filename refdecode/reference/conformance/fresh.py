r"""``refdecode conformance fresh OUT --n N --seed S``: engine cases never seen before, drawn anew on every run.

Contract: :func:`iter_fresh` draws ``n`` cases from ``seed``, one at a time (the same seed gives the same cases, byte
for byte; ``stream`` K another, independent sequence of the same seed: ``--shard K/N``), :func:`fresh_cases` holds
them whole, and :func:`write_fresh` writes each as it is drawn as a suite, the layout of ``export`` (``check``, ``serve --as`` and every engine
adapter read it as they read the fixed suite). The cases are of the types ``engines_greedy`` and
``engines_beam_search`` (what engines' APIs return: sequences, and the beams' scores), so the expected answers are
those types' ``run``: refdecode itself, exact to transformers 4.38.2.

What is drawn, per case, over the options the engines take (``--groups``, in turn):

* ``greedy``: greedy search;
* ``beam_search``: num_beams 2-5, length_penalty {-1, 0, 0.5, 1, 2}, early_stopping {True, False, "never"},
  num_return_sequences 1..num_beams;
* ``eos_heavy``: beam search with two or three eos ids, drawn among the model's likeliest first tokens, kept only
  when onnxruntime-genai's 2 * num_beams candidates hold more than num_beams eos at some step (its profile's
  ``events``: the regime of ``engines/beam.py`` ``_walk``, FINDINGS G5), so every fresh run reaches it;

and, named in ``--groups`` only (:data:`MORE_GROUPS`; the default draw stays the three above), for the engines
without beam search, no-repeat n-gram or minimum length (llama.cpp, mlx-lm):

* ``plain_greedy``: greedy with the repetition penalty and no other processor, up to 40 new tokens on the
  shipped model (so a penalty's context runs past 20 tokens);
* ``sample``: sampling (type ``gpt2_sample``, the case's uniforms one per row and step), temperature
  {0.7, 1, 1.5}, top_k {0, 5, 50}, top_p {1, 0.95, 0.8}, num_return_sequences {1, 2}, the same processors;

and for all: the model (``--family gpt2``, the default: the shipped ``models/tiny-shakespeare`` and the suite's tiny
``decode-a/b/c``; ``--family llama``: the shipped ``models/tiny-shakespeare-llama``, which shares GPT-2's tokenizer,
and the tiny ``models/llama-tiny`` and ``llama-gqa-tied``, as the types ``engines_llama_greedy``,
``engines_llama_beam_search`` and ``llama_sample``), a batch of
1-3 prompts left-padded with pad_token_id (new prompts: on the shipped model pieces of the engines cases' prompts
recombined, on the tiny ones random ids), one or two eos ids (the first not always the one generated), a
pad_token_id that is sometimes not an eos, max_new_tokens, repetition_penalty, no_repeat_ngram_size, min_length,
min_new_tokens.

Near-ties are kept: a case whose decode holds a decision margin at most :data:`NEAR_TIE` (``check``'s tolerance,
below which a different choice is float drift) says so in its note (``near-tie: margin ...``); ``check`` reports a
departure there as NEAR-TIE, not as a failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from .cases_decode import GOLDEN_MODELS, decode, full_config, model_for, smallest
from .cases_engines import PROMPTS, SHIPPED, SHIPPED_LLAMA
from .compare import TOLERANCE
from .progress import Progress
from .registry import REGISTRY, Case

__all__ = ["fresh_cases", "iter_fresh", "shard_size", "write_fresh", "add_parser", "main", "FRESH_GROUPS", "MORE_GROUPS",
           "FAMILIES", "NEAR_TIE"]

FRESH_GROUPS = ("greedy", "beam_search", "eos_heavy")
MORE_GROUPS = ("plain_greedy", "sample")
FAMILIES = ("gpt2", "llama")
#: per family: the case type of each group (beam groups: the beam type) and the types in a suite's order
_TYPE = {"gpt2": {"greedy": "engines_greedy", "plain_greedy": "engines_greedy", "sample": "gpt2_sample",
                  "beam": "engines_beam_search"},
         "llama": {"greedy": "engines_llama_greedy", "plain_greedy": "engines_llama_greedy", "sample": "llama_sample",
                   "beam": "engines_llama_beam_search"}}
TYPES = {f: (t["greedy"], t["beam"], t["sample"]) for f, t in _TYPE.items()}
NEAR_TIE = TOLERANCE  # check's own: a margin at or below it is a near-tie
_SHIPPED = {"gpt2": SHIPPED, "llama": SHIPPED_LLAMA}
TINY = {"gpt2": [GOLDEN_MODELS / name for name in ("decode-a", "decode-b", "decode-c")],
        "llama": [SHIPPED_LLAMA.parent / "llama-tiny", GOLDEN_MODELS / "llama-gqa-tied"]}
_POOL = sorted({t for ids in PROMPTS.values() for t in ids})   # tokens of the engines cases' prompts


def _model(rng: np.random.Generator, group: str, family: str) -> Path:
    """The shipped model for a third of the greedy / beam cases; the tiny ones otherwise (and for eos_heavy)."""
    if group != "eos_heavy" and rng.random() < 1 / 3:
        return _SHIPPED[family]
    return TINY[family][int(rng.integers(len(TINY[family])))]


def _prompts(rng: np.random.Generator, shipped: bool, vocab: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """A left-padded batch of 1-3 prompts (input_ids, attention_mask), int64 (B, T)."""
    rows = []
    for _ in range(int(rng.integers(1, 4))):
        if shipped:   # a prefix of an engines prompt, then 0-3 tokens of any of them
            base = list(PROMPTS.values())[int(rng.integers(len(PROMPTS)))]
            row = base[:int(rng.integers(2, len(base) + 1))] + [int(t) for t in rng.choice(_POOL, rng.integers(0, 4))]
        else:
            row = [int(t) for t in rng.integers(0, vocab, int(rng.integers(1, 8)))]
        rows.append(row)
    width = max(map(len, rows))
    ids = np.array([[pad] * (width - len(r)) + r for r in rows], dtype=np.int64)
    mask = np.array([[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=np.int64)
    return ids, mask


def _eos(rng: np.random.Generator, shipped: bool, model_eos: int, vocab: int) -> list[int]:
    if shipped:
        return [[198], [198], [198, 11], [198, 13], [11, 198], [13]][int(rng.integers(6))]
    other = [int(t) for t in rng.choice(vocab, 2, replace=False)]
    return [[model_eos], [model_eos, other[0]], [other[0]], other][int(rng.integers(4))]


def _settings(rng: np.random.Generator, group: str, eos: list[int], width: int, shipped: bool) -> dict:
    s: dict[str, Any] = {"eos_token_id": eos, "max_new_tokens": int(rng.integers(1, 13 if shipped else 11)),
                         "repetition_penalty": float(rng.choice([1.0, 1.0, 1.3, 0.8])),
                         "no_repeat_ngram_size": int(rng.choice([0, 0, 2, 3])),
                         "min_new_tokens": int(rng.choice([0, 0, 2, 5])),
                         "min_length": int(rng.choice([0, 0, width + 3]))}
    if rng.random() < 0.2:
        s["pad_token_id"] = int(rng.integers(0, 50 if shipped else 40))   # a pad that is not an eos
    if group in MORE_GROUPS:
        s.update(no_repeat_ngram_size=0, min_new_tokens=0, min_length=0,
                 max_new_tokens=int(rng.integers(1, 41 if shipped else 11)),
                 repetition_penalty=float(rng.choice([1.0, 1.3, 1.3, 0.8])))
        if group == "sample":
            s.update(do_sample=True, temperature=float(rng.choice([0.7, 1.0, 1.5])),
                     top_k=int(rng.choice([0, 5, 50])), top_p=float(rng.choice([1.0, 0.95, 0.8])),
                     num_return_sequences=int(rng.choice([1, 1, 2])))
    elif group != "greedy":
        k = int(rng.integers(2, 6 if group == "beam_search" else 4))
        s.update(num_beams=k, length_penalty=float(rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0])),
                 early_stopping=[True, False, "never"][int(rng.integers(3))],
                 num_return_sequences=int(rng.integers(1, k + 1)))
    return full_config(**s)


def _likely_eos(model: Any, ids: np.ndarray, rng: np.random.Generator) -> list[int]:
    """Two or three of the six likeliest first tokens of the batch's first prompt (eos_heavy)."""
    logits = np.asarray(model(ids[:1]).logits[0, -1], dtype=np.float32)
    top = np.argsort(-logits, kind="stable")[:6]
    return [int(t) for t in rng.choice(top, int(rng.integers(2, 4)), replace=False)]


def _reaches_short_walk(inp: dict) -> bool:
    """Does onnxruntime-genai's profile run short of non-eos candidates at some step (G5)? At the first step the
    engine reads memory it never wrote: the profile says ``Undefined`` or answers (the engine may still crash)."""
    from ..engines import decode_as
    from ..engines.beam import Undefined

    events: list = []
    try:
        decode_as("onnxruntime-genai", model_for(inp["model"], inp["config"]), inp["input_ids"],
                  inp["attention_mask"], inp["config"], events=events)
    except Undefined:
        return True
    return bool(events)


def _draw(rng: np.random.Generator, group: str, family: str = "gpt2") -> dict:
    """One case's input of ``group``; eos_heavy draws until the regime is reached (one draw in about 45 does; at
    most 2000 draws)."""
    for _ in range(2000 if group == "eos_heavy" else 1):
        path = _model(rng, group, family)
        shipped = path == _SHIPPED[family]
        model = model_for({"kind": family, "path": str(path)}, {})
        vocab, model_eos = int(model.config.vocab_size), int(model.config.eos_token_id)
        eos = _eos(rng, shipped, model_eos, vocab)
        ids, mask = _prompts(rng, shipped, vocab, eos[0])
        if group == "eos_heavy":
            eos = _likely_eos(model, ids, rng)
        config = _settings(rng, group, eos, ids.shape[1], shipped)
        ids[mask == 0] = config["pad_token_id"]
        inp = {"model": {"kind": family, "path": str(path)}, "input_ids": ids, "attention_mask": mask,
               "config": config}
        if config["do_sample"]:
            inp["uniforms"] = rng.random(config["max_new_tokens"] * ids.shape[0] * config["num_return_sequences"])
        if group != "eos_heavy" or _reaches_short_walk(inp):
            return inp
    raise ValueError("no eos_heavy case reached onnxruntime-genai's short walk in 2000 draws; try another --seed")


def iter_fresh(n: int, seed: int, groups: tuple[str, ...] = FRESH_GROUPS,
               stream: int = 0, family: str = "gpt2") -> Iterator[tuple[str, Case]]:
    """``n`` cases drawn from ``seed``, the groups in turn, one at a time: (case type name, case).

    ``stream`` > 0: another ``n`` cases of the same seed, independent of stream 0's (NumPy's ``default_rng([seed,
    stream])``): for a check that draws until an engine has answered enough, and for the shards of a campaign
    (``fresh --shard K/N`` draws stream K); their notes say ``seed S.stream``."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"`n` must be an int >= 1, got {n!r}")
    if not isinstance(stream, int) or stream < 0:
        raise ValueError(f"`stream` must be an int >= 0, got {stream!r}")
    unknown = [g for g in groups if g not in FRESH_GROUPS + MORE_GROUPS]
    if not groups or unknown:
        raise ValueError(f"`groups` must be a non-empty selection of {FRESH_GROUPS + MORE_GROUPS}, got {list(groups)}")
    if family not in FAMILIES:
        raise ValueError(f"`family` must be one of {FAMILIES}, got {family!r}")
    return _draws(n, seed, groups, stream, family)


def _draws(n: int, seed: int, groups: tuple[str, ...], stream: int, family: str) -> Iterator[tuple[str, Case]]:
    rng = np.random.default_rng(seed if stream == 0 else [seed, stream])
    name = f"{seed}.{stream}" if stream else f"{seed}"
    for i in range(n):
        group = groups[i % len(groups)]
        inp = _draw(rng, group, family)
        margin = smallest(decode(inp)[1])
        c = inp["config"]
        note = (f"fresh seed {name} #{i} {group} on {Path(inp['model']['path']).name}: {inp['input_ids'].shape[0]} "
                f"prompt(s){', left-padded' if (inp['attention_mask'] == 0).any() else ''}, "
                + ", ".join(f"{k}={c[k]}" for k in _NOTE_FIELDS if c[k] != _DEFAULTS.get(k))
                + (f"; near-tie: margin {margin:.2g}" if margin <= NEAR_TIE else ""))
        yield _TYPE[family].get(group, _TYPE[family]["beam"]), Case(note, inp)


def fresh_cases(n: int, seed: int, groups: tuple[str, ...] = FRESH_GROUPS,
                stream: int = 0, family: str = "gpt2") -> dict[str, list[Case]]:
    """:func:`iter_fresh`'s cases held whole: {"engines_greedy": [...], "engines_beam_search": [...],
    "gpt2_sample": [...]} (``family="llama"``: the ``engines_llama_*`` types and ``llama_sample``)."""
    out: dict[str, list[Case]] = {name: [] for name in TYPES.get(family, ())}
    for name, case in iter_fresh(n, seed, groups, stream, family):
        out[name].append(case)
    return out


def shard_size(n: int, shard: int, shards: int) -> int:
    """Cases of shard ``shard`` (0-based) of ``shards`` when ``n`` are split: n // shards, one more for the first
    n % shards.

    >>> [shard_size(10, k, 4) for k in range(4)]
    [3, 3, 2, 2]
    """
    return n // shards + (1 if shard < n % shards else 0)


_NOTE_FIELDS = ("max_new_tokens", "eos_token_id", "pad_token_id", "num_beams", "length_penalty", "early_stopping",
                "num_return_sequences", "repetition_penalty", "no_repeat_ngram_size", "min_length", "min_new_tokens",
                "temperature", "top_k", "top_p")
_DEFAULTS = {**full_config(), "eos_token_id": None, "pad_token_id": None, "max_new_tokens": None}


def write_fresh(directory: str | Path, n: int, seed: int, groups: tuple[str, ...] = FRESH_GROUPS,
                stream: int = 0, fit: Callable[[Case], Case] | None = None, family: str = "gpt2") -> dict:
    """Draw the cases and write each as it is drawn (``export.SuiteWriter``: any ``n``, never held whole); returns
    the manifest.

    ``fit``: each drawn case made one an engine takes (its input changed, its note saying how); the expected answers
    are then those of the changed input, since the writer runs each case's type."""
    from .export import SuiteWriter

    cases = iter_fresh(n, seed, groups, stream, family)
    writer = SuiteWriter(directory)
    try:
        with Progress(n, "fresh") as bar:
            for name, case in cases:
                writer.add(REGISTRY[name], fit(case) if fit is not None else case)
                bar.advance()
    except BaseException:
        writer.close()
        raise
    return writer.finish(order=list(TYPES[family]))


def add_parser(sub: Any) -> None:
    """The ``fresh`` subcommand of ``refdecode conformance``."""
    fr = sub.add_parser("fresh", help="draw new engine cases from a seed and write them as a suite to DIR",
                        description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    fr.add_argument("dir", metavar="DIR", help="directory to write (empty, or a previous export)")
    fr.add_argument("--n", type=int, default=100, help="number of cases (default %(default)s; with --shard, of all "
                                                       "the shards together)")
    fr.add_argument("--seed", type=int, required=True, help="the draw's seed (print it in a CI log)")
    fr.add_argument("--groups", default=",".join(FRESH_GROUPS),
                    help=f"comma-separated, drawn in turn, of {', '.join(FRESH_GROUPS + MORE_GROUPS)} (default: "
                         f"{', '.join(FRESH_GROUPS)})")
    fr.add_argument("--family", choices=FAMILIES, default="gpt2",
                    help="the models drawn on: gpt2 (default; the shipped GPT-2 and the tiny decode-a/b/c) or llama "
                         "(the shipped Llama, models/llama-tiny and llama-gqa-tied)")
    fr.add_argument("--shard", type=_shard, default=(0, 1), metavar="K/N",
                    help="write shard K (0 <= K < N) of N: its share of --n (n // N, one more for the first n %% N), "
                         "drawn from stream K of the seed, independent of the other shards' (NumPy's "
                         "default_rng([seed, K]); shard 0 is the unsharded draw's start), so N machines draw a "
                         "campaign apart, each reproducibly")


def _shard(text: str) -> tuple[int, int]:
    """``--shard K/N``: 0 <= K < N."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"has to be K/N with integers 0 <= K < N, but is {text!r}") from None
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"has to be K/N with 0 <= K < N, but is {text!r}")
    return k, n


def main(args: argparse.Namespace) -> int:
    """Run ``refdecode conformance fresh`` with parsed arguments; 0 when written."""
    start = time.perf_counter()
    groups = tuple(g.strip() for g in args.groups.split(",") if g.strip())
    k, shards = args.shard
    if shards > 1 and args.n < shards:
        raise ValueError(f"`--n` has to be at least the number of shards ({shards}) with --shard, but is {args.n}")
    n = shard_size(args.n, k, shards) if shards > 1 else args.n
    manifest = write_fresh(args.dir, n, args.seed, groups, stream=k, family=args.family)
    ties = 0
    for t in manifest["case_types"]:
        with open(Path(args.dir) / t["file"]) as f:   # line by line: a shard may be large
            ties += sum('near-tie: margin' in line for line in f)
    where = f"seed {args.seed}" + (f", shard {k}/{shards}: stream {k}" if shards > 1 else "")
    print(f"wrote {manifest['case_count']} fresh cases ({where}; "
          + ", ".join(f"{t['name']} {t['count']}" for t in manifest["case_types"])
          + f"; {ties} near-ties labelled) to {args.dir} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0
