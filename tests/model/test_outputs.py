"""refdecode.model.outputs: hidden states and attentions recorded for generate's output, in transformers' layout."""

from __future__ import annotations

import numpy as np
from decode_golden import golden_model
from refdecode.generate import generate


def test_hidden_states_layout_of_a_greedy_call():
    """transformers' layout: per step a tuple of n_layer + 1 arrays (N, T, E); the prompt step has T = prompt
    length, later steps T = 1; attentions (N, H, T, S + T)."""
    model = golden_model("decode-a")
    c = model.config
    out = generate(model, np.array([[5, 6, 7], [8, 9, 10]]), max_new_tokens=3, return_dict_in_generate=True,
                   output_hidden_states=True, output_attentions=True, eos_token_id=None, pad_token_id=0)
    assert len(out.hidden_states) == len(out.attentions) == 3
    assert [h.shape for h in out.hidden_states[0]] == [(2, 3, c.n_embd)] * (c.n_layer + 1)
    assert [h.shape for h in out.hidden_states[2]] == [(2, 1, c.n_embd)] * (c.n_layer + 1)
    assert [a.shape for a in out.attentions[2]] == [(2, c.n_head, 1, 5)] * c.n_layer
    assert out.to_tuple()[-2] is out.hidden_states      # ModelOutput order: ..., attentions, hidden_states, cache
