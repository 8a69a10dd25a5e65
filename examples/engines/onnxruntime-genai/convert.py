r"""The onnxruntime-genai model folder for a GPT-2 checkpoint: the shared ONNX export + a genai_config.json.

    python convert.py MODEL_DIR OUT_DIR

Runs ``examples/engines/onnx-export/export.py`` (with that folder's own env/, made by its setup.sh) to write
``OUT_DIR/onnx/model.onnx``, then writes ``OUT_DIR/genai_config.json`` by hand from config.json. onnxruntime-genai
0.18.0 has no GPT-2 builder for this export: ``"type": "gpt2"`` fails ("Model input was not found"), ``"type":
"llama"`` drives any decoder-only graph whose inputs/outputs are named in the config, so the config says "llama" and
names optimum's inputs (input_ids, attention_mask, position_ids, past_key_values.%d.key/value) and outputs (logits,
present.%d.key/value). eos/pad ids here are placeholders: the adapter overlays each case's own.
Standard library only (it runs in the engine's env, which has no torch).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPORT = HERE.parent / "onnx-export"


def genai_config(hf_config: dict) -> dict:
    n_embd, n_head = hf_config["n_embd"], hf_config["n_head"]
    eos = hf_config.get("eos_token_id", 50256)
    return {
        "model": {
            "bos_token_id": hf_config.get("bos_token_id", eos),
            "context_length": hf_config["n_positions"],
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": [],
                                    "intra_op_num_threads": 1, "inter_op_num_threads": 1},
                "filename": "onnx/model.onnx",
                "head_size": n_embd // n_head,
                "hidden_size": n_embd,
                "inputs": {
                    "input_ids": "input_ids",
                    "attention_mask": "attention_mask",
                    "position_ids": "position_ids",
                    "past_key_names": "past_key_values.%d.key",
                    "past_value_names": "past_key_values.%d.value",
                },
                "outputs": {
                    "logits": "logits",
                    "present_key_names": "present.%d.key",
                    "present_value_names": "present.%d.value",
                },
                "num_attention_heads": n_head,
                "num_hidden_layers": hf_config["n_layer"],
                "num_key_value_heads": n_head,
            },
            "eos_token_id": eos,
            "pad_token_id": eos,
            "type": "llama",
            "vocab_size": hf_config["vocab_size"],
        },
        "search": {
            "diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
            "max_length": hf_config["n_positions"], "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
            "num_return_sequences": 1, "past_present_share_buffer": False, "repetition_penalty": 1.0,
            "temperature": 1.0, "top_k": 1, "top_p": 1.0,
        },
    }


def convert(model_dir: Path, out_dir: Path) -> None:
    python = EXPORT / "env" / "bin" / "python"
    if not python.exists():
        subprocess.run(["bash", str(EXPORT / "setup.sh")], check=True, stdout=sys.stderr)
    subprocess.run([str(python), str(EXPORT / "export.py"), str(model_dir), str(out_dir)], check=True,
                   stdout=sys.stderr)
    hf_config = json.loads((model_dir / "config.json").read_text())
    (out_dir / "genai_config.json").write_text(json.dumps(genai_config(hf_config), indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: convert.py MODEL_DIR OUT_DIR")
    convert(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())
