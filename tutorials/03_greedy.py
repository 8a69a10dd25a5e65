# %% [markdown]
# # 03 · Greedy search, its repetition loops, and logits processors
#
# Tutorial 02 computed one next-token distribution. Greedy search repeats "take the argmax, append
# it, run the model on it" until a stopping rule fires. refdecode's `greedy_search` is that loop,
# with the KV cache and transformers 4.38.2's bookkeeping (eos, padding, stopping criteria).
#
# New here: the loop itself, why greedy text loops, and **logits processors** -- functions
# `(input_ids, scores) -> new scores` applied before the argmax: `MinLengthLogitsProcessor`,
# `RepetitionPenaltyLogitsProcessor`, `NoRepeatNGramLogitsProcessor`, and one we write ourselves.
# The last section ports the greedy quick start of the 4.26 walkthrough (section 2.2).

# %%
import numpy as np
from _common import load, show

from refdecode import (
    LogitsProcessor,
    LogitsProcessorList,
    MaxLengthCriteria,
    MinLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    StoppingCriteriaList,
    greedy_search,
)

model, tokenizer = load()
EOS = model.config.eos_token_id                       # 50256 "<|endoftext|>"; GPT-2 has no pad token,
PAD = EOS                                             # so pad = eos, as in transformers' examples
prompt = tokenizer.encode("ROMEO:\nI")[None, :]       # int64 (1, T)
T, N_NEW = prompt.shape[1], 60                       # prompt length, new tokens per run
print(prompt.tolist())                                # -> [[33676, 4720, 25, 198, 40]]

# %% [markdown]
# ## 1. Greedy search
#
# `max_length` counts the prompt. The result is the prompt followed by the new tokens.

# %%
greedy = greedy_search(model, prompt, max_length=T + N_NEW, pad_token_id=PAD, eos_token_id=EOS)   # (1, T + N_NEW)
print(greedy.shape, show(tokenizer, greedy[0]))
# -> (1, 65) "ROMEO:\nI'll not be so.\n\nCOUNTESS:\nI'll not, my lord.\n\nCOUNTESS:\nI'll not, my lord. ..."
assert greedy.shape[1] <= T + N_NEW and np.array_equal(greedy[:, :T], prompt)

# %% [markdown]
# ### Show your work: the same loop written out, without a cache
#
# Run the full sequence through the model every step and take the argmax of the last position.
# Slow, but obviously right -- and it must give the same tokens as `greedy_search`.

# %%
seq = prompt
while seq.shape[1] < greedy.shape[1]:
    logits = model(seq, logits_to_keep=1).logits[:, -1]          # (1, V)
    seq = np.concatenate([seq, np.argmax(logits, axis=-1)[:, None]], axis=1)
assert np.array_equal(seq, greedy)

# %% [markdown]
# ## 2. Greedy text loops  `# NEW`
#
# Once greedy has produced a phrase, the phrase makes itself more likely, and the loop closes
# (the 4.26 walkthrough: "the model, after a repeated token, is likely to fall into a loop"). Find the
# shortest period p with which the generated tail repeats.

# %% [markdown]
# ![The step where greedy repeats itself, before and after a no-repeat-2-gram ban](../docs/img/no-repeat-ngram.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/no-repeat-ngram.svg`).*

