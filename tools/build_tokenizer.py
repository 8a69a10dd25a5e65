"""Build the GPT-2 byte-level BPE ``tokenizer.json`` (for the `tokenizers` library) from OpenAI's files.

Input: ``encoder.json`` (token -> id, 50257 entries) and ``vocab.bpe`` (50000 merges) as shipped in
``../shared/gpt2-bpe/`` (see its README for provenance and sha256). Output: a ``tokenizer.json`` in the
layout of the Hugging Face hub's ``openai-community/gpt2`` file: ByteLevel pre-tokenizer (GPT-2's
regex, no prefix space), BPE model, ByteLevel decoder, ``<|endoftext|>`` (50256) as a special token.

The JSON is written by hand rather than by ``Tokenizer.save`` on purpose: tokenizers >= 0.20 saves
merges as pairs (``[["Ġ", "t"], ...]``) which older versions cannot read; the string form
(``"Ġ t"``) loads in every version from 0.15.2 (what transformers 4.38.2 pins) to today.

Usage::

    python tools/build_tokenizer.py [--bpe-dir ../shared/gpt2-bpe] OUT.json [OUT2.json ...]

Checked after writing: "Hello world" -> [15496, 995] and the round trip of a few awkward strings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}
EOT = "<|endoftext|>"


def build(bpe_dir: Path) -> dict:
    """Return the tokenizer.json content as a dict."""
    for name, digest in SHA256.items():
        got = hashlib.sha256((bpe_dir / name).read_bytes()).hexdigest()
        if got != digest:
            raise SystemExit(f"{bpe_dir / name}: sha256 {got} != {digest}")
    vocab = json.loads((bpe_dir / "encoder.json").read_text(encoding="utf-8"))
    lines = (bpe_dir / "vocab.bpe").read_text(encoding="utf-8").split("\n")
    merges = [ln for ln in lines[1:] if ln.strip()]  # line 0 is "#version: 0.2"
    assert len(vocab) == 50257 and vocab[EOT] == 50256 and len(merges) == 50000
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": vocab[EOT], "content": EOT, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": True, "special": True}
        ],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": dict(byte_level, trim_offsets=False),
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": vocab,
            "merges": merges,
        },
    }


def check(path: Path) -> None:
    """Load the written file with the installed `tokenizers` and check known ids and round trips."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    assert tok.encode("Hello world").ids == [15496, 995]
    assert tok.encode("It might be possible to").ids == [1026, 1244, 307, 1744, 284]
    assert tok.encode(f"a{EOT}b").ids == [64, 50256, 65]
    for text in ["  two  spaces\n\n", "naïve café 日本語 🤖", "don't we'll I'm"]:
        assert tok.decode(tok.encode(text).ids, skip_special_tokens=False) == text


def main() -> None:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bpe-dir", type=Path, default=here.parent.parent / "shared" / "gpt2-bpe")
    ap.add_argument("out", type=Path, nargs="+")
    args = ap.parse_args()
    text = json.dumps(build(args.bpe_dir), ensure_ascii=False, separators=(",", ":"))
    for out in args.out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        check(out)
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
