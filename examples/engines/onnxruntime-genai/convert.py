r"""The onnxruntime-genai model folder for a GPT-2 checkpoint (the shared ONNX export + a genai_config.json) or a
Llama checkpoint (onnxruntime-genai's own model builder).

    python convert.py MODEL_DIR OUT_DIR

A LlamaForCausalLM folder (config.json ``model_type`` "llama") goes through the engine's model builder,
``python -m onnxruntime_genai.models.builder -i MODEL_DIR -o OUT_DIR -p fp32 -e cpu`` (its Llama builder: RMSNorm,
rotary embedding and GroupQueryAttention contrib ops, SwiGLU, the tied head; it writes model.onnx and
genai_config.json itself); then the session is set to one thread, as for GPT-2. The builder needs torch and
transformers 5.x (it imports 5.x's model classes): it runs in ``$REFDECODE_OG_BUILDER_PYTHON``, by default the
transformers-5 engine's env (torch 2.13.0 + transformers 5.24.0, ../transformers-5/setup.sh), with this engine's
env/ (onnxruntime-genai, onnxruntime) and env-builder/ (onnx-ir, onnx: setup.sh) on its path.

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


def build_llama(model_dir: Path, out_dir: Path) -> None:
    """onnxruntime-genai's model builder on a Hugging Face Llama folder (float32, CPU), one thread per session."""
    import os

    default = HERE.parent / "transformers-5" / "env" / "bin" / "python"
    python = os.environ.get("REFDECODE_OG_BUILDER_PYTHON", str(default))
    site = next((HERE / "env" / "lib").glob("python3*/site-packages"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE / "env-builder"), str(site)]))
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    subprocess.run([python, "-m", "onnxruntime_genai.models.builder", "-i", str(model_dir), "-o", str(tmp), "-p",
                    "fp32", "-e", "cpu", "-c", str(tmp / "hf-cache")], check=True, stdout=sys.stderr, env=env)
    config = json.loads((tmp / "genai_config.json").read_text())
    config["model"]["decoder"].setdefault("session_options", {}).update(intra_op_num_threads=1,
                                                                        inter_op_num_threads=1)
    (tmp / "genai_config.json").write_text(json.dumps(config, indent=2) + "\n")
    tmp.rename(out_dir)


def convert(model_dir: Path, out_dir: Path) -> None:
    if json.loads((model_dir / "config.json").read_text()).get("model_type") == "llama":
        build_llama(model_dir, out_dir)
        return
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
