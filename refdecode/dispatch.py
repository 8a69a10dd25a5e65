r"""Dispatch: the table of decoding modes, the mode a config selects, and the call of its loop (steps 10-13 of
4.38.2's ``generate``).

Contract: :data:`MODES` is the one table of the modes: for each name, the function that runs its loop and
what the request layer needs to know of it (rows per prompt, a random generator, traced, takes a streamer,
records its own outputs); nothing else maps a mode name to a loop. :func:`generation_mode` names the
algorithm a config selects (transformers' ``_get_generation_mode``); :class:`DecodeRequest` holds everything
``generate`` resolved (the checked prompt and mask, the merged config, the processors, warpers and stopping
criteria of :mod:`refdecode.pipeline`, the random generator, the hooks); :func:`run` looks the mode up in the
table, which expands the rows the mode needs (K beams or R samples per prompt, consecutively), builds the
mode's scorer or candidate generator, and calls the loop. It checks nothing about the inputs and builds no
processor or warper (``generate`` did both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .decoding.assisted_decoding import assisted_decoding
from .decoding.beam.beam_scorer import BeamSearchScorer
from .decoding.beam.beam_search import beam_sample, beam_search
from .decoding.beam.constrained_beam_scorer import ConstrainedBeamSearchScorer
from .decoding.beam.constrained_beam_search import constrained_beam_search
from .decoding.beam.constraints import constraints_from_config
from .decoding.beam.group_beam_search import group_beam_search
from .decoding.candidate_generator import AssistedCandidateGenerator, PromptLookupCandidateGenerator
from .decoding.contrastive_search import contrastive_search
from .decoding.greedy import greedy_search
from .decoding.randomness import multinomial, uniform
from .decoding.sampling import sample
from .decoding.stopping_criteria import StoppingCriteriaList
from .generation_config import GenerationConfig
from .generation_rules import eos_list
from .processors.logits_process import LogitsProcessorList
from .recorder import Recorder
from .validation import warn

__all__ = ["Mode", "MODES", "generation_mode", "DecodeRequest", "run"]


def generation_mode(config: GenerationConfig, assistant_model: Any = None) -> str:
    """The decoding algorithm ``config`` selects, as 4.38.2's ``_get_generation_mode``.

    ``constraints`` or ``force_words_ids`` set: "constrained_beam_search" (whatever the other fields);
    num_beams == 1: "sample" (do_sample), "contrastive_search" (``penalty_alpha > 0`` and ``top_k > 1``) or
    "greedy_search"; num_beams > 1:
    "group_beam_search" (num_beam_groups > 1), else "beam_sample" (do_sample) or "beam_search".
    An ``assistant_model`` or ``prompt_lookup_num_tokens`` turns greedy search and sampling into
    "assisted_generation" (and is refused with beams).

    >>> sampling, beam_sampling = GenerationConfig(do_sample=True), GenerationConfig(num_beams=2, do_sample=True)
    >>> generation_mode(sampling), generation_mode(beam_sampling)
    ('sample', 'beam_sample')
    """
    contrastive = config.top_k is not None and config.top_k > 1 and (config.penalty_alpha or 0) > 0
    if config.constraints is not None or config.force_words_ids is not None:
        mode = "constrained_beam_search"
    elif config.num_beams == 1:
        mode = "sample" if config.do_sample else "contrastive_search" if contrastive else "greedy_search"
    elif config.num_beam_groups > 1:
        mode = "group_beam_search"
    else:
        mode = "beam_sample" if config.do_sample else "beam_search"
    if assistant_model is not None or config.prompt_lookup_num_tokens is not None:
        if mode not in ("greedy_search", "sample"):
            raise ValueError("You've set `assistant_model`, which triggers assisted generate. Currently, assisted "
                             "generate is only supported with Greedy Search and Sample.")
        mode = "assisted_generation"
    return mode


@dataclass
class DecodeRequest:
    """What ``generate`` resolved for one call; the loop of ``mode`` needs nothing else.

    ``input_ids`` / ``attention_mask``: int64 (B, T), the checked prompts, one row per prompt (:func:`run`
    repeats them). ``processors`` / ``criteria`` / ``warpers``: from :mod:`refdecode.pipeline` (warpers: the
    sampling modes only, else None). ``rng``: the generator of the modes that draw (None for the others);
    ``draw`` / ``uniform``: its hooks (multinomial draw, the acceptance uniforms of speculative sampling).
    ``assistant_processors(prompt_len)``: the processors of an assistant model's own pipeline. ``assistant_model``
    / ``assistant_kwargs``: assisted generation only (the generate keywords, to warn about the ones 4.38.2 reads
    elsewhere).
    """

    mode: str
    model: Any
    input_ids: np.ndarray
    attention_mask: np.ndarray
    config: GenerationConfig
    processors: LogitsProcessorList
    criteria: StoppingCriteriaList
    recorder: Recorder
    warpers: LogitsProcessorList | None = None
    rng: np.random.Generator | None = None
    draw: Callable[..., np.ndarray] = multinomial
    uniform: Callable[..., np.ndarray] = uniform
    streamer: Any = None
    assistant_processors: Callable[[int], LogitsProcessorList] | None = None
    assistant_model: Any = None
    assistant_kwargs: tuple[str, ...] = ()

    def loop_arguments(self) -> dict[str, Any]:
        """The keyword arguments every loop takes, with transformers' names (processors, criteria, pad, eos,
        what to return)."""
        c = self.config
        return dict(logits_processor=self.processors, stopping_criteria=self.criteria, pad_token_id=c.pad_token_id,
                    eos_token_id=c.eos_token_id, output_scores=c.output_scores, output_logits=bool(c.output_logits),
                    return_dict_in_generate=c.return_dict_in_generate)

    def repeated(self, times: int) -> tuple[np.ndarray, np.ndarray]:
        """(B, T) prompt and mask -> (B*times, T): each prompt repeated consecutively (``repeat_interleave``)."""
        return np.repeat(self.input_ids, times, axis=0), np.repeat(self.attention_mask, times, axis=0)


# ---- one function per mode


def _greedy(r: DecodeRequest) -> Any:
    return greedy_search(r.model, r.input_ids, attention_mask=r.attention_mask, streamer=r.streamer,
                         recorder=r.recorder, **r.loop_arguments())


def _sample(r: DecodeRequest) -> Any:
    ids, mask = r.repeated(r.config.num_return_sequences)
    return sample(r.model, ids, attention_mask=mask, logits_warper=r.warpers, rng=r.rng, draw=r.draw,
                  streamer=r.streamer, recorder=r.recorder, **r.loop_arguments())


def _contrastive(r: DecodeRequest) -> Any:
    if not r.config.use_cache:
        raise ValueError("Contrastive search requires `use_cache=True`")
    c = r.config
    return contrastive_search(r.model, r.input_ids, top_k=c.top_k, penalty_alpha=c.penalty_alpha,
                              attention_mask=r.attention_mask, streamer=r.streamer,
                              output_hidden_states=c.output_hidden_states, output_attentions=c.output_attentions,
                              recorder=r.recorder, **r.loop_arguments())


def _beam_scorer(r: DecodeRequest, groups: int = 1) -> BeamSearchScorer:
    c = r.config
    return BeamSearchScorer(batch_size=r.input_ids.shape[0], num_beams=c.num_beams, length_penalty=c.length_penalty,
                            do_early_stopping=c.early_stopping, num_beam_hyps_to_keep=c.num_return_sequences,
                            num_beam_groups=groups, max_length=c.max_length)


def _beam_search(r: DecodeRequest) -> Any:
    ids, mask = r.repeated(r.config.num_beams)
    return beam_search(r.model, ids, _beam_scorer(r), attention_mask=mask, recorder=r.recorder,
                       **r.loop_arguments())


def _beam_sample(r: DecodeRequest) -> Any:
    ids, mask = r.repeated(r.config.num_beams)
    return beam_sample(r.model, ids, _beam_scorer(r), logits_warper=r.warpers, attention_mask=mask,
                       rng=r.rng, draw=r.draw, recorder=r.recorder, **r.loop_arguments())


def _group_beam_search(r: DecodeRequest) -> Any:
    ids, mask = r.repeated(r.config.num_beams)
    return group_beam_search(r.model, ids, _beam_scorer(r, r.config.num_beam_groups), attention_mask=mask, recorder=r.recorder,
                             **r.loop_arguments())


def _constrained_beam_search(r: DecodeRequest) -> Any:
    c = r.config
    ids, mask = r.repeated(c.num_beams)
    scorer = ConstrainedBeamSearchScorer(
        batch_size=r.input_ids.shape[0], num_beams=c.num_beams, length_penalty=c.length_penalty,
        constraints=constraints_from_config(c.constraints, c.force_words_ids, int(r.model.config.vocab_size)),
        do_early_stopping=c.early_stopping, num_beam_hyps_to_keep=c.num_return_sequences, max_length=c.max_length)
    return constrained_beam_search(r.model, ids, scorer, attention_mask=mask, recorder=r.recorder,
                                   **r.loop_arguments())


# ---- assisted generation (4.38.2: GenerationMode.ASSISTED_GENERATION)


def _check_assistant(r: DecodeRequest) -> None:
    """The assistant must share the vocabulary and reach max_length; say where 4.38.2 reads its draft length."""
    model, assistant, config = r.model, r.assistant_model, r.config
    for name in ("vocab_size", "n_positions"):
        if not hasattr(getattr(assistant, "config", None), name) or not hasattr(assistant, "new_cache"):
            raise TypeError(f"`assistant_model` has to be a model like the main one (config.vocab_size, "
                            f"config.n_positions, new_cache), but is {type(assistant).__name__}")
    if assistant.config.vocab_size != model.config.vocab_size:
        raise ValueError(f"`assistant_model` has to have the model's vocabulary ({model.config.vocab_size} tokens), "
                         f"but has {assistant.config.vocab_size}")
    if assistant.config.n_positions < config.max_length:
        raise ValueError(f"`assistant_model` has n_positions={assistant.config.n_positions}, less than "
                         f"max_length={config.max_length}")
    ignored = [k for k in ("num_assistant_tokens", "num_assistant_tokens_schedule") if k in r.assistant_kwargs]
    if ignored:
        warn(f"{', '.join(ignored)} given to generate() is not used: transformers 4.38.2 reads it from "
                      "assistant_model.generation_config; set it there")


def _assisted(r: DecodeRequest) -> Any:
    """4.38.2's checks (one prompt, one sequence, a cache), the candidate generator, then the loop."""
    config = r.config
    if config.output_hidden_states or config.output_attentions:
        raise ValueError("`output_hidden_states` / `output_attentions` are not implemented by refdecode for "
                         "assisted generation (transformers splits the verified tokens' states per token)")
    if config.num_return_sequences > 1:
        raise ValueError("num_return_sequences has to be 1 when doing assisted generate, "
                         f"but is {config.num_return_sequences}.")
    if r.input_ids.shape[0] > 1:
        raise ValueError(f"assisted generate is only supported for batch_size = 1, but the batch has "
                         f"{r.input_ids.shape[0]} prompts")
    if not config.use_cache:
        raise ValueError("assisted generate requires `use_cache=True`")
    if config.prompt_lookup_num_tokens is not None:  # it wins over an assistant, as in 4.38.2
        generator: Any = PromptLookupCandidateGenerator(config.prompt_lookup_num_tokens,
                                                        config.max_matching_ngram_size or 2)
    else:
        _check_assistant(r)
        generator = AssistedCandidateGenerator(
            r.assistant_model, r.assistant_processors, r.warpers, config.max_length,
            eos_list(config.eos_token_id, no_token=True), r.attention_mask, r.rng, r.draw)
    return assisted_decoding(r.model, r.input_ids, generator, do_sample=config.do_sample, logits_warper=r.warpers,
                             attention_mask=r.attention_mask, rng=r.rng, draw=r.draw, uniform=r.uniform,
                             streamer=r.streamer, **r.loop_arguments())


