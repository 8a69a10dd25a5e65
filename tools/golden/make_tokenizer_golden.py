"""Golden token ids from transformers 4.38.2's pure-Python ``GPT2Tokenizer`` (oracle venv only).

The reference tokenizer is built from OpenAI's files in ``../shared/gpt2-bpe/`` (``encoder.json``,
``vocab.bpe``; see their README) -- the same two files ``tools/build_tokenizer.py`` turns into the
``tokenizer.json`` that refdecode ships. For each awkward string below the ids are written to
``tests/golden/tokenizer_ids.json``; ``tests/text/test_tokenizer.py`` checks refdecode's tokenizer against them.

In the same run, ``models/gpt2-tiny/tokenizer.json`` is loaded with the oracle venv's ``tokenizers``
(0.15.2, the oldest version pyproject declares) and must give identical ids and round-trip every
string: a ``tokenizer.json`` written in a newer format would fail here.

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_tokenizer_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import tokenizers
import transformers
from transformers import GPT2Tokenizer

ROOT = Path(__file__).resolve().parents[2]
BPE = ROOT.parent / "shared" / "gpt2-bpe"
OUT = ROOT / "tests" / "golden" / "tokenizer_ids.json"
FORMAT_VERSION = 1
REGENERATE = ".venv-oracle/bin/python tools/golden/make_tokenizer_golden.py"

TEXTS = [
    "Hello world",
    "It might be possible to",
    "",
    " ",
    "<|endoftext|>",
    "a<|endoftext|>b",
    "Once upon a time<|endoftext|> The end.<|endoftext|><|endoftext|>",
    "<|endoftext |> <|endoftext|",  # near misses: ordinary text
    "Emoji: 🤖🚀👍🏽 and flags 🇫🇷 and ZWJ 👨‍👩‍👧",
    "CJK: 日本語のテキスト、中文文本,한국어 텍스트",
    "two  spaces,   three,    four\tand\ttabs\t\t",
    "\n\nnewlines\n\n\nand\r\nCRLF\n",
    "   leading and trailing spaces   ",
    "don't can't won't I'm you're he's we'll they've I'd DON'T",
    "naïve café résumé Ångström façade Œuvre Straße",
    "numbers 1234567890 3.14159 -42 1e-5 1,000,000 007",
    "def f(x):\n    return x ** 2  # square\n\nprint(f(3))\n",
    "if (a && b) { c[i] = d->e; } // C++ <tag attr=\"v\">",
    "URL https://example.com/path?q=1&r=2#frag email a.b@c.de",
    "Ünïcödé\u00a0non-breaking\u2009thin\u200bzero-width",
    "combining e\u0301 vs \u00e9, Hangul \u1100\u1161 vs \u3131",
    "mixed\u202eRTL override\u202c and Arabic مرحبا Hebrew שלום",
    "repeated !!!!!!!!! ??? ... ---- ==== ____",
    "\u0000 control \u0007 bell \u001b[31mANSI\u001b[0m",
    "'s 's 'S 're 've 'm 'll 'd ' s",
    "Ġ Ċ ĉ (the byte-level stand-ins as real characters)",
]


def main() -> None:
    ref = GPT2Tokenizer(vocab_file=str(BPE / "encoder.json"), merges_file=str(BPE / "vocab.bpe"))
    cases = [{"text": t, "ids": ref.encode(t)} for t in TEXTS]
    assert cases[0]["ids"] == [15496, 995] and cases[5]["ids"] == [64, 50256, 65]
    # the shipped tokenizer.json, loaded with the oldest supported `tokenizers`, must agree
    shipped = tokenizers.Tokenizer.from_file(str(ROOT / "models" / "gpt2-tiny" / "tokenizer.json"))
    for case in cases:
        ids = shipped.encode(case["text"], add_special_tokens=False).ids
        assert ids == case["ids"], (case["text"], ids, case["ids"])
        assert shipped.decode(ids, skip_special_tokens=False) == case["text"], case["text"]
        assert ref.decode(case["ids"], clean_up_tokenization_spaces=False) == case["text"], case["text"]
    meta = {"format_version": FORMAT_VERSION, "transformers": transformers.__version__,
            "tokenizers_checked": tokenizers.__version__, "python": sys.version.split()[0],
            "reference": "transformers.GPT2Tokenizer(encoder.json, vocab.bpe) from ../shared/gpt2-bpe",
            "script": "tools/golden/make_tokenizer_golden.py", "regenerate": REGENERATE}
    lines = ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in cases)  # one string per line
    OUT.write_text(f'{{"meta": {json.dumps(meta)},\n "cases": [\n  {lines}\n ]\n}}\n', encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(cases)} strings; models/gpt2-tiny/tokenizer.json agrees under "
          f"tokenizers {tokenizers.__version__}")


if __name__ == "__main__":
    main()
