r"""The conformance suite's toy model: next-token logits any language computes in a few lines.

Contract: token ids in, float32 logits out, with a per-row state that a decoder must carry and
**reorder with the beams**, exactly like a KV cache -- so search conformance (greedy, sampling,
beam search, beam sample, group beam search) can be checked without a GPT-2 forward pass, and a
beam search that forgets to reorder its cache still fails.

The model is two float32 tables shipped in every case, ``bigram`` (V, V) and ``mix`` (M, V), and a
32-bit FNV-1a hash of the whole row (prompt and padding included; the attention mask is ignored):

.. math::

   h_0 = 2166136261,\qquad h_{i} = \big((h_{i-1} \oplus x_i) \cdot 16777619\big) \bmod 2^{32}

   \mathrm{logits}(x_1..x_n)_v = \mathrm{float32}\big(\mathrm{bigram}[x_n, v] + \mathrm{mix}[h_n \bmod M, v]\big)

(one float32 addition, so every language gets the same bits). In JavaScript the state update is
``h = Math.imul(h ^ x, 16777619) >>> 0`` and the logit ``Math.fround(bigram[x][v] + mix[h % M][v])``.
The hash is the "cache": after a beam step, row i continues old row ``beam_idx[i]`` and must take
that row's ``h``.

>>> model = ToyModel(np.zeros((3, 3), np.float32), np.eye(2, 3, dtype=np.float32))
>>> toy_hash([1, 2]), toy_hash([1, 2]) % 2
(3983810698, 0)
>>> model(np.array([[1, 2]])).logits[0, -1]      # bigram row 2 (zeros) + mix row 0
array([1., 0., 0.], dtype=float32)
"""

from __future__ import annotations


import numpy as np

from ...model.stand_ins import StubConfig, StubOutput

__all__ = ["ToyModel", "ToyCache", "toy_hash", "FNV_OFFSET", "FNV_PRIME"]

FNV_OFFSET = 2166136261  # h_0
FNV_PRIME = 16777619


def toy_hash(tokens, h: int = FNV_OFFSET) -> int:
    """FNV-1a over token ids (one id per step, not per byte): the state after ``tokens``, from state ``h``."""
    for token in tokens:
        h = ((h ^ int(token)) * FNV_PRIME) & 0xFFFFFFFF
    return h


class ToyCache:
    """The toy model's state per row: the hash ``h`` (N,) and the last token (N,), plus the length S.

    It also keeps the tokens (N, S), so that :meth:`crop` (assisted decoding drops rejected drafts) can
    recompute the hash of a shorter row; an implementation without assisted decoding needs only ``h``.
    """

    def __init__(self, batch_size: int, capacity: int):
        self.h = np.full(batch_size, FNV_OFFSET, dtype=np.int64)  # (N,) uint32 values
        self.last = np.zeros(batch_size, dtype=np.int64)          # (N,)
        self.tokens = np.zeros((batch_size, 0), dtype=np.int64)   # (N, S)
        self.capacity = capacity

    @property
    def length(self) -> int:
        return self.tokens.shape[1]

    @property
    def batch_size(self) -> int:
        return self.h.shape[0]

    def reorder(self, beam_idx: np.ndarray) -> None:
        """In place: row i <- old row beam_idx[i] (what ``KVCache.reorder`` does to keys and values)."""
        rows = np.asarray(beam_idx)
        self.h, self.last, self.tokens = self.h[rows], self.last[rows], self.tokens[rows]

    def expand(self, num_beams: int) -> ToyCache:
        """A new cache with each row repeated ``num_beams`` times consecutively."""
        new = ToyCache(self.batch_size * num_beams, self.capacity)
        new.h, new.last = np.repeat(self.h, num_beams), np.repeat(self.last, num_beams)
        new.tokens = np.repeat(self.tokens, num_beams, axis=0)
        return new

    def crop(self, length: int) -> None:
        """Keep the first ``length`` tokens of every row (``KVCache.crop``): the hash is recomputed from them."""
        if not 0 < length <= self.length:
            raise ValueError(f"`length` has to be in [1, {self.length}] (the cached length), but is {length}")
        self.tokens = self.tokens[:, :length]
        self.h = np.array([toy_hash(row) for row in self.tokens.tolist()], dtype=np.int64)
        self.last = self.tokens[:, -1].copy()


class ToyModel:
    """The toy model behind the model interface of :class:`refdecode.GPT2` (``model(input_ids, ...)``).

    Args:
        bigram: float32 (V, V); row a holds the logits' first term after token a.
        mix: float32 (M, V); row ``h mod M`` holds the second term.
        n_positions, eos_token_id: what ``model.config`` reports.
    """

    def __init__(self, bigram: np.ndarray, mix: np.ndarray, n_positions: int = 64, eos_token_id: int | None = None):
        self.bigram = np.asarray(bigram, dtype=np.float32)
        self.mix = np.asarray(mix, dtype=np.float32)
        vocab = self.bigram.shape[0]
        if self.bigram.shape != (vocab, vocab) or self.mix.ndim != 2 or self.mix.shape[1] != vocab:
            raise ValueError(f"`bigram` has to be (V, V) and `mix` (M, V), but are {self.bigram.shape} and "
                             f"{self.mix.shape}")
        self.config = StubConfig(vocab_size=vocab, n_positions=n_positions, eos_token_id=eos_token_id)

    def new_cache(self, batch_size: int, capacity: int) -> ToyCache:
        return ToyCache(batch_size, capacity)

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray | None = None,
                 position_ids: np.ndarray | None = None, past_key_values: ToyCache | None = None,
                 logits_to_keep: int = 0) -> StubOutput:
        """(N, T) new tokens -> logits float32 (N, T, V) (the last ``logits_to_keep`` positions if > 0)."""
        n, t = input_ids.shape
        cache = past_key_values if past_key_values is not None else self.new_cache(n, 0)
        if cache.length + t > self.config.n_positions:
            raise ValueError(f"sequence length {cache.length + t} is larger than n_positions {self.config.n_positions}")
        logits = np.empty((n, t, self.bigram.shape[1]), dtype=np.float32)  # (N, T, V)
        for j in range(t):
            cache.h = np.array([toy_hash([x], h) for x, h in zip(input_ids[:, j].tolist(), cache.h.tolist())],
                               dtype=np.int64)
            cache.last = input_ids[:, j].astype(np.int64)
            logits[:, j] = self.bigram[cache.last] + self.mix[cache.h % self.mix.shape[0]]  # float32 + float32
        cache.tokens = np.concatenate([cache.tokens, input_ids.astype(np.int64)], axis=1)  # (N, S) -> (N, S + T)
        if logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        return StubOutput(logits=logits, past_key_values=cache)
