r"""What each engine refuses: named rules that make a profile answer ``unsupported`` where its engine does.

Contract: data and one look-up. In, a profile name, the case's config (``decode.normalized_config``: defaults
filled, ``eos_token_id`` a list), the prompt width T and the checkpoint's ``GPT2Config``; out, the engine's reason
(``refusal``), or None when the engine decodes the case. ``refdecode conformance serve --as ENGINE`` answers
``{"unsupported": reason}`` then, so ``check`` splits the suite into answered and unsupported as the engine does.

Two kinds of "unsupported" are kept apart:

* ``REFUSALS``: the ENGINE refuses the case: it raises on the settings (OpenVINO GenAI's
  ``GenerationConfig::validate``, TF and Flax ``generate``), has no option for them (keras-hub's ``BeamSampler``
  has no length penalty, llama.cpp no beam search), or cannot run the checkpoint (vLLM's CPU attention, mlx-lm's
  one GPT-2 MLP). A user of the engine meets the same wall, so the profile refuses too.
* ``ADAPTER_LIMITS``: the ADAPTER cannot pass the case to an engine that would run it: every engine samples, but
  only llama.cpp, mlx-lm and vLLM expose a distribution the adapter can draw from with the case's uniforms. The
  profile answers these cases (it draws with the uniforms, as the engine would with them); the list is here so
  every recorded "unsupported" is accounted for (tests/reference/engines/test_refusals.py).

The rules of an engine are listed in the order its adapter (examples/engines/<engine>/adapter.*) checks them: the
first that holds gives the reason, word for word the adapter's (the recorded answers hold them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .decode import normalized_config
from .rules import PROFILES, EngineRules

__all__ = ["Refusal", "REFUSALS", "ADAPTER_LIMITS", "refusal", "refusing_rule", "refusals_of"]


@dataclass(frozen=True)
class Refusal:
    """One named refusal: ``when(cfg, facts)`` -> the engine refuses; ``reason`` formatted with the config's fields
    and the facts (T: prompt width, max_length: T + max_new_tokens, head: n_embd // n_head); ``source``: where the
    engine refuses (its source line, or the API that lacks the option)."""

    name: str
    when: Callable[[dict, dict], bool]
    reason: str
    source: str

    def says(self, cfg: dict, facts: dict) -> str:
        return self.reason.format(**{**cfg, **facts})


def _beams(c: dict) -> bool:
    return int(c["num_beams"]) > 1


def _min_new(c: dict) -> int:
    return int(c["min_new_tokens"] or 0)


# ---- the rules shared by several engines (each engine's reason differs, so each gets its own Refusal) ----------
def _ngram(c: dict, f: dict) -> bool:
    return int(c["no_repeat_ngram_size"]) > 0


def _penalty(c: dict, f: dict) -> bool:
    return float(c["repetition_penalty"]) != 1.0


def _min_beyond_prompt(c: dict, f: dict) -> bool:
    return int(c["min_length"]) > f["T"]


def _no_minimum(c: dict, f: dict) -> bool:          # min_new_tokens > 0 or min_length beyond the prompt
    return _min_new(c) > 0 or int(c["min_length"]) > f["T"]


def _beam_search(c: dict, f: dict) -> bool:
    return _beams(c)


def _unfeasable(c: dict, f: dict) -> bool:          # TF and Flax generate: min_length > max_length raises
    return int(c["min_length"]) > f["max_length"]


_HUB = "transformers 4.38.2"
_UNFEASABLE = "Unfeasable length constraints: the minimum length ({min_length}) is larger than the maximum length " \
              "({max_length})"

KERAS = (
    Refusal("repetition_penalty", _penalty, "no option for repetition_penalty",
            "keras_hub GPT2CausalLM.generate / samplers: no penalty argument"),
    Refusal("no_repeat_ngram_size", _ngram, "no option for no_repeat_ngram_size",
            "keras_hub samplers: no n-gram ban"),
    Refusal("min_new_tokens", lambda c, f: _min_new(c) > 0, "no option for min_new_tokens",
            "keras_hub GPT2CausalLM.generate: max_length only"),
    Refusal("min_length", _min_beyond_prompt, "no option for min_length ({min_length} > prompt length {T})",
            "keras_hub GPT2CausalLM.generate: max_length only"),
    Refusal("length_penalty", lambda c, f: _beams(c) and float(c["length_penalty"]) != 1.0,
            "no option for length_penalty (BeamSampler has no length normalisation)",
            "keras_hub samplers/beam_sampler.py: BeamSampler(num_beams, return_all_beams)"),
    Refusal("early_stopping", lambda c, f: _beams(c) and c["early_stopping"] is not False,
            "no option for early_stopping={early_stopping!r} (BeamSampler has no finishing rule)",
            "keras_hub samplers/beam_sampler.py: runs to max_length"),
)

LLAMA_CPP = (
    Refusal("beam_search", _beam_search,
            "no beam search: node-llama-cpp 3.21.1 / llama.cpp have none (num_beams > 1)",
            "llama.cpp include/llama.h: llama_beam_search removed; node-llama-cpp 3.21.1 has no beam API"),
    Refusal("no_repeat_ngram_size", _ngram,
            "no option for no_repeat_ngram_size (llama.cpp has DRY, not an n-gram ban)",
            "llama.cpp src/llama-sampler.cpp: DRY, no n-gram ban"),
    Refusal("min_new_tokens", lambda c, f: _min_new(c) > 0, "no option for min_new_tokens",
            "node-llama-cpp LlamaCompletion: no minimum length"),
    Refusal("min_length", _min_beyond_prompt, "no option for min_length ({min_length} > prompt length {T})",
            "node-llama-cpp LlamaCompletion: no minimum length"),
)

MLX_LM = (
    Refusal("gpt2_mlp", lambda c, f: f["activation_function"] is not None    # a GPT-2 MLP (a Llama's is SwiGLU)
            and (f["n_inner"] not in (None, 4 * f["n_embd"])
                 or f["activation_function"] not in ("gelu_new", "gelu_pytorch_tanh")),
            "mlx-lm's GPT-2 has no n_inner and only the tanh GELU (models/gpt2.py MLP)",
            "mlx_lm/models/gpt2.py MLP: 4 * n_embd, nn.gelu_approx"),
    Refusal("beam_search", _beam_search, "num_beams > 1: mlx-lm has no beam search",
            "mlx_lm/generate.py: generate_step / batch_generate sample one token per step"),
    Refusal("no_repeat_ngram_size", _ngram, "no_repeat_ngram_size: mlx-lm has no such processor",
            "mlx_lm/sample_utils.py make_logits_processors: logit_bias and repetition penalty only"),
    Refusal("minimum_length", _no_minimum,
            "min_new_tokens / min_length beyond the prompt: mlx-lm has no minimum length",
            "mlx_lm/generate.py: max_tokens only"),
)

ONNXRUNTIME_GENAI = (
    Refusal("early_stopping_never", lambda c, f: c["early_stopping"] not in (True, False),
            "no option for early_stopping={early_stopping!r} (a bool only)",
            "onnxruntime-genai src/config.h search.early_stopping: bool"),
)

OPENVINO_GENAI = (
    # checked first by the adapter: the min_length check runs before GenerationConfig::validate
    Refusal("min_length", _min_beyond_prompt,
            "min_length={min_length}: GenAI has min_new_tokens only (no total minimum)",
            "src/cpp/include/openvino/genai/generation_config.hpp: min_new_tokens, no min_length"),
    Refusal("repetition_penalty_with_beams", lambda c, f: _beams(c) and _penalty(c, f),
            "GenAI refuses the settings: 'repetition_penalty' is not currently supported by beam search and "
            "should be 1.0f, but got {repetition_penalty}",
            "src/cpp/src/generation_config.cpp:325-327 (GenerationConfig::validate)"),
)

TF = (
    Refusal("unfeasable_lengths", _unfeasable, "TF's generate raises for this config: ValueError: " + _UNFEASABLE,
            f"{_HUB} generation/tf_utils.py:853-861"),
    Refusal("eos_list_with_min_length", lambda c, f: len(c["eos_token_id"]) > 1 and int(c["min_length"]) > 0,
            "TF's generate raises for this config: ValueError: `eos_token_id` has to be a positive integer, but is "
            "{eos_token_id}",
            f"{_HUB} generation/tf_logits_process.py:217 (TFMinLengthLogitsProcessor, built at tf_utils.py:1471-1476)"),
)

FLAX = (
    Refusal("eos_list", lambda c, f: len(c["eos_token_id"]) != 1,
            "eos_token_id {eos_token_id}: Flax generate takes one eos id (FlaxMinLengthLogitsProcessor raises for a "
            "list, flax_logits_process.py:256; the loops compare with one id)",
            f"{_HUB} generation/flax_logits_process.py:256, flax_utils.py _greedy_search / _beam_search"),
    Refusal("unfeasable_lengths", _unfeasable,
            "Flax generate refuses min_length > max_length (flax_utils.py:400-404): " + _UNFEASABLE,
            f"{_HUB} generation/flax_utils.py:400-404"),
)

VLLM = (
    Refusal("no_repeat_ngram_size", _ngram, "no option for no_repeat_ngram_size (vLLM has no n-gram ban)",
            "vllm/sampling_params.py SamplingParams: no n-gram ban"),
    Refusal("beam_minimum", lambda c, f: _beams(c) and min(max(_min_new(c), int(c["min_length"]) - f["T"], 0),
                                                            int(c["max_new_tokens"])) > 0,
            "beam search with sampling or a minimum length: BeamSearchParams has neither",
            "vllm/sampling_params.py BeamSearchParams: beam_width, max_tokens, length_penalty, temperature"),
    Refusal("head_size", lambda c, f: f["head"] not in f["vllm_head_sizes"],
            "head size {head}: vLLM's CPU attention (cpu_attn.py) takes head sizes {vllm_head_sizes}",
            "vllm/v1/attention/backends/cpu_attn.py:69-70 (get_supported_head_sizes)"),
    Refusal("repetition_penalty_with_beams", lambda c, f: _beams(c) and _penalty(c, f),
            "beam search with repetition_penalty: BeamSearchParams has no penalties",
            "vllm/sampling_params.py BeamSearchParams: no penalties"),
)

#: The engine's own refusals, per profile (a profile not named here refuses nothing).
REFUSALS: dict[str, tuple[Refusal, ...]] = {
    "keras-hub": KERAS, "llama-cpp": LLAMA_CPP, "mlx-lm": MLX_LM, "mlx-lm-per-prompt": MLX_LM,
    "onnxruntime-genai": ONNXRUNTIME_GENAI, "openvino-genai": OPENVINO_GENAI, "transformers-4.38.2-tf": TF,
    "transformers-4.38.2-flax": FLAX, "vllm": VLLM,
}

# The adapter's limits: the engine would take the case, the adapter cannot give it the case's uniforms. The
# profile answers (as the engine would with those draws); the reasons are the adapters' recorded ones.
_UNIFORMS = "sampling: the engine cannot be given the case's uniforms"
_TORCH = "sampling: generate() draws with torch's generator; no option to take the case's uniforms"
ADAPTER_LIMITS: dict[str, tuple[str, ...]] = {
    "transformers-4.38.2": (_TORCH,),
    "transformers-5": (_TORCH,),
    "ctranslate2": ("sampling: CTranslate2 draws with its own generator; no option to take the uniforms",),
    "onnxruntime-genai": (_UNIFORMS,),
    "openvino-genai": (_UNIFORMS,),
    "transformers-js": (_UNIFORMS,),
    "keras-hub": ("no way to give keras-hub's samplers the case's uniforms (do_sample)",),
    "transformers-4.38.2-tf": ("sampling: TF's sample() draws with tf.random.stateless_categorical / "
                               "tf.random.categorical (its own Philox stream, seed=); the case's uniforms cannot "
                               "be given (the warped distribution is checked by rule_check.py)",),
    "transformers-4.38.2-flax": ("sampling: Flax draws with jax.random.categorical from a PRNG key "
                                 "(flax_utils.py:716); no option to take the case's uniforms (rule_check.py "
                                 "compares the warped distribution)",),
}

#: vLLM 0.32.0's CPU attention head sizes (``CPUAttentionBackend.get_supported_head_sizes``).
VLLM_HEAD_SIZES = [32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512]


def refusals_of(profile: str | EngineRules) -> tuple[Refusal, ...]:
    """The named refusals of a profile (an ``EngineRules`` given as is refuses nothing)."""
    if isinstance(profile, EngineRules):
        return ()
    if profile not in PROFILES:
        raise ValueError(f"`profile` must be one of {sorted(PROFILES)} or an EngineRules, got {profile!r}")
    return REFUSALS.get(profile, ())


def refusing_rule(profile: str | EngineRules, config: dict, width: int, model_config: Any) -> Refusal | None:
    """The first of the profile's refusals that holds for the case, or None (see ``refusal``)."""
    return _first(refusals_of(profile), config, width, model_config)[0]


def refusal(profile: str | EngineRules, config: dict, width: int, model_config: Any) -> str | None:
    """The engine's reason for refusing the case (its first rule that holds), or None when it decodes it.
    ``config``: the case's GenerationConfig dict; ``width``: the prompt width T; ``model_config``: the
    checkpoint's ``GPT2Config`` (n_embd, n_head, n_inner, activation_function)."""
    return _first(refusals_of(profile), config, width, model_config)[1]


def _first(rules: tuple[Refusal, ...], config: dict, width: int, m: Any) -> tuple[Refusal | None, str | None]:
    if not rules:
        return None, None
    cfg = normalized_config(config, width)
    facts = {"T": width, "max_length": width + int(cfg["max_new_tokens"]), "head": m.n_embd // m.n_head,
             "n_embd": m.n_embd, "n_inner": getattr(m, "n_inner", None),   # a GPT-2 MLP's; None: not a GPT-2 MLP
             "activation_function": getattr(m, "activation_function", None),
             "vllm_head_sizes": VLLM_HEAD_SIZES}
    for rule in rules:
        if rule.when(cfg, facts):
            return rule, rule.says(cfg, facts)
    return None, None
