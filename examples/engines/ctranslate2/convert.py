r"""Convert a Hugging Face GPT-2 or Llama folder (config.json + model.safetensors) into a CTranslate2 model directory.

    PYTHON convert.py SRC_DIR OUT_DIR CT2_SITE_PACKAGES

Runs in an interpreter that has torch and transformers 4.38.2 (the adapter picks the checkout's .venv-oracle when it
exists, else ./env-convert made by setup.sh); CTranslate2 itself is imported from CT2_SITE_PACKAGES (./env's),
appended to sys.path so that the interpreter's own numpy/torch win.

CTranslate2's own converter, ``ctranslate2.converters.TransformersConverter``, does the work (its ``GPT2Loader``,
or for a LlamaForCausalLM folder its ``LlamaLoader``: RMSNorm, RoPE non-interleaved with the config's rope_theta,
SwiGLU, ``num_heads_kv`` for grouped-query attention, the tied head as ``model.lm_head``), with two wraps:

* ``load_model``: CTranslate2 4.8 calls ``from_pretrained(..., dtype=...)``; transformers 4.38.2 names that
  argument ``torch_dtype`` (it would take ``dtype`` as a config override and ignore it). Float32 is forced.
* ``load_tokenizer``: the suite's checkpoints need no tokenizer (requests are token ids), and some have none,
  so the vocabulary is a stand-in with one string per id, ``"<id>"``, bos/eos the config's ids, unk = eos. The
  adapter turns ids into these strings and back, so no text is ever tokenized. Nothing in decoding depends on
  the strings; CTranslate2 compares ids.

Quantization: none (float32), so the weights are the checkpoint's bytes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


class StandInTokenizer:
    """What ``ModelLoader.get_vocabulary`` / ``GPT2Loader.set_config`` read from a tokenizer: nothing else."""

    def __init__(self, config: dict):
        self.vocab = {f"<{i}>": i for i in range(int(config["vocab_size"]))}
        self.bos_token = f"<{config.get('bos_token_id', 0)}>"
        self.eos_token = f"<{config.get('eos_token_id', 0)}>"
        self.unk_token = self.eos_token

    def get_vocab(self) -> dict:
        return dict(self.vocab)


def convert(src: Path, out: Path) -> float:
    import torch
    from ctranslate2.converters import TransformersConverter

    config = json.loads((src / "config.json").read_text())

    class Converter(TransformersConverter):
        def load_model(self, model_class, model_name_or_path, **kwargs):
            kwargs.pop("dtype", None)
            kwargs["torch_dtype"] = torch.float32
            return model_class.from_pretrained(model_name_or_path, **kwargs)

        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return StandInTokenizer(config)

    t0 = time.perf_counter()
    tmp = out.with_name(out.name + ".tmp")
    Converter(str(src)).convert(str(tmp), quantization="float32", force=True)
    tmp.rename(out)
    return time.perf_counter() - t0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.path.append(sys.argv[3])
    seconds = convert(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps({"converted": sys.argv[1], "to": sys.argv[2], "seconds": round(seconds, 2)}))
