"""refdecode.model.checkpoint: both layouts, dtypes, zero-copy F32, and errors that name the file and the tensor."""

from __future__ import annotations

import json
import mmap
import shutil
import struct

import numpy as np
import pytest
from conftest import GOLDEN, MODELS
from safetensors.numpy import load_file, save_file

from refdecode.model.checkpoint import expected_shapes, load_params, nest, read_header, read_tensor, to_float32
from refdecode.model.config import GPT2Config
from refdecode.model.modeling import GPT2

SAVE_PRETRAINED = GOLDEN / "models" / "save_pretrained"
HUB = GOLDEN / "models" / "hub"


def copy_model(src, dst, tensors=None, config=None):
    """Copy a model directory, optionally replacing its tensors ({name: array}) or config (dict)."""
    shutil.copytree(src, dst)
    if tensors is not None:
        save_file(tensors, str(dst / "model.safetensors"))
    if config is not None:
        (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_both_layouts_give_the_same_structure():
    a, b = GPT2.from_pretrained(SAVE_PRETRAINED), GPT2.from_pretrained(HUB)
    assert a.params.keys() == b.params.keys() == {"wte", "wpe", "h", "ln_f"}
    assert len(a.params["h"]) == len(b.params["h"]) == 2
    assert a.params["h"][1]["attn"]["c_attn"]["weight"].shape == (32, 96)
    raw = read_header(HUB / "model.safetensors")
    assert "h.0.attn.bias" in raw and "h.1.attn.masked_bias" in raw  # present in the file, ignored


def test_hub_layout_from_save_pretrained_layout_loads_identically(tmp_path):
    """Strip the prefix and add the causal-mask buffers: the same parameters come out."""
    tensors = load_file(str(SAVE_PRETRAINED / "model.safetensors"))
    hub = {k.removeprefix("transformer."): v for k, v in tensors.items()}
    hub["h.0.attn.bias"] = np.tril(np.ones((64, 64), np.float32))[None, None]
    hub["h.0.attn.masked_bias"] = np.array(-1e4, np.float32)
    model = GPT2.from_pretrained(copy_model(SAVE_PRETRAINED, tmp_path / "m", hub))
    ref = GPT2.from_pretrained(SAVE_PRETRAINED)
    ids = np.array([[1, 2, 3]])
    np.testing.assert_array_equal(model(ids).logits, ref(ids).logits)


def test_f32_tensors_are_read_only_views_of_the_mapped_file():
    """mmap=True: no copy of the weights; loading GPT-2 124M maps the file instead of reading 500 MB."""
    config = GPT2Config.from_json_file(SAVE_PRETRAINED)
    p = load_params(SAVE_PRETRAINED / "model.safetensors", config, mmap=True)
    w = p["h"][0]["mlp"]["c_fc"]["weight"]
    assert w.dtype == np.float32 and not w.flags.owndata and not w.flags.writeable
    base = w
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    assert isinstance(base, (np.memmap, mmap.mmap))
    q = load_params(SAVE_PRETRAINED / "model.safetensors", config, mmap=False)
    assert q["h"][0]["mlp"]["c_fc"]["weight"].flags.writeable  # its own memory (a reshaped read)
    np.testing.assert_array_equal(q["h"][0]["mlp"]["c_fc"]["weight"], w)


def test_f16_and_bf16_are_upcast_to_float32():
    for name in ("f16_gelu", "bf16_relu"):
        stored = read_header(GOLDEN / "models" / name / "model.safetensors")
        assert {info.dtype for info in stored.values()} == ({"F16"} if name == "f16_gelu" else {"BF16"})
        params = GPT2.from_pretrained(GOLDEN / "models" / name).params
        assert params["wpe"].dtype == np.float32
    assert to_float32("F16", np.array([1.5, -2.0], np.float16)).tolist() == [1.5, -2.0]
    bf16 = (np.array([3.140625, -0.5], np.float32).view(np.uint32) >> 16).astype(np.uint16)
    assert to_float32("BF16", bf16).tolist() == [3.140625, -0.5]


def test_lm_head_weight_replaces_tied_wte():
    """transformers 4.38.2 loads lm_head.weight last into the tied parameter: it wins (golden f16_gelu)."""
    path = GOLDEN / "models" / "f16_gelu" / "model.safetensors"
    stored = read_header(path)
    params = GPT2.from_pretrained(GOLDEN / "models" / "f16_gelu").params
    np.testing.assert_array_equal(params["wte"], read_tensor(path, stored["lm_head.weight"]).astype(np.float32))
    assert not np.array_equal(params["wte"], read_tensor(path, stored["transformer.wte.weight"]).astype(np.float32))


def test_untied_lm_head_is_kept_separately(tmp_path):
    tensors = load_file(str(SAVE_PRETRAINED / "model.safetensors"))
    tensors["lm_head.weight"] = np.ones((128, 32), np.float32)
    config = json.loads((SAVE_PRETRAINED / "config.json").read_text()) | {"tie_word_embeddings": False}
    model = GPT2.from_pretrained(copy_model(SAVE_PRETRAINED, tmp_path / "m", tensors, config))
    assert model.params["lm_head"].sum() == 128 * 32
    np.testing.assert_array_equal(model.params["wte"], tensors["transformer.wte.weight"])
    logits = model(np.array([[1, 2]])).logits  # every row of the head is ones: all logits equal
    np.testing.assert_allclose(logits, logits[..., :1] * np.ones(128, np.float32), rtol=1e-6)
    del tensors["lm_head.weight"]
    save_file(tensors, str(tmp_path / "m" / "model.safetensors"))
    with pytest.raises(ValueError, match="missing tensor 'lm_head.weight'"):
        GPT2.from_pretrained(tmp_path / "m")


def test_missing_tensor_is_named(tmp_path):
    tensors = load_file(str(SAVE_PRETRAINED / "model.safetensors"))
    del tensors["transformer.h.1.mlp.c_fc.bias"]
    d = copy_model(SAVE_PRETRAINED, tmp_path / "m", tensors)
    with pytest.raises(ValueError, match=r"missing tensor 'h.1.mlp.c_fc.bias' \(expected shape \(128,\)\)"):
        GPT2.from_pretrained(d)


def test_wrong_shape_names_the_tensor_and_both_shapes(tmp_path):
    tensors = load_file(str(SAVE_PRETRAINED / "model.safetensors"))
    tensors["transformer.h.0.attn.c_attn.weight"] = tensors["transformer.h.0.attn.c_attn.weight"].T.copy()
    d = copy_model(SAVE_PRETRAINED, tmp_path / "m", tensors)
    with pytest.raises(ValueError, match=r"'h.0.attn.c_attn.weight' has shape \(96, 32\), expected \(32, 96\)"):
        GPT2.from_pretrained(d)


def test_unexpected_tensor_warns(tmp_path):
    tensors = load_file(str(SAVE_PRETRAINED / "model.safetensors"))
    tensors["transformer.h.0.crossattention.c_attn.weight"] = np.zeros((2, 2), np.float32)
    d = copy_model(SAVE_PRETRAINED, tmp_path / "m", tensors)
    with pytest.warns(UserWarning, match="crossattention"):
        GPT2.from_pretrained(d)


def test_truncated_file_is_named(tmp_path):
    d = copy_model(SAVE_PRETRAINED, tmp_path / "m")
    path = d / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])  # an interrupted download
    with pytest.raises(ValueError, match=f"{path}: truncated file: tensor '.*' needs bytes up to"):
        GPT2.from_pretrained(d)
    path.write_bytes(b"\x05\x00")
    with pytest.raises(ValueError, match=f"{path}: not a safetensors file"):
        GPT2.from_pretrained(d)
    path.write_bytes(struct.pack("<Q", 10**6) + b"{}")
    with pytest.raises(ValueError, match=f"{path}: truncated or not a safetensors file"):
        GPT2.from_pretrained(d)
    path.write_bytes(struct.pack("<Q", 4) + b"{{{{")
    with pytest.raises(ValueError, match=f"{path}: not a safetensors file \\(header is not JSON"):
        GPT2.from_pretrained(d)


