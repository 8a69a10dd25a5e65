r"""``generate``: configuration -> processors -> decoding loop -> output, as transformers 4.38.2 for GPT-2.

Contract: ``generate(model, input_ids, attention_mask=None, generation_config=None, ...,
**kwargs)`` where kwargs are :class:`~refdecode.generation_config.GenerationConfig` fields.
Returns the int64 (B*R, T_out) sequences, or with ``return_dict_in_generate=True`` the output
object of the loop (``scores`` with ``output_scores=True``; beam modes add ``sequences_scores``
and ``beam_indices``). It follows the numbered steps of 4.38.2's ``GenerationMixin.generate``
for a decoder-only model (the pipeline post (docs/references.md) lists them):

1. merge the config: ``generation_config`` (default: the model's) updated with ``kwargs``, validated;
2. ``pad_token_id`` = the (first) eos id when unset, as transformers does for GPT-2;
3. check ``input_ids`` / ``attention_mask``; without a mask, one is inferred only when the pad
   id occurs in the prompt and differs from eos (so with pad = eos the padding is attended);
4. ``max_length`` = prompt length + ``max_new_tokens`` when that is set;
5. the mode (:func:`~refdecode.generation_config.generation_mode`), the processors
   (:func:`logits_processors`), the warpers (:func:`logits_warpers`), the stopping criteria;
6. repeat each prompt K times (beams) or R times (sampling with num_return_sequences),
   consecutively, and run the loop.

refdecode raises a ``ValueError`` naming the argument where transformers would warn and then
crash later: a prompt plus ``max_new_tokens`` longer than ``n_positions``, ids outside the
vocabulary, float ids, a mask of the wrong shape, NaN scores. ``use_cache=False`` is accepted
and changes nothing (the loops always use the cache; results are the same).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .decoding.assisted_decoding import assisted_decoding
from .decoding.assisted_decoding import uniform as default_uniform
from .decoding.beam.beam_scorer import BeamSearchScorer
from .decoding.beam.beam_search import beam_sample, beam_search
from .decoding.beam.constrained_beam_scorer import ConstrainedBeamSearchScorer
from .decoding.beam.constrained_beam_search import constrained_beam_search
from .decoding.contrastive_search import contrastive_search
from .decoding.loop import make_rng
from .decoding.beam.constraints import constraints_from_config
from .generation_config import GenerationConfig, generation_mode, length_warnings, model_generation_config
from .decoding.greedy import greedy_search
from .decoding.candidate_generator import AssistedCandidateGenerator, PromptLookupCandidateGenerator
from .decoding.beam.group_beam_search import group_beam_search
from .processors.logits_process import (
    HammingDiversityLogitsProcessor,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
)
from .processors.truncation_warpers import EpsilonLogitsWarper, EtaLogitsWarper, MinPLogitsWarper, TypicalLogitsWarper
from .processors.exponential_decay import ExponentialDecayLengthPenalty
from .processors.logits_warp import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
from .model.outputs import OutputRecorder
from .processors.prompt_penalties import (
    EncoderNoRepeatNGramLogitsProcessor,
    EncoderRepetitionPenaltyLogitsProcessor,
    UnbatchedClassifierFreeGuidanceLogitsProcessor,
)
from .decoding.sampling import sample
from .processors.score_cleanup import InfNanRemoveLogitsProcessor, LogitNormalization
from .processors.bad_words_and_forcing import (ForceTokensLogitsProcessor, ForcedBOSTokenLogitsProcessor, ForcedEOSTokenLogitsProcessor, NoBadWordsLogitsProcessor,
                                PrefixConstrainedLogitsProcessor, SequenceBiasLogitsProcessor,
                                SuppressTokensAtBeginLogitsProcessor, SuppressTokensLogitsProcessor)
from .decoding.stopping_criteria import MaxLengthCriteria, MaxTimeCriteria, StoppingCriteriaList, StopStringCriteria
from .reference.trace import NO_TRACE, Recorder
from .validation import ArgumentTypeError, check_allocation, describe

__all__ = ["generate", "logits_processors", "logits_warpers", "stopping_criteria_for"]


# ---- step 3: inputs


def _check_inputs(model: Any, input_ids: Any, attention_mask: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate the prompt: int (B, T) ids in [0, V); mask None or (B, T) of 0/1."""
    if not isinstance(input_ids, np.ndarray) or input_ids.dtype.kind not in "iu":
        kind = getattr(getattr(input_ids, "dtype", None), "name", type(input_ids).__name__)
        raise ValueError(f"`input_ids` has to be an integer numpy array (int64 token ids), but is {kind}")
    if input_ids.ndim != 2 or input_ids.shape[0] < 1 or input_ids.shape[1] < 1:
        raise ValueError(f"`input_ids` has to have shape (batch_size, sequence_length) with both >= 1, "
                         f"but has shape {input_ids.shape}")
    vocab = int(model.config.vocab_size)
    if input_ids.min() < 0 or input_ids.max() >= vocab:
        raise ValueError(f"`input_ids` has to hold token ids in [0, {vocab}) (the vocabulary), but holds values "
                         f"from {int(input_ids.min())} to {int(input_ids.max())}")
    if attention_mask is None:
        return input_ids.astype(np.int64), None
    attention_mask = np.asarray(attention_mask)
    if attention_mask.shape != input_ids.shape:
        raise ValueError(f"`attention_mask` has to have the shape of `input_ids` {input_ids.shape}, "
                         f"but has shape {attention_mask.shape}")
    if attention_mask.dtype.kind not in "iub" or not np.isin(attention_mask, (0, 1)).all():
        raise ValueError(f"`attention_mask` has to hold 0/1 (or bool) values, but has dtype "
                         f"{attention_mask.dtype} and values {np.unique(attention_mask)[:5].tolist()}")
    empty = np.flatnonzero(~attention_mask.astype(bool).any(axis=1))
    if empty.size:  # transformers runs on: the first new token would be computed from padding only
        raise ValueError(f"`attention_mask` has to mark at least one real token (a 1) in every row, but rows "
                         f"{empty[:10].tolist()} are all 0 (a prompt of padding only)")
    return input_ids.astype(np.int64), attention_mask.astype(np.int64)


