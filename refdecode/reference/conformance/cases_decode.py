r"""Whole decodes: greedy, sample, beam search, beam sample and group beam search, on the toy model and on GPT-2.

Contract: registers ``greedy``, ``sample``, ``beam_search``, ``beam_sample``, ``group_beam_search``
(toy model of ``toy_model.py``, tables shipped in the case) and ``gpt2_greedy``, ``gpt2_sample``,
``gpt2_beam_search``, ``gpt2_beam_sample``, ``gpt2_group_beam_search`` (the tiny checkpoints of ``tests/golden/models``,
copied into the suite; prompts and settings of the golden files made by transformers 4.38.2).
Every case spells out the whole generation config (no hidden defaults) and the expected output is
``refdecode.generate(..., return_dict_in_generate=True, output_scores=True)``.

Sampling cases ship the uniforms they consume: every draw of ``num_samples`` tokens from probs
(N, V) takes ``num_samples * N`` uniforms from the front of the list, sample by sample, row by row,
and picks the first index whose cumulative probability exceeds ``u * total``
(:func:`refdecode.multinomial`, here fed with the case's uniforms instead of a seeded generator).

Margins (for the near-tie verdict), per step and per row (greedy, sample) or prompt (beam modes):
the gap between the best and second-best processed score (greedy), the distance between
``u * total`` and the nearest cumulative-probability boundary, over the total (sampling), the
smallest gap between consecutive ranked candidates (beam modes), each divided by the row's scale;
``None`` where the row or prompt is already finished. Cases are drawn so that no margin is below
1e-3: a correct port passes them whatever its float summation order.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import numpy as np

import refdecode as rd

from .kinds import BOOL, F32, F64, FLOAT, I64, INT, STR, Enum, ListOf, Obj, obj
from .registry import Case, CaseType, register
from .toy_model import ToyModel
from ...generation_rules import eos_list
from ...recorder import Recorder

__all__ = ["decode", "run_decode", "build_toy_cases", "full_config", "UniformStream", "CONFIG", "GOLDEN_MODELS",
           "describe", "row_gap", "smallest", "toy_prompt", "golden_cases", "compare_decode_case", "model_for",
           "register_decode"]

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"
GOLDEN_MODELS = GOLDEN / "models"
MIN_MARGIN = 1e-3

CONFIG = obj(max_new_tokens=INT, eos_token_id=ListOf(INT), pad_token_id=INT, do_sample=BOOL, num_beams=INT,
             num_beam_groups=INT, diversity_penalty=FLOAT, length_penalty=FLOAT,
             early_stopping=Enum((True, False, "never")), num_return_sequences=INT, repetition_penalty=FLOAT,
             no_repeat_ngram_size=INT, min_length=INT, min_new_tokens=INT, temperature=FLOAT, top_k=INT, top_p=FLOAT)
TOY = obj(kind=Enum(("toy",)), bigram=F32(2), mix=F32(2))
GPT2_MODEL = obj(kind=Enum(("gpt2",)), path=STR)
OUTPUT = obj(may_omit=("scores",), sequences=I64(2), scores=ListOf(F32(2)))
BEAM_OUTPUT = obj(may_omit=("scores",), sequences=I64(2), scores=ListOf(F32(2)), sequences_scores=F32(1),
                  beam_indices=I64(2))


# ----------------------------------------------------------------------------------------------
# running a decode, with its margins


class UniformStream(np.random.Generator):
    """A ``np.random.Generator`` whose ``random(n)`` returns the next n uniforms of a given list."""

    def __init__(self, uniforms: np.ndarray):
        super().__init__(np.random.PCG64(0))
        self.uniforms, self.used = np.asarray(uniforms, dtype=np.float64), 0

    def random(self, size=None, dtype=np.float64, out=None):
        n = 1 if size is None else int(size)
        if self.used + n > self.uniforms.size:
            raise ValueError(f"`uniforms` has {self.uniforms.size} values, but the decode needs more")
        self.used += n
        return self.uniforms[self.used - n : self.used]


def _draw_margins(probs: np.ndarray, uniforms: np.ndarray, num_samples: int) -> np.ndarray:
    """(N,) smallest distance of u * total to a cumulative boundary, / total, over the draw's samples."""
    p = np.array(probs, dtype=np.float64)  # (N, V)
    margins = np.full(p.shape[0], np.inf)
    for s in range(num_samples):
        cdf = np.cumsum(p, axis=1)
        target = uniforms[s * p.shape[0] : (s + 1) * p.shape[0]] * cdf[:, -1]
        margins = np.minimum(margins, np.abs(cdf - target[:, None]).min(axis=1) / cdf[:, -1])
        idx = np.minimum(np.sum(cdf <= target[:, None], axis=1), p.shape[1] - 1)
        p[np.arange(p.shape[0]), idx] = 0.0
    return margins


