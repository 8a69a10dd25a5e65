"""decode_as: the request checks, the output layout, and the control (4.38.2 profile == refdecode.generate)."""

from __future__ import annotations

import numpy as np
import pytest

from refdecode import GPT2, generate
from refdecode.reference.engines import decode_as

from engine_records import decode_case, model_dir, recorded

CFG = {"max_new_tokens": 2, "eos_token_id": 0, "pad_token_id": 0}


@pytest.mark.parametrize("config,message", [
    ({**CFG, "do_sample": True}, "`do_sample=True` needs num_beams 1 and the case's `uniforms`"),
    ({"max_new_tokens": 2}, "`eos_token_id` must be"),
    ({**CFG, "max_new_tokens": 0}, "`max_new_tokens` must be >= 1"),
    ({**CFG, "num_beams": 2, "num_return_sequences": 3}, "`num_return_sequences` must be in"),
])
def test_bad_config_names_the_field(config, message):
    with pytest.raises(ValueError, match=message):
        decode_as("transformers-4.38.2", object(), [[1, 2]], [[1, 1]], config)


def test_bad_shapes_and_profile():
    with pytest.raises(ValueError, match="`input_ids` and `attention_mask`"):
        decode_as("transformers-4.38.2", object(), [[1, 2]], [[1]], CFG)
    with pytest.raises(ValueError, match="`profile`"):
        decode_as("mistral-rs", object(), [[1, 2]], [[1, 1]], CFG)
    with pytest.raises(TypeError, match="`config`"):
        decode_as("transformers-4.38.2", object(), [[1, 2]], [[1, 1]], [("max_new_tokens", 2)])


def _generate(r: dict) -> list:
    cfg = {k: v for k, v in r["config"].items() if k not in ("num_beam_groups", "diversity_penalty")}
    model = GPT2.from_pretrained(model_dir(r["model"]))
    if cfg.get("do_sample"):  # the draws are the case's uniforms, as the suite replays 4.38.2's
        from refdecode.reference.conformance.cases_decode import UniformStream
        cfg["rng"] = UniformStream(np.asarray(r["uniforms"]))
    return generate(model, np.array(r["input_ids"]), np.array(r["attention_mask"]), **cfg).tolist()


def test_control_equals_generate_on_a_few_cases():
    cases = recorded("transformers-4.38.2")
    for r in [cases[0], cases[-1], next(c for c in cases if c["config"].get("num_beams", 1) > 1)]:
        out = decode_case("transformers-4.38.2", r)
        assert out["sequences"].dtype == np.int64
        assert out["sequences"].tolist() == _generate(r) == r["expected"]["sequences"], r["id"]


@pytest.mark.slow
@pytest.mark.heavy  # 10 s of CPU or more: `pytest --heavy` (CI) runs it
def test_control_equals_generate_on_every_case():
    """Every engines_* / gpt2_greedy / gpt2_sample / gpt2_beam_search case: the 4.38.2 profile, refdecode.generate and the
    suite's expected sequences (4.38.2's, recorded) agree."""
    for r in recorded("transformers-4.38.2"):
        assert decode_case("transformers-4.38.2", r)["sequences"].tolist() == _generate(r), r["id"]
