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
5. the mode (:func:`~refdecode.dispatch.generation_mode`), the processors and the stopping criteria
   (:mod:`refdecode.pipeline`);
6. repeat each prompt K times (beams) or R times (sampling with num_return_sequences),
   consecutively, and run the loop (:mod:`refdecode.dispatch`).

This module checks the request and resolves it (steps 1-4); the pipeline builds, the dispatch runs.

refdecode raises a ``ValueError`` naming the argument where transformers would warn and then
crash later: a prompt plus ``max_new_tokens`` longer than ``n_positions``, ids outside the
vocabulary, float ids, a mask of the wrong shape, NaN scores. ``use_cache=False`` is accepted
and changes nothing (the loops always use the cache; results are the same).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from .decoding.randomness import make_rng, multinomial, uniform as default_uniform
from .dispatch import DecodeRequest, generation_mode, run
from .generation_config import GenerationConfig, model_generation_config
from .model.outputs import OutputRecorder
from .pipeline import logits_processors, stopping_criteria_for
from .recorder import NO_TRACE, Recorder
from .validation import ArgumentTypeError, check_allocation, describe, warn

__all__ = ["generate", "length_warnings"]


# ---- step 3: inputs, warn
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


# ---- steps 1, 2 and 4: the config and the lengths


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
        config.pad_token_id = (eos[0] if eos else None) if isinstance(eos, list) else eos  # "for open-end generation"
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
            if i is not None and i >= vocab:  # negative: no token (transformers' tests' "never stop" -1)
                raise ValueError(f"`{name}` has to be below {vocab} (the vocabulary; negative: no token), but is {i}")
    if config.min_new_tokens is not None and config.min_new_tokens + prompt_len > config.max_length or \
            config.min_length > config.max_length:
        warn("Unfeasible length constraints: the minimum length is larger than `max_length`; generation "
             "will stop at `max_length`.")


def length_warnings(config: GenerationConfig, max_length_given: bool) -> list[str]:
    """``generate``'s length warnings (4.38.2 ``generate`` step 6 and ``_validate_generated_length``).

    ``max_length_given``: ``max_length`` was passed to this ``generate`` call. Warns when the length
    comes from the model-agnostic default ``max_length=20``, and when both ``max_length`` and
    ``max_new_tokens`` are passed (``max_new_tokens`` wins; transformers logs this one).

    >>> length_warnings(GenerationConfig(), max_length_given=False)[0][:50]
    'Using the model-agnostic default `max_length` (=20'
    >>> length_warnings(GenerationConfig(max_new_tokens=5), max_length_given=False)
    []
    """
    messages = []
    if not max_length_given and config.max_new_tokens is None and config.max_length == 20:
        messages.append(f"Using the model-agnostic default `max_length` (={config.max_length}) to control the "
                        "generation length. We recommend setting `max_new_tokens` to control the maximum length of "
                        "the generation.")
    if max_length_given and config.max_new_tokens is not None:
        messages.append(f"Both `max_new_tokens` (={config.max_new_tokens}) and `max_length`(={config.max_length}) "
                        "seem to have been set. `max_new_tokens` will take precedence. Set only one of them.")
    return messages


def _check_trace(trace: Any, mode: str) -> Recorder:
    """``trace=None`` -> nobody watching; a Recorder as is (every mode but assisted generation)."""
    if trace is None:
        return NO_TRACE
    if not isinstance(trace, Recorder):
        raise TypeError(f"`trace` has to be a refdecode.reference.trace.TraceRecorder (or None), but is "
                        f"{type(trace).__name__}")
    if mode == "assisted_generation":
        raise ValueError("`trace` records greedy, sample, contrastive search and the beam modes; assisted generation "
                         "(several tokens per model call) is not traced")
    return trace


# ---- generate


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
    ``uniform`` replaces its acceptance uniforms (:mod:`refdecode.decoding.randomness`).
    ``prefix_allowed_tokens_fn(batch_id, row) -> allowed ids`` restricts every step
    (docs/bad-words-and-forcing.md); ``negative_prompt_ids`` / ``negative_prompt_attention_mask`` (one
    row per generated row) are the unconditional branch of ``guidance_scale`` (docs/guidance.md).
    ``tokenizer`` is needed by ``stop_strings=`` (transformers 4.41's
    :class:`~refdecode.decoding.stopping_criteria.StopStringCriteria`).
    ``trace``, a :class:`~refdecode.reference.trace.TraceRecorder`, records every step (docs/traces.md); None (the
    default) records nothing.

    >>> from refdecode.model.stand_ins import TableModel
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
        warn(message)
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
    recorder = _check_trace(trace, mode)
    recorder.start(mode, input_ids, config)
    processors = logits_processors(config, prompt_len, logits_processor, prompt=input_ids, model=model,
                                   prefix_allowed_tokens_fn=prefix_allowed_tokens_fn,
                                   negative_prompt_ids=_negative_prompt(model, negative_prompt_ids),
                                   negative_prompt_attention_mask=negative_prompt_attention_mask,
                                   attention_mask=attention_mask)
    criteria = stopping_criteria_for(config, int(model.config.n_positions), stopping_criteria, tokenizer)
    if mode == "assisted_generation" and (config.output_hidden_states or config.output_attentions):
        raise ValueError("`output_hidden_states` / `output_attentions` are not implemented by refdecode for "
                         "assisted generation (transformers splits the verified tokens' states per token)")
    outputs = OutputRecorder.for_config(model, config)   # hidden states / attentions, when asked for
    request = DecodeRequest(
        mode, model if mode in ("contrastive_search", "assisted_generation") else outputs.model_for_loop, input_ids,
        attention_mask, config, processors, criteria, recorder,
        rng=make_rng(rng, seed) if mode in ("sample", "beam_sample", "assisted_generation") else None,
        draw=draw or multinomial, uniform=uniform or default_uniform, streamer=streamer,
        custom_processors=logits_processor, assistant_model=assistant_model, assistant_kwargs=tuple(kwargs))
    result = run(request)
    if mode in ("contrastive_search", "assisted_generation"):  # contrastive records its own states (the chosen
        return result                                          # candidate's); assisted records none
    rows = batch * (config.num_return_sequences if mode == "sample" else 1 if mode == "greedy_search"
                    else config.num_beams)
    return outputs.attach(result, rows)