def test_missing_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="model directory not found"):
        GPT2.from_pretrained(tmp_path / "nowhere")
    d = copy_model(SAVE_PRETRAINED, tmp_path / "m")
    (d / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=f"checkpoint file not found: {d / 'model.safetensors'}"):
        GPT2.from_pretrained(d)
    (d / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="config file not found"):
        GPT2.from_pretrained(d)


def test_wrong_model_type_is_refused(tmp_path):
    config = json.loads((SAVE_PRETRAINED / "config.json").read_text()) | {"model_type": "llama"}
    d = copy_model(SAVE_PRETRAINED, tmp_path / "m", config=config)
    with pytest.raises(ValueError, match="`model_type` must be 'gpt2'.*'llama'"):
        GPT2.from_pretrained(d)


def test_shipped_tiny_model_loads():
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    shapes = expected_shapes(model.config)
    assert len(shapes) == 2 + 12 * 2 + 2  # wte, wpe; 12 per layer; ln_f weight and bias
    assert model.params["wte"].shape == (50257, 32) and model.params["wte"].dtype == np.float32


def test_nest_walks_dotted_names():
    flat = {"h.1.attn.c_attn.weight": 1, "h.0.ln_1.bias": 2, "ln_f.weight": 3, "wte.weight": 4}
    assert nest(flat) == {"h": [{"ln_1": {"bias": 2}}, {"attn": {"c_attn": {"weight": 1}}}],
                          "ln_f": {"weight": 3}, "wte": 4}