def _negative_prompt(model: Any, negative_prompt_ids: Any) -> np.ndarray | None:
    """``negative_prompt_ids``: None or int (N, T) token ids of the vocabulary."""
    if negative_prompt_ids is None:
        return None
    ids = np.asarray(negative_prompt_ids)
    vocab = int(model.config.vocab_size)
    if ids.dtype.kind not in "iu" or ids.ndim != 2 or ids.size == 0 or ids.min() < 0 or ids.max() >= vocab:
        raise ValueError(f"`negative_prompt_ids` has to be an integer (rows, length) array of token ids in "
                         f"[0, {vocab}), but has dtype {ids.dtype}, shape {ids.shape}")
    return ids.astype(np.int64)


def _check_memory(model: Any, config: GenerationConfig, mode: str, batch: int, prompt_len: int) -> None:
    """Refuse, before allocating, a request larger than the machine's memory (refdecode.validation).

    Lower bound of what the loop holds at once: ~4 float32 (rows, V) arrays per step (logits, processed
    scores, log-probabilities, candidates), the KV cache (2 x L x rows x max_length x E floats, for a
    model that has one) and, with ``output_scores``/``output_logits``, one (rows, V) array per new token.
    """
    rows = batch * (config.num_beams if mode != "sample" else config.num_return_sequences)
    vocab, steps = int(model.config.vocab_size), config.max_length - prompt_len
    need, parts = 4 * 4 * rows * vocab, [f"{rows} rows x vocabulary {vocab} x 4 float32 arrays per step"]
    n_layer, n_embd = getattr(model.config, "n_layer", None), getattr(model.config, "n_embd", None)
    if n_layer is not None and n_embd is not None:
        need += 2 * 4 * int(n_layer) * rows * config.max_length * int(n_embd)
        parts.append(f"KV cache 2 x {n_layer} layers x {rows} rows x {config.max_length} positions x {n_embd}")
    kept = bool(config.return_dict_in_generate) * (bool(config.output_scores) + bool(config.output_logits))
    if kept:
        need += kept * 4 * rows * vocab * steps
        parts.append(f"{kept} x {steps} steps x {rows} rows x {vocab} kept scores/logits")
    rows_from = "num_beams" if mode != "sample" else "num_return_sequences"
    check_allocation("generate()", need, f"batch {batch} x `{rows_from}`={getattr(config, rows_from)}: "
                     + "; ".join(parts))


