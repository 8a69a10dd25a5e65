"""transformers 4.38.2's GenerationConfig defaults, for adapters that answer Unsupported to a field they cannot pass.

Standard library only: each Python adapter imports it in its engine's own environment.
"""

from __future__ import annotations

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


def first_unhandled(cfg: dict, handled: set[str]) -> str | None:
    """The first field of ``cfg`` outside ``handled`` that is not at 4.38.2's default, as ``"name=value"``
    (``"name"`` for a field 4.38.2 does not have); None when there is none."""
    for name, value in cfg.items():
        if name in handled:
            continue
        if name not in HF_DEFAULTS:
            return name
        if value != HF_DEFAULTS[name]:
            return f"{name}={value!r}"
    return None
