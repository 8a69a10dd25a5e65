r"""``decode_as(profile, model, input_ids, attention_mask, config)``: a greedy or beam decode under an engine's rules.

Contract: in, a GPT-2 (refdecode's ``GPT2``, or a ``NextTokenLogits`` around one, to share its memo), left-padded
``input_ids`` / ``attention_mask`` int (B, T) and a GenerationConfig as a dict (the conformance suite's decode
``config``: max_new_tokens, eos_token_id (int or list), pad_token_id, num_beams, length_penalty, early_stopping,
num_return_sequences, repetition_penalty, no_repeat_ngram_size, min_length, min_new_tokens); out,
``{"sequences": int64 (B*R, T_out)}`` (+ ``"sequences_scores"`` float32 (B*R,) for beam search): per prompt its
rows best first, each the padded prompt + the new tokens, right-padded with pad_token_id to the longest row, as
the engines' adapters answer. Sampling (``do_sample=True``, num_beams 1, ``sampling.py``) takes the case's
``uniforms`` (temperature, top_k, top_p from the config): no engine takes given draws, so their adapters draw
with the case's uniforms from the distribution the engine leaves (llama.cpp) or answer unsupported.

Output layout, 4.38.2 (beam_search.py ``finalize`` :350-362): a finished hypothesis is written without its eos and
then eos_token_id[0] where the row is shorter than max_length (``eos_out="first"``); the engines write the eos they
generated (``eos_out="generated"``) or none (``"none"``, onnxruntime-genai). Greedy and sampled rows are written as
generated (without the step on which the last row finished under ``drop_last_step``; without their final eos under
``stop_eos_dropped``). TF's beam loop (``loop="tf"``) writes
every row as wide as the steps the batch ran, and an unset finished slot as a row of pad_token_id.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ...generation_rules import eos_list
from .beam import beam_search
from .beam_loops import beam_5, beam_ct2, beam_flax, beam_keras, beam_ov, beam_tf, beam_vllm
from .greedy import greedy
from .rules import EngineRules, rules_for
from .sampling import sample
from .steps import NextTokenLogits, Prompt

__all__ = ["decode_as", "normalized_config"]

DEFAULTS = {"num_beams": 1, "length_penalty": 1.0, "early_stopping": False, "num_return_sequences": 1,
            "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "min_length": 0, "min_new_tokens": None,
            "do_sample": False}


def normalized_config(config: dict, width: int) -> dict:
    """The config with defaults filled, eos_token_id a list, pad_token_id set, max_new_tokens resolved."""
    if not isinstance(config, dict):
        raise TypeError(f"`config` must be a dict of GenerationConfig fields, got {type(config).__name__}")
    cfg = {**DEFAULTS, **{k: v for k, v in config.items() if v is not None or k == "min_new_tokens"}}
    eos = cfg.get("eos_token_id")
    if eos is None:
        raise ValueError("`eos_token_id` must be an int or a list of ints, got None")
    cfg["eos_token_id"] = eos_list(eos, no_token=True)
    if cfg.get("pad_token_id") is None:
        cfg["pad_token_id"] = cfg["eos_token_id"][0]
    if cfg.get("max_new_tokens") is None:
        if cfg.get("max_length") is None:
            raise ValueError("`max_new_tokens` (or `max_length`) must be given, got neither")
        cfg["max_new_tokens"] = int(cfg["max_length"]) - width
    if int(cfg["max_new_tokens"]) < 1:
        raise ValueError(f"`max_new_tokens` must be >= 1, got {cfg['max_new_tokens']}")
    K, nrs = int(cfg["num_beams"]), int(cfg["num_return_sequences"])
    if K < 1 or nrs < 1 or (not cfg["do_sample"] and nrs > K):
        raise ValueError(f"`num_return_sequences` must be in [1, num_beams={K}] (any >= 1 when sampling), "
                         f"got {nrs}")
    return cfg


def decode_as(profile: str | EngineRules, model: Any, input_ids: Any, attention_mask: Any, config: dict,
              uniforms: Any = None, events: list | None = None, margins: list | None = None) -> dict:
    """Decode as the engine ``profile`` (a key of ``PROFILES`` or an ``EngineRules``) would; see the module doc.
    ``uniforms``: with ``do_sample=True`` (and num_beams 1), the draws, one per row and step. ``events``: a list
    that gets the regimes the decode reached (``beam.beam_search``: steps short of non-eos candidates).
    ``margins``: a list that gets, per prompt, a list of its beam search's decision margins step by step
    (``beam.decision_margin``; the loops that rank through ``beam.candidates``: 4.38, 5, ct2, tf, flax), so a
    replay can tell a departure at a near-tie of the profile's own from a wrong rule."""
    rules = rules_for(profile)
    width = 0
    ids = np.asarray(input_ids)
    mask = np.ones_like(ids) if attention_mask is None else np.asarray(attention_mask)
    if ids.ndim != 2 or ids.shape != mask.shape or ids.shape[1] < 1:
        raise ValueError(f"`input_ids` and `attention_mask` must be int arrays of one shape (B, T), got "
                         f"{ids.shape} and {mask.shape}")
    cfg = normalized_config(config, ids.shape[1])
    if isinstance(model, NextTokenLogits) and (model.activation, model.rms_norm_eps) != (rules.activation,
                                                                                         rules.rms_norm_eps):
        model = model.model                # another activation or epsilon: other logits, their own memo
    logits = model if isinstance(model, NextTokenLogits) else NextTokenLogits(model, rules.activation,
                                                                              rules.rms_norm_eps)
    prompts = [Prompt(r.tolist(), m.tolist(), cfg, rules, len(ids)) for r, m in zip(ids, mask)]
    beams = int(cfg["num_beams"]) > 1 and not rules.beam_is_greedy
    if margins is not None:
        margins[:] = [[] for _ in prompts]
    per = [None] * len(prompts) if margins is None else margins     # one margins list per prompt
    if cfg["do_sample"]:
        if int(cfg["num_beams"]) != 1 or uniforms is None:
            raise ValueError("`do_sample=True` needs num_beams 1 and the case's `uniforms` (beam sample and "
                             f"sampling without given draws are not simulated), got num_beams {cfg['num_beams']}")
        found = sample(logits, prompts, rules, cfg, uniforms)
    elif not beams:
        found = greedy(logits, prompts, rules)
    elif rules.loop == "4.38":
        found = beam_search(logits, prompts, rules, events, margins)
    elif rules.loop == "keras":
        found = beam_keras(logits, prompts, rules)
    elif rules.loop == "tf":             # TF3: every row as wide as the steps run; an unset slot is all pad
        found, steps = beam_tf(logits, prompts, rules, margins)
        width = prompts[0].T + steps
    elif rules.loop == "flax":
        found = beam_flax(logits, prompts, rules, margins)
    elif rules.loop == "ct2":            # C6 needs a prompt prefix (see _ct2_rules)
        found = [beam_ct2(logits, p, _ct2_rules(rules, prompts, p), m) for p, m in zip(prompts, per)]
    elif rules.loop == "5":
        found = [beam_5(logits, p, rules, m) for p, m in zip(prompts, per)]
    else:                                # OpenVINO GenAI's and vLLM's own walks: no margins recorded
        found = [{"ov": beam_ov, "vllm": beam_vllm}[rules.loop](logits, p, rules) for p in prompts]
    rows = [(p, gen) for p, hyps in zip(prompts, found) for gen, _ in hyps]
    if rules.full_width:                 # Flax FX1: every row T + max_new_tokens wide
        width = prompts[0].T + max(p.max_new for p in prompts)
    layout = rules.eos_out if beams else ("none" if rules.stop_eos_dropped else "generated")
    out = {"sequences": _layout(rows, cfg, layout, width)}
    if beams:
        out["sequences_scores"] = np.array([s for hyps in found for _, s in hyps], dtype=np.float32)
    return out


