"""benchmarks/make_copy_checkpoint.py: the hand-built induction circuit copies, and prompt lookup then verifies
many drafted tokens per model call (what bench_generate.py's lookup_copy mode measures on the 124M shape)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from refdecode import GPT2, generate
from refdecode.model.stand_ins import CountingModel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import make_copy_checkpoint  # noqa: E402

SHAPE = dict(n_embd=256, n_head=4, n_layer=3, n_positions=128, vocab_size=1000)


@pytest.fixture(scope="module")
def copier(tmp_path_factory):
    path = tmp_path_factory.mktemp("copy")
    save_file(make_copy_checkpoint.build(**SHAPE), str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(make_copy_checkpoint.config(**SHAPE)))
    return GPT2.from_pretrained(path)


def test_weights_have_the_shapes_and_dtype_of_the_configured_gpt2():
    w = make_copy_checkpoint.build(**SHAPE)
    assert w["transformer.wte.weight"].shape == (1000, 256) and w["transformer.wpe.weight"].shape == (128, 256)
    assert w["transformer.h.2.mlp.c_fc.weight"].shape == (256, 1024)
    assert {a.dtype for a in w.values()} == {np.dtype(np.float32)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_copies_a_passage_and_prompt_lookup_verifies_many_tokens_per_call(copier, seed):
    passage = np.random.default_rng(seed).permutation(999)[:60]  # 60 distinct ids (999, the eos, left out)
    prompt = np.concatenate([passage, passage[:8]])[None].astype(np.int64)  # the passage, then its start again
    greedy = CountingModel(copier)
    out = generate(greedy, prompt, max_new_tokens=40, min_new_tokens=40)
    assert out[0, prompt.shape[1]:].tolist() == passage[8:48].tolist()  # it continues the passage
    lookup = CountingModel(copier)
    fast = generate(lookup, prompt, max_new_tokens=40, min_new_tokens=40, prompt_lookup_num_tokens=10)
    assert np.array_equal(fast, out)
    assert greedy.calls == 40 and lookup.calls <= 5  # 11 tokens per verified round: 40 tokens in 4 calls


def test_the_circuit_needs_its_heads():
    with pytest.raises(ValueError, match="head size 64"):
        make_copy_checkpoint.build(n_embd=256, n_head=2)
