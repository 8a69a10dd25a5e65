r"""One prompt's view under an engine's rules: next-token logits, what the processors see, the processors.

Contract: ``NextTokenLogits`` gives float32 (V,) logits of a row from its REAL tokens (prompt without padding +
generated), memoised; ``Prompt`` holds one prompt of a request and applies the repetition penalty, the no-repeat
n-gram and the min-length mask to one row of scores as ``EngineRules`` says (``rp_ctx``, ``ngram_ctx``,
``min_length``, ``processors_first``). The loops (``greedy.py``, ``beam.py``, ``beam_loops.py``) call these.

Why real tokens: a left-padded row with its attention mask gives the same logits as its unpadded tokens (the
positions count from the first real token) up to float32 rounding, and every engine here feeds the real tokens.
The forward pass computes all T positions' logits and keeps the last (not ``logits_to_keep=1``): the lm_head
matmul over (T, E) rounds as the engines' full passes do; with (1, E) one near-tie of onnxruntime-genai
(gpt2_beam_search/0025, 1e-6 apart) went the other way.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...numerics import ACT2FN, gelu, gelu_new, ggml_gelu_fp16
from ...processors import logits_process, transformers5
from .rules import EngineRules

__all__ = ["NextTokenLogits", "Prompt", "log_softmax", "softmax", "LOWEST"]

LOWEST = np.float32(np.finfo(np.float32).min)


class NextTokenLogits:
    """Memoised next-token logits of refdecode's GPT-2: ``logits(tokens) -> float32 (V,)``.

    The memo is the point (the state): attribution runs the same prefixes under many rule sets.
    """

    def __init__(self, model: Any, activation: str = "checkpoint", rms_norm_eps: str = "checkpoint"):
        self.model, self.activation, self.rms_norm_eps = model, activation, rms_norm_eps
        self.memo: dict[tuple[int, ...], np.ndarray] = {}

    def __call__(self, tokens: tuple[int, ...] | list[int]) -> np.ndarray:
        key = tuple(int(t) for t in tokens)
        if key not in self.memo:
            with _activation(self.model, self.activation), _rms_norm_eps(self.model, self.rms_norm_eps):
                out = self.model(np.array([key], dtype=np.int64))                 # (1, T, V)
            self.memo[key] = np.asarray(out.logits[0, -1], dtype=np.float32)      # (V,)
        return self.memo[key]


@contextlib.contextmanager
def _activation(model: Any, activation: str) -> Iterator[None]:
    """``"ggml_fp16"``: the checkpoint's GELU, tanh or erf, computed as ggml's fp16 tanh table for this call
    (llama.cpp: its GGUF converter writes no activation, ``conversion/gpt2.py`` ``set_gguf_parameters``, and its
    GPT-2 graph has the one GELU)."""
    name = getattr(getattr(model, "config", None), "activation_function", None)
    if activation == "checkpoint" or name not in ("gelu_new", "gelu"):
        yield
        return
    ACT2FN[name] = ggml_gelu_fp16
    try:
        yield
    finally:
        ACT2FN[name] = {"gelu_new": gelu_new, "gelu": gelu}[name]


@contextlib.contextmanager
def _rms_norm_eps(model: Any, eps: str) -> Iterator[None]:
    """``"1e-5"`` / ``"1e-6"``: every RMSNorm of a Llama-family model with that epsilon for this call, whatever its
    config says (llms-from-scratch S4: ``Llama3Model`` and ``Qwen3Model`` write theirs in the code); a model
    without ``rms_norm_eps`` (GPT-2) is left as it is."""
    config = getattr(model, "config", None)
    if eps == "checkpoint" or not hasattr(config, "rms_norm_eps"):
        yield
        return
    model.config = dataclasses.replace(config, rms_norm_eps=float(eps))
    try:
        yield
    finally:
        model.config = config


def log_softmax(x: np.ndarray) -> np.ndarray:
    """float32 log_softmax of one row (V,), -inf entries kept at -inf."""
    x = np.asarray(x, dtype=np.float32)
    finite = np.isfinite(x)
    mx = np.max(x[finite]) if finite.any() else np.float32(0)
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = np.where(finite, x - mx, -np.inf).astype(np.float32)
        z = np.exp(shifted).sum(dtype=np.float32)
    return (shifted - np.float32(np.log(z))).astype(np.float32)


def softmax(x: np.ndarray) -> np.ndarray:
    """float32 probabilities of one row (V,) (keras-hub's ``compute_probabilities``)."""
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - x.max()).astype(np.float32)
    return (e / e.sum(dtype=np.float32)).astype(np.float32)


