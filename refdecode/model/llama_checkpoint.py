r"""A Llama-family checkpoint (``model.safetensors``, or shards listed in ``model.safetensors.index.json``) -> float32
parameters nested under the checkpoint's own names, all checked before any is kept.

Contract: in comes a model directory in Hugging Face's layout and its :class:`~refdecode.model.llama_config.LlamaConfig`;
out comes the nested dict :func:`refdecode.model.llama.llama` walks (the ``model.`` prefix dropped)::

    params["embed_tokens"]                                              float32 (V, E)
    params["layers"][i]["input_layernorm"]["weight"]                    float32 (E,)
    params["layers"][i]["self_attn"]["q_proj"]["weight"|"bias"]         float32 (H*D, E), (H*D,)
    params["layers"][i]["self_attn"]["k_proj" | "v_proj"]["weight"|"bias"]  float32 (KV*D, E), (KV*D,)
    params["layers"][i]["self_attn"]["o_proj"]["weight"|"bias"]         float32 (E, H*D), (E,)
    params["layers"][i]["post_attention_layernorm"]["weight"]           float32 (E,)
    params["layers"][i]["mlp"]["gate_proj" | "up_proj"]["weight"]       float32 (F, E)
    params["layers"][i]["mlp"]["down_proj"]["weight"]                   float32 (E, F)
    params["norm"]["weight"]                                            float32 (E,)
    params["lm_head"]                                                   float32 (V, E), unless tied

Biases exist where the config says (:attr:`LlamaConfig.attention_biases`). A sharded checkpoint's index maps each
tensor name to its shard file; every shard named is read with the same safetensors reader as GPT-2's
(:mod:`refdecode.model.checkpoint`: headers parsed by hand, F16/BF16 upcast one tensor at a time).

Stricter than the GPT-2 loader, and than transformers (which warns and initialises missing weights at random):
a missing tensor, an unexpected one, a shape that disagrees with ``config.json`` or a weight holding NaN/inf
raises one ValueError naming the tensor and what was expected, and nothing is returned. (RoPE's ``inv_freq``,
a buffer some old checkpoints saved, is not a weight and is skipped.) As in 4.38.2, a tied checkpoint that also
stores ``lm_head.weight`` uses that tensor for both the embedding and the head (it is loaded last).

Docs: docs/gpt2.md (loading a Llama checkpoint).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .checkpoint import TensorInfo, nest, nonfinite_tensors, read_header, read_tensor, to_float32
from .llama_config import LlamaConfig
from ..text.files import read_json_file
from ..validation import check_allocation, describe

__all__ = ["llama_expected_shapes", "stored_tensors", "checked_llama_tensors", "load_llama_params"]

_BUFFER = re.compile(r"layers\.\d+\.self_attn\.rotary_emb\.inv_freq")  # saved by old transformers; not a weight
INDEX = "model.safetensors.index.json"


def llama_expected_shapes(config: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """Every weight the config needs, by name without the ``model.`` prefix, with its shape.

    >>> cfg = LlamaConfig(vocab_size=10, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
    ...                   num_attention_heads=4, num_key_value_heads=2)
    >>> shapes = llama_expected_shapes(cfg)
    >>> shapes["layers.0.self_attn.k_proj.weight"], shapes["layers.0.mlp.down_proj.weight"], len(shapes)
    ((4, 8), (8, 16), 12)
    """
    E, F, V = config.hidden_size, config.intermediate_size, config.vocab_size
    q_width, kv_width = config.num_attention_heads * config.head_dim, config.num_key_value_heads * config.head_dim
    out_width = {"q_proj": q_width, "k_proj": kv_width, "v_proj": kv_width, "o_proj": E}
    shapes: dict[str, tuple[int, ...]] = {"embed_tokens.weight": (V, E)}
    for i in range(config.num_hidden_layers):
        p = f"layers.{i}."
        shapes[p + "input_layernorm.weight"] = (E,)
        for proj, width in out_width.items():
            shapes[f"{p}self_attn.{proj}.weight"] = (width, q_width if proj == "o_proj" else E)
            if proj in config.attention_biases:
                shapes[f"{p}self_attn.{proj}.bias"] = (width,)
        shapes[p + "post_attention_layernorm.weight"] = (E,)
        shapes.update({p + "mlp.gate_proj.weight": (F, E), p + "mlp.up_proj.weight": (F, E),
                       p + "mlp.down_proj.weight": (E, F)})
    shapes["norm.weight"] = (E,)
    if not config.tie_word_embeddings:
        shapes["lm_head.weight"] = (V, E)
    return shapes


def stored_tensors(directory: str | Path) -> dict[str, tuple[Path, TensorInfo]]:
    """Every tensor of the checkpoint in ``directory``: ``{name as stored: (file, TensorInfo)}``; no data is read.

    With ``model.safetensors.index.json`` the tensors are those of its ``weight_map``, each looked up in the shard
    it names (a tensor the index names but its shard lacks, or a shard outside the directory, is an error);
    otherwise those of ``model.safetensors``.
    """
    directory = Path(directory)
    index_path = directory / INDEX
    if not (index_path.exists() or index_path.is_symlink()):
        path = directory / "model.safetensors"
        return {name: (path, info) for name, info in read_header(path).items()}
    index = read_json_file(index_path, "checkpoint index")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(f, str) for f in weight_map.values()):
        raise ValueError(f"{index_path}: `weight_map` must be an object of tensor name -> shard file name, got "
                         f"{describe(weight_map)}")
    headers: dict[str, dict[str, TensorInfo]] = {}
    out = {}
    for name, shard in weight_map.items():
        if Path(shard).name != shard:
            raise ValueError(f"{index_path}: shard {shard!r} of tensor {name!r} must be a file name in the directory")
        if shard not in headers:
            headers[shard] = read_header(directory / shard)
        if name not in headers[shard]:
            raise ValueError(f"{index_path}: tensor {name!r} is mapped to {shard}, which does not hold it")
        out[name] = (directory / shard, headers[shard][name])
    return out


def checked_llama_tensors(directory: str | Path, config: LlamaConfig) -> dict[str, tuple[Path, TensorInfo]]:
    """Where each weight the config needs lies, by name without ``model.``; every name and shape checked, nothing read.

    Raises:
        FileNotFoundError: no ``model.safetensors`` (nor index) in the directory, or a shard missing.
        ValueError: a bad file, or a tensor missing, unexpected or of the wrong shape (naming it and what was expected).
    """
    check_allocation("the weights", 4 * config.n_params(), f"{config.n_params():,} float32 parameters for "
                     f"`num_hidden_layers`={config.num_hidden_layers}, `hidden_size`={config.hidden_size}, "
                     f"`intermediate_size`={config.intermediate_size}, `vocab_size`={config.vocab_size}")
    by_name = {(k[len("model."):] if k.startswith("model.") else k): v for k, v in stored_tensors(directory).items()}
    if config.tie_word_embeddings and "lm_head.weight" in by_name:
        by_name["embed_tokens.weight"] = by_name.pop("lm_head.weight")  # 4.38.2: lm_head (loaded last) wins
    shapes = llama_expected_shapes(config)
    where = Path(directory)
    for name, shape in shapes.items():
        if name not in by_name:
            raise ValueError(f"{where}: missing tensor {name!r} (expected shape {shape} for config.json's "
                             f"{config.model_type} architecture)")
        if by_name[name][1].shape != shape:
            raise ValueError(f"{where}: tensor {name!r} has shape {by_name[name][1].shape}, expected {shape} "
                             f"(from config.json)")
    unexpected = sorted(k for k in by_name if k not in shapes and not _BUFFER.fullmatch(k))
    if unexpected:
        raise ValueError(f"{where}: unexpected tensor {unexpected[0]!r} ({len(unexpected)} in all): config.json's "
                         f"{config.model_type} architecture has no such weight")
    return {name: by_name[name] for name in shapes}


def load_llama_params(directory: str | Path, config: LlamaConfig, mmap: bool = False) -> dict[str, Any]:
    """Read a Llama-family checkpoint into the nested float32 parameter dict described above.

    ``mmap``: F32 tensors become read-only views of the memory-mapped files (True) or are read into memory
    (False, the default). Weights read into memory are scanned for NaN/inf here; memory-mapped ones are not (that
    would read every page), and a decode loop names them if the logits turn non-finite (``nonfinite_weights``).

    Raises: as :func:`checked_llama_tensors`, and ValueError naming the first weight holding NaN or inf.
    """
    flat = {name: to_float32(info.dtype, read_tensor(path, info, mmap))
            for name, (path, info) in checked_llama_tensors(directory, config).items()}
    params = nest(flat, single=("embed_tokens", "lm_head"))
    if not mmap:
        bad = nonfinite_tensors(params)
        if bad:
            raise ValueError(f"{Path(directory)}: tensor {bad[0]} holds NaN or inf; a checkpoint's weights must be "
                             f"finite ({len(bad)} such tensors)")
    return params