# %%
def tail_period(tokens, min_repeats=2):
    """The smallest p such that the last p tokens occur min_repeats times in a row at the end, else None."""
    tokens = list(tokens)
    for p in range(1, len(tokens) // min_repeats + 1):
        if all(tokens[-i] == tokens[-i - p] for i in range(1, p * (min_repeats - 1) + 1)):
            return p
    return None


new = greedy[0, T:]
p = tail_period(new)
print("loop period:", p, "->", repr(tokenizer.decode(new[-p:])) if p else "no loop")
# -> loop period: 14 -> ".\n\nCOUNTESS:\nI'll not, my lord"      (gpt2-tiny, random: 1 -> ' laborers')

# %% [markdown]
# ## 3. Logits processors: MinLength, and a processor of our own  `# NEW`
#
# A processor is any object with `__call__(input_ids, scores, **kwargs) -> new scores` (float32
# (B, V); it must not modify `scores`). To *see* MinLength work we need a model that wants to stop,
# so we write a processor that makes eos the best token at every step.
#
# `MinLengthLogitsProcessor(min_length, eos)` sets the eos score to -inf while the sequence
# (prompt included) is shorter than `min_length`. So at least `min_length` tokens come before
# eos: the earliest eos is token number `min_length + 1`. Order matters: MinLength runs first, and
# -inf + 100 is still -inf.

# %%
class PreferEos(LogitsProcessor):
    """Add `bonus` to the eos score: a model that always wants to stop."""

    def __init__(self, eos_token_id, bonus=100.0):
        self.eos_token_id, self.bonus = eos_token_id, bonus

    def __call__(self, input_ids, scores, **kwargs):
        out = scores.copy()                           # never modify the input
        out[:, self.eos_token_id] += np.float32(self.bonus)
        return out


stops_at_once = greedy_search(model, prompt, logits_processor=LogitsProcessorList([PreferEos(EOS)]),
                              max_length=T + N_NEW, pad_token_id=PAD, eos_token_id=EOS)
print(stops_at_once[0, T:].tolist())                  # -> [50256]
min_length = T + 6
held_back = greedy_search(model, prompt, max_length=T + N_NEW, pad_token_id=PAD, eos_token_id=EOS,
                          logits_processor=LogitsProcessorList([MinLengthLogitsProcessor(min_length, EOS),
                                                                PreferEos(EOS)]))
print(held_back.shape[1], held_back[0, -1])           # -> 12 50256: 11 tokens (min_length), then eos
assert stops_at_once.shape[1] == T + 1 and stops_at_once[0, -1] == EOS
assert held_back.shape[1] == min_length + 1 and held_back[0, -1] == EOS and EOS not in held_back[0, T:-1]

# %% [markdown]
# ## 4. Repetition penalty  `# NEW`
#
# CTRL's penalty (arXiv:1909.05858): for every token already in the sequence (prompt included),
# a positive score is divided by θ and a negative one multiplied by θ -- both push it down.
# Check it against that rule written out by hand, on the first step's logits.

# %% [markdown]
# ![One step before and after repetition penalty 1.3](../docs/img/repetition-penalty.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/repetition-penalty.svg`).*

# %%
theta = 1.2
logits = model(prompt).logits[:, -1]                  # (1, V) raw scores of the first step
penalised = RepetitionPenaltyLogitsProcessor(theta)(prompt, logits)
by_hand = logits.copy()
for v in set(prompt[0].tolist()):
    s = float(logits[0, v])
    by_hand[0, v] = s * theta if s < 0 else s / theta
changed = np.flatnonzero(penalised[0] != logits[0])
print(sorted(changed.tolist()) == sorted(set(prompt[0].tolist())))   # -> True (if no prompt token scores 0)
assert np.allclose(penalised, by_hand, rtol=1e-6, atol=0)
assert np.array_equal(logits, model(prompt).logits[:, -1])            # the input was not modified

with_penalty = greedy_search(model, prompt, max_length=T + N_NEW, pad_token_id=PAD, eos_token_id=EOS,
                             logits_processor=LogitsProcessorList([RepetitionPenaltyLogitsProcessor(theta)]))
for name, out in (("greedy", greedy), ("penalty 1.2", with_penalty)):
    gen = out[0, T:]
    print(f"{name:>12}: {len(set(gen.tolist()))} distinct of {len(gen)} tokens  {show(tokenizer, gen)}")
# ->       greedy: 14 distinct of 60 tokens  "'ll not be so.\n\nCOUNTESS:\nI'll not, my lord. ..."
# ->  penalty 1.2: 37 distinct of 60 tokens  "'ll not be so.\n\nCOUNTESS:\nThe king is the king, and I will ..."
#     (the counts depend on the model; the penalty usually raises them)

# %% [markdown]
# The penalty only makes repeats *less* likely. `NoRepeatNGramLogitsProcessor(n)` forbids them:
# a token that would complete an n-gram already in the sequence gets -inf. So the output can
# contain no 2-gram twice -- checked here by counting.

# %%
no_repeat = greedy_search(model, prompt, max_length=T + N_NEW, pad_token_id=PAD, eos_token_id=EOS,
                          logits_processor=LogitsProcessorList([NoRepeatNGramLogitsProcessor(2)]))
bigrams = list(zip(no_repeat[0, :-1].tolist(), no_repeat[0, 1:].tolist()))
print(len(bigrams), len(set(bigrams)), show(tokenizer, no_repeat[0, T:]))
# -> 64 64 "'ll not be so.\n\nCOUNTESS: I'll go,\nAnd I will not, and I have a man. ..."   (no bigram twice)
assert len(bigrams) == len(set(bigrams))

# %% [markdown]
# ## 5. The 4.26 walkthrough's greedy quick start, ported  `# NEW`
#
# transformers 4.26 (the 4.26 walkthrough, section 2.2):
#
# ```python
# model.generation_config.pad_token_id = model.generation_config.eos_token_id
# input_ids = tokenizer(input_prompt, return_tensors="pt").input_ids
# logits_processor = LogitsProcessorList([MinLengthLogitsProcessor(10, eos_token_id=model.generation_config.eos_token_id),
#                                         RepetitionPenaltyLogitsProcessor(1.2)])
# stopping_criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=20)])
# outputs = model.greedy_search(input_ids, logits_processor=logits_processor, stopping_criteria=stopping_criteria)
# result = tokenizer.batch_decode(outputs, skip_special_tokens=True)
# # with the real GPT-2: ['It might be possible to get a better understanding of the nature of this phenomenon, but it is not']
# ```
#
# refdecode: same names, NumPy arrays, the model passed first.

# %%
input_ids = tokenizer.encode("It might be possible to")[None, :]               # (1, 5)
logits_processor = LogitsProcessorList([MinLengthLogitsProcessor(10, eos_token_id=EOS),
                                        RepetitionPenaltyLogitsProcessor(1.2)])
stopping_criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=20)])
outputs = greedy_search(model, input_ids, logits_processor=logits_processor, stopping_criteria=stopping_criteria,
                        pad_token_id=EOS, eos_token_id=EOS)
