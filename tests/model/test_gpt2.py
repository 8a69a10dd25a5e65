"""refdecode.model.gpt2 against transformers 4.38.2 golden logits, plus cache equivalences, dtypes and argument checks.

Goldens: ``tests/golden/model_<name>.npz`` from ``tools/golden/make_model_golden.py`` on the checkpoints in
``tests/golden/models/<name>/`` (save_pretrained and hub layouts; float32, float16, bfloat16 files; gelu_new,
gelu, relu; layer-wise scaling; reorder_and_upcast_attn).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import GOLDEN, MODELS

from refdecode.model.config import GPT2Config
from refdecode.model.gpt2 import (
    attend,
    attention_scores,
    default_position_ids,
    ffn,
    gpt2,
    layer_norm,
    lm_head,
    linear,
    padding_bias,
)
from refdecode.model.kv_cache import KVCache
from refdecode.model.modeling import GPT2
from refdecode.numerics import ACT2FN
from numeric_checks import rel_err

GOLDEN_MODELS = ["save_pretrained", "hub", "f16_gelu", "bf16_relu"]
RTOL = 1e-4  # relative to the largest |logit| of the reference


def assert_logits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Within RTOL of the reference; on failure print the max abs diff and the first values (llm.c style)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == np.float32, f"{what}: dtype {got.dtype}"
    err = rel_err(got, want)
    assert err <= RTOL, (f"{what}: max rel err {err:.3g} > {RTOL} (max abs diff {np.abs(got - want).max():.3g})\n"
                         f"  got  {got.ravel()[:5]}\n  want {want.ravel()[:5]}")


@pytest.fixture(scope="module", params=GOLDEN_MODELS)
def golden(request):
    """(model, golden arrays) for one checkpoint."""
    name = request.param
    data = np.load(GOLDEN / f"model_{name}.npz")
    meta = json.loads(str(data["meta"]))
    assert meta["format_version"] == 1, f"regenerate with: {meta['regenerate']}"
    return GPT2.from_pretrained(GOLDEN / "models" / name), data


@pytest.fixture(scope="module")
def tiny():
    return GPT2.from_pretrained(MODELS / "gpt2-tiny")


# ----------------------------------------------------------------------------------------------------
# parity with transformers
# ----------------------------------------------------------------------------------------------------


def test_single_prompt_matches_transformers(golden):
    model, g = golden
    assert_logits(model(g["single_input_ids"]).logits, g["single_logits"], "single prompt")


def test_left_padded_batch_matches_transformers(golden):
    """All positions, pads included: a padded query sees m + m = -inf and m elsewhere (uniform), as torch."""
    model, g = golden
    out = model(g["batch_input_ids"], attention_mask=g["batch_attention_mask"])  # default positions from mask
    assert_logits(out.logits, g["batch_logits"], "padded batch, default position_ids")
    out = model(g["batch_input_ids"], attention_mask=g["batch_attention_mask"], position_ids=g["batch_position_ids"])
    assert_logits(out.logits, g["batch_logits"], "padded batch, explicit position_ids")


def test_four_cached_steps_match_transformers(golden):
    model, g = golden
    cache = model.new_cache(3, 9)
    model(g["batch_input_ids"], attention_mask=g["batch_attention_mask"], past_key_values=cache, logits_to_keep=1)
    for step in range(4):
        out = model(g[f"step{step}_input_ids"], attention_mask=g[f"step{step}_attention_mask"],
                    past_key_values=cache)
        assert out.past_key_values is cache and cache.length == 9 + step
        assert_logits(out.logits, g[f"step{step}_logits"], f"cached step {step}")
        assert np.array_equal(default_position_ids(g[f"step{step}_attention_mask"], cache.length - 1, 3, 1),
                              g[f"step{step}_position_ids"])


@pytest.mark.parametrize("change", [
    {"layer_norm_epsilon": 1e-4},                 # 10x the golden models' epsilon (1e-5; hub: 1e-6 -> 1e-4)
    {"activation_function": "swap"},              # gelu_new <-> gelu (a 2e-4 effect), relu -> gelu
    {"scale_attn_by_inverse_layer_idx": "flip"},
])
def test_perturbed_model_fails_the_tolerance(golden, change):
    """The tolerance is tight enough to catch a wrong epsilon or activation (the tests are not vacuous)."""
    model, g = golden
    key, value = next(iter(change.items()))
    if value == "swap":
        value = {"gelu_new": "gelu", "gelu": "gelu_new", "relu": "gelu"}[model.config.activation_function]
    elif value == "flip":
        value = not model.config.scale_attn_by_inverse_layer_idx
    perturbed = GPT2(dataclasses.replace(model.config, **{key: value}), model.params)
    logits = perturbed(g["batch_input_ids"], attention_mask=g["batch_attention_mask"]).logits
    assert rel_err(logits, g["batch_logits"]) > RTOL


def test_file_wte_instead_of_lm_head_fails_the_tolerance():
    """f16_gelu stores an lm_head.weight != wte; transformers 4.38.2 uses lm_head.weight (see checkpoint.py)."""
    from refdecode.model.checkpoint import read_header, read_tensor, to_float32

    model = GPT2.from_pretrained(GOLDEN / "models" / "f16_gelu")
    g = np.load(GOLDEN / "model_f16_gelu.npz")
    path = GOLDEN / "models" / "f16_gelu" / "model.safetensors"
    info = read_header(path)["transformer.wte.weight"]
    wrong = GPT2(model.config, dict(model.params, wte=to_float32(info.dtype, read_tensor(path, info))))
    assert rel_err(wrong(g["single_input_ids"]).logits, g["single_logits"]) > RTOL


# ----------------------------------------------------------------------------------------------------
# cache equivalences (no golden needed)
# ----------------------------------------------------------------------------------------------------


def test_cached_decoding_equals_full_forward(tiny):
    """Prefill 5 tokens, then 4 single-token steps == one forward over all 9 (left-padded batch of 2)."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, tiny.config.vocab_size, size=(2, 9))
    mask = np.ones((2, 9), dtype=np.int64)
    mask[1, :2] = 0
    full = tiny(ids, attention_mask=mask).logits
    cache = tiny.new_cache(2, 3)  # too small on purpose: the cache must grow
    out = tiny(ids[:, :5], attention_mask=mask[:, :5], past_key_values=cache)
    real = mask[:, :5] == 1  # a pad query's output depends on how many keys follow it: garbage, not compared
    np.testing.assert_allclose(out.logits[real], full[:, :5][real], rtol=0, atol=1e-5)
    for t in range(5, 9):
        step = tiny(ids[:, t : t + 1], attention_mask=mask[:, : t + 1], past_key_values=cache).logits
        np.testing.assert_allclose(step[:, 0], full[:, t], rtol=0, atol=1e-5)
    assert cache.length == 9 and cache.capacity >= 9