def _default_attention_mask(input_ids: np.ndarray, pad_token_id: int | None, eos: list[int] | None) -> np.ndarray:
    """4.38.2 ``_prepare_attention_mask_for_generation``: (B, T) ``ids != pad`` if pad occurs and is not eos,
    else ones."""
    if pad_token_id is not None and (input_ids == pad_token_id).any() and (eos is None or pad_token_id not in eos):
        return (input_ids != pad_token_id).astype(np.int64)
    return np.ones_like(input_ids, dtype=np.int64)


# ---- step 5: processors, warpers, stopping criteria


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
         lambda: RepetitionPenaltyLogitsProcessor(c.repetition_penalty, _padding_lengths(c, attention_mask))),
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


def _padding_lengths(config: GenerationConfig, attention_mask: np.ndarray | None) -> np.ndarray | None:
    """``semantics="5"``: each row's left-padding width, for 5.x's ``prompt_ignore_length``; None for 4.38.2.

    5.23.0 ``generation/utils.py`` ``_get_logits_processor``: ``padding_lengths = (mask !=
    0).int().argmax(dim=1)`` (the first unmasked position; 0 for an all-zero row), on the mask already
    expanded to ``max(num_beams, num_return_sequences)`` rows per prompt, hence the ``np.repeat``.
    """
    if config.semantics != "5" or attention_mask is None:
        return None
    lengths = (np.asarray(attention_mask) != 0).argmax(axis=1).astype(np.int64)  # (B,)
    return np.repeat(lengths, max(config.num_beams, config.num_return_sequences))


def _need(value: Any, name: str) -> Any:
    """A value a configured processor needs (the prompt, the model, an eos id), else a ValueError naming it."""
    if value is None:
        raise ValueError(f"this generation config needs `{name}` to build its processors, but it is None")
    return value


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


# ---- assisted generation (steps 10-12 of 4.38.2's generate for GenerationMode.ASSISTED_GENERATION)


def _check_assistant(model: Any, assistant_model: Any, config: GenerationConfig, kwargs: dict) -> None:
    """The assistant must share the vocabulary and reach max_length; say where 4.38.2 reads its draft length."""
    for name in ("vocab_size", "n_positions"):
        if not hasattr(getattr(assistant_model, "config", None), name) or not hasattr(assistant_model, "new_cache"):
            raise TypeError(f"`assistant_model` has to be a model like the main one (config.vocab_size, "
                            f"config.n_positions, new_cache), but is {type(assistant_model).__name__}")
    if assistant_model.config.vocab_size != model.config.vocab_size:
        raise ValueError(f"`assistant_model` has to have the model's vocabulary ({model.config.vocab_size} tokens), "
                         f"but has {assistant_model.config.vocab_size}")
    if assistant_model.config.n_positions < config.max_length:
        raise ValueError(f"`assistant_model` has n_positions={assistant_model.config.n_positions}, less than "
                         f"max_length={config.max_length}")
    ignored = [k for k in ("num_assistant_tokens", "num_assistant_tokens_schedule") if k in kwargs]
    if ignored:
        warnings.warn(f"{', '.join(ignored)} given to generate() is not used: transformers 4.38.2 reads it from "
                      "assistant_model.generation_config; set it there", UserWarning, stacklevel=3)


