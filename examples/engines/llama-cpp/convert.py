r"""Hugging Face GPT-2 folder -> float32 GGUF for llama.cpp, with convert_hf_to_gguf.py (llama-cpp-python 0.3.36's copy).

Usage: ``CONVERT_PYTHON convert.py MODEL_DIR OUT.gguf`` (the adapter calls it on first use of a checkpoint).

The converter reads ``n_ctx`` from config.json (GPT2Model.set_gguf_parameters), which transformers' GPT-2 configs
spell ``n_positions``: the folder is staged with ``n_ctx = n_positions`` added. The suite's models ship no tokenizer
(export copies only config.json and model.safetensors); the converter's vocabulary step (``get_vocab_base``: AutoTokenizer + a hash of a test string) needs
one, so for those the vocabulary is written directly: ``vocab_size`` byte-level tokens (the first of GPT-2's
byte alphabet, then ``[TOKn]``), tokenizer model "gpt2", pre-tokenizer "gpt-2", one merge (llama.cpp refuses
a BPE vocabulary without the merges key; an empty list is not written). Token ids are all the
adapter exchanges, so the strings never matter. Weights stay float32 (``--outtype f32``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path


def _byte_alphabet() -> list[str]:
    """GPT-2's bytes_to_unicode, in GPT-2's vocabulary order (ids 0..255 of the real vocab)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: convert.py MODEL_DIR OUT.gguf", file=sys.stderr)
        return 2
    model_dir, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    tools = Path(__file__).resolve().parent / "tools" / "llama.cpp"
    sys.path.insert(0, str(tools))
    sys.path.insert(1, str(tools / "gguf-py"))
    import convert_hf_to_gguf  # noqa: E402  (the converter, from the sdist)
    import gguf  # noqa: E402
    from conversion.gpt2 import GPT2Model  # noqa: E402

    config = json.loads((model_dir / "config.json").read_text())
    with tempfile.TemporaryDirectory(prefix="refdecode-gguf-") as tmp:
        stage = Path(tmp)
        config.setdefault("n_ctx", config["n_positions"])
        (stage / "config.json").write_text(json.dumps(config, indent=2))
        (stage / "model.safetensors").symlink_to(model_dir / "model.safetensors")
        has_tokenizer = (model_dir / "tokenizer.json").is_file()
        if has_tokenizer:
            shutil.copy(model_dir / "tokenizer.json", stage / "tokenizer.json")
        else:
            vocab_size = int(config["vocab_size"])
            alphabet = _byte_alphabet()
            tokens = [alphabet[i] if i < len(alphabet) else f"[TOK{i}]" for i in range(vocab_size)]

            def set_vocab(self) -> None:  # the synthetic vocabulary (see the module docstring)
                self.gguf_writer.add_tokenizer_model("gpt2")
                self.gguf_writer.add_tokenizer_pre("gpt-2")
                self.gguf_writer.add_token_list(tokens)
                self.gguf_writer.add_token_types([gguf.TokenType.NORMAL] * vocab_size)
                self.gguf_writer.add_token_merges([f"{tokens[0]} {tokens[1]}"])  # llama.cpp requires the key
                eos = config.get("eos_token_id")
                if isinstance(eos, int) and 0 <= eos < vocab_size:
                    self.gguf_writer.add_eos_token_id(eos)
                    self.gguf_writer.add_bos_token_id(int(config.get("bos_token_id", eos)))

            GPT2Model.set_vocab = set_vocab
        out.parent.mkdir(parents=True, exist_ok=True)
        sys.argv = ["convert_hf_to_gguf.py", str(stage), "--outfile", str(out), "--outtype", "f32"]
        convert_hf_to_gguf.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