def test_cached_decoding_without_mask_uses_arange_positions(tiny):
    ids = np.array([[1, 2, 3, 4, 5]])
    full = tiny(ids).logits
    cache = tiny.new_cache(1, 8)
    tiny(ids[:, :3], past_key_values=cache)
    step = tiny(ids[:, 3:], past_key_values=cache).logits  # positions 3, 4 = arange(S, S + T)
    np.testing.assert_allclose(step, full[:, 3:], rtol=0, atol=1e-5)


def test_logits_to_keep_is_the_tail_of_all_logits(tiny):
    ids = np.array([[10, 20, 30, 40]])
    full = tiny(ids).logits
    last = tiny(ids, logits_to_keep=1).logits
    assert last.shape == (1, 1, tiny.config.vocab_size)
    np.testing.assert_allclose(last, full[:, -1:], rtol=0, atol=1e-6)  # gemv vs gemm rounding only


def test_reorder_equals_recomputing_from_reordered_inputs(tiny):
    """After reorder(beam_idx), a step sees the histories of rows beam_idx: same logits as a full forward on
    input_ids[beam_idx] + the new tokens (what beam search needs)."""
    rng = np.random.default_rng(1)
    ids = rng.integers(0, tiny.config.vocab_size, size=(4, 6))
    new = rng.integers(0, tiny.config.vocab_size, size=(4, 1))
    beam_idx = np.array([2, 1, 1, 0])
    cache = tiny.new_cache(4, 8)
    tiny(ids, past_key_values=cache)
    cache.reorder(beam_idx)
    step = tiny(new, past_key_values=cache).logits
    full = tiny(np.concatenate([ids[beam_idx], new], axis=1)).logits
    np.testing.assert_allclose(step[:, 0], full[:, -1], rtol=0, atol=1e-5)


