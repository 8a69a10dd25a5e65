r"""The serving engines' presence penalty, frequency penalty and logit bias, one function per engine rule.

Contract: each rule maps one row's float32 scores (V,), the prompt's token ids and the generated ones (lists of
int) to a NEW float32 (V,) array; :func:`greedy_replay` runs a rule greedily on a refdecode model. The rules
differ in which tokens they count (the prompt or only the generated tokens), in the window, in whether the sign
of the logit matters, and in the order of the steps (docs/processors.md, "Other engines"). The engines' scripts
``examples/engines/<engine>/penalty_check.py`` compare each engine's greedy tokens with :func:`greedy_replay`
of its rule; tests/reference/engines/test_penalties.py checks the rules on rows where they differ.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["counts_of", "openai_rule", "mlx_lm_rule", "openvino_genai_rule", "llama_cpp_rule", "greedy_replay",
           "RULES"]

#: mlx-lm's default ``presence_context_size`` / ``frequency_context_size`` (``make_logits_processors``)
MLX_CONTEXT = 20
#: llama.cpp's default ``penalty_last_n`` (``common/common.h``)
LLAMA_CPP_LAST_N = 64


def counts_of(tokens: list[int], vocab_size: int) -> np.ndarray:
    """How many times each token id occurs in ``tokens``: int64 (V,)."""
    return np.bincount(np.asarray(tokens, dtype=np.int64), minlength=vocab_size)


def openai_rule(scores: np.ndarray, prompt: list[int], generated: list[int], frequency_penalty: float = 0.0,
                presence_penalty: float = 0.0, logit_bias: dict[int, float] | None = None) -> np.ndarray:
    r"""OpenAI's formula (refdecode, vLLM): :math:`s - c\,\alpha_f - [c>0]\,\alpha_p + b`, c over the generated
    tokens only, the sign ignored. vLLM: ``vllm/model_executor/layers/utils.py`` ``apply_penalties``
    (``logits -= frequency_penalties * output_bin_counts``; ``logits -= presence_penalties * output_mask``)."""
    c = counts_of(generated, scores.shape[0])  # (V,)
    out = scores - c.astype(np.float32) * np.float32(frequency_penalty)
    out = np.where(c > 0, out - np.float32(presence_penalty), out)
    for token, bias in (logit_bias or {}).items():
        out[token] += np.float32(bias)
    return out


def mlx_lm_rule(scores: np.ndarray, prompt: list[int], generated: list[int], frequency_penalty: float = 0.0,
                presence_penalty: float = 0.0, logit_bias: dict[int, float] | None = None,
                window: int = MLX_CONTEXT) -> np.ndarray:
    """mlx-lm 0.32.2: the last ``window`` tokens (``presence_context_size`` / ``frequency_context_size``) of
    prompt + generated (``generate_step`` puts the prompt in ``tokens``, ``mlx_lm/generate.py:416-418``); logit bias
    first, then presence (``logits[:, tokens] -= penalty``,
    once per distinct token, ``mlx_lm/sample_utils.py:329``), then frequency (``logits.at[:, tokens].subtract``,
    once per occurrence, ``:358``); order ``make_logits_processors``, ``:107-124``. The sign is ignored."""
    out = scores.copy()
    for token, bias in (logit_bias or {}).items():
        out[token] += np.float32(bias)
    last = (list(prompt) + list(generated))[-window:]
    c = counts_of(last, scores.shape[0])  # (V,)
    if presence_penalty:
        out = np.where(c > 0, out - np.float32(presence_penalty), out)
    if frequency_penalty:
        out = out - c.astype(np.float32) * np.float32(frequency_penalty)
    return out


def _toward_zero(values: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """OpenVINO GenAI's step: ``if (val >= 0) val -= amount; else val += amount`` in double, stored as float."""
    v = values.astype(np.float64)
    return np.where(v >= 0, v - amount, v + amount).astype(np.float32)


def openvino_genai_rule(scores: np.ndarray, prompt: list[int], generated: list[int], frequency_penalty: float = 0.0,
                        presence_penalty: float = 0.0, logit_bias: dict[int, float] | None = None) -> np.ndarray:
    """OpenVINO GenAI 2026.4: the generated tokens only (``register_new_generated_token``,
    ``src/cpp/src/sampling/logit_processor.hpp:134-140``), sign-aware: a logit >= 0 loses the penalty, a negative
    one gains it (``logit_transformers.hpp:490-491`` frequency, ``:516-517`` presence); presence first, then
    frequency, each reading the sign left by the one before (``logit_processor.hpp:66-75``). No logit bias."""
    if logit_bias:
        raise ValueError("`logit_bias` is not an OpenVINO GenAI option (GenerationConfig has no such field)")
    out = scores.copy()
    c = counts_of(generated, scores.shape[0])  # (V,)
    seen = np.flatnonzero(c)
    if presence_penalty:
        out[seen] = _toward_zero(out[seen], np.full(seen.shape, float(presence_penalty)))
    if frequency_penalty:
        out[seen] = _toward_zero(out[seen], float(frequency_penalty) * c[seen].astype(np.float64))
    return out


def llama_cpp_rule(scores: np.ndarray, prompt: list[int], generated: list[int], frequency_penalty: float = 0.0,
                   presence_penalty: float = 0.0, logit_bias: dict[int, float] | None = None,
                   window: int = LLAMA_CPP_LAST_N) -> np.ndarray:
    """llama.cpp: the last ``window`` tokens (``penalty_last_n``) of prompt + generated
    (``llama_sampler_penalties_accept``, a ring buffer, ``src/llama-sampler.cpp:2919-2937``; llama-server accepts
    the prompt, ``server-context.cpp:379-385``);
    ``logit -= float(count) * penalty_freq + float(count > 0) * penalty_present`` in float32 (``:2976``), the sign
    ignored; the logit bias sampler runs before the penalties in ``common_sampler``'s chain."""
    out = scores.copy()
    for token, bias in (logit_bias or {}).items():
        out[token] += np.float32(bias)
    c = counts_of((list(prompt) + list(generated))[-window:], scores.shape[0]) if window > 0 else \
        np.zeros(scores.shape[0], dtype=np.int64)
    seen = np.flatnonzero(c)
    step = c[seen].astype(np.float32) * np.float32(frequency_penalty) + np.float32(presence_penalty)
    out[seen] = out[seen] - step
    return out


RULES: dict[str, Callable[..., np.ndarray]] = {
    "openai": openai_rule, "vllm": openai_rule, "mlx-lm": mlx_lm_rule, "openvino-genai": openvino_genai_rule,
    "llama.cpp": llama_cpp_rule}


def greedy_replay(model, prompt: list[int], max_new_tokens: int, rule: Callable[..., np.ndarray],
                  **setting) -> tuple[list[int], list[float]]:
    """Greedy decoding of ``prompt`` on ``model`` (a refdecode model: ``model(ids).logits`` (1, T, V)) with
    ``rule(scores, prompt, generated, **setting)`` applied to each step's logits. Returns the new token ids and,
    per step, the margin between the chosen score and the runner-up (a small margin is a near-tie)."""
    generated: list[int] = []
    margins: list[float] = []
    for _ in range(max_new_tokens):
        ids = np.asarray([list(prompt) + generated], dtype=np.int64)  # (1, T)
        scores = np.asarray(model(ids).logits[0, -1], dtype=np.float32)  # (V,)
        out = rule(scores, prompt, generated, **setting)
        top2 = np.partition(out, -2)[-2:]
        generated.append(int(np.argmax(out)))
        margins.append(float(top2[1] - top2[0]))
    return generated, margins
