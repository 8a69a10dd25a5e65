# %% [markdown]
# # 06 · Diverse beams: beam sample and group beam search
#
# Tutorial 05's beams all chase the same high-probability region, so the K sequences it returns
# often differ in a token or two. Two ways to spread them out:
#
# - **beam sample** (`beam_sample`): beam search whose 2K candidates are *drawn* from
#   `softmax(scores)` (after the warpers of tutorial 04) instead of taken from the top;
# - **group beam search** (`group_beam_search`, Vijayakumar et al., arXiv:1610.02424): split the K
#   beams into G groups that decode in turn at each step; `HammingDiversityLogitsProcessor`
#   subtracts `diversity_penalty × (how many earlier groups chose token v at this step)`.
#
# New here: both algorithms, the Hamming penalty checked by hand, and two diversity measures over
# the returned sequences: **distinct-n**, the fraction of all their n-grams that are different
# (low when the sequences repeat each other *or themselves*), and **overlap-n**, the mean Jaccard
# overlap of the n-gram sets of two sequences (high when the sequences repeat each other).

# %%
import numpy as np
from _common import load, show

from refdecode import (
    BeamSearchScorer,
    HammingDiversityLogitsProcessor,
    LogitsProcessorList,
    TopKLogitsWarper,
    beam_sample,
    beam_search,
    group_beam_search,
)

model, tokenizer = load()
EOS = model.config.eos_token_id
prompt = tokenizer.encode("ROMEO:\nI")[None, :]
T, K, n_new = prompt.shape[1], 4, 12
ids = np.repeat(prompt, K, axis=0)                 # (B*K, T)
common = dict(max_length=T + n_new, pad_token_id=EOS, eos_token_id=EOS)


def distinct_n(sequences, n):
    """Distinct n-grams / all n-grams over the generated parts of the returned sequences."""
    grams = [tuple(row[i:i + n]) for row in sequences[:, T:].tolist() for i in range(len(row) - n + 1)]
    return len(set(grams)) / len(grams)


def overlap_n(sequences, n):
    """Mean over pairs of returned sequences of |common n-grams| / |all n-grams of the two| (Jaccard)."""
    sets = [{tuple(row[i:i + n]) for i in range(len(row) - n + 1)} for row in sequences[:, T:].tolist()]
    pairs = [(a, b) for i, a in enumerate(sets) for b in sets[i + 1:]]
    return sum(len(a & b) / len(a | b) for a, b in pairs) / len(pairs)


def report(name, sequences):
    print(f"{name}: distinct-2 {distinct_n(sequences, 2):.2f}, overlap-2 {overlap_n(sequences, 2):.2f}")
    for row in sequences:
        print("   ", show(tokenizer, row[T:]))


# %% [markdown]
# ## 1. Plain beam search, K sequences back (the baseline)

# %%
plain = beam_search(model, ids, BeamSearchScorer(batch_size=1, num_beams=K, num_beam_hyps_to_keep=K), **common)
report("beam search", plain)
# -> beam search: distinct-2 0.59, overlap-2 0.30
# ->     ' will not be so.\n\nKING EDWARD:\n'
# ->     ' will not be so.\n\nKING EDWARD IV:'
# ->     ' will not be so.\n\nCALBANY:'
# ->     "'ll not, my lord.\n\nCARDINAL W"
assert plain.shape[0] == K

# %% [markdown]
# ## 2. Beam sample  `# NEW`
#
# The candidates are drawn, so pass a seed (or `rng=`): the same seed gives the same beams.

# %% [markdown]
# ![Beam sample on the toy tree, seed 3: both beams draw the same word](../docs/img/beam-sample-toy.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/beam-sample-toy.svg`).*

# %%
def run_beam_sample(seed):
    scorer = BeamSearchScorer(batch_size=1, num_beams=K, num_beam_hyps_to_keep=K)
    return beam_sample(model, ids, scorer, logits_warper=[TopKLogitsWarper(50, min_tokens_to_keep=2)], seed=seed,
                       **common)


sampled = run_beam_sample(seed=0)
report("beam sample", sampled)
# -> beam sample: distinct-2 0.41, overlap-2 0.62
# ->     "'ll tell you, my lord.\n\nROSAL"
# ->     "'ll tell you, my lord.\n\nEDGAR"   ... (random candidates, but the beams still converge)
assert np.array_equal(sampled, run_beam_sample(seed=0))

# %% [markdown]
# ## 3. The Hamming diversity penalty, by hand  `# NEW`
#
# K = 4 beams in G = 4 groups of one. At this step groups 0, 1, 2 have chosen tokens 7, 7 and 3;
# now group 3 runs: token 7 gets `-2λ`, token 3 gets `-λ`, the others nothing. (In the decode loop
# `current_tokens` holds the tokens chosen so far this step; entries of later groups are not read.)

# %%
lam = 0.5
hamming = HammingDiversityLogitsProcessor(diversity_penalty=lam, num_beams=4, num_beam_groups=4)
scores = np.zeros((1, 10), dtype=np.float32)       # (B * group_size, V), V = 10 for the example
current_tokens = np.array([7, 7, 3, 0])            # (B*K,)
penalised = hamming(None, scores, current_tokens=current_tokens, beam_group_idx=3)
print(penalised.tolist())                          # -> [[0, 0, 0, -0.5, 0, 0, 0, -1.0, 0, 0]]
by_hand = np.zeros(10, dtype=np.float32)
by_hand[7], by_hand[3] = -2 * lam, -lam
assert np.array_equal(penalised[0], by_hand)
assert np.array_equal(hamming(None, scores, current_tokens=current_tokens, beam_group_idx=0), scores)  # group 0: none

