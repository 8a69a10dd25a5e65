"""Loading a Llama-family checkpoint: HF names, sharded index, and one ValueError naming the tensor for every bad file."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from conftest import GOLDEN
from safetensors.numpy import load_file, save_file

from refdecode.model.llama_checkpoint import llama_expected_shapes, load_llama_params
from refdecode.model.llama_config import LlamaConfig

TIED = GOLDEN / "models" / "llama-gqa-tied"
SHARDED = GOLDEN / "models" / "qwen2-bias"


def copy_with(tmp_path, change) -> tuple:
    """llama-gqa-tied copied to tmp_path with its tensors edited by ``change(dict)``."""
    shutil.copy(TIED / "config.json", tmp_path / "config.json")
    tensors = load_file(TIED / "model.safetensors")
    change(tensors)
    save_file(tensors, tmp_path / "model.safetensors")
    return tmp_path, LlamaConfig.from_json_file(tmp_path)


def test_names_and_shapes_of_hf_layout():
    cfg = LlamaConfig.from_json_file(TIED)
    params = load_llama_params(TIED, cfg)
    assert set(params) == {"embed_tokens", "layers", "norm"}                  # tied: no lm_head
    assert params["layers"][1]["self_attn"]["k_proj"]["weight"].shape == (16, 32)   # 2 kv heads x 8
    assert all(a.dtype == np.float32 for a in (params["embed_tokens"], params["norm"]["weight"]))


def test_sharded_checkpoint_reads_every_shard():
    index = json.loads((SHARDED / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) == 3
    cfg = LlamaConfig.from_json_file(SHARDED)
    params = load_llama_params(SHARDED, cfg)
    attn = params["layers"][0]["self_attn"]
    assert "bias" in attn["q_proj"] and "bias" not in attn["o_proj"] and "lm_head" in params
    assert len(index["weight_map"]) == len(llama_expected_shapes(cfg))


@pytest.mark.parametrize("change, match", [
    (lambda t: t.pop("model.layers.1.mlp.up_proj.weight"),
     r"missing tensor 'layers.1.mlp.up_proj.weight' \(expected shape \(64, 32\)"),
    (lambda t: t.update({"model.layers.0.self_attn.o_proj.bias": np.zeros(32, np.float32)}),
     r"unexpected tensor 'layers.0.self_attn.o_proj.bias' \(1 in all\)"),
    (lambda t: t.update({"model.layers.0.self_attn.k_proj.weight": np.zeros((32, 32), np.float32)}),
     r"tensor 'layers.0.self_attn.k_proj.weight' has shape \(32, 32\), expected \(16, 32\)"),
    (lambda t: t["model.layers.1.mlp.down_proj.weight"].__setitem__((0, 3), np.nan),
     r"tensor layers.1.mlp.down_proj.weight \(1 non-finite of 2048\) holds NaN or inf"),
])
def test_bad_tensor_is_one_line_naming_it(tmp_path, change, match):
    path, cfg = copy_with(tmp_path, change)
    with pytest.raises(ValueError, match=match) as err:
        load_llama_params(path, cfg)
    assert "\n" not in str(err.value)


def test_tied_checkpoint_with_lm_head_uses_it_for_both_and_rotary_buffers_are_skipped(tmp_path):
    """transformers 4.38.2 loads lm_head.weight last into the one tied parameter: it wins."""
    head = np.full((128, 32), 0.25, np.float32)
    path, cfg = copy_with(tmp_path, lambda t: t.update({
        "lm_head.weight": head, "model.layers.0.self_attn.rotary_emb.inv_freq": np.ones(4, np.float32)}))
    np.testing.assert_array_equal(load_llama_params(path, cfg)["embed_tokens"], head)


def test_index_naming_a_tensor_its_shard_lacks(tmp_path):
    for f in SHARDED.iterdir():
        shutil.copy(f, tmp_path / f.name)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    name = "model.norm.weight"
    other = next(s for s in sorted(set(index["weight_map"].values())) if s != index["weight_map"][name])
    index["weight_map"][name] = other
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=f"tensor 'model.norm.weight' is mapped to {other}, which does not hold it"):
        load_llama_params(tmp_path, LlamaConfig.from_json_file(tmp_path))
    index["weight_map"][name] = "../elsewhere.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="must be a file name in the directory"):
        load_llama_params(tmp_path, LlamaConfig.from_json_file(tmp_path))


def test_mmap_gives_the_same_weights():
    cfg = LlamaConfig.from_json_file(TIED)
    a, b = load_llama_params(TIED, cfg), load_llama_params(TIED, cfg, mmap=True)
    np.testing.assert_array_equal(a["layers"][0]["mlp"]["gate_proj"]["weight"], b["layers"][0]["mlp"]["gate_proj"]["weight"])