def row_gap(values: np.ndarray) -> float | None:
    """Smallest positive gap between consecutive values of a descending-sorted row, over the row's scale.

    A zero gap is an exact tie, decided by the tie rule, not a near-tie.
    """
    finite = values[np.isfinite(values)]
    gaps = finite[:-1] - finite[1:]
    gaps = gaps[gaps > 0]
    if gaps.size == 0:
        return None
    return float(gaps.min()) / max(1.0, float(np.abs(finite).max()))


def quiet_generate(model: Any, inp: dict, config: dict, **extra: Any) -> Any:
    """``refdecode.generate`` on the case's prompt, every step's scores kept, UserWarnings silenced (e.g.
    min_length > max_length: transformers warns too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return rd.generate(model, inp["input_ids"], attention_mask=inp["attention_mask"],
                           return_dict_in_generate=True, output_scores=True, **extra, **config)


class DecisionRecorder(Recorder):
    """Watches a decode (:mod:`refdecode.recorder`) for what its decisions' margins are computed from.

    ``beam``: per beam step and group, (group, ranked candidate scores (B, C), the prompts already done
    before the step (B,)); ``totals``: constrained beam search's ``scores_for_all_vocab`` (B*K, V) per step;
    ``rankings``: contrastive search's candidate scores (N, k) per step.
    """

    def __init__(self) -> None:
        self.beam: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.totals: list[np.ndarray] = []
        self.rankings: list[np.ndarray] = []
        self._group, self._done = 0, None

    def step(self, input_ids: np.ndarray, group: int | None = None, rows: np.ndarray | None = None) -> None:
        self._group = group or 0

    def stage(self, name: str, scores: np.ndarray) -> np.ndarray:
        if name == "scores_for_all_vocab":
            self.totals.append(np.array(scores))
        return scores

    def ranked(self, tokens: np.ndarray, scores: np.ndarray) -> None:
        self.rankings.append(np.array(scores))

    def beam_step(self, scorer: Any, out: dict, cand_scores: np.ndarray, cand_beams: np.ndarray,
                  cand_tokens: np.ndarray, input_ids: np.ndarray, eos: list[int] | None, prompt_len: int) -> None:
        done_now = np.asarray(scorer.done).reshape(scorer.batch_size, -1)  # (B, G); the constrained scorer's (B,)
        before = self._done if self._done is not None else np.zeros_like(done_now)
        self.beam.append((self._group, np.array(cand_scores), before[:, self._group].copy()))
        self._done = done_now.copy()


@functools.lru_cache(maxsize=8)
def _checkpoint(path: str) -> Any:
    return rd.from_pretrained(path)  # GPT-2 or a Llama, by its config.json's model_type


def model_for(spec: dict, config: dict) -> Any:
    """The case's model: a ToyModel from its tables, or the checkpoint at its path (kind gpt2 or llama; loaded once)."""
    if spec["kind"] == "toy":
        return ToyModel(spec["bigram"], spec["mix"], n_positions=256, eos_token_id=config["eos_token_id"][0])
    return _checkpoint(str(spec["path"]))


_RESULTS: dict[int, tuple] = {}  # id(input) -> (input, result): builder, run and margins ask for the same input


def decode(inp: dict, runner: Any = None) -> tuple[dict, list]:
    """Run the case's decode through ``refdecode.generate``: (output, margins per step).

    The result for the same input object is computed once (the builder, ``run`` and ``margins`` all
    ask during an export); ``serve`` decodes a fresh object for every request. ``runner``: the
    function doing the work (default :func:`run_decode`; other case modules pass theirs).
    """
    cached = _RESULTS.get(id(inp))
    if cached is not None and cached[0] is inp:  # holding the input keeps its id from being reused
        return cached[1]
    if len(_RESULTS) > 1024:
        _RESULTS.clear()
    _RESULTS[id(inp)] = (inp, (runner or run_decode)(inp))
    return _RESULTS[id(inp)][1]


