# %% [markdown]
# # 01 · A toy language model: greedy, beam search, and the true best sequence
#
# A language model is a function from a prefix to a probability distribution over the next token.
# Here the "model" is a table small enough to read: the example of the 4.26 walkthrough, section 2.1
# (the figure of Hugging Face's "How to generate text"). From "The":
#
# - **greedy** takes the most probable word at every step: "The nice woman", probability
#   0.5 · 0.4 = 0.2;
# - **beam search** with 2 beams keeps the 2 best prefixes at every step and finds
#   "The dog has", probability 0.4 · 0.9 = 0.36;
# - an **exhaustive search** (score every sequence) tells us which one is truly best.
#
# Greedy and beam search below are refdecode's own `greedy_search` and `beam_search`, run on a
# stand-in model (`refdecode.model.stand_ins.TableModel`) whose logits are the log-probabilities of the table.
# Every later tutorial swaps the table for a real GPT-2 and keeps the same calls.
#
# Run: `python tutorials/01_toy_model.py` (or as a notebook: see tutorials/README.md).

# %%
import itertools

import numpy as np
from _common import TOY_TREE, TOY_VOCAB, bars, toy_ids, toy_model, toy_probs, toy_text

from refdecode import BeamSearchScorer, beam_search, greedy_search

# %% [markdown]
# ## The table
#
# Each word occurs once in the tree, so "the next word depends only on the last word" loses
# nothing: row *a* of the table is P(next | last word = *a*). The tree stops after two words; to
# give later tutorials an end, a second word is followed by "." (the end-of-sequence token) with
# probability 0.9 or "!" with 0.1.

# %%
probs = toy_probs()                                   # float32 (V, V), V = 15 toy tokens
for word in ("The", "dog", "nice", "car"):
    row = probs[TOY_VOCAB.index(word)]
    print(f"{word:>4} -> " + ", ".join(f"{TOY_VOCAB[v]} {row[v]:.2f}" for v in np.flatnonzero(row)))
# ->  The -> dog 0.40, nice 0.50, car 0.10
# ->  dog -> and 0.05, runs 0.05, has 0.90
# -> nice -> woman 0.40, house 0.30, guy 0.30
# ->  car -> is 0.30, drives 0.50, turns 0.20

model = toy_model()                                   # TableModel: logits = log(probs)
prompt = toy_ids("The")                               # int64 (1, 1)
print(prompt.tolist())                                # -> [[0]]

# %% [markdown]
# ## Greedy: the best next word, every step
#
# `max_length` counts the prompt: 3 tokens = "The" + two new words.

# %%
greedy = greedy_search(model, prompt, max_length=3)  # int64 (1, 3)
print(greedy.tolist(), toy_text(greedy[0]))           # -> [[0, 2, 7]] The nice woman

p_greedy = TOY_TREE["The"]["nice"] * TOY_TREE["nice"]["woman"]
print(f"P = 0.5 * 0.4 = {p_greedy:.2f}")              # -> P = 0.5 * 0.4 = 0.20
assert toy_text(greedy[0]) == "The nice woman"
assert np.isclose(p_greedy, 0.2)

# %% [markdown]
# ## Beam search with 2 beams  `# NEW`
#
# Beam search needs the prompt once per beam (rows grouped per prompt) and a `BeamSearchScorer`,
# which keeps the finished hypotheses. `length_penalty=0.0` makes a sequence's score the plain sum
# of its log-probabilities (the default, 1.0, divides by the length: tutorial 05), so
# `exp(score)` is the sequence's probability.

# %% [markdown]
# ![Beam search on the toy tree: greedy's path (dashed) and the two beams](../docs/img/beam-tree-toy.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/beam-tree-toy.svg`).*

# %%
num_beams = 2
scorer = BeamSearchScorer(batch_size=1, num_beams=num_beams, length_penalty=0.0)   # NEW
out = beam_search(model, np.repeat(prompt, num_beams, axis=0), scorer, max_length=3,  # NEW
                  output_scores=True, return_dict_in_generate=True)
print(out.sequences.tolist(), toy_text(out.sequences[0]))    # -> [[0, 1, 6]] The dog has
p_beam = float(np.exp(out.sequences_scores[0]))
print(f"P = exp({out.sequences_scores[0]:.4f}) = {p_beam:.2f}")  # -> P = exp(-1.0217) = 0.36

assert toy_text(out.sequences[0]) == "The dog has"
assert np.isclose(p_beam, 0.4 * 0.9, rtol=1e-5)       # hand arithmetic, not refdecode's output
assert p_beam > p_greedy                              # greedy missed the more probable sequence

# %% [markdown]
# ## Exhaustive search: the truth  `# NEW`
#
# With 15 tokens there are only 15² = 225 two-word continuations. Score all of them from the
# tree itself (plain Python, no refdecode) and rank them.

