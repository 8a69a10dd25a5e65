r"""The request's pipeline: a GenerationConfig -> the processors, the warpers and the stopping criteria.

Contract: pure functions of the config (and of the few objects a processor needs: the prompt, the model for
classifier-free guidance, a callback, a tokenizer), returning the lists ``generate`` hands to the decoding
loop, **in transformers 4.38.2's order**: :func:`logits_processors` (``_get_logits_processor``),
:func:`logits_warpers` (``_get_logits_warper``) and :func:`stopping_criteria_for`
(``_get_stopping_criteria``). They build; they never run the model or decode. Which loop runs is
:mod:`refdecode.dispatch`'s business. docs/processors.md lists every processor with its page.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .decoding.stopping_criteria import MaxLengthCriteria, MaxTimeCriteria, StoppingCriteriaList, StopStringCriteria
from .generation_config import GenerationConfig
from .processors.bad_words_and_forcing import (
    ForcedBOSTokenLogitsProcessor,
    ForcedEOSTokenLogitsProcessor,
    ForceTokensLogitsProcessor,
    NoBadWordsLogitsProcessor,
    PrefixConstrainedLogitsProcessor,
    SequenceBiasLogitsProcessor,
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
)
from .processors.exponential_decay import ExponentialDecayLengthPenalty
from .processors.logits_process import (
    HammingDiversityLogitsProcessor,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
)
from .processors.logits_warp import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
from .processors.prompt_penalties import EncoderNoRepeatNGramLogitsProcessor, EncoderRepetitionPenaltyLogitsProcessor
from .processors.guidance import UnbatchedClassifierFreeGuidanceLogitsProcessor
from .processors.score_cleanup import InfNanRemoveLogitsProcessor, LogitNormalization
from .processors.truncation_warpers import EpsilonLogitsWarper, EtaLogitsWarper, MinPLogitsWarper, TypicalLogitsWarper
from .processors import transformers5
from .validation import ArgumentTypeError, describe

__all__ = ["logits_processors", "logits_warpers", "stopping_criteria_for"]


# ---- processors (on every decoding mode)


def logits_processors(config: GenerationConfig, prompt_len: int, custom: Any = None, *,
                      prompt: np.ndarray | None = None, model: Any = None, prefix_allowed_tokens_fn: Any = None,
                      negative_prompt_ids: np.ndarray | None = None,
                      negative_prompt_attention_mask: np.ndarray | None = None,
                      attention_mask: np.ndarray | None = None) -> LogitsProcessorList:
    """The processors 4.38.2's ``_get_logits_processor`` builds, **in this order**, then ``custom``, then
    LogitNormalization (``renormalize_logits``) last of all. One line per processor below, with its condition.

    ``prompt`` (B, T0), the prompt ``generate`` was called with, not repeated for beams, is what
    transformers passes as ``encoder_input_ids``; ``model`` runs the guidance branch. ``attention_mask``
    (B, T0) is read only with ``semantics="5"`` (the repetition penalty skips each row's left padding). Pages:
    docs/processors.md lists every processor with its page.
    """
    c, eos = config, config.eos_token_id
    begin = prompt_len + 1 if prompt_len == 1 and c.forced_bos_token_id is not None else prompt_len
    begin += c.forced_decoder_ids[-1][0] if c.forced_decoder_ids else 0  # 4.38.2: past the forced positions
    steps = [  # (active?, build)
        (c.guidance_scale is not None and c.guidance_scale != 1, lambda: UnbatchedClassifierFreeGuidanceLogitsProcessor(
            c.guidance_scale, _need(model, "model"), negative_prompt_ids, negative_prompt_attention_mask)),
        (c.sequence_bias is not None, lambda: SequenceBiasLogitsProcessor(c.sequence_bias)),
        (c.diversity_penalty is not None and c.diversity_penalty > 0.0, lambda: HammingDiversityLogitsProcessor(
            diversity_penalty=c.diversity_penalty, num_beams=c.num_beams, num_beam_groups=c.num_beam_groups)),
        (c.encoder_repetition_penalty is not None and c.encoder_repetition_penalty != 1.0,
         lambda: EncoderRepetitionPenaltyLogitsProcessor(c.encoder_repetition_penalty, _need(prompt, "prompt"))),
        (c.repetition_penalty is not None and c.repetition_penalty != 1.0,
         lambda: transformers5.repetition_penalty_processor(c.repetition_penalty, attention_mask, max(
             c.num_beams, c.num_return_sequences)) if c.semantics == "5" else RepetitionPenaltyLogitsProcessor(
             c.repetition_penalty)),
        (c.no_repeat_ngram_size is not None and c.no_repeat_ngram_size > 0,
         lambda: NoRepeatNGramLogitsProcessor(c.no_repeat_ngram_size)),
        (c.encoder_no_repeat_ngram_size is not None and c.encoder_no_repeat_ngram_size > 0,
         lambda: EncoderNoRepeatNGramLogitsProcessor(c.encoder_no_repeat_ngram_size, _need(prompt, "prompt"))),
        (c.bad_words_ids is not None, lambda: NoBadWordsLogitsProcessor(c.bad_words_ids, eos)),
        (c.min_length is not None and eos is not None and c.min_length > 0,
         lambda: MinLengthLogitsProcessor(c.min_length, eos)),
        (c.min_new_tokens is not None and eos is not None and c.min_new_tokens > 0,
         lambda: MinNewTokensLengthLogitsProcessor(prompt_len, c.min_new_tokens, eos)),
        (prefix_allowed_tokens_fn is not None, lambda: PrefixConstrainedLogitsProcessor(
            prefix_allowed_tokens_fn, c.num_beams // c.num_beam_groups)),
        (c.forced_bos_token_id is not None, lambda: ForcedBOSTokenLogitsProcessor(c.forced_bos_token_id)),
        (c.forced_eos_token_id is not None,
         lambda: ForcedEOSTokenLogitsProcessor(c.max_length, c.forced_eos_token_id)),
        (c.remove_invalid_values is True, lambda: InfNanRemoveLogitsProcessor()),
        (c.exponential_decay_length_penalty is not None, lambda: ExponentialDecayLengthPenalty(
            c.exponential_decay_length_penalty, _need(eos, "eos_token_id"), prompt_len)),
        (c.suppress_tokens is not None, lambda: SuppressTokensLogitsProcessor(c.suppress_tokens)),
        (c.begin_suppress_tokens is not None,
         lambda: SuppressTokensAtBeginLogitsProcessor(c.begin_suppress_tokens, begin)),
        (c.forced_decoder_ids is not None, lambda: ForceTokensLogitsProcessor(c.forced_decoder_ids)),
    ]
    procs = _merge([build() for active, build in steps if active], custom, "logits processor")
    return LogitsProcessorList(procs + ([LogitNormalization()] if c.renormalize_logits is True else []))


def _need(value: Any, name: str) -> Any:
    """A value a configured processor needs (the prompt, the model, an eos id), else a ValueError naming it."""
    if value is None:
        raise ValueError(f"this generation config needs `{name}` to build its processors, but it is None")
    return value


def _merge(default: list, custom: Any, kind: str) -> list:
    """Built-ins first, then the user's; a user object of a type already built raises (4.38.2)."""
    name = "logits_processor" if kind == "logits processor" else "stopping_criteria"
    if custom is not None and (not isinstance(custom, (list, tuple)) or not all(callable(c) for c in custom)):
        raise ArgumentTypeError(f"`{name}` must be a list of callables (a {kind.title().replace(' ', '')}List) "
                                f"or None, got {describe(custom)}")
    for item in custom or []:
        for built in default:
            if type(item) is type(built):
                raise ValueError(f"A custom {kind} of type {type(item)} has been passed to `generate()`, but it has "
                                 f"already been created from the generation config. Pass the corresponding argument "
                                 f"to `generate()` instead of a custom {kind}.")
    return default + list(custom or [])


# ---- warpers (the sampling modes)


def logits_warpers(config: GenerationConfig) -> LogitsProcessorList:
    """The warpers of 4.38.2's ``_get_logits_warper``, in order:

    temperature -> top-k -> top-p -> min-p (4.41) -> typical -> epsilon -> eta -> LogitNormalization.

    ``min_tokens_to_keep`` is 1, or for beam methods ``len(eos list) + 1`` (2 when eos is an int),
    so that a non-eos continuation always survives. ``top_k=50`` is the default and applies
    whenever sampling (#38549); ``top_k=0`` or None switches it off. See docs/temperature.md,
    docs/top-k.md, docs/top-p.md and docs/entropy-sampling.md.
    """
    c = config
    if c.num_beams > 1:
        keep = len(c.eos_token_id) + 1 if isinstance(c.eos_token_id, list) else 2
    else:
        keep = 1
    steps = [  # (active?, build)
        (c.temperature is not None and c.temperature != 1.0, lambda: TemperatureLogitsWarper(c.temperature)),
        (c.top_k is not None and c.top_k != 0, lambda: TopKLogitsWarper(top_k=c.top_k, min_tokens_to_keep=keep)),
        (c.top_p is not None and c.top_p < 1.0, lambda: TopPLogitsWarper(top_p=c.top_p, min_tokens_to_keep=keep)),
        (c.min_p is not None, lambda: MinPLogitsWarper(min_p=c.min_p, min_tokens_to_keep=keep)),
        (c.typical_p is not None and c.typical_p < 1.0,
         lambda: TypicalLogitsWarper(mass=c.typical_p, min_tokens_to_keep=keep)),
        (c.epsilon_cutoff is not None and 0.0 < c.epsilon_cutoff < 1.0,
         lambda: EpsilonLogitsWarper(epsilon=c.epsilon_cutoff, min_tokens_to_keep=keep)),
        (c.eta_cutoff is not None and 0.0 < c.eta_cutoff < 1.0,
         lambda: EtaLogitsWarper(epsilon=c.eta_cutoff, min_tokens_to_keep=keep)),
        (c.renormalize_logits is True, lambda: LogitNormalization()),
    ]
    return LogitsProcessorList([build() for active, build in steps if active])


# ---- stopping criteria


def stopping_criteria_for(config: GenerationConfig, n_positions: int, custom: Any = None,
                          tokenizer: Any = None) -> StoppingCriteriaList:
    """MaxLength(max_length) (+ MaxTime if ``max_time``, + StopString if ``stop_strings``, as 4.41), then the
    user's criteria (duplicate type raises)."""
    criteria: list = [MaxLengthCriteria(max_length=config.max_length, max_position_embeddings=n_positions)]
    if config.max_time is not None:
        criteria.append(MaxTimeCriteria(max_time=config.max_time))
    if config.stop_strings is not None:
        if tokenizer is None:
            raise ValueError("`stop_strings` needs the model's tokenizer: pass `tokenizer=` to `generate` (as in "
                             "transformers 4.41)")
        criteria.append(StopStringCriteria(tokenizer, config.stop_strings))
    return StoppingCriteriaList(_merge(criteria, custom, "stopping criteria"))
