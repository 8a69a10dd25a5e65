r"""The KV cache: the keys and values of every token already seen, so a decoding step costs O(1) tokens.

Contract: :func:`refdecode.model.gpt2.gpt2` writes each layer's new keys/values here and reads back all of them;
decoding loops (greedy, sampling, beam search) own the cache object and call :meth:`KVCache.reorder`
after a beam step, :meth:`KVCache.expand` after a shared prefill and :meth:`KVCache.crop` after
assisted decoding rejected drafted tokens. The cache knows nothing about
tokens, masks or positions: it is float32 storage with a fill level.

Why it exists: attention of token t needs k and v of tokens 0..t. Without a cache, step t recomputes
all t of them (O(t) work per step, O(T^2) per sequence); with it, a step computes one new k, v per layer
and reads the rest.

Layout (one pair of arrays per layer, preallocated; S = :attr:`KVCache.length`)::

    keys[l], values[l]    float32 (B, H, S_max, D)     positions 0..S-1 are valid, S..S_max-1 are free
    keys(l), values(l)    float32 (B, H, S, D)          views of the valid part (no copy)

This is transformers 4.38's ``past_key_values[l] = (key, value)``, each ``(B, H, S, D)``, stored with
room to grow: appending writes into the free slots instead of ``torch.cat`` (which copies the whole
cache every step). When a write would overflow, the capacity doubles (one copy, amortised O(1)).

Docs: docs/gpt2.md.
"""

from __future__ import annotations

import numpy as np

__all__ = ["KVCache"]