result = [tokenizer.decode(row, skip_special_tokens=True) for row in outputs]
print(result)                                         # -> ["It might be possible to me,\nAnd I'll not so much.\n\nCASSI"]
assert outputs.shape[1] <= 20 and EOS not in outputs[0, :10]  # min_length 10: no eos among the first 10
# The document printed its sentence with the real GPT-2; place it in models/gpt2 (models/README.md) to compare.

# %% [markdown]
# ### Show your work: the scores after each processor, at the first step
#
# `LogitsProcessorList` just applies its processors in order. At the first step the sequence has
# 5 tokens < 10, so MinLength sets the eos score to -inf; the repetition penalty then changes the
# scores of the 5 prompt tokens.

# %%
scores = model(input_ids).logits[:, -1]               # (1, V) raw logits
for processor in logits_processor:
    new_scores = processor(input_ids, scores)
    print(f"{type(processor).__name__:>32}: {int((new_scores != scores).sum())} scores changed, "
          f"eos score {new_scores[0, EOS]:.3f}")
    scores = new_scores
# ->        MinLengthLogitsProcessor: 1 scores changed, eos score -inf
# -> RepetitionPenaltyLogitsProcessor: 5 scores changed, eos score -inf
assert scores[0, EOS] == -np.inf
assert np.array_equal(scores, logits_processor(input_ids, model(input_ids).logits[:, -1]))

# %% [markdown]
# **What to remember.** Processors change the scores, the loop only takes the argmax. Greedy is
# deterministic: the same prompt always gives the same text, loops included. Tutorial 04 replaces
# the argmax with a random draw.

# %% [markdown]
# ## Exercises
#
# Write each function below in place of `raise NotImplementedError`. `check(name, function)` runs it
# on a set of cases (the edges where implementations usually go wrong, then random ones) against
# refdecode and prints `[v]` when every case matches, `[ ]` while you have not started, or `[x]` with
# the first case that differs: its input and what differs (not refdecode's answer: the rule gives it).
#
# The stars are the level (★ a direct translation of the page, ★★ an edge to get right, ★★★ a rule
# people usually get wrong). Each rule below is one the checker enforces. When an answer is a typical
# mistake the report says what it did; `hint(name)` prints staged hints, one more per call. Name your
# parameters as you like: the checker passes them by keyword or in the order shown.
#
# 1. **`repetition_penalty(input_ids, scores, penalty)`** ★★: `RepetitionPenaltyLogitsProcessor` by hand
#    (input_ids int (N, T), scores float32 (N, V)); return new scores, do not change `scores`.
#    - Only tokens that appear in the row's `input_ids` are penalised, each once however often it appears.
#    - A positive score is divided by the penalty, a negative score multiplied by it (both move down for
#      penalty > 1).
# 2. **`no_repeat_ngram_banned(row, n)`** ★★: the tokens `NoRepeatNGramLogitsProcessor(n)` bans after the
#    token list `row`.
#    - A token is banned when the last n - 1 tokens of `row`, followed by it, form an n-gram already in
#      `row`.
#    - With n = 1 every token already in `row` is banned; a row shorter than n bans nothing.
#    - Return a sorted list, each token once.
# 3. **`min_length(input_ids, scores, min_length, eos_token_id)`** ★: `MinLengthLogitsProcessor` by hand:
#    return new scores.
#    - eos gets -inf while the length is *less than* `min_length`; at exactly `min_length` it is allowed.
#    - The length is `input_ids.shape[-1]`: it includes the prompt.
#
# Solutions: `tutorials/solutions/lab03_greedy.py` (run it to see the checker pass). Try first.

# %%
from _labs import check, hint  # noqa: E402


def repetition_penalty(input_ids, scores, penalty):
    raise NotImplementedError   # YOUR CODE: float32 (N, V)


def no_repeat_ngram_banned(row, n):
    raise NotImplementedError   # YOUR CODE: a sorted list of token ids


def min_length(input_ids, scores, min_length, eos_token_id):
    raise NotImplementedError   # YOUR CODE: float32 (N, V)


check("repetition_penalty", repetition_penalty)
check("no_repeat_ngram_banned", no_repeat_ngram_banned)
check("min_length", min_length)
