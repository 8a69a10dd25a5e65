r"""Text <-> token ids: GPT-2's byte-level BPE through the ``tokenizers`` library, plus left padding.

Contract: in comes text (a string or a list of them); out come int64 token ids, and for a batch the
left-padded ``input_ids`` (B, T) with its ``attention_mask`` (B, T) that :mod:`refdecode.model.gpt2` and the
decoding loops expect. Loading reads ``tokenizer.json`` from a local directory with
``tokenizers.Tokenizer.from_file`` only (``from_pretrained`` would go to the network).

The ``tokenizer.json`` shipped in ``models/`` is built by ``tools/build_tokenizer.py`` from OpenAI's
``encoder.json`` + ``vocab.bpe`` and gives the ids of transformers' ``GPT2Tokenizer`` on any text
(checked against golden ids in ``tests/text/test_tokenizer.py``): ``<|endoftext|>`` is the single token 50256
wherever it appears, and every byte sequence round-trips, ``decode(encode(text)) == text``.

Why left padding: a decoder-only model appends new tokens on the right, so every row's last column
must be a real token; pads go on the left and are masked out (mask 0), and the model derives
positions from the mask so the real tokens of a padded row start at position 0.

For code ported from transformers, the tokenizer is also callable (``tok(texts, return_tensors="np")``
returns a :class:`BatchEncoding` with ``input_ids`` and ``attention_mask``, so
``generate(model, **tok(["ROMEO:"], return_tensors="np"))`` works), has ``batch_decode``, and
carries ``eos_token_id``, ``bos_token_id``, ``pad_token_id`` and ``padding_side`` (``"left"`` here,
the side generation needs; transformers' GPT-2 tokenizer defaults to ``"right"``).

Docs: docs/tokens.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..validation import check_integer
from .files import read_text_file

__all__ = ["Tokenizer", "BatchEncoding"]

_EOS = "<|endoftext|>"


class BatchEncoding(dict):
    """``{"input_ids": ..., "attention_mask": ...}`` with attribute access, as transformers' ``BatchEncoding``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


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

    #: Which side :meth:`encode_batch` pads: "left" (generation appends on the right) or "right".
    padding_side: str = "left"

    def __init__(self, path: str | Path, pad_token_id: int = 50256, padding_side: str = "left") -> None:
        from tokenizers import Tokenizer as _HFTokenizer  # imported here: keeps `import refdecode` light

        path = Path(path)
        file = path / "tokenizer.json" if path.is_dir() else path
        text = read_text_file(file, "tokenizer file")  # regular file only; missing -> "tokenizer file not found"
        try:
            self._tok = _HFTokenizer.from_str(text)
        except Exception as e:  # tokenizers raises a bare Exception naming no file
            raise ValueError(f"tokenizer file {file} is not a valid tokenizer.json: {e}") from None
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)
        self.pad_token_id = check_integer("pad_token_id", pad_token_id, minimum=0, maximum=self.vocab_size - 1)
        if padding_side not in ("left", "right"):
            raise ValueError(f"`padding_side` must be 'left' or 'right', got {padding_side!r}")
        self.padding_side = padding_side
        #: ``<|endoftext|>``: GPT-2's only special token is its eos, bos (and, here, pad) token.
        self.eos_token = self.bos_token = _EOS
        self.eos_token_id = self.bos_token_id = self._tok.token_to_id(_EOS)

    def __len__(self) -> int:
        """Vocabulary size, added tokens included (``len(tokenizer)`` in transformers)."""
        return int(self.vocab_size)

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

    def batch_decode(self, sequences: np.ndarray | list[list[int]], skip_special_tokens: bool = False) -> list[str]:
        """Rows of token ids (N, T) -> N texts (:meth:`decode` of each row).

        >>> Tokenizer("models/gpt2-tiny").batch_decode([[15496, 995], [17250, 50256]], skip_special_tokens=True)
        ['Hello world', 'Hi']
        """
        return [self.decode(row, skip_special_tokens=skip_special_tokens) for row in sequences]

    def __call__(self, text: str | list[str], padding: bool | str = False,
                 return_tensors: str | None = None) -> BatchEncoding:
        """transformers' calling convention: text(s) -> ``BatchEncoding(input_ids=..., attention_mask=...)``.

        ``return_tensors="np"`` gives int64 (B, T) arrays (B = 1 for one string), padded on
        ``padding_side``; without it, lists of ids (padded only with ``padding=True``/``"longest"``).
        Texts of different lengths need ``padding=True`` for arrays, as in transformers.

        >>> tok = Tokenizer("models/gpt2-tiny")
        >>> tok("Hello world")
        {'input_ids': [15496, 995], 'attention_mask': [1, 1]}
        >>> enc = tok(["Hello world", "Hi"], padding=True, return_tensors="np")
        >>> enc.input_ids.tolist(), enc.attention_mask.tolist()
        ([[15496, 995], [50256, 17250]], [[1, 1], [0, 1]])
        """
        if return_tensors not in (None, "np"):
            raise ValueError(f"`return_tensors` must be None or 'np' (refdecode is NumPy only), got {return_tensors!r}")
        if padding not in (False, True, "longest", "do_not_pad"):
            raise ValueError(f"`padding` must be True, False, 'longest' or 'do_not_pad', got {padding!r}")
        texts = [text] if isinstance(text, str) else text
        if not isinstance(texts, (list, tuple)):
            raise TypeError(f"`text` must be a str or a list of str, got {type(text).__name__}")
        input_ids, attention_mask = self.encode_batch(list(texts), allow_empty=True)  # (B, T) each
        lengths = attention_mask.sum(axis=1)  # (B,)
        unpadded = padding in (False, "do_not_pad")
        if return_tensors == "np":
            if unpadded and len(set(lengths.tolist())) > 1:
                raise ValueError("the texts have different lengths: pass `padding=True` to pad them into one array")
            return BatchEncoding(input_ids=input_ids, attention_mask=attention_mask)
        rows = [ids[m == 1].tolist() if unpadded else ids.tolist() for ids, m in zip(input_ids, attention_mask)]
        masks = [[1] * len(r) if unpadded else m.tolist() for r, m in zip(rows, attention_mask)]
        if isinstance(text, str):
            return BatchEncoding(input_ids=rows[0], attention_mask=masks[0])
        return BatchEncoding(input_ids=rows, attention_mask=masks)

    def encode_batch(self, texts: list[str], allow_empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Encode several texts and pad them to the longest (LEFT by default): ``(input_ids, attention_mask)``.

        Returns:
            input_ids: int64 (B, T), ``pad_token_id`` on the left of shorter rows (``padding_side``).
            attention_mask: int64 (B, T), 0 on padding, 1 on real tokens.

        >>> ids, mask = Tokenizer("models/gpt2-tiny").encode_batch(["Hello world", "Hi"])
        >>> ids.tolist(), mask.tolist()
        ([[15496, 995], [50256, 17250]], [[1, 1], [0, 1]])
        """
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("`texts` must be a list of str")
        if len(texts) == 0:
            raise ValueError("`texts` must hold at least one string, got an empty list")
        if self.padding_side not in ("left", "right"):
            raise ValueError(f"`padding_side` must be 'left' or 'right', got {self.padding_side!r}")
        rows = [self.encode(t) for t in texts]
        T = max(len(r) for r in rows)
        if T == 0 and not allow_empty:
            raise ValueError("every text is empty: a prompt needs at least one token")
        input_ids = np.full((len(rows), T), self.pad_token_id, dtype=np.int64)  # (B, T)
        attention_mask = np.zeros((len(rows), T), dtype=np.int64)  # (B, T)
        for b, r in enumerate(rows):
            if len(r):
                cols = slice(T - len(r), T) if self.padding_side == "left" else slice(0, len(r))
                input_ids[b, cols] = r
                attention_mask[b, cols] = 1
        return input_ids, attention_mask
