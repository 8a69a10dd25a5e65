r"""Candidate generators: propose the next few tokens cheaply, for the model to check in one forward pass.

Contract (transformers 4.38.2, ``generation/candidate_generator.py``): a generator has
``get_candidates(input_ids (1, S)) -> (candidate_ids (1, S + c) int64, candidate_scores)``, where
``candidate_scores`` is the float32 (1, c, V) of the scores the drafter chose from (None when there are
none), and ``update_candidate_strategy(input_ids, scores, num_matches)``, called after the model has
accepted ``num_matches`` of the c candidates. It knows nothing about how candidates are accepted:
that is :mod:`refdecode.decoding.assisted_decoding`. Batch size 1 only, as in transformers.

Two generators:

- :class:`PromptLookupCandidateGenerator` (``prompt_lookup_num_tokens=``): find the last n-gram of the
  sequence earlier in the sequence and propose what followed it there (:func:`prompt_lookup`). No model.
- :class:`AssistedCandidateGenerator` (``assistant_model=``): a smaller model with the same vocabulary
  decodes ``num_assistant_tokens`` tokens with the same processors (and warpers, when sampling) on its
  own KV cache (:func:`draft`). After each round the number of tokens to draft follows
  ``num_assistant_tokens_schedule``: ``"heuristic"`` +2 when every candidate was accepted, else -1
  (at least 1); ``"constant"`` never changes it.

Docs: docs/speculative-decoding.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .loop import check_no_nan
from ..generation_config import model_generation_config
from ..numerics import softmax

__all__ = ["PromptLookupCandidateGenerator", "AssistedCandidateGenerator", "prompt_lookup", "draft", "extend_mask"]


def extend_mask(attention_mask: np.ndarray | None, length: int) -> np.ndarray | None:
    """(1, S0) prompt mask -> (1, length): the prompt's columns, then ones (transformers' ``_prepare_attention_mask``).

    >>> extend_mask(np.array([[0, 1]]), 4).tolist()
    [[0, 1, 1, 1]]
    """
    if attention_mask is None:
        return None
    extra = length - attention_mask.shape[1]
    if extra <= 0:
        return attention_mask[:, :length]
    return np.concatenate([attention_mask, np.ones((attention_mask.shape[0], extra), dtype=attention_mask.dtype)], 1)


# ---- prompt lookup


def prompt_lookup(ids: np.ndarray, num_output_tokens: int, max_matching_ngram_size: int) -> np.ndarray:
    """The tokens that followed the **first earlier occurrence** of the sequence's last n-gram; int64 (c,).

    n goes from ``min(max_matching_ngram_size, S - 1)`` down to 1; for each n, the windows of ``ids``
    equal to its last n tokens are scanned from the left, and the first one with at least one token after
    it gives up to ``num_output_tokens`` of those tokens (the last window, the n-gram itself, has none).
    No match for any n: ``[0]``, one dummy candidate (transformers 4.38.2 proposes token 0 rather than none;
    the model still checks it, so the result is the same as plain decoding).

    Args:
        ids: int (S,), one sequence (prompt and tokens generated so far).
        num_output_tokens: at most this many candidates (``prompt_lookup_num_tokens``).
        max_matching_ngram_size: the longest n-gram tried.

    >>> ids = np.array([5, 6, 7, 8, 9, 5, 6])             # the last bigram (5, 6) occurred at position 0
    >>> prompt_lookup(ids, 3, 2).tolist()
    [7, 8, 9]
    >>> prompt_lookup(np.array([1, 2, 3]), 3, 2).tolist() # 3 never occurred before: the dummy candidate
    [0]
    """
    S = ids.shape[0]
    for n in range(min(max_matching_ngram_size, S - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids, n)  # (S - n + 1, n)
        for start in np.flatnonzero((windows == ids[S - n :]).all(axis=1)) + n:  # first token after each match
            end = min(start + num_output_tokens, S)
            if start < end:
                return ids[start:end].astype(np.int64)
    return np.zeros(1, dtype=np.int64)


class PromptLookupCandidateGenerator:
    """Candidates copied from earlier in the sequence (`prompt lookup decoding
    <https://github.com/apoorvumang/prompt-lookup-decoding>`_), as transformers 4.38.2.

    Args:
        num_output_tokens: candidates per round, >= 1 (``prompt_lookup_num_tokens``).
        max_matching_ngram_size: longest n-gram matched, >= 1 (4.38.2 always uses 2; later versions
            expose it as ``max_matching_ngram_size``).

    >>> gen = PromptLookupCandidateGenerator(num_output_tokens=2)
    >>> candidate_ids, candidate_scores = gen.get_candidates(np.array([[4, 1, 2, 3, 4, 1]]))
    >>> candidate_ids.tolist(), candidate_scores
    ([[4, 1, 2, 3, 4, 1, 2, 3]], None)
    """

    def __init__(self, num_output_tokens: int = 10, max_matching_ngram_size: int = 2) -> None:
        for name, value in (("num_output_tokens", num_output_tokens),
                            ("max_matching_ngram_size", max_matching_ngram_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"`{name}` has to be an integer >= 1, but is {value!r}")
        self.num_output_tokens = int(num_output_tokens)
        self.max_matching_ngram_size = int(max_matching_ngram_size)

    def get_candidates(self, input_ids: np.ndarray) -> tuple[np.ndarray, None]:
        """(1, S) -> (1, S + c) with c in [1, num_output_tokens], and no scores."""
        chosen = prompt_lookup(input_ids[0], self.num_output_tokens, self.max_matching_ngram_size)  # (c,)
        return np.concatenate([input_ids, chosen[None, :]], axis=1), None

    def update_candidate_strategy(self, input_ids: np.ndarray, scores: np.ndarray, num_matches: int) -> None:
        """Nothing to adapt (as transformers 4.38.2)."""


# ---- assistant model


def draft(assistant: Any, input_ids: np.ndarray, attention_mask: np.ndarray | None, cache: Any,
          max_new_tokens: int, logits_processor: Any, logits_warper: Any, eos: list[int] | None,
          rng: np.random.Generator | None, draw: Callable[..., np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """The assistant decodes up to ``max_new_tokens`` tokens after ``input_ids`` (1, S): its ``generate``.

    The tokens of ``input_ids`` not yet in ``cache`` go through the assistant first (the whole prompt in
    the first round, the last two tokens after that, see :meth:`AssistedCandidateGenerator.get_candidates`),
    then one token per step. Greedy (``logits_warper`` None: argmax) or sampling (processors, warpers,
    ``draw`` from the softmax with ``rng``), stopping early after an eos token. The cache ends one token
    short of the result: the last drafted token was never fed to the assistant.

    Returns:
        candidate_ids int64 (1, S + c), c in [1, max_new_tokens]; candidate_scores float32 (1, c, V), the
        processed (and warped) scores each token was chosen from.
    """
    ids, scores = input_ids, []
    mask = extend_mask(attention_mask, ids.shape[1])
    logits = assistant(ids[:, cache.length :], attention_mask=mask, past_key_values=cache, logits_to_keep=1).logits
    for step in range(max_new_tokens):
        next_scores = logits_processor(ids, logits[:, -1])  # (1, V)
        if logits_warper is not None:
            next_scores = logits_warper(ids, next_scores)
        check_no_nan(next_scores, ids.shape[1], assistant, logits[:, -1])
        if logits_warper is None:
            token = np.argmax(next_scores, axis=-1).astype(np.int64)  # (1,)
        else:
            token = draw(softmax(next_scores), 1, False, rng)[:, 0].astype(np.int64)  # (1,)
        ids, scores = np.concatenate([ids, token[:, None]], axis=1), scores + [next_scores]  # (1, S+1)
        if (eos is not None and int(token[0]) in eos) or step == max_new_tokens - 1:
            break
        mask = extend_mask(attention_mask, ids.shape[1])
        logits = assistant(token[:, None], attention_mask=mask, past_key_values=cache, logits_to_keep=1).logits
    return ids, np.stack(scores, axis=1)  # (1, S + c), (1, c, V)


class AssistedCandidateGenerator:
    """Candidates drafted by ``assistant_model``, as transformers 4.38.2 (speculative decoding).

    ``num_assistant_tokens`` and ``num_assistant_tokens_schedule`` are read from the **assistant's**
    generation config, as 4.38.2 does (values given to ``generate`` for the main model are not used).
    With the "heuristic" schedule the final count is written back to
    ``assistant_model.generation_config`` by :meth:`keep_num_assistant_tokens`, so the next call starts
    from it ("heuristic_transient" does not keep it).

    Args:
        assistant_model: a model with the main model's vocabulary (``model(ids, attention_mask=,
            past_key_values=, logits_to_keep=)``, ``new_cache``, ``config``).
        logits_processor_for: prompt length -> the processors of the assistant's own ``generate`` call
            (they count ``min_new_tokens`` from the start of each round, as the assistant's call does).
        logits_warper: the warpers when sampling, None for greedy.
        max_length: the main loop's max_length (prompt included).
        eos_token_id: list of eos ids or None.
        attention_mask: int (1, S0) mask of the prompt, or None.
        rng, draw: the generator and draw function the assistant samples with.
    """

    def __init__(self, assistant_model: Any, logits_processor_for: Callable[[int], Any], logits_warper: Any,
                 max_length: int, eos_token_id: list[int] | None, attention_mask: np.ndarray | None,
                 rng: np.random.Generator | None = None, draw: Callable[..., np.ndarray] | None = None) -> None:
        self.assistant_model = assistant_model
        config = model_generation_config(assistant_model)
        self.num_assistant_tokens = int(config.num_assistant_tokens)
        self.schedule = config.num_assistant_tokens_schedule
        self.logits_processor_for, self.logits_warper = logits_processor_for, logits_warper
        self.max_length, self.eos, self.attention_mask = max_length, eos_token_id, attention_mask
        self.rng, self.draw = rng, draw
        self.cache: Any = None  # the assistant's KV cache, created by the first round

    def get_candidates(self, input_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(1, S) -> (1, S + c) and the assistant's scores (1, c, V); c = 0 (and None) when only one token is left."""
        S = input_ids.shape[1]
        max_new_tokens = min(self.num_assistant_tokens, self.max_length - S - 1)  # the model adds one token itself
        if max_new_tokens <= 0:
            return input_ids, None
        if self.cache is None:
            self.cache = self.assistant_model.new_cache(1, self.max_length)
        else:
            # transformers crops to S - 2, one token fewer than needed: the assistant re-reads the last two tokens
            self.cache.crop(min(S - 2, self.cache.length))
        return draft(self.assistant_model, input_ids, self.attention_mask, self.cache, max_new_tokens,
                     self.logits_processor_for(S), self.logits_warper, self.eos, self.rng, self.draw)

    def update_candidate_strategy(self, input_ids: np.ndarray, scores: np.ndarray, num_matches: int) -> None:
        """Schedule "heuristic" (or "heuristic_transient"): all candidates accepted -> +2, else -1 (>= 1)."""
        if self.schedule in ("heuristic", "heuristic_transient"):
            if num_matches == self.num_assistant_tokens:
                self.num_assistant_tokens += 2
            else:
                self.num_assistant_tokens = max(1, self.num_assistant_tokens - 1)

    def keep_num_assistant_tokens(self) -> None:
        """End of generation, schedule "heuristic": store the count in the assistant's generation config."""
        config = getattr(self.assistant_model, "generation_config", None)
        if self.schedule == "heuristic" and config is not None:
            config.num_assistant_tokens = self.num_assistant_tokens
