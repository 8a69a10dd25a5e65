r"""A Hugging Face Llama folder (config.json + model.safetensors) as a litgpt 0.5.13 checkpoint folder, float32.

    env/bin/python convert.py SRC_DIR OUT_DIR

Writes ``OUT_DIR/model_config.yaml`` and ``OUT_DIR/lit_model.pth``, the two files litgpt's own
``litgpt/generate/base.py`` ``main`` reads (``Config.from_file``, ``load_checkpoint``).

litgpt's converter ``litgpt/scripts/convert_hf_checkpoint.py`` ``convert_hf_checkpoint`` starts from
``Config.from_name(model_name)``: a checkpoint must be one of litgpt's named models (config.py's tables). The
suite's tiny Llamas are not, so their ``Config`` is built here from the folder's config.json, with the values
litgpt's own Llama entries set (``parallel_residual=False``, ``bias=False``, ``norm_class_name="RMSNorm"``,
``mlp_class_name="LLaMAMLP"``, ``rotary_percentage=1.0``); then the rest is litgpt's: ``copy_weights_hf_llama``
(convert_hf_checkpoint.py:138-222: the renames, q, k, v concatenated into ``attn.qkv``, ``lm_head`` = ``wte`` when
the folder has none, every tensor cast by ``load_param`` to float32), fed by ``load_safetensors`` as
``convert_hf_checkpoint`` feeds it (:873), saved with ``incremental_save`` (:853, :896) and ``save_config``.

Config from config.json (transformers 4.38.2's ``LlamaConfig`` names):

==========================  =====================================================================================
litgpt ``Config``           from
==========================  =====================================================================================
block_size                  max_position_embeddings
vocab_size                  vocab_size; ``padded_vocab_size`` the same (litgpt would pad it to a multiple of
                            512: logits over ids that do not exist)
n_layer, n_head, n_embd     num_hidden_layers, num_attention_heads, hidden_size
n_query_groups              num_key_value_heads
head_size                   head_dim, else hidden_size / num_attention_heads
intermediate_size           intermediate_size
norm_eps                    rms_norm_eps
rope_base                   rope_theta (litgpt's field is an int)
rope_adjustments            rope_scaling: ``linear`` -> {"factor"}; ``llama3`` -> {"factor", "low_freq_factor",
                            "high_freq_factor", "original_max_seq_len"}; ``dynamic``: refused (no such RoPE)
==========================  =====================================================================================

Refused (exit status 3, the reason on stderr): a model_type other than llama, a hidden_act other than silu,
``attention_bias`` (litgpt's ``attn_bias`` puts a bias on qkv only; 4.38.2's Llama has one on o_proj too, and
``copy_weights_hf_llama`` has no name for it), ``dynamic`` RoPE scaling.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REFUSED = 3


class NotConvertible(ValueError):
    """A checkpoint litgpt's Llama cannot hold (the reason is the message)."""


def rope_adjustments(scaling: dict | None) -> dict | None:
    """litgpt's ``rope_adjustments`` for a transformers ``rope_scaling`` (model.py ``GPT.rope_cache``)."""
    if not scaling:
        return None
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "linear":
        return {"factor": float(scaling["factor"])}
    if kind == "llama3":
        return {"factor": float(scaling["factor"]), "low_freq_factor": float(scaling["low_freq_factor"]),
                "high_freq_factor": float(scaling["high_freq_factor"]),
                "original_max_seq_len": int(scaling["original_max_position_embeddings"])}
    raise NotConvertible(f"rope_scaling {kind!r}: litgpt's build_rope_cache has linear, llama3 and YaRN only")


def config_of(src: Path):
    """litgpt's ``Config`` for the HF folder ``src`` (the table in the module doc)."""
    from litgpt.config import Config

    hf = json.loads((src / "config.json").read_text())
    if hf.get("model_type") != "llama":
        raise NotConvertible(f"model_type {hf.get('model_type')!r}: only llama folders are converted here")
    if hf.get("hidden_act", "silu") != "silu":
        raise NotConvertible(f"hidden_act {hf['hidden_act']!r}: litgpt's LLaMAMLP computes silu")
    if hf.get("attention_bias"):
        raise NotConvertible("attention_bias: litgpt's attn_bias has no o_proj bias (copy_weights_hf_llama)")
    heads = int(hf["num_attention_heads"])
    return Config(name=src.name, block_size=int(hf["max_position_embeddings"]),
                  vocab_size=int(hf["vocab_size"]), padded_vocab_size=int(hf["vocab_size"]),
                  n_layer=int(hf["num_hidden_layers"]), n_head=heads, n_embd=int(hf["hidden_size"]),
                  n_query_groups=int(hf.get("num_key_value_heads") or heads),
                  head_size=int(hf.get("head_dim") or int(hf["hidden_size"]) // heads),
                  rotary_percentage=1.0, parallel_residual=False, bias=False, norm_class_name="RMSNorm",
                  norm_eps=float(hf["rms_norm_eps"]), mlp_class_name="LLaMAMLP",
                  intermediate_size=int(hf["intermediate_size"]), rope_base=int(hf.get("rope_theta", 10000)),
                  rope_adjustments=rope_adjustments(hf.get("rope_scaling")))


def convert(src: Path, out: Path) -> None:
    """Write ``out`` (model_config.yaml, lit_model.pth) from the HF folder ``src``; written aside, then renamed."""
    import torch
    from safetensors.torch import load_file as load_safetensors

    from litgpt.scripts.convert_hf_checkpoint import copy_weights_hf_llama
    from litgpt.utils import incremental_save, save_config

    config = config_of(src)
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    save_config(config, tmp)
    state_dict: dict = {}
    with incremental_save(tmp / "lit_model.pth") as saver, torch.inference_mode():
        copy_weights_hf_llama(config, {}, state_dict, load_safetensors(src / "model.safetensors"), saver=saver,
                              dtype=torch.float32)
        saver.save(state_dict)
    tmp.rename(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        convert(Path(sys.argv[1]), Path(sys.argv[2]))
    except NotConvertible as err:
        print(f"litgpt convert: {err}", file=sys.stderr)
        sys.exit(REFUSED)