def _ct2_rules(rules: EngineRules, prompts: list[Prompt], prompt: Prompt) -> EngineRules:
    """CTranslate2 C6 acts on a prompt prefix: ``split_start_tokens`` (decoding.cc:1000-1021) takes each prompt's
    first token as its start token and the rest as its prefix, and drops every prefix when each prompt of the
    ``generate_batch`` call is one token long; then no eos is penalised at the first step. The call is the whole
    batch (``lengths_from_unpadded``: the batched profile) or the prompt alone (the per-prompt profile)."""
    call = prompts if rules.lengths_from_unpadded else [prompt]
    return rules if any(len(p.real) > 1 for p in call) else replace(rules, first_eos=False)


def _layout(rows: list[tuple[Prompt, list[int] | None]], cfg: dict, eos_out: str, least: int = 0) -> np.ndarray:
    """int64 (B*R, T_out): padded prompt + new tokens (their final eos as ``eos_out`` says), right-padded with
    pad_token_id to the longest row or ``least``; new tokens None (an unset finished slot of TF's or Flax's
    beam search): a row of pad_token_id."""
    eos, pad = cfg["eos_token_id"], int(cfg["pad_token_id"])
    real = [(p, g) for p, g in rows if g is not None] or [(rows[0][0], [])]
    if eos_out == "none":
        full = [p.row + (g[:-1] if g and g[-1] in eos else g) for p, g in real]
        width = max(map(len, full))
    elif eos_out == "first":   # 4.38.2 finalize: the hypothesis without its eos, then eos_token_id[0] where it fits
        T = rows[0][0].T
        bodies = [p.row + (g[:-1] if g and g[-1] in eos else g) for p, g in real]
        width = min(max(map(len, bodies)) + 1, T + max(p.max_new for p, _ in rows))
        full = [b + [eos[0]] if len(b) < width else b for b in bodies]
    else:
        full = [p.row + g for p, g in real]
        width = max(map(len, full))
    width = max(width, least)
    made = iter(full)
    out = [[] if g is None else next(made) for _, g in rows]
    return np.array([r + [pad] * (width - len(r)) for r in out], dtype=np.int64)