def _assisted_generation(model: Any, assistant_model: Any, input_ids: np.ndarray, attention_mask: np.ndarray,
                         config: GenerationConfig, custom_processors: Any, common: dict, rng: Any,
                         draw: Any, uniform: Any, streamer: Any, kwargs: dict) -> Any:
    """4.38.2's checks (one prompt, one sequence, a cache), the candidate generator, then the loop."""
    if config.num_return_sequences > 1:
        raise ValueError("num_return_sequences has to be 1 when doing assisted generate, "
                         f"but is {config.num_return_sequences}.")
    if input_ids.shape[0] > 1:
        raise ValueError(f"assisted generate is only supported for batch_size = 1, but the batch has "
                         f"{input_ids.shape[0]} prompts")
    if not config.use_cache:
        raise ValueError("assisted generate requires `use_cache=True`")
    warpers = logits_warpers(config) if config.do_sample else None
    eos = [config.eos_token_id] if isinstance(config.eos_token_id, int) else config.eos_token_id
    if config.prompt_lookup_num_tokens is not None:  # it wins over an assistant, as in 4.38.2
        generator: Any = PromptLookupCandidateGenerator(config.prompt_lookup_num_tokens,
                                                        config.max_matching_ngram_size or 2)
    else:
        _check_assistant(model, assistant_model, config, kwargs)
        generator = AssistedCandidateGenerator(
            assistant_model, lambda prompt_len: logits_processors(config, prompt_len, custom_processors), warpers,
            config.max_length, eos, attention_mask, rng, draw)
    return assisted_decoding(model, input_ids, generator, do_sample=config.do_sample, logits_warper=warpers,
                             attention_mask=attention_mask, rng=rng, draw=draw, uniform=uniform, streamer=streamer,
                             **common)


# ---- generate


def _merged_config(model: Any, generation_config: GenerationConfig | None, kwargs: dict) -> GenerationConfig:
    """Step 1 and 2: a copy of the config (default: the model's), updated with kwargs, pad = eos if unset."""
    if generation_config is not None and not isinstance(generation_config, GenerationConfig):
        raise ValueError(f"`generation_config` has to be a GenerationConfig, but is {type(generation_config).__name__}")
    config = copy.deepcopy(generation_config if generation_config is not None else model_generation_config(model))
    unused = config.update(**kwargs)
    if unused:
        names = ", ".join(f"`{k}`" for k in unused)
        raise ValueError(f"The following `model_kwargs` are not used by the model: {names} (note: typos in "
                         "the generate arguments will also show up in this list)")
    if config.pad_token_id is None and config.eos_token_id is not None:
        eos = config.eos_token_id
        config.pad_token_id = eos[0] if isinstance(eos, list) else eos  # "for open-end generation"
    return config


def _check_lengths(model: Any, config: GenerationConfig, prompt_len: int) -> None:
    """Step 4 checks: the prompt must be shorter than max_length, and max_length fit in n_positions."""
    if prompt_len >= config.max_length:
        raise ValueError(f"Input length of input_ids is {prompt_len}, but `max_length` is set to {config.max_length}. "
                         "This can lead to unexpected behavior. You should consider increasing `max_length` or, "
                         "better yet, setting `max_new_tokens`.")
    n_positions = int(model.config.n_positions)
    if config.max_length > n_positions:
        name = "max_new_tokens" if config.max_new_tokens is not None else "max_length"
        raise ValueError(f"`{name}` is too large: prompt length {prompt_len} + new tokens "
                         f"{config.max_length - prompt_len} = {config.max_length} exceeds the model's n_positions "
                         f"({n_positions})")
    vocab = int(model.config.vocab_size)
    for name in ("eos_token_id", "pad_token_id"):
        ids = getattr(config, name)
        for i in ids if isinstance(ids, list) else [ids]:
            if i is not None and not 0 <= i < vocab:
                raise ValueError(f"`{name}` has to be in [0, {vocab}) (the vocabulary), but is {i}")
    if config.min_new_tokens is not None and config.min_new_tokens + prompt_len > config.max_length or \
            config.min_length > config.max_length:
        warnings.warn("Unfeasible length constraints: the minimum length is larger than `max_length`; generation "
                      "will stop at `max_length`.", UserWarning, stacklevel=3)


def _check_trace(trace: Any, mode: str) -> Recorder:
    """``trace=None`` -> the no-op recorder; a Recorder as is (not for assisted or constrained decoding)."""
    if trace is None:
        return NO_TRACE
    if not isinstance(trace, Recorder):
        raise TypeError(f"`trace` has to be a refdecode.reference.trace.TraceRecorder (or None), but is {type(trace).__name__}")
    if mode in ("assisted_generation", "constrained_beam_search", "contrastive_search"):
        raise ValueError(f"`trace` records greedy, sample, beam search, beam sample and group beam search; {mode} "
                         "is not traced (yet)")
    return trace


