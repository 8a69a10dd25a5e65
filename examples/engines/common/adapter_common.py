"""What the Python adapters share: transformers 4.38.2's GenerationConfig defaults (a field an engine cannot pass is
Unsupported unless it is at its default) and the unpacking of a decode request.

Standard library only: each Python adapter imports it in its engine's own environment.
"""

from __future__ import annotations

from pathlib import Path

from protocol import Unsupported

HF_DEFAULTS = {
    "max_time": None, "penalty_alpha": None, "use_cache": True, "typical_p": 1.0, "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0, "encoder_repetition_penalty": 1.0, "bad_words_ids": None, "force_words_ids": None,
    "renormalize_logits": False, "constraints": None, "forced_bos_token_id": None, "forced_eos_token_id": None,
    "remove_invalid_values": False, "exponential_decay_length_penalty": None, "suppress_tokens": None,
    "begin_suppress_tokens": None, "forced_decoder_ids": None, "sequence_bias": None, "guidance_scale": None,
    "low_memory": None, "encoder_no_repeat_ngram_size": 0, "decoder_start_token_id": None,
    "prompt_lookup_num_tokens": None, "num_beam_groups": 1, "diversity_penalty": 0.0,
    "output_attentions": False, "output_hidden_states": False, "output_scores": False, "output_logits": None,
    "return_dict_in_generate": False, "num_assistant_tokens": 5, "num_assistant_tokens_schedule": "heuristic",
    "cache_implementation": None, "generation_kwargs": {}, "_from_model_config": False, "bos_token_id": None,
    "transformers_version": None,
}


def require_handled(cfg: dict, handled: set[str]) -> None:
    """Unsupported, naming it, for the first field of ``cfg`` outside ``handled`` that is not at 4.38.2's default
    (or that 4.38.2 does not have)."""
    for name, value in cfg.items():
        if name in handled:
            continue
        if name not in HF_DEFAULTS:
            raise Unsupported(f"no option for {name}")
        if value != HF_DEFAULTS[name]:
            raise Unsupported(f"no option for {name}={value!r}")


#: Decode types whose schema requires beam_indices (no engine API returns them).
NEEDS_BEAM_INDICES = {"gpt2_beam_search", "gpt2_group_beam_search", "gpt2_beam_sample", "beam_search",
                      "beam_sample", "group_beam_search", "beam_search_ties", "constrained_beam_search"}


def decode_request(request: dict, kinds: tuple[str, ...] = ("gpt2",)) -> tuple[Path, list[list[int]], list[list[int]],
                                                                          dict]:
    """(model folder, input_ids, attention_mask, config) of a decode request without uniforms on a model of one of
    ``kinds`` (``{"kind": "gpt2" | "llama", ...}``: an adapter that converts Llama folders passes both); Unsupported
    for anything else (another kind of request or model, a type that needs beam_indices, sampling's draws)."""
    kind = request.get("type", "")
    inp = request["input"]
    if "config" not in inp or "model" not in inp:
        raise Unsupported(f"{kind}: not a decode request")
    if kind in NEEDS_BEAM_INDICES:
        raise Unsupported(f"{kind} requires beam_indices, which the engine does not return")
    model = inp["model"]
    if model.get("kind", "gpt2") not in kinds:
        raise Unsupported(f"model kind {model.get('kind')!r}: this engine's adapter takes {', '.join(kinds)} only")
    if "uniforms" in inp:
        raise Unsupported("sampling: the engine cannot be given the case's uniforms")
    model_dir = Path(model["path"])
    if not model_dir.is_absolute():
        model_dir = Path.cwd() / model_dir
    mask = inp.get("attention_mask") or [[1] * len(r) for r in inp["input_ids"]]
    return model_dir.resolve(), inp["input_ids"], mask, inp["config"]