def run_decode(inp: dict) -> tuple[dict, list]:
    config = dict(inp["config"])
    model = model_for(inp["model"], config)
    mode_beams = config["num_beams"] > 1
    draws: list = []
    stream = UniformStream(inp["uniforms"]) if config["do_sample"] else None

    def draw(probs, num_samples, replacement, rng):
        start = stream.used
        tokens = rd.multinomial(probs, num_samples, replacement, stream)
        draws.append(_draw_margins(probs, stream.uniforms[start : stream.used], num_samples))
        return tokens

    recorder = DecisionRecorder()
    out = quiet_generate(model, inp, config, draw=draw if stream is not None else None, trace=recorder)
    output = {"sequences": out.sequences, "scores": [np.asarray(s) for s in out.scores]}
    if mode_beams:
        output.update(sequences_scores=out.sequences_scores, beam_indices=out.beam_indices)
    return output, _margins(inp, output, draws, recorder.beam)


def _margins(inp: dict, output: dict, draws: list, candidates: list) -> list:
    config, steps = inp["config"], len(output["scores"])
    if config["num_beams"] == 1:  # per step and row; rows that emitted eos earlier are finished
        prompt_len, eos = inp["input_ids"].shape[1], config["eos_token_id"]
        generated = output["sequences"][:, prompt_len:]  # (N, steps)
        margins = []
        for t in range(steps):
            finished = np.isin(generated[:, :t], eos).any(axis=1)
            if config["do_sample"]:
                row_margins = [float(m) for m in draws[t]]
            else:
                row_margins = [row_gap(np.sort(row)[::-1][:2]) for row in output["scores"][t]]
            margins.append([None if f else m for m, f in zip(row_margins, finished)])
        return margins
    groups = config["num_beam_groups"]
    margins = []
    for t in range(steps):
        per_prompt = None
        for group_index, next_scores, done in candidates[t * groups : (t + 1) * groups]:
            gaps = [None if d else row_gap(row) for row, d in zip(next_scores, done)]
            per_prompt = gaps if per_prompt is None else [_min(a, b) for a, b in zip(per_prompt, gaps)]
        if config["do_sample"]:
            per_prompt = [_min(a, None if a is None else float(b)) for a, b in zip(per_prompt, draws[t])]
        margins.append(per_prompt)
    return margins


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def smallest(margins: list) -> float:
    """The smallest margin of a decode (per step, per row), ignoring None; inf when there is none."""
    values = [m for step in margins for m in step if m is not None]
    return min(values) if values else np.inf


# ----------------------------------------------------------------------------------------------
# building the cases


def full_config(**settings: Any) -> dict:
    """Every field of CONFIG, transformers' defaults where ``settings`` does not say otherwise."""
    config = {"max_new_tokens": 8, "eos_token_id": [0], "pad_token_id": None, "do_sample": False, "num_beams": 1,
              "num_beam_groups": 1, "diversity_penalty": 0.0, "length_penalty": 1.0, "early_stopping": False,
              "num_return_sequences": 1, "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "min_length": 0,
              "min_new_tokens": 0, "temperature": 1.0, "top_k": 50, "top_p": 1.0}
    config.update(settings)
    if config["pad_token_id"] is None:
        config["pad_token_id"] = config["eos_token_id"][0]
    return config


