r"""The engines group: the decodes that inference engines expose, on real GPT-2 checkpoints (docs/engines.md).

Contract: registers ``engines_greedy`` and ``engines_beam_search`` (group ``engines``: the shipped model,
``models/tiny-shakespeare``) and ``engines_124m_greedy`` / ``engines_124m_beam_search`` (group
``engines_124m``: the shipped model widened to GPT-2 124M's shape, ``models/gpt2-124m-shaped``, made by
``tools/engines/make_gpt2_124m_shaped.py``; not in the default selection, because the checkpoint is 500 MB
and not committed) and ``engines_llama_greedy`` / ``engines_llama_beam_search`` (group ``engines_llama``: the same
prompts and settings on the shipped Llama, ``models/tiny-shakespeare-llama``, which shares GPT-2's tokenizer, so
the prompts' ids and the eos are the same). The requests are the ``gpt2_*`` decodes' (``model``, ``input_ids``, ``attention_mask``,
``config``); the answer is ``sequences`` (and ``sequences_scores`` for beams when the engine returns them):
what an engine's API gives back. No per-step ``scores``: over the real vocabulary they would make each case tens
of megabytes.

The settings are the ones engines take: greedy and beam search over num_beams 2-5 x length_penalty
{-1, 0, 0.5, 1, 2} x early_stopping {True, False, "never"}, num_return_sequences, repetition_penalty,
no_repeat_ngram_size, min_length / min_new_tokens, and both; one prompt per case (batch 1: the engines batch
prompts in their own ways, which is not what is checked here). The eos is a token the model emits (``"\n"``,
198, on the shipped model), so hypotheses finish at different steps and the finishing rules decide. Cases
whose decisions hold a margin below 1e-4 are left out (the other decodes of the suite: 1e-3).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

import numpy as np

from .cases_decode import (CONFIG_NOTE_FIELDS, GPT2_MODEL, ROOT, compare_decode_case, decode,
                           decode_inputs, full_config, smallest)
from .kinds import F32, I64, STR, Enum, obj
from .registry import Case, CaseType, register

__all__ = ["PROMPTS", "SHIPPED", "SHIPPED_LLAMA", "SHAPED_124M", "engine_settings", "build_engine_cases", "count_engine_cases"]

SHIPPED = ROOT / "models" / "tiny-shakespeare"
SHIPPED_LLAMA = ROOT / "models" / "tiny-shakespeare-llama"
SHAPED_124M = ROOT / "models" / "gpt2-124m-shaped"
#: the model's kind in a case: ``{"kind": "gpt2" | "llama", "path": ...}`` (``model_for`` loads either)
KIND = {"gpt2": GPT2_MODEL, "llama": obj(kind=Enum(("llama",)), path=STR)}
#: the prompts, as the shipped tokenizer encodes them (fixed here, so the suite does not need a tokenizer)
PROMPTS = {
    "ROMEO:\n": [33676, 4720, 25, 198],
    "JULIET:\nO Romeo, Romeo,": [41, 6239, 40, 2767, 25, 198, 46, 43989, 11, 43989, 11],
    "KING RICHARD III:\nNow is the winter": [37286, 371, 20739, 9795, 6711, 25, 198, 3844, 318, 262, 7374],
    "HAMLET:\nTo be, or not to be": [33363, 28882, 25, 198, 2514, 307, 11, 393, 407, 284, 307],
    "First Citizen:\nBefore we proceed any further,": [5962, 22307, 25, 198, 8421, 356, 5120, 597, 2252, 11],
    "MACBETH:\nIs this a dagger which I see": [44721, 33, 20702, 25, 198, 3792, 428, 257, 31322, 543, 314, 766],
    "PORTIA:\nThe quality of mercy": [15490, 3539, 25, 198, 464, 3081, 286, 17703],
    "KING LEAR:\nBlow, winds,": [37286, 12509, 1503, 25, 198, 3629, 322, 11, 13520, 11],
    "BRUTUS:\nRomans, countrymen, and lovers!": [11473, 3843, 2937, 25, 198, 22834, 504, 11, 1499, 3653, 11, 290,
                                                 20175, 0],
    "PROSPERO:\nOur revels now are ended.": [4805, 2640, 18973, 46, 25, 198, 5122, 9890, 82, 783, 389, 4444, 13],
}
#: smaller than the suite's 1e-3 (on a 50257-token vocabulary most beam decodes hold a gap below 1e-3 somewhere);
#: a departure at a margin under the check's tolerance is still reported as a near-tie, not as a failure
ENGINE_MIN_MARGIN = 1e-4
ENGINE_OUTPUT = {False: obj(sequences=I64(2)),
                 True: obj(may_omit=("sequences_scores",), sequences=I64(2), sequences_scores=F32(1))}


def engine_settings(beams: bool, eos: list[int], max_new_tokens: int) -> Iterator[tuple[dict, bool]]:
    """(settings, is_grid) of one group's cases, in order: the finishing grid first (one prompt each), then
    num_return_sequences and the processors (several prompts each)."""
    base = {"eos_token_id": eos, "pad_token_id": eos[0], "max_new_tokens": max_new_tokens}
    processors = [{"repetition_penalty": 1.3}, {"no_repeat_ngram_size": 3}, {"min_new_tokens": 6},
                  {"min_length": 8}, {"repetition_penalty": 1.3, "no_repeat_ngram_size": 2}]
    if not beams:
        for extra in [{}] + processors:
            yield {**base, **extra}, False
        return
    for num_beams, length_penalty, early_stopping in itertools.product(
            (2, 3, 4, 5), (-1.0, 0.0, 0.5, 1.0, 2.0), (True, False, "never")):
        yield {**base, "num_beams": num_beams, "length_penalty": length_penalty, "early_stopping": early_stopping}, True
    for num_return_sequences in (2, 4):
        yield {**base, "num_beams": 4, "num_return_sequences": num_return_sequences}, False
    for extra in processors:
        yield {**base, "num_beams": 4, **extra}, False


def build_engine_cases(model_dir, beams: bool, eos: tuple[int, ...], max_new_tokens: int,
                       prompts_per_setting: int, kind: str = "gpt2") -> Iterator[Case]:
    """One case per setting of the finishing grid and ``prompts_per_setting`` per other setting, the prompts
    taken in turn; a prompt whose decode holds a near-tie is passed over for the next."""
    if not (model_dir / "model.safetensors").is_file():
        raise ValueError(f"the {model_dir.name} cases need {model_dir}: make it with "
                         f"`python tools/engines/make_gpt2_124m_shaped.py` in a refdecode checkout")
    prompts = itertools.cycle(PROMPTS.items())
    for settings, is_grid in engine_settings(beams, list(eos), max_new_tokens):
        wanted, made = 1 if is_grid else prompts_per_setting, 0
        for _ in range(len(PROMPTS)):
            text, ids = next(prompts)
            config = full_config(**settings)
            prompt = np.array([ids], dtype=np.int64)
            inp = {"model": {"kind": kind, "path": str(model_dir)}, "input_ids": prompt,
                   "attention_mask": np.ones_like(prompt), "config": config}
            if smallest(decode(inp)[1]) <= ENGINE_MIN_MARGIN:
                continue
            yield Case(f"{model_dir.name}: {_note(text, config)}", inp)
            made += 1
            if made == wanted:
                break


def count_engine_cases(beams: bool, eos: tuple[int, ...], max_new_tokens: int, prompts_per_setting: int) -> int:
    """How many cases :func:`build_engine_cases` yields (one per grid setting, ``prompts_per_setting`` per other
    setting), without its decodes."""
    settings = engine_settings(beams, list(eos), max_new_tokens)
    return sum(1 if is_grid else prompts_per_setting for _, is_grid in settings)


def _note(text: str, config: dict) -> str:
    defaults = full_config(eos_token_id=config["eos_token_id"])
    fields = CONFIG_NOTE_FIELDS + ("min_length",)
    return ", ".join([f"prompt {text!r}"] + [f"{k}={config[k]}" for k in fields if config[k] != defaults[k]])


_SUMMARIES = {
    False: "greedy search on a real {} checkpoint, batch 1, as an engine's API takes it; answer: sequences",
    True: "beam search on a real {} checkpoint, batch 1, eos a token the model emits (finishing rules decide); "
          "answer: sequences, and sequences_scores when the engine returns scores",
}
_TIE_RULE = "as the gpt2_* decodes: the lower token id, the lower flat index beam * V + token first"


def _register(name: str, group: str, model_dir, beams: bool, eos: tuple[int, ...], max_new_tokens: int,
              prompts_per_setting: int, kind: str = "gpt2") -> None:
    register(CaseType(
        name=name, groups=(group,) + (("beam",) if beams else ()),
        summary=_SUMMARIES[beams].format({"gpt2": "GPT-2", "llama": "Llama"}[kind]),
        inputs=decode_inputs(KIND[kind], False), outputs=ENGINE_OUTPUT[beams],
        build=functools.partial(build_engine_cases, model_dir, beams, eos, max_new_tokens, prompts_per_setting,
                                kind),
        run=lambda inp: _answer(decode(inp)[0]), margins=lambda inp, out: decode(inp)[1], tie_rule=_TIE_RULE,
        compare=compare_decode_case,
        count=functools.partial(count_engine_cases, beams, eos, max_new_tokens, prompts_per_setting)))


def _answer(output: dict) -> dict:
    """An engine's answer: the sequences (and the beams' scores). Not the per-step scores: (steps, N, 50257)
    floats would make a case tens of megabytes, and an engine's API does not return them."""
    return {k: v for k, v in output.items() if k in ("sequences", "sequences_scores")}


_register("engines_greedy", "engines", SHIPPED, False, (198,), 24, 3)
_register("engines_beam_search", "engines", SHIPPED, True, (198,), 12, 2)
_register("engines_llama_greedy", "engines_llama", SHIPPED_LLAMA, False, (198,), 24, 3, "llama")
_register("engines_llama_beam_search", "engines_llama", SHIPPED_LLAMA, True, (198,), 12, 2, "llama")
_register("engines_124m_greedy", "engines_124m", SHAPED_124M, False, (198,), 24, 1)
_register("engines_124m_beam_search", "engines_124m", SHAPED_124M, True, (198,), 12, 1)
