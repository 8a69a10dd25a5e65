"""The engines' penalty rules (refdecode/reference/engines/penalties.py) on hand-made rows where they differ.

Each expected value is worked out by hand from the engine's source line the rule cites; the engines themselves
were run by examples/engines/<engine>/penalty_check.py (their penalty_check.json)."""

from types import SimpleNamespace

import numpy as np
import pytest

from refdecode.reference.engines.penalties import (RULES, greedy_replay, llama_cpp_rule, mlx_lm_rule,
                                                   openai_rule, openvino_genai_rule)


def row(*values):
    return np.array(values, dtype=np.float32)


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_returns_a_new_float32_row(name):
    scores = row(1.0, -1.0, 0.5)
    out = RULES[name](scores, [0], [1, 1], frequency_penalty=0.5, presence_penalty=0.5)
    assert out.dtype == np.float32 and out.shape == (3,)
    assert out is not scores and scores.tolist() == [1.0, -1.0, 0.5]


def test_the_prompt_counts_for_mlx_lm_and_llama_cpp_only():
    scores = row(1.0, 1.0, 1.0)
    for rule in (openai_rule, openvino_genai_rule):
        assert rule(scores, [0], [], presence_penalty=0.5).tolist() == [1.0, 1.0, 1.0]
    for rule in (mlx_lm_rule, llama_cpp_rule):
        assert rule(scores, [0], [], presence_penalty=0.5).tolist() == [0.5, 1.0, 1.0]


def test_the_windows_mlx_lm_20_llama_cpp_64():
    prompt = [0] + [2] * 24                       # token 0 is 25 tokens back: outside mlx-lm's 20
    scores = row(1.0, 1.0, 1.0)
    assert mlx_lm_rule(scores, prompt, [], presence_penalty=0.5)[0] == 1.0
    assert llama_cpp_rule(scores, prompt, [], presence_penalty=0.5)[0] == 0.5
    assert llama_cpp_rule(scores, [0] + [2] * 64, [], presence_penalty=0.5)[0] == 1.0   # 65 back: outside 64
    # frequency counts the occurrences in the window: 20 of the 24 twos for mlx-lm, all 24 for llama.cpp
    np.testing.assert_allclose(mlx_lm_rule(scores, prompt, [], frequency_penalty=0.5)[2], 1.0 - 10.0)
    np.testing.assert_allclose(llama_cpp_rule(scores, prompt, [], frequency_penalty=0.5)[2], 1.0 - 12.0)
    # a window of 4 over prompt + generated: the generated [1, 1] and the prompt's last two
    for rule in (mlx_lm_rule, llama_cpp_rule):
        np.testing.assert_allclose(rule(scores, prompt, [1, 1], frequency_penalty=0.5, window=4), [1.0, 0.0, 0.0])


def test_openvino_genai_moves_a_negative_logit_up():
    scores = row(2.0, -1.0, 0.0)
    np.testing.assert_allclose(openvino_genai_rule(scores, [], [0, 1, 2], presence_penalty=0.5), [1.5, -0.5, -0.5])
    np.testing.assert_allclose(openai_rule(scores, [], [0, 1, 2], presence_penalty=0.5), [1.5, -1.5, -0.5])


def test_openvino_genai_frequency_reads_the_sign_presence_left():
    # presence: 0.3 -> -0.2; then frequency sees a negative logit and adds 2 * 0.5 (logit_processor.hpp order)
    scores = row(0.3, 0.0)
    out = openvino_genai_rule(scores, [], [0, 0], frequency_penalty=0.5, presence_penalty=0.5)
    np.testing.assert_allclose(out[0], np.float32(0.8), atol=1e-6)
    np.testing.assert_allclose(openai_rule(scores, [], [0, 0], frequency_penalty=0.5, presence_penalty=0.5)[0],
                               np.float32(-1.2), atol=1e-6)


def test_presence_once_frequency_per_occurrence():
    scores = row(0.0, 0.0, 0.0)
    for rule in (openai_rule, mlx_lm_rule, llama_cpp_rule):
        assert rule(scores, [], [2, 2, 2], presence_penalty=0.5)[2] == -0.5
        assert rule(scores, [], [2, 2, 2], frequency_penalty=0.5)[2] == -1.5
        assert rule(scores, [], [2, 2, 2], frequency_penalty=-0.5)[2] == 1.5


def test_logit_bias_adds_and_openvino_genai_has_none():
    scores = row(0.0, 0.0, 0.0)
    for rule in (openai_rule, mlx_lm_rule, llama_cpp_rule):
        assert rule(scores, [], [], logit_bias={1: 2.0, 2: -3.0}).tolist() == [0.0, 2.0, -3.0]
    with pytest.raises(ValueError, match="logit_bias"):
        openvino_genai_rule(scores, [], [], logit_bias={1: 2.0})


class FixedLogits:
    """A stand-in model: the same next-token logits after any prefix."""

    def __init__(self, values):
        self.values = row(*values)

    def __call__(self, ids):
        return SimpleNamespace(logits=np.broadcast_to(self.values, (1, ids.shape[1], self.values.size)))


def test_greedy_replay_follows_the_rule():
    model = FixedLogits([1.0, 0.8, 0.0])
    # OpenAI: 0, then 0 (0.5) loses to 1 (0.8), then 1 (0.3) loses to 0 (0.5), ...
    tokens, margins = greedy_replay(model, [0], 4, openai_rule, presence_penalty=0.5)
    assert tokens == [0, 1, 0, 0]
    np.testing.assert_allclose(margins, [0.2, 0.3, 0.2, 0.2], atol=1e-6)
    # mlx-lm counts the prompt's 0: token 1 first
    assert greedy_replay(model, [0], 2, mlx_lm_rule, presence_penalty=0.5)[0] == [1, 0]
    assert greedy_replay(model, [0], 3, RULES["openai"])[0] == [0, 0, 0]
