r"""The OpenVINO GenAI model folder for a GPT-2 or Llama checkpoint: a float32 Hugging Face folder, then
``optimum-cli export openvino --task text-generation-with-past --weight-format fp32`` (optimum-intel 2.2.0),
tokenizer included.

    env/bin/python convert.py MODEL_DIR OUT_DIR

1. ``OUT_DIR.tmp/hf``: the checkpoint's tensors cast to float32 (the shipped weights are float16 with
   ``torch_dtype: float16``; an export of those would compute in half precision), config.json with
   ``torch_dtype: float32``, and the checkpoint's tokenizer.json; a checkpoint without one (the suite's tiny
   random models) gets a stand-in: a WordLevel vocabulary with one string per id, ``"<id>"``, whose eos is the
   config's. Requests are token ids, so no text is ever tokenized; the tokenizer is exported because
   ``LLMPipeline`` loads ``openvino_tokenizer.xml`` / ``openvino_detokenizer.xml`` from the model folder.
2. ``optimum-cli export openvino`` writes ``openvino_model.xml/.bin`` (stateful, KV cache inside) and, through
   openvino-tokenizers, the tokenizer and detokenizer; the folder is renamed to OUT_DIR when complete.

Runs in ``env/`` (torch 2.13.0 CPU, optimum-intel 2.2.0); prints one JSON line with the time taken.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

HERE = Path(__file__).resolve().parent


def stand_in_tokenizer(config: dict) -> dict:
    """tokenizer.json of a WordLevel vocabulary ``<0>`` .. ``<V-1>``, split on whitespace, eos = the config's."""
    vocab = {f"<{i}>": i for i in range(int(config["vocab_size"]))}
    eos = f"<{int(config.get('eos_token_id', 0))}>"
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
            "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": eos}}


def float32_folder(src: Path, dst: Path) -> None:
    """A Hugging Face folder of ``src`` with float32 tensors and config, and a tokenizer."""
    dst.mkdir(parents=True)
    tensors = {k: np.ascontiguousarray(v.astype(np.float32)) for k, v in load_file(src / "model.safetensors").items()}
    save_file(tensors, dst / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text())
    config["torch_dtype"] = "float32"
    (dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    eos = int(config.get("eos_token_id", 0))
    context = config.get("n_positions") or config["max_position_embeddings"]   # GPT-2's name / Llama's
    if (src / "tokenizer.json").is_file():
        shutil.copy2(src / "tokenizer.json", dst / "tokenizer.json")
        tok_config = {"tokenizer_class": "GPT2Tokenizer", "model_max_length": context}
    else:
        (dst / "tokenizer.json").write_text(json.dumps(stand_in_tokenizer(config)))
        tok_config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": context,
                      "eos_token": f"<{eos}>", "bos_token": f"<{eos}>", "unk_token": f"<{eos}>"}
    (dst / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2) + "\n")
    if (src / "generation_config.json").is_file():
        shutil.copy2(src / "generation_config.json", dst / "generation_config.json")


def convert(src: Path, out: Path) -> float:
    t0 = time.perf_counter()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    float32_folder(src, tmp / "hf")
    cli = Path(sys.executable).with_name("optimum-cli")
    subprocess.run([str(cli), "export", "openvino", "--model", str(tmp / "hf"), "--task",
                    "text-generation-with-past", "--weight-format", "fp32", str(tmp / "ov")],
                   check=True, stdout=sys.stderr)
    for name in ("openvino_model.xml", "openvino_tokenizer.xml", "openvino_detokenizer.xml"):
        if not (tmp / "ov" / name).is_file():
            raise RuntimeError(f"optimum-cli wrote no {name} in {tmp / 'ov'}")
    (tmp / "ov").rename(out)
    shutil.rmtree(tmp)
    return time.perf_counter() - t0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: convert.py MODEL_DIR OUT_DIR")
    seconds = convert(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())
    print(json.dumps({"converted": sys.argv[1], "to": sys.argv[2], "seconds": round(seconds, 2)}))