class KVCache:
    """Preallocated per-layer keys and values, float32 ``(B, H, S_max, D)``, plus the fill level ``length``.

    Args:
        n_layer: L, number of layers.
        batch_size: B, rows (with beams: B*K, beams of a prompt consecutive).
        n_head: H.
        head_dim: D.
        capacity: S_max, token slots preallocated per row (>= 1); grows by doubling when exceeded.

    >>> cache = KVCache(n_layer=1, batch_size=2, n_head=1, head_dim=1, capacity=4)
    >>> k = np.array([[[[1.0]]], [[[2.0]]]], dtype=np.float32)        # (B=2, H=1, T=1, D=1)
    >>> keys, values = cache.append(0, k, 10 * k)                       # layer 0, one new token
    >>> cache.advance(1)                                                # after the last layer
    >>> cache.length, keys.shape, cache.keys(0)[:, 0, :, 0].tolist()
    (1, (2, 1, 1, 1), [[1.0], [2.0]])
    """

    def __init__(self, n_layer: int, batch_size: int, n_head: int, head_dim: int, capacity: int) -> None:
        for name, value in (("n_layer", n_layer), ("batch_size", batch_size), ("n_head", n_head),
                            ("head_dim", head_dim), ("capacity", capacity)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"`{name}` must be an integer >= 1, got {value!r}")
        shape = (int(batch_size), int(n_head), int(capacity), int(head_dim))  # (B, H, S_max, D)
        self._k = [np.zeros(shape, dtype=np.float32) for _ in range(n_layer)]
        self._v = [np.zeros(shape, dtype=np.float32) for _ in range(n_layer)]
        self.length = 0  # S: tokens held (identical for every layer once a forward pass is complete)

    # ---- sizes -----------------------------------------------------------------------------------

    @property
    def n_layer(self) -> int:
        """L, the number of layers held."""
        return len(self._k)

    @property
    def batch_size(self) -> int:
        """Rows (B, or B*K with beams)."""
        return self._k[0].shape[0]

    @property
    def n_head(self) -> int:
        """H."""
        return self._k[0].shape[1]

    @property
    def head_dim(self) -> int:
        """D."""
        return self._k[0].shape[3]

    @property
    def capacity(self) -> int:
        """S_max, token slots allocated per row before the next doubling."""
        return min(k.shape[2] for k in self._k)

    def __repr__(self) -> str:
        return (f"KVCache(n_layer={self.n_layer}, batch_size={self.batch_size}, n_head={self.n_head}, "
                f"head_dim={self.head_dim}, length={self.length}, capacity={self.capacity})")

    # ---- reading and writing ---------------------------------------------------------------------

    def keys(self, layer: int) -> np.ndarray:
        """Valid keys of ``layer``: a view, float32 (B, H, S, D)."""
        return self._k[layer][:, :, : self.length]

    def values(self, layer: int) -> np.ndarray:
        """Valid values of ``layer``: a view, float32 (B, H, S, D)."""
        return self._v[layer][:, :, : self.length]

    def append(self, layer: int, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Write T new keys/values of ``layer`` after the S held ones; return views of all S + T.

        ``length`` does not move here (every layer writes at the same offset S); the model calls
        :meth:`advance` once after its last layer.

        Args:
            layer: layer index in [0, L).
            k, v: float32 (B, H, T, D).

        Returns:
            keys, values: float32 (B, H, S + T, D), views into the cache (no copy).
        """
        if not 0 <= layer < self.n_layer:
            raise ValueError(f"`layer` must be in [0, {self.n_layer}), got {layer}")
        B, H, S_max, D = self._k[layer].shape
        if k.shape != v.shape or k.ndim != 4 or k.shape[0] != B or k.shape[1] != H or k.shape[3] != D:
            raise ValueError(f"`k` and `v` must have shape ({B}, {H}, T, {D}), got {k.shape} and {v.shape}")
        S, T = self.length, k.shape[2]
        if S + T > S_max:
            self._grow(layer, max(2 * S_max, S + T))
        self._k[layer][:, :, S : S + T] = k  # O(T) write into preallocated slots, no concatenation
        self._v[layer][:, :, S : S + T] = v
        return self._k[layer][:, :, : S + T], self._v[layer][:, :, : S + T]

    def advance(self, n_tokens: int) -> None:
        """Mark ``n_tokens`` more positions valid (after every layer has appended them)."""
        self.length += int(n_tokens)

    def crop(self, length: int) -> None:
        """In place: keep the first ``length`` tokens, forget the rest (transformers' ``_crop_past_key_values``).

        Speculative and prompt-lookup decoding (docs/speculative-decoding.md) write the keys/values of
        several drafted tokens in one forward pass, then keep only those the model accepted. Cropping
        only moves the fill level: slots ``length..S-1`` become free and the next :meth:`append`
        overwrites them, so crop-then-append holds exactly what appending the kept tokens alone would.

        Args:
            length: new S, an integer in [0, S].

        >>> cache = KVCache(n_layer=1, batch_size=1, n_head=1, head_dim=1, capacity=4)
        >>> k = np.arange(3, dtype=np.float32).reshape(1, 1, 3, 1)        # 3 tokens: 0, 1, 2
        >>> _ = cache.append(0, k, k); cache.advance(3)
        >>> cache.crop(1)                                                  # keep token 0 only
        >>> _ = cache.append(0, k[:, :, 2:] + 5, k[:, :, 2:]); cache.advance(1)
        >>> cache.length, cache.keys(0).ravel().tolist()
        (2, [0.0, 7.0])
        """
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or not 0 <= length <= self.length:
            raise ValueError(f"`length` must be an integer in [0, {self.length}] (the tokens held), got {length!r}")
        self.length = int(length)

    def _grow(self, layer: int, new_capacity: int) -> None:
        """Reallocate one layer with ``new_capacity`` slots, copying the S valid ones (amortised O(1))."""
        for store in (self._k, self._v):
            old = store[layer]
            new = np.zeros(old.shape[:2] + (new_capacity,) + old.shape[3:], dtype=np.float32)
            new[:, :, : self.length] = old[:, :, : self.length]
            store[layer] = new

    # ---- beam search bookkeeping -----------------------------------------------------------------

    def reorder(self, beam_idx: np.ndarray) -> None:
        """In place: row i takes the keys/values of old row ``beam_idx[i]`` (transformers' ``_reorder_cache``).

        After a beam step, beam i of the next step continues beam ``beam_idx[i]`` of the previous one,
        so its history must be that beam's. The neural-speed article (section "对kv_cache的处理") works through
        4 beams going from ``[0, 1, 2, 3]`` to ``[0, 1, 1, 2]``: beam 2 now continues old beam 1 and
        beam 3 continues old beam 2, and a copy done slot by slot in place must copy 2 -> 3 before
        1 -> 2, or old beam 2 is overwritten before it is read. Here the rows are first gathered
        into a temporary (``k[beam_idx]`` is a copy), then written back, so any order is safe, e.g.
        ``[2, 1, 1, 0]`` (beam 0 continues old beam 2, beam 3 continues old beam 0).

        Args:
            beam_idx: int64 (B,), values in [0, B); the same row may appear several times.

        >>> cache = KVCache(n_layer=1, batch_size=4, n_head=1, head_dim=1, capacity=2)
        >>> k = np.arange(4, dtype=np.float32).reshape(4, 1, 1, 1)      # row b holds the number b
        >>> _ = cache.append(0, k, k); cache.advance(1)
        >>> cache.reorder(np.array([2, 1, 1, 0]))
        >>> cache.keys(0).ravel().tolist()
        [2.0, 1.0, 1.0, 0.0]
        """
        beam_idx = np.asarray(beam_idx)
        B = self.batch_size
        if beam_idx.dtype.kind not in "iu":
            raise TypeError(f"`beam_idx` must be an integer array, got dtype {beam_idx.dtype}")
        if beam_idx.shape != (B,):
            raise ValueError(f"`beam_idx` must have shape ({B},), got {beam_idx.shape}")
        if B and (beam_idx.min() < 0 or beam_idx.max() >= B):
            raise ValueError(f"`beam_idx` values must be in [0, {B}), got {beam_idx.tolist()}")
        S = self.length
        moved = np.flatnonzero(beam_idx != np.arange(B))  # rows that keep their own history need no copy
        if moved.size == 0:
            return
        src = beam_idx[moved]
        for store in (self._k, self._v):
            for arr in store:
                arr[moved, :, :S] = arr[src, :, :S]  # gather (a copy) then write: order-safe

    def expand(self, num_beams: int) -> KVCache:
        """A NEW cache with each row repeated ``num_beams`` times consecutively (``repeat_interleave``).

        Row b of this cache becomes rows b*K .. b*K+K-1, the layout of transformers'
        ``_expand_inputs_for_generation``: prefill a prompt once, then give each of its K beams a copy.
        The capacity (S_max) is kept.

        Args:
            num_beams: K >= 1.

        Returns:
            KVCache with batch_size B*K and the same length.

        >>> cache = KVCache(n_layer=1, batch_size=2, n_head=1, head_dim=1, capacity=2)
        >>> _ = cache.append(0, np.array([1.0, 2.0], dtype=np.float32).reshape(2, 1, 1, 1),
        ...                  np.zeros((2, 1, 1, 1), dtype=np.float32)); cache.advance(1)
        >>> cache.expand(3).keys(0).ravel().tolist()
        [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
        """
        if isinstance(num_beams, bool) or not isinstance(num_beams, (int, np.integer)) or num_beams < 1:
            raise ValueError(f"`num_beams` must be an integer >= 1, got {num_beams!r}")
        B, H, _, D = self._k[0].shape
        new = KVCache(self.n_layer, B * num_beams, H, D, self.capacity)
        S = self.length
        for src, dst in ((self._k, new._k), (self._v, new._v)):
            for a, b in zip(src, dst):
                b[:, :, :S] = np.repeat(a[:, :, :S], num_beams, axis=0)  # (B, H, S, D) -> (B*K, H, S, D)
        new.length = S
        return new