# ---- bad-input catalogue: headers that crashed or were silently accepted


def write_safetensors(path, header: dict, data: bytes = b"") -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


@pytest.mark.parametrize("offsets", [["0", "16"], [0.0, 16.0], [0, 16, 32], [True, 16], None, {"a": 0}])
def test_data_offsets_of_the_wrong_json_type_name_the_tensor(tmp_path, offsets):
    """``"data_offsets": ["0", "16"]`` failed in a ``<=`` comparison with a TypeError naming no tensor."""
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"w": {"dtype": "F32", "shape": [4], "data_offsets": offsets}}, bytes(16))
    with pytest.raises(ValueError, match=r"malformed header entry for tensor 'w' \(\"data_offsets\" must be a list"):
        read_header(path)


@pytest.mark.parametrize("entry, why", [
    ({"dtype": 5, "shape": [4], "data_offsets": [0, 16]}, '"dtype" must be a string'),
    ({"dtype": "F32", "shape": [4.0], "data_offsets": [0, 16]}, '"shape" must be a list of integers'),
    ({"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}, '"shape" must be a list of integers >= 0'),
    ({"dtype": "F32", "shape": "4", "data_offsets": [0, 16]}, '"shape" must be a list'),
    ([1, 2], "it must be an object"),
])
def test_header_entries_of_the_wrong_shape(tmp_path, entry, why):
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"w": entry}, bytes(16))
    with pytest.raises(ValueError, match=f"tensor 'w' \\({why}"):
        read_header(path)


def test_overlapping_tensors_are_refused(tmp_path):
    """Two tensors sharing bytes were both read (safetensors' own reader refuses such a file)."""
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                             "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, bytes(24))
    with pytest.raises(ValueError, match="tensors 'a' and 'b' overlap in the file"):
        read_header(path)


def test_absurd_shape_does_not_overflow_the_byte_count(tmp_path):
    """``np.prod`` in int64 wraps around for a shape of 2**40 x 2**40; the byte count is exact Python ints."""
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"w": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 0]}})
    with pytest.raises(ValueError, match=r"data_offsets \[0, 0\] for 4835703278458516698824704 bytes"):
        read_header(path)


def test_huge_n_layer_is_refused_at_once_saying_what_it_needs(tmp_path):
    """A config.json with n_layer=10**8 ran for 22 s into a MemoryError (2.8 GB of tensor names)."""
    import time
    config = json.loads((SAVE_PRETRAINED / "config.json").read_text()) | {"n_layer": 10**8}
    model_dir = copy_model(SAVE_PRETRAINED, tmp_path / "m", config=config)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"the weights would need [\d.]+ [PT]iB \(.* float32 parameters for "
                                         r"`n_layer`=100000000, .*more than this machine's memory"):
        GPT2.from_pretrained(model_dir)
    assert time.perf_counter() - start < 5


def test_more_layers_than_the_file_holds_names_the_first_missing_tensor(tmp_path):
    """n_layer=10**5 fits in memory but the file holds 2 layers: refused before listing 1.2 million names."""
    config = json.loads((SAVE_PRETRAINED / "config.json").read_text()) | {"n_layer": 10**5}
    with pytest.raises(ValueError, match=r"missing tensor 'h.2.ln_1.weight' .* needs 1200004 tensors"):
        GPT2.from_pretrained(copy_model(SAVE_PRETRAINED, tmp_path / "m", config=config))


