r"""The float32 Hugging Face folder vLLM loads, for a GPT-2 checkpoint folder.

    python convert.py MODEL_DIR OUT_DIR EOS_ID

vLLM computes in the dtype it is given (``LLM(dtype="float32")``) but reads the weights as they are stored; the
shipped checkpoints are float16 (``torch_dtype: float16``), so this writes:

* ``model.safetensors``: every tensor as float32 (float16 -> float32 is exact), names unchanged (vLLM's GPT-2 loader
  takes transformers' ``transformer.`` names and transposes the Conv1D weights itself);
* ``config.json``: the checkpoint's, with ``torch_dtype: float32``;
* a tokenizer naming ``EOS_ID`` as its eos token: vLLM's ``LLM.beam_search`` ends a hypothesis on the tokenizer's
  ``eos_token_id`` and on nothing else (FINDINGS.md V2d), and the engines cases end on 198 (``"\n"``). A folder with
  the GPT-2 tokenizer (``tokenizer.json``) keeps it; a suite model (config.json and weights only) gets a word-level
  tokenizer over its vocabulary, token i spelled ``<i>`` (the adapter passes token ids, never text);
* no ``generation_config.json``: the adapter passes every option itself (and loads with ``generation_config="vllm"``).

Needs numpy, safetensors and tokenizers: vLLM's env has them.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file


def tokenizer_files(src: Path, out: Path, vocab_size: int, eos: int) -> None:
    """tokenizer.json (the folder's own, or word-level ``<i>``) + tokenizer_config.json naming ``eos``."""
    if (src / "tokenizer.json").exists():
        shutil.copy(src / "tokenizer.json", out / "tokenizer.json")
        vocab = json.loads((src / "tokenizer.json").read_text())["model"]["vocab"]
        names = {i: t for t, i in vocab.items()}
    else:
        from tokenizers import Tokenizer
        from tokenizers.models import WordLevel
        from tokenizers.pre_tokenizers import WhitespaceSplit

        names = {i: f"<{i}>" for i in range(vocab_size)}
        tok = Tokenizer(WordLevel({t: i for i, t in names.items()}, unk_token=names[0]))
        tok.pre_tokenizer = WhitespaceSplit()
        tok.save(str(out / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": names[eos], "bos_token": names[eos],
              "model_max_length": 1 << 30, "clean_up_tokenization_spaces": False}
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")


def convert(src: Path, out: Path, eos: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: np.ascontiguousarray(v.astype(np.float32)) for k, v in load_file(src / "model.safetensors").items()}
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text())
    config["torch_dtype"] = "float32"
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    tokenizer_files(src, out, int(config["vocab_size"]), eos)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: convert.py MODEL_DIR OUT_DIR EOS_ID")
    convert(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
