r"""refdecode conformance client for keras-hub 0.32 (GPT2CausalLM, Keras 3 on torch) — docs/conformance.md.

What keras-hub can express, it is given; what it has no option for is answered Unsupported:

- greedy: ``GPT2CausalLM.generate`` with ``GreedySampler`` and ``stop_token_ids`` = the case's eos ids, the
  batch as one call (keras-hub's right-padded layout, see engine.py), ``max_length`` = padded prompt width +
  max_new_tokens (keras-hub has no max_new_tokens: a row shorter than the longest prompt gets more new tokens);
- beam search: ``BeamSampler(num_beams, return_all_beams=True)``, the best ``num_return_sequences`` beams;
  keras-hub's beam search has no length penalty and no finishing rule (a beam that emitted eos keeps extending;
  the output is cut after its first eos), so ``length_penalty`` other than transformers' default 1.0 and
  ``early_stopping`` other than the default False are Unsupported ("no option"), as the brief rules for options
  the engine cannot take at all;
- sampling: Unsupported (keras-hub's samplers draw from a Keras SeedGenerator; no way to give them the uniforms);
- repetition_penalty != 1, no_repeat_ngram_size > 0, min_new_tokens > 0, min_length beyond the padded prompt:
  Unsupported (no such option in keras-hub 0.32's samplers or generate()).

``sequences_scores`` (keras-hub's beam score: the sum of the log-probabilities of the beam's tokens, after-eos
tokens included, no length normalisation) is returned only with ``KERAS_HUB_SCORES=1``: it is never transformers'
score (sum / length ** length_penalty), so by default the check compares the tokens.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))

from protocol import Unsupported, floats, serve  # noqa: E402

import engine  # noqa: E402

SCORES = os.environ.get("KERAS_HUB_SCORES") == "1"
DECODE_TYPES = {"gpt2_greedy", "gpt2_beam_search", "gpt2_sample", "gpt2_beam_sample", "gpt2_group_beam_search",
                "gpt2_contrastive_search"}


def _check(config: dict, prompt_width: int) -> None:
    if config.get("do_sample"):
        raise Unsupported("no way to give keras-hub's samplers the case's uniforms (do_sample)")
    if (config.get("num_beam_groups") or 1) > 1 or (config.get("diversity_penalty") or 0.0) != 0.0:
        raise Unsupported("no group beam search")
    if (config.get("penalty_alpha") or 0) > 0:
        raise Unsupported("contrastive search: not checked by this adapter")
    if (config.get("repetition_penalty") or 1.0) != 1.0:
        raise Unsupported("no option for repetition_penalty")
    if (config.get("no_repeat_ngram_size") or 0) > 0:
        raise Unsupported("no option for no_repeat_ngram_size")
    if (config.get("min_new_tokens") or 0) > 0:
        raise Unsupported("no option for min_new_tokens")
    if (config.get("min_length") or 0) > prompt_width:
        raise Unsupported(f"no option for min_length ({config['min_length']} > prompt length {prompt_width})")
    num_beams = config.get("num_beams") or 1
    if num_beams > 1:
        if float(config.get("length_penalty", 1.0)) != 1.0:
            raise Unsupported("no option for length_penalty (BeamSampler has no length normalisation)")
        if config.get("early_stopping", False) is not False:
            raise Unsupported(f"no option for early_stopping={config.get('early_stopping')!r} (BeamSampler has no finishing rule)")
        if (config.get("num_return_sequences") or 1) > num_beams:
            raise Unsupported("num_return_sequences > num_beams")
    elif (config.get("num_return_sequences") or 1) != 1:
        raise Unsupported("num_return_sequences > 1 without beams or sampling")


def answer(request: dict) -> dict:
    kind, inp = request.get("type"), request.get("input") or {}
    if not (kind in DECODE_TYPES or (str(kind).startswith("engines_") and "model" in inp)):
        raise Unsupported(f"keras-hub exposes no {kind} step on its own")
    if kind in ("gpt2_beam_search", "gpt2_beam_sample", "gpt2_group_beam_search"):
        raise Unsupported("beam_indices: keras-hub's BeamSampler does not return them")
    if inp["model"].get("kind") != "gpt2":
        raise Unsupported(f"no {inp['model'].get('kind')} model in keras-hub")
    config = floats(inp["config"])
    ids = inp["input_ids"]
    mask = inp.get("attention_mask") or [[1] * len(r) for r in ids]
    _check(config, len(ids[0]))
    eos = config.get("eos_token_id")
    eos_ids = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    pad = config.get("pad_token_id")
    pad = pad if pad is not None else (eos_ids[0] if eos_ids else 0)
    lm = engine.load(inp["model"]["path"])
    max_new = int(config["max_new_tokens"])
    num_beams = config.get("num_beams") or 1
    out: dict = {}
    if num_beams == 1:
        rows = [(list(ids[b]), new) for b, new in enumerate(engine.greedy(lm, ids, mask, max_new, eos_ids, pad))]
    else:
        nrs = config.get("num_return_sequences") or 1
        rows, scores = [], []
        for b, beams in enumerate(engine.beam(lm, ids, mask, max_new, eos_ids, pad, num_beams)):
            for new, score in beams[:nrs]:
                rows.append((list(ids[b]), new))
                scores.append(score)
        if SCORES:
            out["sequences_scores"] = scores
    width = max(len(new) for _, new in rows)
    out["sequences"] = [prompt + new + [pad] * (width - len(new)) for prompt, new in rows]
    return out


if __name__ == "__main__":
    raise SystemExit(serve(answer))