def test_expand_equals_prefilling_every_beam(tiny):
    """Prefill 2 prompts once, expand to 3 beams each == prefill the 6 repeated rows (repeat_interleave)."""
    ids = np.array([[5, 6, 7], [8, 9, 10]])
    mask = np.array([[1, 1, 1], [0, 1, 1]])
    cache = tiny.new_cache(2, 4)
    tiny(ids, attention_mask=mask, past_key_values=cache)
    beams = cache.expand(3)
    assert beams.batch_size == 6 and beams.length == 3 and cache.batch_size == 2
    new = np.arange(6).reshape(6, 1) + 100
    mask6 = np.concatenate([np.repeat(mask, 3, axis=0), np.ones((6, 1), dtype=np.int64)], axis=1)
    step = tiny(new, attention_mask=mask6, past_key_values=beams).logits
    full = tiny(np.concatenate([np.repeat(ids, 3, axis=0), new], axis=1), attention_mask=mask6).logits
    np.testing.assert_allclose(step[:, 0], full[:, -1], rtol=0, atol=1e-5)


# ----------------------------------------------------------------------------------------------------
# float32 everywhere
# ----------------------------------------------------------------------------------------------------


def test_every_intermediate_is_float32():
    """Runs one layer by hand through the pure functions. NumPy 2 promotes float32 / np.float64 to float64;
    a single such constant would show up here."""
    model = GPT2.from_pretrained(GOLDEN / "models" / "f16_gelu")  # float16 file, inverse-layer scaling
    p, c = model.params, model.config
    g = np.load(GOLDEN / "model_f16_gelu.npz")
    ids, mask = g["batch_input_ids"], g["batch_attention_mask"]
    B, T = ids.shape
    pos = default_position_ids(mask, 0, B, T)
    seen = {}
    x = p["wte"][ids] + p["wpe"][pos]
    seen["embeddings"] = x
    x = x.reshape(B * T, -1)
    h = p["h"][1]
    seen["ln_1"] = a = layer_norm(x, **h["ln_1"], eps=c.layer_norm_epsilon)
    seen["qkv"] = qkv = linear(a, **h["attn"]["c_attn"]).reshape(B, T, 3, c.n_head, -1).transpose(2, 0, 3, 1, 4)
    seen["scores"] = w = attention_scores(qkv[0], qkv[1], 1, c)
    seen["pad_bias"] = bias = padding_bias(mask)
    seen["attend"] = o = attend(w, qkv[2], bias)
    seen["attn_out"] = o = linear(o.transpose(0, 2, 1, 3).reshape(B * T, -1), **h["attn"]["c_proj"])
    seen["mlp"] = ffn(layer_norm(x + o, **h["ln_2"], eps=c.layer_norm_epsilon), **h["mlp"],
                      act=ACT2FN[c.activation_function])
    cache = model.new_cache(B, T)
    seen["logits"] = gpt2(ids, pos, p, c, cache, mask)
    seen["cache"] = cache.keys(0)
    for name, arr in list(seen.items()) + [(k, v) for k, v in p["h"][0]["attn"]["c_attn"].items()]:
        assert arr.dtype == np.float32, f"{name} is {arr.dtype}"
    reordered = GPT2(dataclasses.replace(c, reorder_and_upcast_attn=True), p)
    assert attention_scores(qkv[0], qkv[1], 1, reordered.config).dtype == np.float32


