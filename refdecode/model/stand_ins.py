r"""Stand-in models for doctests, unit tests and tutorials: the model interface without a network.

Contract: the same calling convention as :class:`refdecode.model.modeling.GPT2` (``model(input_ids,
attention_mask=, position_ids=, past_key_values=, logits_to_keep=)`` -> ``.logits``,
``.past_key_values``; ``model.new_cache``; ``model.config.vocab_size / n_positions /
eos_token_id``), with logits you can write down by hand. The "cache" only remembers the tokens
seen so far, so ``reorder``/``expand`` bugs in a decode loop show up as wrong continuations.

:class:`TableModel` scores the next token from a (V, V) table indexed by the **last** token (a
bigram model), plus, if ``noise > 0``, a deterministic pseudo-random term that depends on the
**whole** prefix (so different beams with the same last token still differ).

>>> m = TableModel(np.array([[0., 1.], [2., 0.]], dtype=np.float32))
>>> m(np.array([[0, 1]])).logits[:, -1]
array([[2., 0.]], dtype=float32)
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TableModel", "TokenCache", "StubConfig", "StubOutput", "CountingModel", "TOY_WORDS", "TOY_NEXT",
           "toy_tree_model"]


@dataclass
class StubConfig:
    """What a stand-in model's ``config`` reports (the fields the decode loops read)."""

    vocab_size: int
    n_positions: int = 64
    eos_token_id: int | None = None
    bos_token_id: int | None = None


@dataclass
class StubOutput:
    """What a stand-in model returns: the logits and the cache, as :class:`refdecode.model.modeling.CausalLMOutput`."""

    logits: np.ndarray
    past_key_values: Any


class TokenCache:
    """A KV-cache stand-in holding the token ids seen so far: (N, S) int64."""

    def __init__(self, batch_size: int, capacity: int):
        self.tokens = np.zeros((batch_size, 0), dtype=np.int64)  # (N, S)
        self.capacity = capacity

    @property
    def length(self) -> int:
        return self.tokens.shape[1]

    @property
    def batch_size(self) -> int:
        return self.tokens.shape[0]

    def reorder(self, beam_idx: np.ndarray) -> None:
        """In place: row i <- old row beam_idx[i]."""
        self.tokens = self.tokens[np.asarray(beam_idx)]

    def crop(self, length: int) -> None:
        """In place: keep the first ``length`` tokens (KVCache.crop)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"`length` must be an integer in [0, {self.length}] (the tokens held), got {length!r}")
        self.tokens = self.tokens[:, :length]

    def expand(self, num_beams: int) -> TokenCache:
        """A new cache with each row repeated num_beams times consecutively."""
        new = TokenCache(self.batch_size * num_beams, self.capacity)
        new.tokens = np.repeat(self.tokens, num_beams, axis=0)
        return new


class TableModel:
    """Bigram logits ``table[last token]`` (+ optional prefix-dependent noise); counts its calls.

    Args:
        table: float32 (V, V); row a holds the logits of the token following token a.
        noise: scale of the deterministic prefix-dependent term (0 = pure bigram).
        n_positions, eos_token_id: what ``model.config`` reports.
    """

    def __init__(self, table: np.ndarray, noise: float = 0.0, n_positions: int = 64,
                 eos_token_id: int | None = None):
        self.table = np.asarray(table, dtype=np.float32)
        self.noise = noise
        self.config = StubConfig(vocab_size=self.table.shape[1], n_positions=n_positions, eos_token_id=eos_token_id)
        self.calls: list[tuple[int, int]] = []  # (rows, tokens) of every call

    def new_cache(self, batch_size: int, capacity: int) -> TokenCache:
        return TokenCache(batch_size, capacity)

    def _prefix_noise(self, prefix: np.ndarray) -> np.ndarray:
        seed = zlib.crc32(np.ascontiguousarray(prefix, dtype=np.int64).tobytes())
        return np.random.default_rng(seed).standard_normal(self.table.shape[1]).astype(np.float32)

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray | None = None,
                 position_ids: np.ndarray | None = None, past_key_values: TokenCache | None = None,
                 logits_to_keep: int = 0) -> StubOutput:
        cache = past_key_values if past_key_values is not None else self.new_cache(input_ids.shape[0], 0)
        expected = (input_ids.shape[0], cache.length + input_ids.shape[1])  # (N, S + T)
        if attention_mask is not None and attention_mask.shape != expected:
            raise ValueError(f"attention_mask shape {attention_mask.shape} does not cover the cache + new tokens")
        if cache.length + input_ids.shape[1] > self.config.n_positions:
            raise ValueError("sequence longer than n_positions")
        self.calls.append(input_ids.shape)
        start = cache.length
        cache.tokens = np.concatenate([cache.tokens, input_ids.astype(np.int64)], axis=1)  # (N, S+T)
        logits = self.table[input_ids]                                                    # (N, T, V)
        if self.noise:
            extra = [[self._prefix_noise(cache.tokens[n, : start + t + 1]) for t in range(input_ids.shape[1])]
                     for n in range(input_ids.shape[0])]
            logits = logits + np.float32(self.noise) * np.array(extra, dtype=np.float32).reshape(logits.shape)
        if logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        return StubOutput(logits=logits.astype(np.float32), past_key_values=cache)


class CountingModel:
    """Any model, counting its forward passes in ``calls`` (every other attribute is the model's).

    Assisted and prompt-lookup decoding are fast because they call the model once per round instead of once per
    token; the golden tests, the conformance cases and the docs count those calls with this wrapper.

    >>> model = CountingModel(TableModel(np.zeros((2, 2), dtype=np.float32)))
    >>> _ = model(np.array([[0, 1]])); model.calls, model.config.vocab_size
    (1, 2)
    """

    def __init__(self, model: Any) -> None:
        self.model, self.calls = model, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.model(*args, **kwargs)


#: The toy tree of the beam-search walkthrough (docs/references.md; docs/index.md, docs/beam-search.md):
#: token id = index in TOY_WORDS, and each listed word's next-word probabilities.
TOY_WORDS = ["The", "nice", "dog", "car", "woman", "house", "guy", "and", "runs", "has", "is", "drives", "turns"]
TOY_NEXT = {"The": {"nice": .5, "dog": .4, "car": .1}, "nice": {"woman": .4, "house": .3, "guy": .3},
            "dog": {"and": .05, "runs": .05, "has": .9}, "car": {"is": .3, "drives": .5, "turns": .2}}


def toy_tree_model() -> TableModel:
    """The toy tree as a TableModel: logits = log p after a listed word; every other word is followed by "The".

    >>> model = toy_tree_model()
    >>> TOY_WORDS[int(model(np.array([[0]])).logits[0, -1].argmax())]   # after "The": "nice" (0.5)
    'nice'
    """
    table = np.full((len(TOY_WORDS), len(TOY_WORDS)), -np.inf, dtype=np.float32)
    table[:, 0] = 0.0
    for w, row in TOY_NEXT.items():
        table[TOY_WORDS.index(w)] = -np.inf
        for v, p in row.items():
            table[TOY_WORDS.index(w), TOY_WORDS.index(v)] = np.log(p)
    return TableModel(table)