def generate(model: Any, input_ids: np.ndarray, attention_mask: np.ndarray | None = None,
             generation_config: GenerationConfig | None = None, logits_processor: Any = None,
             stopping_criteria: Any = None, seed: int | None = None, rng: np.random.Generator | None = None,
             draw: Callable[..., np.ndarray] | None = None, streamer: Any = None, assistant_model: Any = None,
             uniform: Callable[..., np.ndarray] | None = None, prefix_allowed_tokens_fn: Callable | None = None,
             negative_prompt_ids: np.ndarray | None = None, negative_prompt_attention_mask: np.ndarray | None = None,
             tokenizer: Any = None, trace: Recorder | None = None, **kwargs: Any) -> Any:
    """Generate continuations of ``input_ids`` int64 (B, T) (left-padded, with ``attention_mask`` (B, T)).

    ``kwargs`` are GenerationConfig fields (``max_new_tokens=``, ``num_beams=``, ``do_sample=``, ...).
    ``seed``/``rng`` give the random generator of the sampling modes and ``draw`` replaces the
    multinomial draw (see :mod:`refdecode.decoding.randomness`). ``streamer`` (a
    :class:`~refdecode.text.streamers.TextStreamer`, ...) receives the prompt, then every new token (greedy
    and sample only, batch size 1, as transformers). ``assistant_model`` (a smaller model with the same
    vocabulary) or ``prompt_lookup_num_tokens=`` select assisted decoding (one prompt; greedy or sampling);
    ``uniform`` replaces its acceptance uniforms (:mod:`refdecode.decoding.assisted_decoding`).
    ``prefix_allowed_tokens_fn(batch_id, row) -> allowed ids`` restricts every step
    (docs/bad-words-and-forcing.md); ``negative_prompt_ids`` / ``negative_prompt_attention_mask`` (one
    row per generated row) are the unconditional branch of ``guidance_scale`` (docs/guidance.md).
    ``tokenizer`` is needed by ``stop_strings=`` (transformers 4.41's
    :class:`~refdecode.decoding.stopping_criteria.StopStringCriteria`).
    ``trace``, a :class:`~refdecode.reference.trace.TraceRecorder`, records every step (docs/traces.md); None (the
    default) records nothing.

    >>> from refdecode.testing import TableModel
    >>> model = TableModel(np.log(np.array([[.1, .5, .4], [.1, .1, .8], [.9, .05, .05]], dtype=np.float32)),
    ...                    eos_token_id=0)
    >>> generate(model, np.array([[1], [2]]), max_new_tokens=3)                # greedy; row 1 ends with eos
    array([[1, 2, 0],
           [2, 0, 0]])
    >>> out = generate(model, np.array([[0]]), num_beams=2, max_length=3, length_penalty=0.0,
    ...                return_dict_in_generate=True, output_scores=True)
    >>> out.sequences.tolist(), out.beam_indices.tolist()    # beam rows each step came from, -1 = none
    ([[0, 1, 2]], [[0, 0, -1]])
    """
    config = _merged_config(model, generation_config, kwargs)
    if draw is not None and not callable(draw):
        raise ArgumentTypeError(f"`draw` must be a callable (probs, num_samples, replacement, rng) -> indices or "
                                f"None, got {describe(draw)}")
    eos = [config.eos_token_id] if isinstance(config.eos_token_id, int) else config.eos_token_id
    input_ids, attention_mask = _check_inputs(model, input_ids, attention_mask)
    if attention_mask is None:
        attention_mask = _default_attention_mask(input_ids, config.pad_token_id, eos)
    batch, prompt_len = input_ids.shape
    for message in length_warnings(config, max_length_given=kwargs.get("max_length") is not None):
        warnings.warn(message, UserWarning, stacklevel=2)
    if config.max_new_tokens is not None:
        config.max_length = config.max_new_tokens + prompt_len
    _check_lengths(model, config, prompt_len)
    mode = generation_mode(config, assistant_model)
    _check_memory(model, config, mode, batch, prompt_len)
    if streamer is not None:
        if config.num_beams > 1:
            raise ValueError("`streamer` cannot be used with beam search (yet!). Make sure that `num_beams` is set "
                             "to 1.")
        streamer.put(input_ids)
    trace = _check_trace(trace, mode)
    trace.start(mode, input_ids, config)
    processors = logits_processors(config, prompt_len, logits_processor, prompt=input_ids, model=model,
                                   prefix_allowed_tokens_fn=prefix_allowed_tokens_fn,
                                   negative_prompt_ids=_negative_prompt(model, negative_prompt_ids),
                                   negative_prompt_attention_mask=negative_prompt_attention_mask,
                                   attention_mask=attention_mask)
    criteria = stopping_criteria_for(config, int(model.config.n_positions), stopping_criteria, tokenizer)
    common = dict(logits_processor=processors, stopping_criteria=criteria, pad_token_id=config.pad_token_id,
                  eos_token_id=config.eos_token_id, output_scores=config.output_scores,
                  output_logits=bool(config.output_logits), return_dict_in_generate=config.return_dict_in_generate)
    if mode == "assisted_generation":
        if config.output_hidden_states or config.output_attentions:
            raise ValueError("`output_hidden_states` / `output_attentions` are not implemented by refdecode for "
                             "assisted generation (transformers splits the verified tokens' states per token)")
        return _assisted_generation(model, assistant_model, input_ids, attention_mask, config, logits_processor,
                                    common, make_rng(rng, seed), draw, uniform or default_uniform, streamer, kwargs)
    if mode == "contrastive_search":
        if not config.use_cache:
            raise ValueError("Contrastive search requires `use_cache=True`")
        return contrastive_search(model, input_ids, top_k=config.top_k, penalty_alpha=config.penalty_alpha,
                                  attention_mask=attention_mask, streamer=streamer,
                                  output_hidden_states=config.output_hidden_states,
                                  output_attentions=config.output_attentions, **common)
    recorder = OutputRecorder.for_config(model, config)   # hidden states / attentions, when asked for
    rows = batch * (config.num_return_sequences if mode == "sample" else 1 if mode == "greedy_search"
                    else config.num_beams)
    return recorder.attach(_decode(mode, recorder.model_for_loop, input_ids, attention_mask, config, common,
                                   batch, rng, seed, draw, streamer, trace), rows)


