r"""Greedy search under an engine's rules: per row, the argmax of the processed logits, until the rows stop.

Contract: ``greedy(logits, prompts, rules) -> [[(new tokens, None)] per prompt]``; the layout of the output rows is
``decode.py``'s. Switches read: ``drop_last_step`` (onnxruntime-genai G10), ``pad_after_eos`` and ``stop_when_all_last_eos`` (transformers.js T1,
modeling_utils.js:1005-1027, stopping_criteria.js:131-136), ``argmax_of_probs`` and ``lockstep_width``
(keras-hub K1, gpt2_causal_lm.py:240-283, samplers/sampler.py:113-128), and through ``Prompt`` the processors'
switches and ``trailing_pad_is_padding``. 4.38.2's rule (utils.py ``_greedy_search``): every row takes
argmax(processed logits); a row that has emitted an eos gets pad_token_id; stop when every row has finished or
after max_new_tokens.
"""

from __future__ import annotations

import numpy as np

from .rules import EngineRules
from .steps import NextTokenLogits, Prompt, softmax

__all__ = ["greedy", "next_token", "drop_trailing_pads"]


def next_token(logits: NextTokenLogits, prompt: Prompt, gen: list[int], rules: EngineRules) -> int:
    """The argmax of one row's processed logits (V,) (over the float32 probabilities for keras-hub)."""
    scores = prompt.process(logits(prompt.model_tokens(gen)), gen, np.float32(-np.inf))
    return int(np.argmax(softmax(scores) if rules.argmax_of_probs else scores))


def greedy(logits: NextTokenLogits, prompts: list[Prompt], rules: EngineRules) -> list[list[tuple[list[int], None]]]:
    """New tokens per prompt (eos included where one was generated; pads after it only under 4.38.2's rule)."""
    if rules.lockstep_width:
        return _lockstep(logits, prompts, rules)
    gens: list[list[int]] = [[] for _ in prompts]
    finished = [False] * len(prompts)
    for step in range(max(p.max_new for p in prompts)):     # one budget for all rows but under lengths_from_unpadded
        for b, prompt in enumerate(prompts):
            if step >= prompt.max_new:          # its budget is spent (shorter than another row's)
                finished[b] = True
                continue
            if finished[b] and rules.pad_after_eos:
                gens[b].append(prompt.pad)
                continue
            tok = next_token(logits, prompt, gens[b], rules)
            gens[b].append(tok)
            # transformers.js: done = the LAST token is an eos; 4.38.2: done once an eos was emitted
            finished[b] = tok in prompt.eos if rules.stop_when_all_last_eos else finished[b] or tok in prompt.eos
        if all(finished):
            if rules.drop_last_step:    # onnxruntime-genai G10: the step that finished the last row is not written
                for g in gens:
                    g.pop()
            break
    return [[(drop_trailing_pads(g, p, rules), None)] for g, p in zip(gens, prompts)]


def drop_trailing_pads(gen: list[int], prompt: Prompt, rules: EngineRules) -> list[int]:
    """The pads written after an eos are the layout's business (decode.py pads every row to the longest)."""
    if not rules.pad_after_eos:
        return gen
    for i, t in enumerate(gen):
        if t in prompt.eos:
            return gen[:i + 1]
    return gen


def _lockstep(logits: NextTokenLogits, prompts: list[Prompt], rules: EngineRules) -> list[list[tuple[list[int], None]]]:
    """keras-hub K1: right-padded width W = T + max_new_tokens; row b (n_b real tokens) generates at indices
    n_b .. W-1, all rows in lockstep from min_b n_b; stop when every row holds an eos; cut after the first eos."""
    width = prompts[0].T + prompts[0].max_new
    gens: list[list[int]] = [[] for _ in prompts]
    for index in range(min(len(p.real) for p in prompts), width):
        if all(any(t in p.eos for t in g) for g, p in zip(gens, prompts)):
            break
        for b, prompt in enumerate(prompts):
            if index >= len(prompt.real):   # before that, the row keeps its own prompt token
                gens[b].append(next_token(logits, prompt, gens[b], rules))
    return [[(_cut_after_eos(g, p.eos), None)] for g, p in zip(gens, prompts)]


def _cut_after_eos(gen: list[int], eos: list[int]) -> list[int]:
    for i, t in enumerate(gen):
        if t in eos:
            return gen[:i + 1]
    return gen