# %%
def sequence_prob(tree, words):
    """P(words[1:] | words[0]) by the chain rule, read straight from the tree (0 if a step is absent)."""
    p = 1.0
    for prev, nxt in zip(words, words[1:]):
        p *= tree.get(prev, {}).get(nxt, 0.0)
    return p


def exhaustive(tree, start, n_words):
    """Every continuation of n_words words, most probable first: [(prob, words)]."""
    paths = (((start,) + rest) for rest in itertools.product(TOY_VOCAB, repeat=n_words))
    return sorted(((sequence_prob(tree, w), w) for w in paths), key=lambda pw: -pw[0])


ranked = exhaustive(TOY_TREE, "The", 2)
top = [(p, w) for p, w in ranked if p > 0]
print(len(ranked), "sequences,", len(top), "with p > 0")     # -> 225 sequences, 9 with p > 0
print(bars([" ".join(w) for _, w in top], [p for p, _ in top]))
# ->    The dog has 0.360 ########################################
# -> The nice woman 0.200 ######################
# -> The nice house 0.150 #################
# ->   The nice guy 0.150 #################
# -> The car drives 0.050 ######
# -> ... (4 more)

best_p, best_words = ranked[0]
assert best_words == ("The", "dog", "has") and np.isclose(best_p, 0.36)
assert toy_text(out.sequences[0]) == " ".join(best_words)   # here beam search found the truth

# %% [markdown]
# ## Beam search is not exhaustive either  `# NEW`
#
# Change three numbers: "car" becomes a weak first word (0.2) with a very likely follow-up
# ("drives", 0.95), and "dog has" becomes less sure (0.5). The best sequence now starts with
# the *third*-best first word, which 2 beams drop at step 1; 3 beams keep it.

# %%
tree2 = dict(TOY_TREE, The={"dog": 0.35, "nice": 0.45, "car": 0.2},
             dog={"and": 0.3, "runs": 0.2, "has": 0.5}, car={"is": 0.05, "drives": 0.95})
model2 = toy_model(tree2)
truth2 = exhaustive(tree2, "The", 2)[:3]
print([(" ".join(w), round(p, 3)) for p, w in truth2])
# -> [('The car drives', 0.19), ('The nice woman', 0.18), ('The dog has', 0.175)]

found = {}
for k in (2, 3):
    scorer = BeamSearchScorer(batch_size=1, num_beams=k, length_penalty=0.0)
    seq = beam_search(model2, np.repeat(prompt, k, axis=0), scorer, max_length=3)
    found[k] = toy_text(seq[0])
    print(f"{k} beams -> {found[k]}")
# -> 2 beams -> The nice woman
# -> 3 beams -> The car drives
print("greedy  ->", toy_text(greedy_search(model2, prompt, max_length=3)[0]))   # -> greedy  -> The nice woman

assert truth2[0][1] == ("The", "car", "drives") and np.isclose(truth2[0][0], 0.2 * 0.95)
assert found == {2: "The nice woman", 3: "The car drives"}

# %% [markdown]
# **What to remember.** Greedy is beam search with one beam. More beams search more of the tree,
# but only exhaustive search (V^n sequences: impossible for a real model, V = 50257) is guaranteed
# to find the most probable sequence. Next: tutorial 02 replaces the table with GPT-2.

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
# 1. **`sequence_probability(table, tokens)`** ★: the probability of `tokens[1:]` following `tokens[0]` under
#    a bigram table, as a float. Compare: `sequence_prob` above.
#    - `table[a, b]` is P(b | a): the row is the current token, the column the next one.
#    - The probability of a sequence is the product of its steps' probabilities (not a log).
#    - A step with probability 0 makes the whole sequence 0.
# 2. **`greedy_path(table, start, steps)`** ★: the `steps` token ids greedy search appends to `[start]`, as a
#    list of ints.
#    - Return only the appended tokens, without `start`.
#    - Each step takes the argmax of the row of the last token; ties go to the lowest id, as `np.argmax`.
# 3. **`beams_miss_the_best()`** ★★★: return a tree like `TOY_TREE` (change a few numbers) whose most probable
#    2-word continuation of "The" is missed by 2 beams and found by 3.
#    - The best 2-word continuation must be unique (no tie for best).
#    - It must not start with "car" (that example is above): find one whose best starts with "dog" or
#      "nice".
#    - Every row must stay a distribution over TOY_VOCAB words.
#
# Solutions: `tutorials/solutions/lab01_toy_model.py` (run it to see the checker pass). Try first.

# %%
from _labs import check, hint  # noqa: E402


def sequence_probability(table, tokens):
    raise NotImplementedError   # YOUR CODE: a float


def greedy_path(table, start, steps):
    raise NotImplementedError   # YOUR CODE: a list of `steps` ints


def beams_miss_the_best():
    raise NotImplementedError   # YOUR CODE: dict(TOY_TREE, The={...}, ...)


check("sequence_probability", sequence_probability)
check("greedy_path", greedy_path)
check("beams_miss_the_best", beams_miss_the_best)
