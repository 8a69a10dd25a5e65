r"""transformers 4.38.2's Flax generate as a `refdecode conformance check` client (decodes on Hugging Face GPT-2 folders).

The same library as the control (examples/engines/transformers-4.38.2/), its other implementation: the adapter
builds the ``GenerationConfig`` from the request's ``config`` as the control does (every field passed, none
dropped) and calls ``FlaxGPT2LMHeadModel.generate(input_ids, generation_config=..., attention_mask=...)`` as Flax
users call it (``trace=True``: the loops run as ``lax.while_loop``), so the framework is the one difference.
JAX runs on the CPU (``JAX_PLATFORMS=cpu``), float32 (the model's ``dtype``, and the weights: ``convert.py`` makes a
float32 copy of the folder, read with ``from_pretrained(copy, from_pt=True)``; jax's default matmul precision on the
CPU is full float32, FINDINGS.md "Numerics"). One model per folder is kept across requests.

The one change to the config: ``eos_token_id`` ``[e]`` is passed as the int ``e``: Flax's min-length processor,
which generate() always builds (``min_length`` 0 is not None), takes an int only (``flax_logits_process.py:256``)
and the loops compare the new token with one id. Two or more eos ids: Unsupported (generate raises). Options that
Flax 4.38.2 has no processor for (repetition_penalty, no_repeat_ngram_size, min_new_tokens) go into the config as
the control's do and Flax ignores them without a word: the answer is what the engine returns (FINDINGS FX3).

What it answers (the engine's output as it is, FINDINGS FX1-FX9):
  * greedy (num_beams 1, do_sample False): ``sequences`` (B, T + max_new_tokens): Flax's fixed-shape output,
    right-padded with pad_token_id to max_length (FX1). No ``scores``: Flax's output has none.
  * beam search: ``sequences`` (B * num_return_sequences, T + max_new_tokens) and ``sequences_scores`` (Flax's
    ``scores``). The ``gpt2_beam_search`` type requires beam_indices, which Flax does not return: Unsupported
    there (run_all.sh records those cases as ``engines_beam_search``).
  * Unsupported: sampling (jax.random.categorical draws with a PRNG key; the case's uniforms cannot be given:
    ``rule_check.py`` compares Flax's warped distribution with refdecode's instead, FX8), num_beam_groups > 1 (no
    group beam search in Flax generate), more than one eos id, min_length > T + max_new_tokens (generate raises
    "Unfeasable length constraints", flax_utils.py:400-404), the speculative / contrastive types.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
sys.path.insert(0, str(HERE))
from protocol import Unsupported, serve  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import transformers  # noqa: E402
from transformers import FlaxGPT2LMHeadModel, FlaxLlamaForCausalLM, FlaxPreTrainedModel, GenerationConfig  # noqa: E402

from convert import float32_folder  # noqa: E402

transformers.logging.set_verbosity_error()
_MODELS: dict[str, FlaxPreTrainedModel] = {}
CLASSES = {"gpt2": FlaxGPT2LMHeadModel, "llama": FlaxLlamaForCausalLM}


def llama_refusal(folder: Path) -> str | None:
    """Why 4.38.2's FlaxLlamaForCausalLM cannot hold this Llama, or None: it has no grouped-query attention (its
    k_proj and v_proj are hidden_size wide, modeling_flax_llama.py:203-211; num_key_value_heads is read nowhere) and
    no tied head (lm_head is a Dense of its own, :657-662; tie_word_embeddings is read nowhere), so from_pt either
    fails on the k/v shapes or leaves the head at its random init."""
    config = json.loads((folder / "config.json").read_text())
    heads = config["num_attention_heads"]
    if config.get("num_key_value_heads", heads) != heads:
        return (f"grouped-query attention ({config['num_key_value_heads']} key-value heads of {heads}): "
                "FlaxLlamaForCausalLM 4.38.2 projects k and v to hidden_size (modeling_flax_llama.py:203-211)")
    if config.get("tie_word_embeddings", False):
        return ("a tied head (tie_word_embeddings): FlaxLlamaForCausalLM 4.38.2's lm_head is a Dense of its own "
                "(modeling_flax_llama.py:657-662)")
    return None


def _model(spec: dict) -> FlaxPreTrainedModel:
    if spec.get("kind") not in CLASSES:
        raise Unsupported(f"model kind {spec.get('kind')!r}: this adapter runs Hugging Face GPT-2 and Llama folders")
    path = str(spec["path"])
    if spec["kind"] == "llama" and (why := llama_refusal(Path(path))):
        raise Unsupported(why)
    if path not in _MODELS:
        _MODELS[path] = CLASSES[spec["kind"]].from_pretrained(str(float32_folder(Path(path))), from_pt=True,
                                                              dtype=jnp.float32)
    return _MODELS[path]


def flax_config(config: dict) -> GenerationConfig:
    """The request's config as a GenerationConfig, eos_token_id as Flax takes it (one int)."""
    config = dict(config)
    eos = config.get("eos_token_id")
    if isinstance(eos, list):
        if len(eos) != 1:
            raise Unsupported(f"eos_token_id {eos}: Flax generate takes one eos id (FlaxMinLengthLogitsProcessor "
                              "raises for a list, flax_logits_process.py:256; the loops compare with one id)")
        config["eos_token_id"] = int(eos[0])
    return GenerationConfig(**config)


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request (this adapter answers decodes only)")
    config = inp["config"]
    if config.get("do_sample") or "uniforms" in inp:
        raise Unsupported("sampling: Flax draws with jax.random.categorical from a PRNG key (flax_utils.py:716); "
                          "no option to take the case's uniforms (rule_check.py compares the warped distribution)")
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: Flax generate has greedy, sampling and beam search only (flax_utils.py:419-473)")
    if int(config.get("num_beam_groups", 1)) > 1:
        raise Unsupported("num_beam_groups > 1: Flax generate has no group beam search (flax_utils.py:419-473)")
    beams = int(config.get("num_beams", 1)) > 1
    if beams and kind.startswith("gpt2_"):
        raise Unsupported(f"{kind} requires beam_indices: Flax's beam search does not return them "
                          "(FlaxBeamSearchOutput: sequences, scores)")
    gen = flax_config(config)
    model = _model(inp["model"])
    ids = jnp.array(inp["input_ids"], dtype=jnp.int32)
    mask = jnp.array(inp["attention_mask"], dtype=jnp.int32)
    try:
        out = model.generate(ids, generation_config=gen, attention_mask=mask)
    except ValueError as err:     # generate's own refusal (4.38.2's PyTorch generate only warns)
        if "Unfeasable length constraints" in str(err):
            raise Unsupported(f"Flax generate refuses min_length > max_length (flax_utils.py:400-404): {err}")
        raise
    result: dict = {"sequences": jax.device_get(out.sequences).astype("int64").tolist()}
    if beams:
        result["sequences_scores"] = [float(s) for s in jax.device_get(out.scores)]
    return result


if __name__ == "__main__":
    sys.exit(serve(answer))