def toy_prompt(rng: np.random.Generator, vocab: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """A left-padded batch of 1-3 prompts: input_ids and attention_mask (B, T)."""
    batch, longest = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    ids = rng.integers(0, vocab, (batch, longest)).astype(np.int64)
    mask = np.ones_like(ids)
    for b in range(1, batch):
        pad_len = int(rng.integers(0, longest))
        ids[b, :pad_len], mask[b, :pad_len] = pad, 0
    return ids, mask


def _toy_settings(mode: str, rng: np.random.Generator, vocab: int) -> dict:
    eos = [int(e) for e in rng.choice(vocab, int(rng.choice([1, 1, 2])), replace=False)]
    s: dict[str, Any] = {"max_new_tokens": int(rng.integers(1, 9)), "eos_token_id": eos,
                         "repetition_penalty": float(rng.choice([1.0, 1.0, 1.3, 0.8])),
                         "no_repeat_ngram_size": int(rng.choice([0, 0, 2, 3])),
                         "min_new_tokens": int(rng.choice([0, 0, 2]))}
    if mode in ("sample", "beam_sample"):
        s.update(do_sample=True, temperature=float(rng.choice([1.0, 0.7, 1.5])), top_k=int(rng.choice([50, 0, 3, 5])),
                 top_p=float(rng.choice([1.0, 0.9, 0.7])))
    if mode in ("beam_search", "beam_sample", "group_beam_search"):
        s.update(length_penalty=float(rng.choice([-1.0, 0.0, 1.0, 2.0])),
                 early_stopping=[True, False, "never"][int(rng.integers(0, 3))])
    if mode in ("beam_search", "beam_sample"):
        s["num_beams"] = int(rng.integers(2, 5))
    if mode == "group_beam_search":
        groups = int(rng.choice([2, 3]))
        s.update(num_beams=groups * int(rng.integers(1, 3)), num_beam_groups=groups,
                 diversity_penalty=float(rng.choice([0.5, 1.0, 2.0])))
    if mode == "sample":
        s["num_return_sequences"] = int(rng.choice([1, 1, 2]))
    if s.get("num_beams", 1) > 1:
        s["num_return_sequences"] = int(rng.integers(1, s["num_beams"] + 1))
    return full_config(**s)


def build_toy_cases(mode: str, count: int, seed: int) -> Iterator[Case]:
    """``count`` cases, drawn from ``seed``; a generator, so an export of the first few builds only those."""
    rng, made = np.random.default_rng(seed), 0
    while made < count:
        vocab, buckets = int(rng.integers(6, 17)), int(rng.integers(4, 17))
        config = _toy_settings(mode, rng, vocab)
        bigram = (rng.standard_normal((vocab, vocab)) * 2.0).astype(np.float32)
        bigram[:, config["eos_token_id"]] += np.float32(1.0)  # eos is likely enough to finish hypotheses
        model = {"kind": "toy", "bigram": bigram, "mix": rng.standard_normal((buckets, vocab)).astype(np.float32)}
        ids, mask = toy_prompt(rng, vocab, config["pad_token_id"])
        inp = {"model": model, "input_ids": ids, "attention_mask": mask, "config": config}
        if config["do_sample"]:
            inp["uniforms"] = rng.random(config["max_new_tokens"] * ids.shape[0] * config["num_return_sequences"]
                                         * max(1, 2 * config["num_beams"]) * max(1, config["num_beams"]))
        try:
            _, margins = decode(inp)
        except ValueError:  # e.g. more eos candidates than beams in beam sample: transformers raises too
            continue
        if smallest(margins) > MIN_MARGIN:
            made += 1
            yield Case(describe(config, ids, mask), inp)


def describe(config: dict, ids: np.ndarray, mask: np.ndarray) -> str:
    """A case's note: its prompts and the settings that differ from transformers' defaults."""
    parts = [f"{ids.shape[0]} prompt(s)" + (", left-padded" if (mask == 0).any() else "")]
    defaults = full_config(eos_token_id=config["eos_token_id"])
    parts += [f"{k}={config[k]}" for k in CONFIG_NOTE_FIELDS if config[k] != defaults[k]]
    return ", ".join(parts)


CONFIG_NOTE_FIELDS = ("num_beams", "num_beam_groups", "diversity_penalty", "length_penalty", "early_stopping",
                      "num_return_sequences", "repetition_penalty", "no_repeat_ngram_size", "min_new_tokens",
                      "temperature", "top_k", "top_p")


def golden_cases(file: str, modes: tuple[str, ...], sample: bool) -> list[Case]:
    """The prompts and settings of a golden file of tools/golden/make_decode_golden.py (transformers 4.38.2)."""
    import json

    if not (GOLDEN / file).is_file():
        raise ValueError(f"the GPT-2 cases are built from {GOLDEN / file}, which only a checkout of the refdecode "
                         f"repository has; export from a clone, or leave them out with --only (e.g. --only toy,"
                         f"processors_and_warpers,beam_bookkeeping)")
    z = np.load(GOLDEN / file)
    meta, cases = json.loads(str(z["meta"])), []
    rng = np.random.default_rng(200)
    for case in meta["cases"]:
        if case["mode"] not in modes:
            continue
        ids = z[f"{case['id']}/input_ids"].astype(np.int64)
        has_mask = case.get("attention_mask", f"{case['id']}/attention_mask" in z.files)  # newer files: the key
        mask = z[f"{case['id']}/attention_mask"].astype(np.int64) if has_mask else np.ones_like(ids)
        kwargs = {k: v for k, v in case["kwargs"].items() if k not in ("output_scores", "return_dict_in_generate")}
        eos = kwargs.pop("eos_token_id") if "eos_token_id" in kwargs else meta["eos"][case["model"]]
        if "max_length" in kwargs:
            kwargs["max_new_tokens"] = kwargs.pop("max_length") - ids.shape[1]
        config = full_config(eos_token_id=eos_list(eos, no_token=True), **kwargs)
        config["min_length"] = max(config["min_length"], 0)
        inp = {"model": {"kind": "gpt2", "path": str(GOLDEN_MODELS / case["model"])}, "input_ids": ids,
               "attention_mask": mask, "config": config}
        if sample:
            inp["uniforms"] = rng.random(config["max_new_tokens"] * ids.shape[0] * 2 * config["num_beams"]
                                         * config["num_return_sequences"] * config["num_beams"])
        cases.append(Case(f"transformers golden case {file}:{case['id']} on {case['model']}: "
                          + describe(config, ids, mask), inp))
    return cases


# ----------------------------------------------------------------------------------------------
# registration


def decode_inputs(model_kind: Any, sample: bool) -> Obj:
    """The request fields of a decode type: model, prompt, mask, config (and uniforms when sampling)."""
    fields = dict(model=model_kind, input_ids=I64(2), attention_mask=I64(2), config=CONFIG)
    if sample:
        fields["uniforms"] = F64(1)
    return obj(**fields)


TIE_RULE = ("greedy: the lowest token id among equal maxima; beam candidates with equal scores: the lower flat "
        "index beam * V + token first; finalize: among equal hypothesis scores the later-inserted wins")

_SUMMARIES = {
    "greedy": "greedy search: processors on the raw logits, argmax; finished rows get pad_token_id",
    "sample": "multinomial sampling: processors, then warpers (temperature -> top-k -> top-p) on the raw logits, "
              "one draw per row from softmax with the case's uniforms",
    "beam_search": "beam search: log_softmax, processors, + running beam scores, top max(2, 1 + n_eos) * K "
                   "candidates of the K * V, BeamSearchScorer.process, reorder the state; finalize",
    "beam_sample": "beam sample: log_softmax, processors, warpers, + running scores, 2K distinct draws from "
                   "softmax over the K * V (the case's uniforms), sorted by score; then as beam search",
    "group_beam_search": "group beam search: G groups of K/G beams in turn, Hamming diversity penalty from the "
                         "earlier groups' tokens of this step, one beam search step per group",
}


def register_decode(name: str, mode: str, model_kind, groups: tuple[str, ...], build) -> None:
    """Register a decode case type of ``mode`` (greedy, sample, beam_search, beam_sample, group_beam_search)."""
    sample = mode in ("sample", "beam_sample")
    beams = mode != "greedy" and mode != "sample"
    register(CaseType(
        name=name, groups=("decode",) + groups + (("beam",) if beams else ()) + (("sampling",) if sample else ()),
        summary=_SUMMARIES[mode], inputs=decode_inputs(model_kind, sample),
        outputs=BEAM_OUTPUT if beams else OUTPUT, build=build, tie_rule=TIE_RULE,
        run=lambda inp: decode(inp)[0], margins=lambda inp, out: decode(inp)[1], compare=compare_decode_case))


def compare_decode_case(case: dict, output: Any) -> tuple[str, str]:
    """A decode type's ``compare``: :func:`refdecode.reference.conformance.compare.compare_decode`."""
    from .compare import compare_decode

    return compare_decode(case, output)


for _mode, _count, _seed in [("greedy", 60, 301), ("sample", 60, 302), ("beam_search", 90, 303),
                             ("beam_sample", 40, 304), ("group_beam_search", 50, 305)]:
    register_decode(_mode, _mode, TOY, ("toy",), functools.partial(build_toy_cases, _mode, _count, _seed))

register_decode("gpt2_greedy", "greedy", GPT2_MODEL, ("gpt2",),
          functools.partial(golden_cases, "decode_search.npz", ("greedy_search",), False))
register_decode("gpt2_beam_search", "beam_search", GPT2_MODEL, ("gpt2",),
          functools.partial(golden_cases, "decode_search.npz", ("beam_search",), False))
register_decode("gpt2_group_beam_search", "group_beam_search", GPT2_MODEL, ("gpt2",),
          functools.partial(golden_cases, "decode_search.npz", ("group_beam_search",), False))
register_decode("gpt2_sample", "sample", GPT2_MODEL, ("gpt2",),
          functools.partial(golden_cases, "decode_sampling.npz", ("sample",), True))
register_decode("gpt2_beam_sample", "beam_sample", GPT2_MODEL, ("gpt2",),
          functools.partial(golden_cases, "decode_sampling.npz", ("beam_sample",), True))