# ----------------------------------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, match", [
    ({"input_ids": np.array([[1.0, 2.0]])}, TypeError, "input_ids.*integer"),
    ({"input_ids": np.array([1, 2])}, ValueError, "input_ids.*2 dimensions"),
    ({"input_ids": np.zeros((1, 0), dtype=np.int64)}, ValueError, "input_ids.*T >= 1"),
    ({"input_ids": np.array([[1, 50257]])}, ValueError, r"input_ids.*\[0, 50257\).*50257"),
    ({"input_ids": np.array([[-1, 2]])}, ValueError, "input_ids.*min -1"),
    ({"attention_mask": np.ones((1, 3))}, TypeError, "attention_mask.*integer"),
    ({"attention_mask": np.ones((1, 3), dtype=np.int64)}, ValueError, r"attention_mask.*\(1, 2\).*\(1, 3\)"),
    ({"attention_mask": np.array([[1, 2]])}, ValueError, r"attention_mask.*\[0, 2\)"),
    ({"position_ids": np.array([[0, 256]])}, ValueError, r"position_ids.*\[0, 256\)"),
    ({"position_ids": np.array([[0]])}, ValueError, "position_ids.*shape"),
    ({"logits_to_keep": 3}, ValueError, r"logits_to_keep.*\[0, T=2\].*3"),
    ({"past_key_values": ((1, 2),)}, TypeError, "past_key_values.*KVCache"),
    ({"past_key_values": KVCache(2, 3, 2, 16, 4)}, ValueError, "past_key_values.*batch_size=1"),
])
def test_bad_arguments_are_named(tiny, kwargs, error, match):
    args = {"input_ids": np.array([[1, 2]])} | kwargs
    with pytest.raises(error, match=match):
        tiny(**args)


def test_sequence_longer_than_n_positions_is_refused(tiny):
    cache = tiny.new_cache(1, 256)
    tiny(np.zeros((1, 255), dtype=np.int64), past_key_values=cache, logits_to_keep=1)
    with pytest.raises(ValueError, match="n_positions=256.*S=255 \\+ T=2"):
        tiny(np.zeros((1, 2), dtype=np.int64), past_key_values=cache)


def test_inputs_are_not_mutated(tiny):
    ids, mask = np.array([[1, 2, 3]]), np.array([[0, 1, 1]])
    ids0, mask0 = ids.copy(), mask.copy()
    tiny(ids, attention_mask=mask)
    assert np.array_equal(ids, ids0) and np.array_equal(mask, mask0)


def test_config_is_the_loaded_one(tiny):
    assert isinstance(tiny.config, GPT2Config)
    assert (tiny.config.vocab_size, tiny.config.n_positions, tiny.config.eos_token_id) == (50257, 256, 50256)


def test_from_pretrained_reads_generation_config_like_transformers(tmp_path):
    """generate()'s defaults come from the checkpoint's generation_config.json, as transformers'
    ``model.generation_config``; without the file, from config.json's bos/eos (``from_model_config``).
    Guards against generate(model, ids) stopping at a different default length than transformers."""
    import shutil

    src = MODELS / "gpt2-tiny"
    for name in ("config.json", "model.safetensors"):
        shutil.copy(src / name, tmp_path / name)
    without = GPT2.from_pretrained(tmp_path).generation_config
    assert (without.max_length, without.eos_token_id, without.bos_token_id) == (20, 50256, 50256)
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 50256, "max_length": 7,
                                                                  "pad_token_id": 50256}))
    with_file = GPT2.from_pretrained(tmp_path).generation_config
    assert (with_file.max_length, with_file.pad_token_id) == (7, 50256)


def _model_dir(tmp_path):
    for name in ("config.json", "model.safetensors"):
        (tmp_path / name).symlink_to(MODELS / "gpt2-tiny" / name)
    return tmp_path


def test_from_pretrained_refuses_a_fifo_generation_config_instead_of_blocking(tmp_path):
    """A FIFO named generation_config.json blocked ``from_pretrained`` forever (open() waits for a writer)."""
    import os
    import threading

    os.mkfifo(_model_dir(tmp_path) / "generation_config.json")
    errors: list = []

    def load():
        try:
            GPT2.from_pretrained(tmp_path)
        except ValueError as e:
            errors.append(e)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(timeout=20)
    assert not t.is_alive(), "from_pretrained blocked on a FIFO"
    assert "generation_config.json is a FIFO" in str(errors[0])