# %% [markdown]
# ## 4. Group beam search  `# NEW`
#
# `BeamSearchScorer(num_beam_groups=G)` keeps one pool of hypotheses per group; the processor list
# must contain the Hamming processor (`generate` adds it from `diversity_penalty`: tutorial 07).

# %% [markdown]
# ![Group beam search: four groups and the Hamming penalty each paid](../docs/img/group-beam-search.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/group-beam-search.svg`).*

# %%
def run_groups(penalty, groups=K):
    scorer = BeamSearchScorer(batch_size=1, num_beams=K, num_beam_groups=groups, num_beam_hyps_to_keep=K)
    processors = LogitsProcessorList([HammingDiversityLogitsProcessor(penalty, num_beams=K, num_beam_groups=groups)])
    return group_beam_search(model, ids, scorer, logits_processor=processors, **common)


groups = run_groups(1.0)
report("group beam search, penalty 1.0", groups)
# -> group beam search, penalty 1.0: distinct-2 0.52, overlap-2 0.25
# ->     "'ll not be so.\n\nCOUNTESS:\n"
# ->     ' am a man, and I am a man.\n\n'
# ->     ' will not, and I will not be a man.\n'
# ->     "'ll be a man, and I will not be a man"

# %% [markdown]
# With a huge penalty a token chosen by an earlier group can never win, so at every step the G
# groups (one beam each) choose G *different* tokens: in every column of the generated tokens,
# the K returned sequences differ (up to the first eos of a sequence).

# %%
extreme = run_groups(1e4)
report("group beam search, penalty 1e4", extreme)
# -> group beam search, penalty 1e4: distinct-2 0.64, overlap-2 0.12
# ->     "'ll not be so.\n\nCOUNTESS:\n"
# ->     ' am a man, and I am a man.\nI'
# ->     " have been a man, and a man,\nI'll"
# ->     ' will I have a man. I am a man. I'     (first tokens: 'll / am / have / will: all different)
for col in range(T, extreme.shape[1]):
    live = [row[col] for row in extreme if EOS not in row[T:col + 1]]
    assert len(live) == len(set(live)), f"column {col}: {live}"

# %% [markdown]
# ### Diversity, side by side

# %%
table = {"beam search": plain, "beam sample": sampled, "groups, 1.0": groups, "groups, 1e4": extreme}
for name, seqs in table.items():
    print(f"{name:>12}: distinct-1 {distinct_n(seqs, 1):.2f}  distinct-2 {distinct_n(seqs, 2):.2f}  "
          f"overlap-1 {overlap_n(seqs, 1):.2f}  overlap-2 {overlap_n(seqs, 2):.2f}")
# ->  beam search: distinct-1 0.46  distinct-2 0.59  overlap-1 0.40  overlap-2 0.30
# ->  beam sample: distinct-1 0.35  distinct-2 0.41  overlap-1 0.66  overlap-2 0.62
# ->  groups, 1.0: distinct-1 0.35  distinct-2 0.52  overlap-1 0.39  overlap-2 0.25
# ->  groups, 1e4: distinct-1 0.42  distinct-2 0.64  overlap-1 0.25  overlap-2 0.12
# (the numbers depend on the model. With gpt2-tiny every group loops on its own word: distinct-2
# 0.09 -- each sequence repeats itself -- but overlap 0.00 -- no sequence repeats another.)
assert all(0 < distinct_n(s, n) <= 1 and 0 <= overlap_n(s, n) <= 1 for s in table.values() for n in (1, 2))

# %% [markdown]
# **What to remember.** Beam sample adds randomness (seeded); group beam search adds a penalty
# between groups and stays deterministic. Neither is free: diverse sequences are, by construction,
# less probable than plain beam search's. Tutorial 07 reaches all of these through one call,
# `generate()`.

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
# 1. **`hamming_penalty(scores, previous_tokens, diversity_penalty)`** ★★: the Hamming diversity penalty for
#    the rows of one group (float32 (group size, V)), given the tokens the earlier groups chose at this step
#    (`previous_tokens`, int (n,)).
#    - Subtract diversity_penalty once per time an earlier group chose the token: a token chosen twice is
#      penalised twice.
#    - Every row of the group gets the same penalty; the first group (nothing before it) is unchanged.
# 2. **`top_candidates(total, n)`** ★★: the `n` best candidates of each prompt from the beams' total scores
#    float32 (B, K, V): scores, beam and token, each (B, n), best first.
#    - All K*V candidates of a prompt compete together (at step 1 of beam search every one comes from beam
#      0).
#    - Ties go to the lower `beam * V + token` first.
#
# Solutions: `tutorials/solutions/lab06_diverse.py` (run it to see the checker pass). Try first.

# %%
from _labs import check, hint  # noqa: E402


def hamming_penalty(scores, previous_tokens, diversity_penalty):
    raise NotImplementedError   # YOUR CODE: float32 (group size, V)


def top_candidates(total, n):
    raise NotImplementedError   # YOUR CODE: (scores, beams, tokens), each (B, n)


check("hamming_penalty", hamming_penalty)
check("top_candidates", top_candidates)