def _nan_weight_model(tmp_path) -> GPT2:
    tensors = load_file(str(SAVE_PRETRAINED / "model.safetensors"))
    tensors["transformer.h.1.mlp.c_fc.weight"][0, 3] = np.nan
    return GPT2.from_pretrained(copy_model(SAVE_PRETRAINED, tmp_path / "m", tensors))


@pytest.mark.parametrize("mode, rows", [({}, "0"), ({"do_sample": True, "seed": 0}, "0"), ({"num_beams": 2}, "0, 1")])
def test_nan_weights_are_reported_as_the_checkpoint_fault(tmp_path, mode, rows):
    """NaN weights were reported as "scores contain NaN ... check the processors/warpers"."""
    from refdecode.generate import generate
    with pytest.raises(ValueError, match=rf"the model's logits contain NaN \(generation step 2, rows \[{rows}\]\): the "
                                         r"checkpoint holds non-finite weights: h.1.mlp.c_fc.weight \(1 non-finite"):
        generate(_nan_weight_model(tmp_path), np.array([[1, 2]]), max_new_tokens=2, **mode)


def test_nan_logits_that_remove_invalid_values_cleans_do_not_stop_generation(tmp_path):
    """transformers' InfNanRemoveLogitsProcessor exists for NaN logits: NaN -> 0, and decoding goes on (here every
    score is 0, so greedy picks token 0)."""
    from refdecode.generate import generate
    out = generate(_nan_weight_model(tmp_path), np.array([[1, 2]]), max_new_tokens=2, remove_invalid_values=True)
    assert out.tolist() == [[1, 2, 0, 0]]


# ---- fuzz: random safetensors headers end in a header or a ValueError naming the file

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from refdecode.model.checkpoint import TensorInfo  # noqa: E402

_JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 70), st.integers(), st.floats(), st.text(max_size=4),
                         st.sampled_from(["F32", "F16", "BF16", "I64", "U8", "BOOL", "F64", "Q4"]))
_JSON = st.recursive(_JSON_SCALAR, lambda inner: st.lists(inner, max_size=3) |
                     st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
_ENTRY = st.one_of(
    _JSON,
    st.fixed_dictionaries({"dtype": st.sampled_from(["F32", "F16", "BF16", "I8"]) | _JSON_SCALAR,
                           "shape": st.lists(st.integers(-1, 6), max_size=3) | _JSON,
                           "data_offsets": st.lists(st.integers(-2, 80), min_size=2, max_size=2) | _JSON}),
)
_HEADER = st.dictionaries(st.sampled_from(["a", "b", "c", "__metadata__", "wte.weight"]) | st.text(max_size=3),
                          _ENTRY, max_size=4)
FUZZ_EXAMPLES = int(__import__("os").environ.get("REFDECODE_FUZZ_EXAMPLES", "300"))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@pytest.mark.slow
@given(header=_HEADER | _JSON, data_len=st.integers(0, 80), raw=st.none() | st.binary(max_size=40),
       size_field=st.none() | st.integers(0, 2**64 - 1))
def test_fuzzed_headers_parse_or_raise_a_value_error_naming_the_file(tmp_path_factory, header, data_len, raw,
                                                                     size_field):
    """Random header JSON (right and wrong types everywhere), random raw header bytes and random header-size
    fields: read_header returns tensors that lie inside the file without overlapping, or raises a ValueError
    that names the file; never a TypeError/KeyError/OverflowError from inside the parser."""
    path = tmp_path_factory.mktemp("fuzz") / "m.safetensors"
    body = raw if raw is not None else json.dumps(header).encode()
    n = len(body) if size_field is None else size_field
    path.write_bytes(struct.pack("<Q", n) + body + bytes(data_len))
    try:
        tensors = read_header(path)
    except ValueError as e:
        assert str(path) in str(e)
        return
    size = path.stat().st_size
    spans = sorted((t.offset, t.offset + t.nbytes) for t in tensors.values() if t.nbytes)
    assert all(isinstance(t, TensorInfo) and t.offset + t.nbytes <= size for t in tensors.values())
    assert all(end <= begin for (_, end), (begin, _) in zip(spans, spans[1:]))