def _decode(mode: str, model: Any, input_ids: np.ndarray, attention_mask: np.ndarray, config: GenerationConfig,
            common: dict, batch: int, rng: Any, seed: Any, draw: Any, streamer: Any, trace: Recorder) -> Any:
    """The loop ``mode`` selects (steps 10-13 of 4.38.2's generate): expand the rows, build its scorer, run it."""
    if mode == "greedy_search":
        return greedy_search(model, input_ids, attention_mask=attention_mask, streamer=streamer, trace=trace, **common)
    if mode == "sample":
        warpers, r = logits_warpers(config), config.num_return_sequences
        return sample(model, np.repeat(input_ids, r, axis=0), attention_mask=np.repeat(attention_mask, r, axis=0),
                      logits_warper=warpers, rng=rng, seed=seed, draw=draw, streamer=streamer, trace=trace, **common)
    ids, mask = np.repeat(input_ids, config.num_beams, axis=0), np.repeat(attention_mask, config.num_beams, axis=0)
    if mode == "constrained_beam_search":
        constrained = ConstrainedBeamSearchScorer(
            batch_size=batch, num_beams=config.num_beams, length_penalty=config.length_penalty,
            constraints=constraints_from_config(config.constraints, config.force_words_ids),
            do_early_stopping=config.early_stopping, num_beam_hyps_to_keep=config.num_return_sequences,
            max_length=config.max_length)
        return constrained_beam_search(model, ids, constrained, attention_mask=mask, **common)
    warpers = logits_warpers(config) if mode == "beam_sample" else None
    scorer = BeamSearchScorer(batch_size=batch, num_beams=config.num_beams, length_penalty=config.length_penalty,
                              do_early_stopping=config.early_stopping,
                              num_beam_hyps_to_keep=config.num_return_sequences,
                              num_beam_groups=config.num_beam_groups if mode == "group_beam_search" else 1,
                              max_length=config.max_length)
    if mode == "beam_search":
        return beam_search(model, ids, scorer, attention_mask=mask, trace=trace, **common)
    if mode == "beam_sample":
        return beam_sample(model, ids, scorer, logits_warper=warpers, attention_mask=mask, rng=rng, seed=seed,
                           draw=draw, trace=trace, **common)
    return group_beam_search(model, ids, scorer, attention_mask=mask, trace=trace, **common)
