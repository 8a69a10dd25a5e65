r"""``output_hidden_states`` / ``output_attentions`` of ``generate``: what the model computed at every step.

Contract: :class:`OutputRecorder` wraps a model for one ``generate`` call. Every call the decode loop makes
(the prompt, then one per step) also asks the model for its hidden states and / or attention weights
(:meth:`refdecode.model.modeling.GPT2.__call__`) and keeps them; :meth:`OutputRecorder.attach` puts them on the
loop's output object in transformers 4.38.2's layout:

- ``hidden_states``: one tuple per generated token, each holding n_layer + 1 arrays float32 (N, T, E):
  the input of every block, then the last block's output after ``ln_f``. The first step's T is the
  prompt length, every later step's is 1.
- ``attentions``: one tuple per generated token, each holding n_layer arrays float32 (N, H, T, S + T).

N is the number of rows the loop decodes (B, B*R when sampling R sequences per prompt, B*K with K
beams), in the order the model saw them: beam rows **before** the step's reorder, as transformers
records them. refdecode prefills each distinct prompt once (:func:`refdecode.decoding.loop.prefill`);
the recorder repeats that first step's rows to N, which is what transformers computed on the N
identical copies. The loops themselves are unchanged: this is a wrapper, not a branch in them.
Contrastive search records its own (it keeps the chosen candidate's states, as transformers does).

Docs: docs/generate.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["OutputRecorder"]


class OutputRecorder:
    """A model that also records its hidden states / attentions at every call (see the module docstring).

    Everything but the call is the wrapped model's (``config``, ``new_cache``, ``generation_config`` ...).

    >>> from refdecode.model.modeling import GPT2
    >>> model = OutputRecorder(GPT2.from_pretrained("models/gpt2-tiny"), hidden_states=True, attentions=False)
    >>> _ = model(np.array([[15496, 995]]))
    >>> len(model.hidden_states[0]), model.hidden_states[0][-1].shape     # n_layer + 1 arrays (B, T, E)
    (3, (1, 2, 32))
    """

    def __init__(self, model: Any, hidden_states: bool, attentions: bool) -> None:
        self.model, self.want_hidden, self.want_attentions = model, hidden_states, attentions
        self.hidden_states: list[tuple[np.ndarray, ...]] = []   # one entry per call
        self.attentions: list[tuple[np.ndarray, ...]] = []

    @classmethod
    def for_config(cls, model: Any, config: Any) -> OutputRecorder:
        """The recorder ``generate`` uses: recording what ``config`` asks for (only with return_dict_in_generate)."""
        as_dict = bool(config.return_dict_in_generate)
        return cls(model, as_dict and bool(config.output_hidden_states), as_dict and bool(config.output_attentions))

    @property
    def model_for_loop(self) -> Any:
        """What the loop should call: this recorder if it records anything, else the model itself."""
        return self if (self.want_hidden or self.want_attentions) else self.model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, input_ids: np.ndarray, **kwargs: Any) -> Any:
        out = self.model(input_ids, output_hidden_states=self.want_hidden, output_attentions=self.want_attentions,
                         **kwargs)
        if self.want_hidden:
            self.hidden_states.append(out.hidden_states)
        if self.want_attentions:
            self.attentions.append(out.attentions)
        return out

    def attach(self, output: Any, rows: int) -> Any:
        """Put the records on ``output`` (a generate output object), each step's arrays with ``rows`` rows."""
        if not hasattr(output, "sequences") or not (self.want_hidden or self.want_attentions):
            return output
        if self.want_hidden:  # the loops call the model once per generated token
            output.hidden_states = tuple(_rows(step, rows) for step in self.hidden_states)
        if self.want_attentions:
            output.attentions = tuple(_rows(step, rows) for step in self.attentions)
        return output


def _rows(layers: tuple[np.ndarray, ...], rows: int) -> tuple[np.ndarray, ...]:
    """A step's per-layer arrays (n, ...) -> (rows, ...): a prefill of distinct prompts repeated, as generate
    repeats the prompts (``np.repeat``: row b -> rows b*r .. b*r+r-1)."""
    return tuple(a if a.shape[0] == rows else np.repeat(a, rows // a.shape[0], axis=0) for a in layers)
