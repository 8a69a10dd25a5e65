"""refdecode.text.streamers: TextStreamer / TextIteratorStreamer in transformers 4.38.2's shape, and streamer= in generate."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import MODELS

from refdecode import GPT2, TextIteratorStreamer, TextStreamer, Tokenizer, generate


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(MODELS / "tiny-shakespeare")


@pytest.fixture(scope="module")
def model():
    return GPT2.from_pretrained(MODELS / "tiny-shakespeare")


class Recorder(TextStreamer):
    """Collect what would be printed, and how many tokens had been put when each piece came out."""

    def __init__(self, tok, **kw):
        super().__init__(tok, **kw)
        self.pieces, self.puts = [], []

    def put(self, value):
        self.puts.append(np.asarray(value).copy())
        super().put(value)

    def on_finalized_text(self, text, stream_end=False):
        self.pieces.append((len(self.puts), text, stream_end))


def test_greedy_streams_prompt_then_each_token_and_the_text_equals_the_decoded_output(tok, model):
    streamer = Recorder(tok, skip_special_tokens=True)
    inputs = tok(["ROMEO:\n"], return_tensors="np")
    out = generate(model, **inputs, max_new_tokens=12, streamer=streamer)
    assert streamer.puts[0].tolist() == inputs.input_ids.tolist()  # the prompt, (1, T)
    assert [p.tolist() for p in streamer.puts[1:]] == [[t] for t in out[0, inputs.input_ids.shape[1]:]]
    text = "".join(piece for _, piece, _ in streamer.pieces)
    assert text == tok.decode(out[0], skip_special_tokens=True)
    assert streamer.pieces[-1][2] is True  # end() closes the stream
    first_text_after_prompt = next(n for n, piece, _ in streamer.pieces if n > 1 and piece)
    assert first_text_after_prompt < len(streamer.puts)  # text came out before the last token: it streams


def test_skip_prompt_and_sampling(tok, model):
    streamer = Recorder(tok, skip_prompt=True)
    inputs = tok("JULIET:", return_tensors="np")
    out = generate(model, **inputs, do_sample=True, seed=0, max_new_tokens=8, streamer=streamer)
    assert "".join(p for _, p, _ in streamer.pieces) == tok.decode(out[0, inputs.input_ids.shape[1]:])


def test_text_streamer_prints_words_as_they_complete(tok, capsys):
    streamer = TextStreamer(tok)
    streamer.put(np.array([[tok.encode("Hello")[0]]]))
    assert capsys.readouterr().out == ""  # "Hello" may still grow
    streamer.put(tok.encode(" world"))
    assert capsys.readouterr().out == "Hello "
    streamer.put(tok.encode(" again\n"))
    assert capsys.readouterr().out == "world again\n"  # a newline flushes the line
    streamer.end()
    assert capsys.readouterr().out == "\n"


def test_iterator_streamer_in_a_thread(tok, model):
    streamer = TextIteratorStreamer(tok, skip_prompt=True, timeout=60)
    inputs = tok(["ROMEO:\n"], return_tensors="np")
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("out", generate(
        model, **inputs, max_new_tokens=10, streamer=streamer)))
    thread.start()
    text = "".join(streamer)
    thread.join()
    assert text == tok.decode(result["out"][0, inputs.input_ids.shape[1]:])


def test_streamer_refuses_beams_and_batches(tok, model):
    with pytest.raises(ValueError, match="`streamer` cannot be used with beam search"):
        generate(model, **tok("a", return_tensors="np"), num_beams=2, max_new_tokens=2, streamer=TextStreamer(tok))
    with pytest.raises(ValueError, match="TextStreamer only supports batch size 1"):
        generate(model, **tok(["a b", "c d"], return_tensors="np"), max_new_tokens=2, streamer=TextStreamer(tok))
