r"""``generate``: configuration -> processors -> decoding loop -> output, as transformers 4.38.2 for GPT-2.

Contract: ``generate(model, input_ids, attention_mask=None, generation_config=None, ...,
**kwargs)`` where kwargs are :class:`~refdecode.generation_config.GenerationConfig` fields.
Returns the int64 (B*R, T_out) sequences, or with ``return_dict_in_generate=True`` the output
object of the loop (``scores`` with ``output_scores=True``; beam modes add ``sequences_scores``
and ``beam_indices``). It follows the numbered steps of 4.38.2's ``GenerationMixin.generate``
for a decoder-only model (the pipeline post (docs/references.md) lists them), in two halves:

:func:`prepare` resolves the request, once (a :class:`Request`):

1. merge the config: ``generation_config`` (default: the model's) updated with ``kwargs``, validated;
2. ``pad_token_id`` = the (first) eos id when unset, as transformers does for GPT-2;
3. check ``input_ids`` / ``attention_mask``; without a mask, one is inferred only when the pad
   id occurs in the prompt and differs from eos (so with pad = eos the padding is attended);
4. ``max_length`` = prompt length + ``max_new_tokens`` when that is set;
5. the mode (:func:`~refdecode.dispatch.generation_mode`; its row of :data:`~refdecode.dispatch.MODES` says
   what it needs);

:func:`decode` runs it:

6. the processors, the warpers (the modes that draw, with ``do_sample``) and the stopping criteria
   (:mod:`refdecode.pipeline`), handed with the rest in one :class:`~refdecode.dispatch.DecodeRequest` to
   :func:`refdecode.dispatch.run`, which repeats each prompt K times (beams) or R times (sampling with
   num_return_sequences), consecutively, and runs the loop.

A request goes one way: the command line (``cli.py``) -> :func:`prepare` / :func:`decode` -> ``dispatch.run``
-> the loop. The checks are :mod:`refdecode.generation_rules`'s (the door): this module resolves and builds.

refdecode raises a ``ValueError`` naming the argument where transformers would warn and then
crash later: a prompt plus ``max_new_tokens`` longer than ``n_positions``, ids outside the
vocabulary, float ids, a mask of the wrong shape, NaN scores. ``use_cache=False`` is accepted
and changes nothing (the loops always use the cache; results are the same).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .decoding.randomness import make_rng, multinomial, uniform as default_uniform
from .dispatch import MODES, DecodeRequest, Mode, generation_mode, run
from .generation_config import GenerationConfig, model_generation_config
from .generation_rules import (
    check_inputs,
    check_lengths,
    check_memory,
    check_negative_prompt,
    check_trace,
    eos_list,
)
from .model.outputs import OutputRecorder
from .pipeline import logits_processors, logits_warpers, stopping_criteria_for
from .recorder import Recorder
from .validation import ArgumentTypeError, describe, warn

__all__ = ["generate", "prepare", "decode", "Request", "length_warnings"]


# ---- steps 1 to 5: the request, resolved once


@dataclass
class Request:
    """What :func:`prepare` resolved: the checked prompt and mask (int64 (B, T)), the merged config (``max_length``
    resolved), the mode, and the assistant model with the names of the generate keywords (assisted generation)."""

    model: Any
    input_ids: np.ndarray
    attention_mask: np.ndarray
    config: GenerationConfig
    mode: str
    assistant_model: Any = None
    options: tuple[str, ...] = ()

    @property
    def loop(self) -> Mode:
        """The mode's row of :data:`~refdecode.dispatch.MODES`: its loop and what it needs."""
        return MODES[self.mode]


def prepare(model: Any, input_ids: np.ndarray, attention_mask: np.ndarray | None = None,
            generation_config: GenerationConfig | None = None, assistant_model: Any = None,
            **kwargs: Any) -> Request:
    """Steps 1-5 of :func:`generate`: merge the config, check the prompt and the lengths, work out the mode.

    The command line calls it to learn the mode (to stream or not) before :func:`decode`; ``generate`` is the
    two in one call.
    """
    # 1-2) the config, merged once (pad = eos if unset)
    config = _merged_config(model, generation_config, kwargs)
    # 3) the prompt and its mask
    input_ids, attention_mask = check_inputs(model, input_ids, attention_mask)
    if attention_mask is None:
        attention_mask = _default_attention_mask(input_ids, config.pad_token_id,
                                                 eos_list(config.eos_token_id, no_token=True))
    # 4) the lengths
    batch, prompt_len = input_ids.shape
    for message in length_warnings(config, max_length_given=kwargs.get("max_length") is not None):
        warn(message)
    if config.max_new_tokens is not None:
        config.max_length = config.max_new_tokens + prompt_len
    check_lengths(model, config, prompt_len)
    # 5) the mode, worked out once; its row of MODES says how many rows the loop holds
    mode = generation_mode(config, assistant_model)
    check_memory(model, config, MODES[mode].rows_from, batch, prompt_len)
    return Request(model, input_ids, attention_mask, config, mode, assistant_model, tuple(kwargs))