# ---- the table of the modes


@dataclass(frozen=True)
class Mode:
    """One decoding mode: the function that runs its loop and what ``generate`` needs to know of it.

    ``rows_from``: the config field that gives the rows each prompt becomes (``num_beams``, which is 1 for the
    one-row modes, or ``num_return_sequences``). ``draws``: takes a random generator (and the warpers, when
    ``do_sample``). ``traced``: a :class:`~refdecode.recorder.Recorder` can watch it. ``streams``: takes a
    streamer (transformers: never with beams). ``own_outputs``: records its own hidden states and attentions
    (contrastive search: the chosen candidate's) or none (assisted generation), so ``generate`` attaches none.
    """

    run: Callable[[DecodeRequest], Any]
    rows_from: str = "num_beams"
    draws: bool = False
    traced: bool = True
    streams: bool = False
    own_outputs: bool = False

    def rows(self, config: GenerationConfig) -> int:
        """Rows per prompt in the loop (K beams, R sampled sequences, or 1)."""
        return int(getattr(config, self.rows_from))


#: mode name -> its loop and properties; the only place a mode name is mapped to a loop
MODES: dict[str, Mode] = {
    "greedy_search": Mode(_greedy, streams=True),
    "sample": Mode(_sample, rows_from="num_return_sequences", draws=True, streams=True),
    "contrastive_search": Mode(_contrastive, streams=True, own_outputs=True),
    "beam_search": Mode(_beam_search),
    "beam_sample": Mode(_beam_sample, draws=True),
    "group_beam_search": Mode(_group_beam_search),
    "constrained_beam_search": Mode(_constrained_beam_search),
    "assisted_generation": Mode(_assisted, draws=True, traced=False, streams=True, own_outputs=True),
}


def run(request: DecodeRequest) -> Any:
    """Run the loop of ``request.mode``: the sequences int64 (B*R, T_out), or the loop's output object."""
    return MODES[request.mode].run(request)
