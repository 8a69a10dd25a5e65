"""refdecode.generation_output: mapping access to outputs, and compute_transition_scores against 4.38.2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import GOLDEN, MODELS

from refdecode import GPT2, Tokenizer, compute_transition_scores, generate
from refdecode.generation_output import GenerateBeamDecoderOnlyOutput, GenerateDecoderOnlyOutput

# ---- ModelOutput conveniences


def test_outputs_index_like_transformers_model_output():
    """``out["sequences"]``, ``out[i]`` and ``to_tuple()`` cover the non-None fields in field order only."""
    seq, scores = np.array([[1, 2, 3]]), (np.zeros((1, 4), dtype=np.float32),)
    out = GenerateBeamDecoderOnlyOutput(sequences=seq, scores=scores, sequences_scores=np.array([-1.0]))
    assert out["sequences"] is seq and out["scores"] is scores
    assert [k for k in out] == list(out.keys()) == ["sequences", "sequences_scores", "scores"]
    assert out.to_tuple()[2] is scores and out[1] is out.sequences_scores and len(out.to_tuple()) == 3
    assert "beam_indices" not in out and "sequences" in out
    assert dict(out.items())["scores"] is scores and out.values()[0] is seq
    with pytest.raises(KeyError, match="beam_indices"):
        out["beam_indices"]  # None fields are absent, as in transformers


def test_generate_output_supports_string_keys():
    tok = Tokenizer(MODELS / "gpt2-tiny")
    model = GPT2.from_pretrained(MODELS / "gpt2-tiny")
    ids, mask = tok(["Hello"], return_tensors="np").values()
    out = generate(model, ids, attention_mask=mask, max_new_tokens=3, return_dict_in_generate=True)
    assert isinstance(out, GenerateDecoderOnlyOutput)
    assert out["sequences"].shape == (1, ids.shape[1] + 3) and out.to_tuple()[0] is out.sequences


# ---- compute_transition_scores: transformers 4.38.2's inputs -> 4.38.2's result

_GOLDEN = np.load(GOLDEN / "transition_scores.npz")
_META = json.loads(str(_GOLDEN["meta"]))
_CASES = [(c["name"], n) for c in _META["cases"] for n in (False, True)]


@pytest.mark.parametrize("name,normalize", _CASES, ids=[f"{c}-norm{int(n)}" for c, n in _CASES])
def test_compute_transition_scores_equals_transformers(name, normalize):
    """Exact gather (normalize=False); log-softmax within 2 float32 ulps of torch's (normalize=True)."""
    g = _GOLDEN
    scores = tuple(g[f"{name}/scores"])  # (S, rows, V) -> S x (rows, V)
    beam_indices = g[f"{name}/beam_indices"] if f"{name}/beam_indices" in g.files else None
    got = compute_transition_scores(g[f"{name}/sequences"], scores, beam_indices, normalize_logits=normalize)
    want = g[f"{name}/transition_{int(normalize)}"]
    assert got.dtype == np.float32 and got.shape == want.shape
    if normalize:
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=2e-6)
    else:
        np.testing.assert_array_equal(got, want)


def test_golden_cases_cover_beams_that_end_early():
    """The golden beam cases hold -1 beam indices inside the generated part (a shorter beam), else the masking is untested."""
    bi = _GOLDEN["beam_search/beam_indices"]
    lengths = (bi >= 0).sum(-1)
    assert lengths.min() < lengths.max(), lengths


def test_transition_scores_rebuild_sequences_scores():
    """Summing a beam's transition scores and dividing by length ** length_penalty gives ``sequences_scores``."""
    model = GPT2.from_pretrained(GOLDEN / "models" / "decode-a")
    out = generate(model, np.array([[5, 17, 33, 8]]), max_new_tokens=8, num_beams=3, num_return_sequences=3,
                   length_penalty=0.7, return_dict_in_generate=True, output_scores=True, pad_token_id=0)
    t = compute_transition_scores(out.sequences, out.scores, out.beam_indices)
    length = (out.beam_indices >= 0).sum(-1)
    np.testing.assert_allclose(t.sum(-1) / length ** 0.7, out.sequences_scores, rtol=1e-5)


def test_compute_transition_scores_refuses_empty_scores():
    with pytest.raises(ValueError, match="output_scores=True"):
        compute_transition_scores(np.array([[1, 2]]), ())