def _default_attention_mask(input_ids: np.ndarray, pad_token_id: int | None, eos: list[int] | None) -> np.ndarray:
    """4.38.2 ``_prepare_attention_mask_for_generation``: (B, T) ``ids != pad`` if pad occurs and is not eos,
    else ones."""
    if pad_token_id is not None and (input_ids == pad_token_id).any() and (eos is None or pad_token_id not in eos):
        return (input_ids != pad_token_id).astype(np.int64)
    return np.ones_like(input_ids, dtype=np.int64)


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
        eos = eos_list(config.eos_token_id, no_token=True)
        config.pad_token_id = eos[0] if eos else None  # "for open-end generation"
    return config


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


# ---- step 6: build the lists, hand one request to dispatch


def decode(request: Request, *, logits_processor: Any = None, stopping_criteria: Any = None, seed: int | None = None,
           rng: np.random.Generator | None = None, draw: Callable[..., np.ndarray] | None = None,
           streamer: Any = None, uniform: Callable[..., np.ndarray] | None = None,
           prefix_allowed_tokens_fn: Callable | None = None, negative_prompt_ids: np.ndarray | None = None,
           negative_prompt_attention_mask: np.ndarray | None = None, tokenizer: Any = None,
           trace: Recorder | None = None) -> Any:
    """Step 6 of :func:`generate` (the keywords are its own): build the processors, warpers and stopping criteria,
    and run the mode's loop on one :class:`~refdecode.dispatch.DecodeRequest`."""
    model, config, mode, input_ids = request.model, request.config, request.loop, request.input_ids
    if draw is not None and not callable(draw):
        raise ArgumentTypeError(f"`draw` must be a callable (probs, num_samples, replacement, rng) -> indices or "
                                f"None, got {describe(draw)}")
    if streamer is not None:
        if config.num_beams > 1:
            raise ValueError("`streamer` cannot be used with beam search (yet!). Make sure that `num_beams` is set "
                             "to 1.")
        streamer.put(input_ids)
    recorder = check_trace(trace, mode.traced)
    recorder.start(request.mode, input_ids, config)
    # 6) the processors, the warpers (a mode that draws, with do_sample) and the stopping criteria, together
    prompt_len = input_ids.shape[1]
    processors = logits_processors(config, prompt_len, logits_processor, prompt=input_ids, model=model,
                                   prefix_allowed_tokens_fn=prefix_allowed_tokens_fn,
                                   negative_prompt_ids=check_negative_prompt(model, negative_prompt_ids),
                                   negative_prompt_attention_mask=negative_prompt_attention_mask,
                                   attention_mask=request.attention_mask)
    warpers = logits_warpers(config) if mode.draws and config.do_sample else None
    criteria = stopping_criteria_for(config, int(model.config.n_positions), stopping_criteria, tokenizer)
    outputs = None if mode.own_outputs else OutputRecorder.for_config(model, config)  # hidden states, attentions
    # ... handed in one request to dispatch, which repeats the rows and runs the mode's loop
    result = run(DecodeRequest(
        request.mode, model if outputs is None else outputs.model_for_loop, input_ids, request.attention_mask,
        config, processors, criteria, recorder, warpers=warpers,
        rng=make_rng(rng, seed) if mode.draws else None, draw=draw or multinomial, uniform=uniform or default_uniform,
        streamer=streamer, assistant_processors=lambda n: logits_processors(config, n, logits_processor),
        assistant_model=request.assistant_model, assistant_kwargs=request.options))
    return result if outputs is None else outputs.attach(result, input_ids.shape[0] * mode.rows(config))


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
    :class:`~refdecode.text.streamers.TextStreamer`, ...) receives the prompt, then every new token (the modes
    whose ``MODES`` row streams: greedy, sample, contrastive and assisted; batch size 1, as transformers). ``assistant_model`` (a smaller model with the same
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
    request = prepare(model, input_ids, attention_mask, generation_config, assistant_model, **kwargs)
    return decode(request, logits_processor=logits_processor, stopping_criteria=stopping_criteria, seed=seed, rng=rng,
                  draw=draw, streamer=streamer, uniform=uniform, prefix_allowed_tokens_fn=prefix_allowed_tokens_fn,
                  negative_prompt_ids=negative_prompt_ids,
                  negative_prompt_attention_mask=negative_prompt_attention_mask, tokenizer=tokenizer, trace=trace)
