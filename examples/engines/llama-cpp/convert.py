r"""Hugging Face GPT-2 or Llama folder -> float32 GGUF for llama.cpp, with convert_hf_to_gguf.py (llama-cpp-python
0.3.36's copy).

Usage: ``CONVERT_PYTHON convert.py MODEL_DIR OUT.gguf`` (the adapter calls it on first use of a checkpoint).

A Llama folder (``LlamaForCausalLM``, models/tiny-shakespeare-llama) goes to the converter's own ``LlamaModel``
(``conversion/llama.py``: q/k weights permuted to ggml's rope layout, RMSNorm eps, rope base, GQA heads) unchanged
but for its tokenizer: the folder ships GPT-2's ``tokenizer.json`` and no tokenizer_config.json, and the converter's
vocabulary step (``_set_vocab_gpt2`` -> ``get_vocab_base_pre``: AutoTokenizer, then a hash of a test string's ids)
would load it as LlamaTokenizerFast, which prepends a bos token and so hashes as no known pre-tokenizer; the
folder is staged with a tokenizer_config.json naming ``GPT2TokenizerFast``, so the hash is GPT-2's and the vocabulary
is written as llama.cpp's "gpt2" BPE with the "gpt-2" pre-tokenizer (``_set_vocab_gpt2``, the branch
``LlamaModel.set_vocab`` reaches for a folder without tokenizer.model, taken directly: its first try imports
sentencepiece, which the converter's Python need not have). A Llama folder without a tokenizer (the
suite's tiny ones) gets the synthetic vocabulary below, as a GPT-2 one does.

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


def synthetic_vocab(config: dict, gguf):
    """``set_vocab`` writing the synthetic vocabulary of a folder without a tokenizer (see the module docstring)."""
    vocab_size = int(config["vocab_size"])
    alphabet = _byte_alphabet()
    tokens = [alphabet[i] if i < len(alphabet) else f"[TOK{i}]" for i in range(vocab_size)]

    def set_vocab(self) -> None:
        self.gguf_writer.add_tokenizer_model("gpt2")
        self.gguf_writer.add_tokenizer_pre("gpt-2")
        self.gguf_writer.add_token_list(tokens)
        self.gguf_writer.add_token_types([gguf.TokenType.NORMAL] * vocab_size)
        self.gguf_writer.add_token_merges([f"{tokens[0]} {tokens[1]}"])  # llama.cpp requires the key
        eos = config.get("eos_token_id")
        if isinstance(eos, int) and 0 <= eos < vocab_size:
            self.gguf_writer.add_eos_token_id(eos)
            self.gguf_writer.add_bos_token_id(int(config.get("bos_token_id", eos)))
    return set_vocab


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

    config = json.loads((model_dir / "config.json").read_text())
    with tempfile.TemporaryDirectory(prefix="refdecode-gguf-") as tmp:
        stage = Path(tmp)
        if config.get("model_type") == "llama":
            from conversion.llama import LlamaModel  # noqa: E402
            stage_llama(model_dir, stage)
            model_class = LlamaModel
        else:
            from conversion.gpt2 import GPT2Model  # noqa: E402
            config.setdefault("n_ctx", config["n_positions"])
            (stage / "config.json").write_text(json.dumps(config, indent=2))
            (stage / "model.safetensors").symlink_to(model_dir / "model.safetensors")
            if (model_dir / "tokenizer.json").is_file():
                shutil.copy(model_dir / "tokenizer.json", stage / "tokenizer.json")
            model_class = GPT2Model
        if not (model_dir / "tokenizer.json").is_file():
            model_class.set_vocab = synthetic_vocab(config, gguf)
        elif model_class.__name__ == "LlamaModel":
            # LlamaModel.set_vocab tries sentencepiece, then llama_hf, then BPE (its "Llama 3" branch); the first
            # imports sentencepiece before it looks for tokenizer.model (conversion/llama.py:135-142, base.py:2094)
            model_class.set_vocab = lambda self: self._set_vocab_gpt2()
        out.parent.mkdir(parents=True, exist_ok=True)
        sys.argv = ["convert_hf_to_gguf.py", str(stage), "--outfile", str(out), "--outtype", "f32"]
        convert_hf_to_gguf.main()
    return 0


def stage_llama(model_dir: Path, stage: Path) -> None:
    """A Llama folder as the converter's LlamaModel reads it: its files, and with GPT-2's tokenizer.json a
    tokenizer_config.json naming ``GPT2TokenizerFast`` (module doc)."""
    for name in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json"):
        if (model_dir / name).is_file():
            (stage / name).symlink_to(model_dir / name)
    if (model_dir / "tokenizer.json").is_file():
        (stage / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2TokenizerFast"}))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