class Prompt:
    """One prompt of a request: its padded row (T,), its real tokens, the request's processor settings."""

    def __init__(self, row: list[int], mask: list[int], config: dict, rules: EngineRules, batch: int):
        self.row, self.config, self.rules = [int(t) for t in row], config, rules
        self.real = [int(t) for t, m in zip(row, mask) if m]          # prompt without left padding
        self.padding = int(transformers5.padding_lengths(np.asarray([mask]), 1)[0])   # 5.x's padding width
        self.T = len(self.row)                                         # padded width
        self.eos = [] if rules.eos_ignored else list(config["eos_token_id"])   # llms-from-scratch S5: no eos
        self.pad = int(config["pad_token_id"])
        self.max_new = int(config["max_new_tokens"])
        self.penalty = np.float32(config.get("repetition_penalty") or 1.0)
        self.ngram = int(config.get("no_repeat_ngram_size") or 0)
        if not rules.greedy_ngram and int(config.get("num_beams") or 1) == 1:
            self.ngram = 0                     # OpenVINO GenAI O5: only its beam search bans n-grams
        min_new = config.get("min_new_tokens")
        if rules.missing_processors:          # Flax FX3: no repetition penalty, n-gram or min_new_tokens
            self.penalty, self.ngram, min_new = np.float32(1.0), 0, None
        if rules.min_length == "5" and min_new is not None:
            self.min_gen = int(min_new)
        elif rules.min_length == "tf":        # TF2: min_new_tokens has no processor
            self.min_gen = max(int(config.get("min_length") or 0) - self.T, 0)
        else:
            # Flax FX4 masks eos while T + generated <= min_length (4.38.2: <)
            inclusive = 1 if rules.min_length_inclusive else 0
            self.min_gen = max(int(min_new or 0), int(config.get("min_length") or 0) - self.T + inclusive, 0)
        if not rules.beam_min_new and int(config.get("num_beams") or 1) > 1:
            self.min_gen = 0                   # OpenVINO GenAI O4: no processor but the n-gram in beam search
        if rules.lengths_from_unpadded or rules.lockstep_budget:   # CTranslate2 C8 / llama-models S1
            self.max_new += self.T - len(self.real)
        if rules.lengths_from_unpadded:       # CTranslate2 C8: one max_length / min_length for the batch
            self.min_gen += self.T - len(self.real)
        # onnxruntime-genai G7: the first step reads the logits at the last token that is not pad_token_id;
        # with more than one prompt the trailing pads stay masked at every step
        self.first = list(self.real)
        if rules.trailing_pad_is_padding:
            while len(self.first) > 1 and self.first[-1] == self.pad:
                self.first.pop()
        self.later = self.first if (rules.trailing_pad_is_padding and batch > 1) else self.real

    def model_tokens(self, gen: list[int]) -> list[int]:
        """The tokens the model attends to before generating ``gen[len(gen)]``."""
        return (self.first if not gen else self.later) + list(gen)

    def context(self, kind: str, gen: list[int]) -> list[int]:
        """The tokens a processor sees (``EngineRules.rp_ctx`` / ``ngram_ctx``)."""
        base = {"row": self.row, "unpadded": self.real, "tail": self.real[1:], "none": [],
                "right_padded": self.later + [self.pad] * (self.T - len(self.later))}[kind]
        return base + list(gen)

    def process(self, x: np.ndarray, gen: list[int], masked: np.float32) -> np.ndarray:
        """Repetition penalty, no-repeat n-gram, min length (eos masked) on one row (V,); a new array."""
        x = np.array(x, dtype=np.float32, copy=True)
        if self.penalty != 1.0:
            x = self._repetition_penalty(x, gen)
        if self.ngram > 0:
            self.ban_ngrams(x, gen, masked)
        if len(gen) < self.min_gen:
            x[self.eos] = masked
        return x

    def ban_ngrams(self, x: np.ndarray, gen: list[int], masked: np.float32, min_seen: int = 0) -> np.ndarray:
        """No-repeat n-gram on one row (V,), in place: the tokens that would repeat an n-gram of the context
        (``ngram_ctx``) get ``masked``; nothing while the context is shorter than n or than ``min_seen``."""
        seen, n = self.context(self.rules.ngram_ctx, gen), self.ngram
        if n > 0 and len(seen) >= max(n, min_seen):
            tail = seen[len(seen) - n + 1:]
            for i in range(len(seen) - n + 1):
                if seen[i:i + n - 1] == tail:
                    x[seen[i + n - 1]] = masked
        return x

    def _repetition_penalty(self, x: np.ndarray, gen: list[int]) -> np.ndarray:
        """The penalty on one row (V,), by the package's own rules: ``"unpadded"`` is transformers 5.x's
        (``processors/transformers5.py``, what ``semantics="5"`` runs: the row without its left padding), every
        other context (and any context cut to its last ``rp_window`` tokens) 4.38.2's rule on the tokens it lists."""
        if self.rules.rp_window:             # mlx-lm M1: the last rp_window tokens of the context only
            ids = np.array(self.context(self.rules.rp_ctx, gen)[-self.rules.rp_window:], dtype=np.int64)
            return logits_process.repetition_penalty_process(ids.reshape(1, -1), x[None], float(self.penalty))[0]
        if self.rules.rp_ctx == "unpadded":
            ids = np.array([self.row + list(gen)], dtype=np.int64)
            return transformers5.repetition_penalty_process(ids, x[None], float(self.penalty), self.padding)[0]
        ids = np.array([self.context(self.rules.rp_ctx, gen)], dtype=np.int64).reshape(1, -1)
        if self.rules.rp_reciprocal:          # TF1: x * float32(1 / penalty) where x > 0, x * penalty where x < 0
            seen = np.unique(ids)
            inverse = np.float32(1.0 / float(self.config["repetition_penalty"]))
            factor = np.where(x[seen] > 0, inverse, np.where(x[seen] < 0, self.penalty, np.float32(0)))
            out = x.copy()
            out[seen] = (x[seen] * factor).astype(np.float32)
            return out
        return logits_process.repetition_penalty_process(ids, x[None], float(self.penalty))[0]

    def beam_scores(self, logits: NextTokenLogits, gen: list[int], score: np.float32) -> np.ndarray:
        """float32 (V,): one beam's candidate scores, its sum of log-probs + this step's processed log-probs."""
        raw = logits(self.model_tokens(gen))
        if self.rules.processors_first:      # CTranslate2 C2 / onnxruntime-genai G1: renormalised
            step = log_softmax(self.process(raw, gen, LOWEST))
        else:                                # 4.38.2: log_softmax, then the processors
            step = self.process(log_softmax(raw), gen, np.float32(-np.inf))
        return (step + np.float32(score)).astype(np.float32)
