"""refdecode.text.tokenizer: ids equal to transformers' GPT2Tokenizer (golden), lossless round trip, left padding."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from conftest import GOLDEN, MODELS
from hypothesis import given
from hypothesis import strategies as st

from refdecode.text.tokenizer import Tokenizer

CASES = json.loads((GOLDEN / "tokenizer_ids.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def shipped() -> Tokenizer:
    """Loaded once (parsing the 3.5 MB tokenizer.json takes ~0.3 s)."""
    return Tokenizer(MODELS / "gpt2-tiny")


@pytest.fixture(scope="module")
def tok():
    return shipped()


def test_golden_meta():
    assert CASES["meta"]["format_version"] == 1, f"regenerate with: {CASES['meta']['regenerate']}"


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: repr(c["text"])[:30])
def test_ids_equal_transformers_gpt2tokenizer(tok, case):
    """<|endoftext|> inside text, emoji, CJK, runs of spaces/newlines/tabs, contractions, accents, code."""
    got = tok.encode(case["text"])
    assert got.dtype == np.int64
    assert got.tolist() == case["ids"], f"{case['text']!r}: got {got.tolist()[:10]}, want {case['ids'][:10]}"
    assert tok.decode(got) == case["text"]


def test_endoftext_is_one_special_token(tok):
    assert tok.encode("<|endoftext|>").tolist() == [50256]
    assert tok.decode([464, 50256], skip_special_tokens=True) == "The"


@given(st.text(max_size=60))
def test_decode_encode_round_trips_any_text(text):
    tok = shipped()
    assert tok.decode(tok.encode(text)) == text


@given(st.lists(st.sampled_from(["<|endoftext|>", " ", "  ", "\n", "\t", "'s", "é", "🤖", "日本", "ab", "1"]),
                max_size=12))
def test_round_trip_of_awkward_pieces(pieces):
    tok = shipped()
    text = "".join(pieces)
    assert tok.decode(tok.encode(text)) == text


def test_batch_is_left_padded(tok):
    ids, mask = tok.encode_batch(["Hello world, how are you", "Hi", "It might be possible to"])
    assert ids.dtype == mask.dtype == np.int64 and ids.shape == mask.shape == (3, 6)
    assert mask.tolist() == [[1] * 6, [0] * 5 + [1], [0, 1, 1, 1, 1, 1]]
    assert ids[1].tolist() == [50256] * 5 + [17250]  # pads on the LEFT: the last column is always real
    assert ids[2, 1:].tolist() == [1026, 1244, 307, 1744, 284]
    ids, mask = Tokenizer(MODELS / "gpt2-tiny", pad_token_id=0).encode_batch(["a", "", "abc def"])
    assert ids[1].tolist() == [0, 0] and mask[1].tolist() == [0, 0]


def test_errors_are_named(tmp_path, tok):
    with pytest.raises(FileNotFoundError, match="tokenizer file not found"):
        Tokenizer(tmp_path)
    with pytest.raises(ValueError, match=r"`pad_token_id` must be an integer >= 0 and <= 50256, got 50257"):
        Tokenizer(MODELS / "gpt2-tiny", pad_token_id=50257)
    with pytest.raises(TypeError, match="`text` must be a str"):
        tok.encode(["a"])
    with pytest.raises(TypeError, match="`texts` must be a list of str"):
        tok.encode_batch("abc")
    with pytest.raises(ValueError, match="`texts` must hold at least one string"):
        tok.encode_batch([])
    with pytest.raises(ValueError, match=r"`ids` values must be in \[0, 50257\)"):
        tok.decode([50257])


def test_transformers_conveniences(tok):
    """``tok(...)``, ``batch_decode``, special ids and ``padding_side``, as code ported from transformers uses them."""
    assert tok.eos_token_id == tok.bos_token_id == tok.pad_token_id == 50256 and tok.eos_token == "<|endoftext|>"
    assert len(tok) == 50257
    enc = tok(["Hello world", "Hi"], padding=True, return_tensors="np")
    assert enc.input_ids.dtype == enc["attention_mask"].dtype == np.int64
    assert enc.input_ids.tolist() == [[15496, 995], [50256, 17250]] and enc.attention_mask.tolist() == [[1, 1], [0, 1]]
    assert tok(["Hello world", "Hi"]) == {"input_ids": [[15496, 995], [17250]], "attention_mask": [[1, 1], [1]]}
    assert tok("Hi", return_tensors="np").input_ids.shape == (1, 1)
    assert tok.batch_decode(enc.input_ids, skip_special_tokens=True) == ["Hello world", "Hi"]
    with pytest.raises(ValueError, match="pass `padding=True`"):
        tok(["Hello world", "Hi"], return_tensors="np")
    with pytest.raises(ValueError, match="`return_tensors` must be None or 'np'.*'pt'"):
        tok("Hi", return_tensors="pt")
    right = Tokenizer(MODELS / "gpt2-tiny", padding_side="right")
    assert right(["Hello world", "Hi"], padding=True)["input_ids"] == [[15496, 995], [17250, 50256]]
    with pytest.raises(ValueError, match="`padding_side` must be 'left' or 'right', got 'top'"):
        Tokenizer(MODELS / "gpt2-tiny", padding_side="top")


def test_generate_takes_the_tokenizer_output_as_keywords(tok):
    from refdecode import GPT2, generate

    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    out = generate(model, **tok(["Hello world", "Hi"], padding=True, return_tensors="np"), max_new_tokens=2)
    assert out.shape == (2, 4)


@pytest.mark.parametrize("content, match", [
    (b'{"version": "1.0", "model": 3}', "is not a valid tokenizer.json: "),
    (b"{not json", "is not a valid tokenizer.json: "),
    (b"\xff\xfe", "is not UTF-8 text"),
])
def test_malformed_tokenizer_json_names_the_file(tmp_path, content, match):
    """``tokenizers`` raised a bare ``Exception`` naming no file."""
    (tmp_path / "tokenizer.json").write_bytes(content)
    with pytest.raises(ValueError, match=match) as e:
        Tokenizer(tmp_path)
    assert str(tmp_path / "tokenizer.json") in str(e.value)


def test_tokenizer_fifo_is_refused(tmp_path):
    import os
    os.mkfifo(tmp_path / "tokenizer.json")
    with pytest.raises(ValueError, match="tokenizer.json is a FIFO"):
        Tokenizer(tmp_path)