def test_from_pretrained_reports_a_dangling_generation_config_symlink(tmp_path):
    """A dangling symlink was skipped silently (``Path.exists()`` is False for it), so the model ran with
    config.json's defaults instead of the generation config the user linked."""
    (_model_dir(tmp_path) / "generation_config.json").symlink_to(tmp_path / "moved-away.json")
    with pytest.raises(FileNotFoundError, match="generation_config.json is a symbolic link to .*moved-away.json"):
        GPT2.from_pretrained(tmp_path)


@pytest.mark.parametrize("content, error, match", [
    (b"\xff\xfe{", ValueError, "config.json is not UTF-8 text"),
    (b'{"model_type": "gpt2", "scale_attn_weights": "false"}', TypeError, "`scale_attn_weights` must be True or False"),
    (b'{"model_type": "gpt2", "n_layer": 2.0}', TypeError, "`n_layer` must be an integer"),
    (b'{"model_type": "gpt2", "layer_norm_epsilon": NaN}', ValueError, "`layer_norm_epsilon` must be a finite"),
])
def test_from_pretrained_bad_config_json_names_the_file(tmp_path, content, error, match):
    """A non-UTF-8 config.json raised a raw UnicodeDecodeError; ``"false"`` (a truthy string) counted as true."""
    (tmp_path / "model.safetensors").symlink_to(MODELS / "gpt2-tiny" / "model.safetensors")
    (tmp_path / "config.json").write_bytes(content)
    with pytest.raises(error, match=match) as e:
        GPT2.from_pretrained(tmp_path)
    assert "config.json" in str(e.value)


# ---- same seed, same output: what the bits of the logits do not depend on


_LM_HEAD_PROGRAM = """
import sys, numpy as np
from refdecode.model.gpt2 import lm_head
rng = np.random.default_rng(0)
head = rng.standard_normal((50257, 768), dtype=np.float32)  # GPT-2 124M's wte (E = 256 shows nothing here)
x = rng.standard_normal((1, 768), dtype=np.float32)
sys.stdout.write(lm_head(x, head).tobytes().hex() + lm_head(x, np.asfortranarray(head)).tobytes().hex())
"""


@pytest.mark.slow
def test_lm_head_bits_do_not_depend_on_the_openblas_thread_count():
    """One row through GPT-2's LM head: ``x @ wte.T`` gave the eos logit (column 50256, past the last full
    64-column block) different last bits with OPENBLAS_NUM_THREADS=1 and 2, so a sampled draw near a
    boundary flipped. lm_head takes the tail in a second call; each thread count runs in its own process."""
    import os
    import subprocess
    import sys
    outputs = {threads: subprocess.run([sys.executable, "-c", _LM_HEAD_PROGRAM], capture_output=True, text=True,
                                       check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS=threads)).stdout
               for threads in ("1", "2")}
    assert len(outputs["1"]) == 2 * 2 * 4 * 50257 and outputs["1"] == outputs["2"]


def test_lm_head_is_the_plain_product_for_several_rows_and_small_vocabularies():
    rng = np.random.default_rng(1)
    head = rng.standard_normal((130, 8), dtype=np.float32)
    for rows in (1, 3):
        x = rng.standard_normal((rows, 8), dtype=np.float32)
        np.testing.assert_allclose(lm_head(x, head), x @ head.T, rtol=1e-6)
        assert lm_head(x, head).dtype == np.float32 and lm_head(x, head).shape == (rows, 130)


def test_mmap_does_not_change_a_bit_of_the_logits():
    """mmap=True gives views of the file (data % 64 wherever the file puts a tensor), mmap=False NumPy arrays
    (data % 64 == 16 here): the same row-major layout, and alignment does not change OpenBLAS's results."""
    ids = np.array([[15496, 995, 11, 314]])
    a = GPT2.from_pretrained(MODELS / "gpt2-tiny", mmap=False)
    b = GPT2.from_pretrained(MODELS / "gpt2-tiny", mmap=True)
    out_a, out_b = a(ids), b(ids)
    assert np.array_equal(out_a.logits, out_b.logits)
    step_a = a(np.array([[13]]), past_key_values=out_a.past_key_values).logits
    step_b = b(np.array([[13]]), past_key_values=out_b.past_key_values).logits
    assert np.array_equal(step_a, step_b)
