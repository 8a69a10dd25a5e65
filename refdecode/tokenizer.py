r"""Text <-> token ids: GPT-2's byte-level BPE through the ``tokenizers`` library, plus left padding.

Contract: in comes text (a string or a list of them); out come int64 token ids, and for a batch the
left-padded ``input_ids`` (B, T) with its ``attention_mask`` (B, T) that :mod:`refdecode.gpt2` and the
decoding loops expect. Loading reads ``tokenizer.json`` from a local directory with
``tokenizers.Tokenizer.from_file`` only (``from_pretrained`` would go to the network).

The ``tokenizer.json`` shipped in ``models/`` is built by ``tools/build_tokenizer.py`` from OpenAI's
``encoder.json`` + ``vocab.bpe`` and gives the ids of transformers' ``GPT2Tokenizer`` on any text
(checked against golden ids in ``tests/test_tokenizer.py``): ``<|endoftext|>`` is the single token 50256
wherever it appears, and every byte sequence round-trips, ``decode(encode(text)) == text``.

Why left padding: a decoder-only model appends new tokens on the right, so every row's last column
must be a real token; pads go on the left and are masked out (mask 0), and the model derives
positions from the mask so the real tokens of a padded row start at position 0.

Docs: docs/tokens.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["Tokenizer"]


class Tokenizer:
    """GPT-2 tokenizer loaded from ``path/tokenizer.json`` (or the file itself).

    Args:
        path: a model directory holding ``tokenizer.json``, or the path of that file.
        pad_token_id: id used to fill left padding in :meth:`encode_batch` (GPT-2 has no pad token;
            like most GPT-2 set-ups this defaults to ``<|endoftext|>`` = 50256; the mask makes it inert).

    >>> tok = Tokenizer("models/gpt2-tiny")
    >>> tok.encode("Hello world").tolist()
    [15496, 995]
    >>> tok.decode([15496, 995, 50256])
    'Hello world<|endoftext|>'
    """

    def __init__(self, path: str | Path, pad_token_id: int = 50256) -> None:
        from tokenizers import Tokenizer as _HFTokenizer  # imported here: keeps `import refdecode` light

        path = Path(path)
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise FileNotFoundError(f"tokenizer file not found: {file}")
        self._tok = _HFTokenizer.from_file(str(file))
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)
        if isinstance(pad_token_id, bool) or not isinstance(pad_token_id, int) \
                or not 0 <= pad_token_id < self.vocab_size:
            raise ValueError(f"`pad_token_id` must be an integer in [0, {self.vocab_size}), got {pad_token_id!r}")
        self.pad_token_id = pad_token_id

    def encode(self, text: str) -> np.ndarray:
        """Text -> int64 (T,) token ids (no special tokens added; ``<|endoftext|>`` in the text is 50256)."""
        if not isinstance(text, str):
            raise TypeError(f"`text` must be a str, got {type(text).__name__}")
        return np.array(self._tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)

    def decode(self, ids: np.ndarray | list[int], skip_special_tokens: bool = False) -> str:
        """Token ids (T,) -> text. Special tokens are kept unless ``skip_special_tokens``."""
        ids = np.asarray(ids)
        if ids.size and ids.dtype.kind not in "iu":
            raise TypeError(f"`ids` must be integers, got dtype {ids.dtype}")
        if ids.ndim != 1:
            raise ValueError(f"`ids` must be one sequence (1-D), got shape {ids.shape}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"`ids` values must be in [0, {self.vocab_size}), got min {ids.min()} max {ids.max()}")
        return self._tok.decode(ids.tolist(), skip_special_tokens=skip_special_tokens)

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Encode several texts and LEFT-pad them to the longest: ``(input_ids, attention_mask)``.

        Returns:
            input_ids: int64 (B, T), ``pad_token_id`` on the left of shorter rows.
            attention_mask: int64 (B, T), 0 on padding, 1 on real tokens.

        >>> ids, mask = Tokenizer("models/gpt2-tiny").encode_batch(["Hello world", "Hi"])
        >>> ids.tolist(), mask.tolist()
        ([[15496, 995], [50256, 17250]], [[1, 1], [0, 1]])
        """
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("`texts` must be a list of str")
        if len(texts) == 0:
            raise ValueError("`texts` must hold at least one string, got an empty list")
        rows = [self.encode(t) for t in texts]
        T = max(len(r) for r in rows)
        if T == 0:
            raise ValueError("`texts` are all empty: nothing to encode")
        input_ids = np.full((len(rows), T), self.pad_token_id, dtype=np.int64)  # (B, T)
        attention_mask = np.zeros((len(rows), T), dtype=np.int64)  # (B, T)
        for b, r in enumerate(rows):
            if len(r):
                input_ids[b, T - len(r):] = r
                attention_mask[b, T - len(r):] = 1
        return input_ids, attention_mask
