"""What the labs teach: each exercise's level, the rules its checker enforces, staged hints, and the
typical wrong answers it recognises.

``_labs.py`` builds the cases and compares answers; this module is the teaching side. For every
exercise (by name):

- ``level``: 1 to 3 stars (★ a direct translation of the page, ★★ an edge case to get right,
  ★★★ a rule people usually get wrong);
- ``rules``: every rule a case checks, as the tutorial states it (``tests/docs/test_labs.py`` checks
  that the tutorial's exercise text is :func:`exercise_markdown`, so a rule cannot be enforced
  without being written down);
- ``hints``: staged, from a nudge to nearly the answer (``hint(name)`` prints the next one);
- ``mistakes``: the typical wrong answers. Each is a message and either a *mimic* (a function
  making that mistake: when your answer equals the mimic's on the failing case, the checker says
  what your answer did) or a *test* ``(expected, yours) -> bool``.

Open exercises (``beams_miss_the_best``, ``stop_on_token``) check your object with a validator whose
messages already say what went wrong; their ``mistakes`` are empty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Mistake:
    message: str                                            # what your answer did, and the rule
    mimic: Callable[..., Any] | None = None                 # the mistake, called like your function
    test: Callable[[Any, Any], bool] | None = None          # or: (expected, yours) -> this mistake?


@dataclass(frozen=True)
class Guide:
    signature: str                                          # how the tutorial names the function
    level: int                                              # 1, 2 or 3 stars
    task: str                                               # what to write (one or two sentences)
    rules: tuple[str, ...]                                  # every rule the cases enforce
    hints: tuple[str, ...]                                  # staged: nudge -> nearly the answer
    mistakes: tuple[Mistake, ...] = field(default=())


# ---- mimics: each makes one typical mistake ---------------------------------------------------------


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def _stable_desc(x: np.ndarray) -> np.ndarray:
    return np.argsort(-x, axis=-1, kind="stable")


def _min_length(input_ids: np.ndarray, scores: np.ndarray, eos: int, banned: bool) -> np.ndarray:
    out = scores.copy()
    if banned:
        out[:, eos] = -np.inf
    return out


def _candidates(total: np.ndarray, n: int, ties_high_first: bool = False, per_beam: bool = False) -> tuple:
    batch, beams, vocab = total.shape
    if per_beam:
        per = n // beams
        order = _stable_desc(total)[:, :, :per]
        scores = np.take_along_axis(total, order, axis=-1).reshape(batch, -1)
        return scores.tolist(), np.repeat(np.arange(beams), per)[None].repeat(batch, 0).tolist(), \
            order.reshape(batch, -1).tolist()
    flat = total.reshape(batch, -1)
    idx = (flat.shape[1] - 1 - _stable_desc(flat[:, ::-1])) if ties_high_first else _stable_desc(flat)
    idx = idx[:, :n]
    return np.take_along_axis(flat, idx, axis=-1).tolist(), (idx // vocab).tolist(), (idx % vocab).tolist()


def _is_done(worst: float, best: float, cur_len: int, alpha: float, early: Any, max_length: int, prompt: int,
             never_like_false: bool = False, true_like_false: bool = False, strict: bool = False,
             with_prompt: bool = False, never_always_max: bool = False) -> bool:
    if early is True and not true_like_false:
        return True
    length = cur_len - (0 if with_prompt else prompt)
    if early == "never" and not never_like_false and (alpha > 0 or never_always_max):
        length = max_length - prompt
    bound = best / length ** alpha
    return bool(worst > bound) if strict else bool(worst >= bound)


def _mode(config: dict, ignore_groups: bool = False, top_k_samples: bool = False) -> str:
    sample = config.get("do_sample", False) or (top_k_samples and "top_k" in config)
    if config.get("num_beams", 1) == 1:
        return "sample" if sample else "greedy_search"
    if config.get("num_beam_groups", 1) > 1 and not ignore_groups:
        return "group_beam_search"
    return "beam_sample" if sample else "beam_search"


def _position_ids(mask: np.ndarray, start: int = 0, pad: int | None = 1, ignore_mask: bool = False) -> np.ndarray:
    mask = np.asarray(mask)
    if ignore_mask:
        return np.broadcast_to(np.arange(mask.shape[1]), mask.shape).copy()
    pos = np.cumsum(mask, axis=-1) - 1 + start
    return pos if pad is None else np.where(mask == 0, pad, pos)


def _rope(x: np.ndarray, position_ids: np.ndarray, theta: float, layout: str = "half", sign: float = 1.0,
          exponent: float = 2.0, ignore_positions: bool = False) -> np.ndarray:
    """RoPE with one thing changed: the pairs' layout, the rotation's direction, the frequencies, the positions."""
    x = np.asarray(x, dtype=np.float32)
    D = x.shape[-1]
    pos = np.asarray(position_ids, dtype=np.float32)
    if ignore_positions:
        pos = np.broadcast_to(np.arange(x.shape[-2], dtype=np.float32), pos.shape)
    inv_freq = (1.0 / np.float32(theta) ** (np.arange(0, D // 2, dtype=np.float32) * np.float32(exponent / D)))
    angle = (pos[..., None] * inv_freq.astype(np.float32))[:, None]                 # (B, 1, T, D/2)
    cos, sin = np.cos(angle), sign * np.sin(angle)
    if layout == "half":
        a, b = x[..., : D // 2], x[..., D // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1).astype(np.float32)
    a, b = x[..., 0::2], x[..., 1::2]                                              # neighbours (2i, 2i + 1)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * cos - b * sin, b * cos + a * sin
    return out


def _sorted_not_unique(expected: Any, got: Any) -> bool:
    try:
        values = [int(v) for v in got]
    except (TypeError, ValueError):
        return False
    return values != list(expected) and sorted(set(values)) == list(expected)


def _short_mode_names(expected: Any, got: Any) -> bool:
    return isinstance(got, str) and got != expected and expected.startswith(got)


def _greedy(table: np.ndarray, start: int, steps: int, column: bool = False, frozen: bool = False) -> list[int]:
    path = [start]
    for _ in range(steps):
        prev = start if frozen else path[-1]
        path.append(int(np.argmax(table[:, prev] if column else table[prev])))
    return path[1:]


def _log_product(table: np.ndarray, tokens: list[int]) -> float:
    with np.errstate(divide="ignore"):
        return float(sum(np.log(table[a, b]) for a, b in zip(tokens[:-1], tokens[1:])))


# ---- the guide -----------------------------------------------------------------------------------------


_TIE = "Among equal probabilities the lower token id comes first"

GUIDES: dict[str, Guide] = {
    "sequence_probability": Guide(
        "sequence_probability(table, tokens)", 1,
        "the probability of `tokens[1:]` following `tokens[0]` under a bigram table, as a float. "
        "Compare: `sequence_prob` above.",
        ("`table[a, b]` is P(b | a): the row is the current token, the column the next one.",
         "The probability of a sequence is the product of its steps' probabilities (not a log).",
         "A step with probability 0 makes the whole sequence 0."),
        ("Walk the pairs (tokens[i], tokens[i + 1]).",
         "Each pair contributes table[a, b]; how do independent steps combine?",
         "float(np.prod([table[a, b] for a, b in zip(tokens[:-1], tokens[1:])]))"),
        (Mistake("you added the step probabilities: a sequence's probability is their product",
                 lambda table, tokens: float(sum(table[a, b] for a, b in zip(tokens[:-1], tokens[1:])))),
         Mistake("you returned log P (a sum of logs): the exercise asks for P itself (np.exp of it)",
                 _log_product),
         Mistake("you read table[b, a]: the rows are the current token, P(b | a) = table[a, b]",
                 lambda table, tokens: float(np.prod([table[b, a] for a, b in zip(tokens[:-1], tokens[1:])]))))),
    "greedy_path": Guide(
        "greedy_path(table, start, steps)", 1,
        "the `steps` token ids greedy search appends to `[start]`, as a list of ints.",
        ("Return only the appended tokens, without `start`.",
         "Each step takes the argmax of the row of the last token; ties go to the lowest id, as `np.argmax`."),
        ("Keep a list that starts at `start` and grows by one token per step.",
         "The next token after t is np.argmax(table[t]).",
         "path = [start]; repeat steps times: path.append(int(np.argmax(table[path[-1]]))); return path[1:]"),
        (Mistake("your list starts with `start`: return only the `steps` appended tokens",
                 lambda table, start, steps: [start] + _greedy(table, start, steps)),
         Mistake("you took the argmax of a column (table[:, t]): the next-token distribution of t is the row table[t]",
                 lambda table, start, steps: _greedy(table, start, steps, column=True)),
         Mistake("every step looked at `start`: feed each chosen token back as the next step's context",
                 lambda table, start, steps: _greedy(table, start, steps, frozen=True)))),
    "beams_miss_the_best": Guide(
        "beams_miss_the_best()", 3,
        "return a tree like `TOY_TREE` (change a few numbers) whose most probable 2-word continuation of "
        "\"The\" is missed by 2 beams and found by 3.",
        ("The best 2-word continuation must be unique (no tie for best).",
         "It must not start with \"car\" (that example is above): find one whose best starts with \"dog\" or \"nice\".",
         "Every row must stay a distribution over TOY_VOCAB words."),
        ("After step 1, 2 beams keep the two most probable first words. Which first word do they drop?",
         "Make the best sequence start with the third most probable first word, and give its second word a "
         "probability high enough to win overall.",
         "Give \"nice\" the lowest first-step probability of the three, and \"nice\" -> one word a probability near 1."),
        ()),
    "position_ids": Guide(
        "position_ids(attention_mask)", 2,
        "the position ids GPT-2 gets for a left-padded batch, int (B, T).",
        ("Real tokens count from 0 at each row's first real token (`cumsum(mask) - 1`).",
         "Pad positions are set to 1, as transformers' generation does (`masked_fill_(mask == 0, 1)`)."),
        ("A left-padded row's first real token is not at column 0.",
         "np.cumsum(attention_mask, axis=-1) counts the real tokens so far.",
         "np.where(mask == 0, 1, np.cumsum(mask, axis=-1) - 1)"),
        (Mistake("you ignored the mask: a left-padded row's first real token has position 0 (cumsum(mask) - 1)",
                 lambda attention_mask: _position_ids(attention_mask, ignore_mask=True)),
         Mistake("your positions start at 1: the first real token has position 0 (cumsum(mask) - 1)",
                 lambda attention_mask: _position_ids(attention_mask, start=1)),
         Mistake("the pad positions are wrong: transformers sets them to 1 (masked_fill_(mask == 0, 1))",
                 lambda attention_mask: _position_ids(attention_mask, pad=None)),
         Mistake("the pad positions are wrong: transformers sets them to 1 (masked_fill_(mask == 0, 1))",
                 lambda attention_mask: _position_ids(attention_mask, pad=0)))),
    "reorder_rows": Guide(
        "reorder_rows(keys, beam_idx)", 1,
        "the keys of one layer, float32 (N, H, S, D), after a beam step (`cache.reorder`).",
        ("New row i continues old row `beam_idx[i]` (a gather: `new[i] = old[beam_idx[i]]`); a row can be "
         "copied twice and another dropped.",),
        ("Try it on the neural-speed article's [2, 1, 1, 0] by hand first.",
         "NumPy's fancy indexing on axis 0 gathers rows.",
         "keys[beam_idx]"),
        (Mistake("you scattered (new[beam_idx[i]] = old[i]): the rule gathers, new[i] = old[beam_idx[i]]",
                 lambda keys, beam_idx: _scatter(keys, beam_idx)),
         Mistake("you returned the keys unchanged: reorder the rows (axis 0) by beam_idx",
                 lambda keys, beam_idx: keys))),
    "rope": Guide(
        "rope(x, position_ids, theta)", 3,
        "RoPE on the queries (or keys) of one layer, float32 (B, H, T, D), at the positions int (B, T), in "
        "transformers' layout ([From GPT-2 to Llama](../docs/from-gpt2-to-llama.md#rope)).",
        ("Pair i (i = 0 ... D/2 - 1) is the entries (i, i + D/2): transformers' `rotate_half` layout, not the "
         "neighbours (2i, 2i + 1) of Meta's and llama2.c's code.",
         "Pair i turns by position * theta ** (-2i / D) radians: `x * cos + rotate_half(x) * sin`, with "
         "`rotate_half(x) = [-x[D/2:], x[:D/2]]` and cos, sin of the D/2 angles written twice.",
         "Each row turns by its own position ids (a left-padded row's first real token is at 0)."),
        ("Try D = 2 first: one pair, (x0, x1) turns by the angle position * 1 radian.",
         "angles = position_ids[..., None] * theta ** (-np.arange(0, D, 2) / D): shape (B, T, D/2); put a head "
         "axis in with [:, None].",
         "cos = np.cos(np.concatenate([angles, angles], -1)); the same for sin; "
         "x * cos + np.concatenate([-x[..., D//2:], x[..., :D//2]], -1) * sin"),
        (Mistake("you rotated neighbours (x[2i], x[2i + 1]), the interleaved layout of Meta's and llama2.c's complex "
                 "form; transformers pairs x[i] with x[i + D/2] (rotate_half), which is why converting Meta's "
                 "weights permutes the rows of q_proj and k_proj",
                 lambda x, position_ids, theta: _rope(x, position_ids, theta, layout="interleaved")),
         Mistake("you rotated the wrong way: x' = x * cos + rotate_half(x) * sin, with rotate_half(x) = "
                 "[-x[D/2:], x[:D/2]] (the second half comes first, negated)",
                 lambda x, position_ids, theta: _rope(x, position_ids, theta, sign=-1.0)),
         Mistake("your frequencies are wrong: pair i turns by theta ** (-2i / D) per position, i = 0 ... D/2 - 1 "
                 "(np.arange(0, D, 2) / D)",
                 lambda x, position_ids, theta: _rope(x, position_ids, theta, exponent=1.0)),
         Mistake("you ignored position_ids: each row turns by its own positions (a left-padded row starts later)",
                 lambda x, position_ids, theta: _rope(x, position_ids, theta, ignore_positions=True)))),
    "repetition_penalty": Guide(
        "repetition_penalty(input_ids, scores, penalty)", 2,
        "`RepetitionPenaltyLogitsProcessor` by hand (input_ids int (N, T), scores float32 (N, V)); return new "
        "scores, do not change `scores`.",
        ("Only tokens that appear in the row's `input_ids` are penalised, each once however often it appears.",
         "A positive score is divided by the penalty, a negative score multiplied by it (both move down for "
         "penalty > 1)."),
        ("What must happen to a *negative* score of a repeated token for it to become less likely?",),
        ()),
    "no_repeat_ngram_banned": Guide(
        "no_repeat_ngram_banned(row, n)", 2,
        "the tokens `NoRepeatNGramLogitsProcessor(n)` bans after the token list `row`.",
        ("A token is banned when the last n - 1 tokens of `row`, followed by it, form an n-gram already in `row`.",
         "With n = 1 every token already in `row` is banned; a row shorter than n bans nothing.",
         "Return a sorted list, each token once."),
        ("List every n-gram of `row` as a tuple.",),
        (Mistake("the right tokens, but return them sorted, each once", test=_sorted_not_unique),)),
    "min_length": Guide(
        "min_length(input_ids, scores, min_length, eos_token_id)", 1,
        "`MinLengthLogitsProcessor` by hand: return new scores.",
        ("eos gets -inf while the length is *less than* `min_length`; at exactly `min_length` it is allowed.",
         "The length is `input_ids.shape[-1]`: it includes the prompt."),
        ("Is a sequence of exactly min_length tokens still too short?",
         "Compare input_ids.shape[-1] with min_length using <.",
         "out = scores.copy(); if input_ids.shape[-1] < min_length: out[:, eos_token_id] = -np.inf"),
        (Mistake("you banned eos at length == min_length: the rule is length < min_length (the prompt counts)",
                 lambda input_ids, scores, min_length, eos_token_id: _min_length(
                     input_ids, scores, eos_token_id, input_ids.shape[-1] <= min_length)),
         Mistake("the condition is reversed: eos is banned while the sequence is shorter than min_length",
                 lambda input_ids, scores, min_length, eos_token_id: _min_length(
                     input_ids, scores, eos_token_id, input_ids.shape[-1] >= min_length)))),
    "temperature_softmax": Guide(
        "temperature_softmax(logits, temperature)", 1,
        "the probabilities after temperature, float32 (N, V).",
        ("softmax(logits / T) over the last axis; a -inf logit gets probability 0.",),
        ("Temperature rescales the logits before the softmax.",
         "Subtract each row's maximum before np.exp for stability.",
         "z = logits / T; e = np.exp(z - z.max(-1, keepdims=True)); e / e.sum(-1, keepdims=True)"),
        (Mistake("you multiplied the logits by T: temperature divides them (logits / T)",
                 lambda logits, temperature: _softmax(logits * np.float32(temperature))),
         Mistake("you ignored the temperature: softmax(logits / T), not softmax(logits)",
                 lambda logits, temperature: _softmax(logits)))),
    "top_k_filter": Guide(
        "top_k_filter(scores, top_k)", 2,
        "`TopKLogitsWarper(top_k)` by hand: -inf for every score below the k-th largest.",
        ("Every score >= the k-th largest stays, so tokens tied with the k-th score are all kept.",
         "`top_k` larger than the vocabulary keeps everything; scores already -inf stay -inf."),
        ("Find the k-th largest score of each row.",),
        ()),
    "llama_top_p": Guide(
        "llama_top_p(probs, p)", 3,
        "top-p the llama way (the top-p article's `sample_top_p`), float32 (N, V). Compare with "
        "`llama_top_p_probs` above.",
        ("Sort the probabilities in descending order; a token is zeroed when the mass of the tokens before it is "
         "greater than `p`, and kept when that mass is <= p (so the token that crosses p is kept).",
         f"{_TIE} (a stable descending sort, `np.argsort(-probs, kind=\"stable\")`), so when a tie straddles "
         "the cut the lower id is kept.",
         "Renormalise the kept probabilities to sum to 1 and return them in vocabulary order."),
        ("The mass *before* a token is cumsum - p_i in sorted order.",),
        ()),
    "hypothesis_score": Guide(
        "hypothesis_score(sum_logprobs, generated_len, length_penalty)", 1,
        "the score `BeamHypotheses.add` gives a finished hypothesis.",
        ("score = sum_logprobs / generated_len ** length_penalty, with `generated_len` the generated tokens "
         "(eos included), not the whole sequence.",),
        ("The length penalty is an exponent.",
         "α = 0 gives the plain sum, α = 1 the mean log-probability.",
         "sum_logprobs / generated_len ** length_penalty"),
        (Mistake("you multiplied the length by α: the length is raised to the power α (ℓ ** α)",
                 lambda sum_logprobs, generated_len, length_penalty:
                     sum_logprobs / (generated_len * length_penalty) if length_penalty else sum_logprobs),
         Mistake("you divided by the length without the exponent α",
                 lambda sum_logprobs, generated_len, length_penalty: sum_logprobs / generated_len),
         Mistake("you added 1 to the length: generated_len already counts the eos",
                 lambda sum_logprobs, generated_len, length_penalty:
                     sum_logprobs / (generated_len + 1) ** length_penalty))),
    "is_done": Guide(
        "is_done(worst_score, best_sum_logprobs, cur_len, length_penalty, early_stopping, max_length, "
        "decoder_prompt_len)", 3,
        "`BeamHypotheses.is_done` for a pool that is already full (the worst hypothesis scores `worst_score`); "
        "a bool.",
        ("`early_stopping=True`: done as soon as the pool is full, whatever the scores.",
         "`False`: done when worst_score >= best_sum_logprobs / (cur_len - decoder_prompt_len) ** length_penalty "
         "(done on equality).",
         "`\"never\"`: the same with the largest reachable length, max_length - decoder_prompt_len, when "
         "length_penalty > 0; for length_penalty <= 0 it uses the current length like False."),
        ("Three modes, three rules: start with True.",
         "For \"never\", which length gives a running beam its best possible score when α > 0? When α <= 0?",
         "length = cur_len - decoder_prompt_len, or max_length - decoder_prompt_len for \"never\" with α > 0; "
         "return worst_score >= best_sum_logprobs / length ** length_penalty"),
        (Mistake("early_stopping=\"never\" used the current length: for α > 0 it divides by the largest reachable "
                 "length, max_length - decoder_prompt_len",
                 lambda **kw: _is_done(*_is_done_args(kw), never_like_false=True)),
         Mistake("early_stopping=True means done as soon as the pool is full, whatever the scores",
                 lambda **kw: _is_done(*_is_done_args(kw), true_like_false=True)),
         Mistake("on equality the rule says done: worst_score >= best / length ** α, not >",
                 lambda **kw: _is_done(*_is_done_args(kw), strict=True)),
         Mistake("you divided by cur_len with the prompt: the length is cur_len - decoder_prompt_len",
                 lambda **kw: _is_done(*_is_done_args(kw), with_prompt=True)),
         Mistake("for α <= 0, \"never\" uses the current length like False (a longer beam can only score lower)",
                 lambda **kw: _is_done(*_is_done_args(kw), never_always_max=True)))),
    "hamming_penalty": Guide(
        "hamming_penalty(scores, previous_tokens, diversity_penalty)", 2,
        "the Hamming diversity penalty for the rows of one group (float32 (group size, V)), given the tokens the "
        "earlier groups chose at this step (`previous_tokens`, int (n,)).",
        ("Subtract diversity_penalty once per time an earlier group chose the token: a token chosen twice is "
         "penalised twice.",
         "Every row of the group gets the same penalty; the first group (nothing before it) is unchanged."),
        ("Count how often each token appears in previous_tokens.",
         "np.bincount(previous_tokens, minlength=V).",
         "scores - diversity_penalty * np.bincount(previous_tokens, minlength=scores.shape[-1])"),
        (Mistake("a token two earlier beams chose was penalised once: subtract the penalty once per choice",
                 lambda scores, previous_tokens, diversity_penalty:
                     scores - np.float32(diversity_penalty) * np.isin(
                         np.arange(scores.shape[-1]), previous_tokens).astype(np.float32)),
         Mistake("you added the penalty: a diversity penalty is subtracted",
                 lambda scores, previous_tokens, diversity_penalty:
                     scores + np.float32(diversity_penalty) * np.bincount(
                         np.asarray(previous_tokens, dtype=np.int64), minlength=scores.shape[-1]).astype(np.float32)))),
    "top_candidates": Guide(
        "top_candidates(total, n)", 2,
        "the `n` best candidates of each prompt from the beams' total scores float32 (B, K, V): scores, beam "
        "and token, each (B, n), best first.",
        ("All K*V candidates of a prompt compete together (at step 1 of beam search every one comes from beam 0).",
         "Ties go to the lower `beam * V + token` first."),
        ("Flatten each prompt's (K, V) scores to K*V.",
         "A stable descending argsort of total.reshape(B, -1) gives the order, flat // V the beam, flat % V the token.",
         "flat = total.reshape(B, -1); idx = np.argsort(-flat, -1, kind='stable')[:, :n]; "
         "return take(flat, idx), idx // V, idx % V"),
        (Mistake("you took the best of each beam: all K*V candidates of a prompt compete together "
                 "(reshape to (B, K*V))",
                 lambda total, n: _candidates(total, n, per_beam=True)),
         Mistake("tied candidates are in the wrong order: ties go to the lower beam * V + token first",
                 lambda total, n: _candidates(total, n, ties_high_first=True)))),
    "generation_mode": Guide(
        "generation_mode(config)", 1,
        "which loop `generate()` runs for a dict of GenerationConfig fields (`{\"num_beams\": 4, \"do_sample\": "
        "True}` -> `\"beam_sample\"`).",
        ("Answer with transformers' mode names: \"greedy_search\", \"sample\", \"beam_search\", \"beam_sample\", "
         "\"group_beam_search\".",
         "Only `do_sample=True` samples: `top_k` alone changes nothing (it only warns).",
         "num_beams > 1 with num_beam_groups > 1 is \"group_beam_search\"."),
        ("Start from num_beams: one beam or several?",
         "Then num_beam_groups, then do_sample.",
         "num_beams == 1: sample/greedy_search by do_sample; else num_beam_groups > 1: group_beam_search; "
         "else beam_sample/beam_search by do_sample"),
        (Mistake("you ignored num_beam_groups: more than one group is \"group_beam_search\"",
                 lambda config: _mode(config, ignore_groups=True)),
         Mistake("you treated top_k as sampling: only do_sample=True samples (top_k alone only warns)",
                 lambda config: _mode(config, top_k_samples=True)),
         Mistake("use transformers' mode names: \"greedy_search\", \"sample\", \"beam_search\", \"beam_sample\", "
                 "\"group_beam_search\"", test=_short_mode_names))),
    "stop_on_token": Guide(
        "stop_on_token", 2,
        "a `StoppingCriteria` subclass, built as `stop_on_token(token_id)`. The checker passes it to `generate` "
        "(`stopping_criteria=[...]`) and compares with a model whose eos is that token.",
        ("Stop once the **last** token of every row (`input_ids[:, -1]`) is `token_id`; return a bool.",),
        ("Subclass StoppingCriteria and store token_id in __init__.",
         "__call__(self, input_ids, scores, **kwargs) sees the whole sequence so far.",
         "return bool((input_ids[:, -1] == self.token_id).all())"),
        ()),
}



def _with_graded() -> None:
    """The graded exercises' later hints and mimics (``_graded_guide.py``), when that file is there: the course's
    students' copy leaves it out (tools/course/student_copy.py), since they nearly solve problem 1."""
    try:
        import _graded_guide
    except ImportError:
        return
    for name, hints in _graded_guide.HINTS.items():
        g = GUIDES[name]
        mimics = tuple(Mistake(message, mimic) for message, mimic in _graded_guide.MISTAKES[name])
        GUIDES[name] = replace(g, hints=g.hints + hints, mistakes=mimics + g.mistakes)


_with_graded()

def _scatter(keys: np.ndarray, beam_idx: np.ndarray) -> np.ndarray:
    out = np.zeros_like(keys)
    out[np.asarray(beam_idx)] = keys
    return out


def _is_done_args(kw: dict[str, Any]) -> tuple:
    return (kw["worst_score"], kw["best_sum_logprobs"], kw["cur_len"], kw["length_penalty"], kw["early_stopping"],
            kw["max_length"], kw["decoder_prompt_len"])


def stars(level: int) -> str:
    return "★" * level


def exercise_markdown(name: str, number: int) -> str:
    """The exercise as the tutorial states it: signature, stars, task and every rule the checker enforces."""
    g = GUIDES[name]
    lines = [f"{number}. **`{g.signature}`** {stars(g.level)}: {g.task}"]
    lines += [f"   - {rule}" for rule in g.rules]
    return "\n".join(lines)
