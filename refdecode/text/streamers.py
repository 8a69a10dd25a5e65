r"""Streamers: text as it is generated, in transformers 4.38.2's shape (``generate(..., streamer=...)``).

Contract: ``generate`` (greedy and sample only, as in 4.38.2; beam modes refuse a streamer) calls
``streamer.put(prompt_ids)`` once with the (1, T) prompt, then ``streamer.put(next_tokens)`` with
the (1,) token of every step, then ``streamer.end()``. A streamer only sees token ids; it decodes
them with the tokenizer it was given. Batch size 1 only (as transformers).

- :class:`TextStreamer` prints text to stdout as soon as whole words are formed (it holds back
  the text after the last space, since the next token may extend the word; a newline or a CJK
  character flushes), and a newline at the end.
- :class:`TextIteratorStreamer` puts the same pieces in a queue and is an iterator over them, for a
  consumer in another thread (``threading.Thread(target=generate, kwargs=...)``).

Subclass :class:`TextStreamer` and override :meth:`TextStreamer.on_finalized_text` to send the text
elsewhere. Docs: docs/porting.md.
"""

from __future__ import annotations

from queue import Queue
from typing import Any

import numpy as np

__all__ = ["BaseStreamer", "TextStreamer", "TextIteratorStreamer"]


class BaseStreamer:
    """What ``generate`` calls: ``put(token ids)`` for the prompt and each new token, then ``end()``."""

    def put(self, value: np.ndarray) -> None:
        raise NotImplementedError()

    def end(self) -> None:
        raise NotImplementedError()


class TextStreamer(BaseStreamer):
    """Print generated text to stdout word by word (transformers 4.38.2 ``TextStreamer``).

    Args:
        tokenizer: anything with ``decode(ids, **decode_kwargs) -> str`` (a :class:`~refdecode.Tokenizer`).
        skip_prompt: do not print the prompt (the first ``put``).
        decode_kwargs: passed to ``tokenizer.decode``, e.g. ``skip_special_tokens=True``.

    >>> from refdecode import Tokenizer
    >>> streamer = TextStreamer(Tokenizer("models/gpt2-tiny"))
    >>> streamer.put(np.array([[15496]])); streamer.put(np.array([995]))  # "Hello" is printed once " world" begins
    Hello
    >>> streamer.put(np.array([11])); streamer.end()                       # "," then the rest and a newline
    world,
    """

    def __init__(self, tokenizer: Any, skip_prompt: bool = False, **decode_kwargs: Any) -> None:
        self.tokenizer = tokenizer
        self.skip_prompt = skip_prompt
        self.decode_kwargs = decode_kwargs
        self.token_cache: list[int] = []  # ids whose text is not fully printed yet
        self.print_len = 0                # how much of decode(token_cache) is printed
        self.next_tokens_are_prompt = True

    def put(self, value: np.ndarray) -> None:
        """Take (1, T) or (T,) ids, print the part of the text that forms whole words."""
        value = np.asarray(value)
        if value.ndim > 1 and value.shape[0] > 1:
            raise ValueError("TextStreamer only supports batch size 1")
        if value.ndim > 1:
            value = value[0]
        if self.skip_prompt and self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            return
        self.token_cache.extend(value.tolist())
        text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
        if text.endswith("\n"):  # a line is complete: print it and start afresh
            printable_text = text[self.print_len:]
            self.token_cache, self.print_len = [], 0
        elif len(text) > 0 and _is_chinese_char(ord(text[-1])):  # CJK has no spaces between words
            printable_text = text[self.print_len:]
            self.print_len += len(printable_text)
        else:  # up to the last space: the last word may still grow
            printable_text = text[self.print_len: text.rfind(" ") + 1]
            self.print_len += len(printable_text)
        self.on_finalized_text(printable_text)

    def end(self) -> None:
        """Print what is left and a newline."""
        if len(self.token_cache) > 0:
            text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
            printable_text = text[self.print_len:]
            self.token_cache, self.print_len = [], 0
        else:
            printable_text = ""
        self.next_tokens_are_prompt = True
        self.on_finalized_text(printable_text, stream_end=True)

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        """Print ``text`` to stdout (and a newline at the end of the stream)."""
        print(text, flush=True, end="" if not stream_end else None)


class TextIteratorStreamer(TextStreamer):
    """The text pieces of :class:`TextStreamer` in a queue; iterate over the streamer to receive them.

    Args:
        timeout: seconds ``next()`` waits for a piece (``queue.Empty`` after that); None waits forever.

    >>> import threading
    >>> from refdecode import GPT2, Tokenizer, generate
    >>> tok = Tokenizer("models/gpt2-tiny")
    >>> streamer = TextIteratorStreamer(tok, skip_prompt=True)
    >>> thread = threading.Thread(target=generate, args=(GPT2.from_pretrained("models/gpt2-tiny"),),
    ...                           kwargs=dict(**tok("Hello", return_tensors="np"), max_new_tokens=5, streamer=streamer))
    >>> thread.start()
    >>> text = "".join(streamer)      # blocks until generation ends
    >>> thread.join(); len(text) > 0
    True
    """

    def __init__(self, tokenizer: Any, skip_prompt: bool = False, timeout: float | None = None,
                 **decode_kwargs: Any) -> None:
        super().__init__(tokenizer, skip_prompt, **decode_kwargs)
        self.text_queue: Queue[str | None] = Queue()
        self.stop_signal = None
        self.timeout = timeout

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        """Queue ``text``; at the end, also the stop signal that ends the iteration."""
        self.text_queue.put(text, timeout=self.timeout)
        if stream_end:
            self.text_queue.put(self.stop_signal, timeout=self.timeout)

    def __iter__(self) -> TextIteratorStreamer:
        return self

    def __next__(self) -> str:
        value = self.text_queue.get(timeout=self.timeout)
        if value == self.stop_signal:
            raise StopIteration()
        return value  # type: ignore[return-value]


def _is_chinese_char(cp: int) -> bool:
    """Is code point ``cp`` a CJK ideograph (the ranges transformers checks)?"""
    return any(lo <= cp <= hi for lo, hi in (
        (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))
