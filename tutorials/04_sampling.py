# %% [markdown]
# # 04 · Sampling: temperature, top-k, top-p, and seeds
#
# Tutorial 03 took the argmax of the scores. Sampling *draws* the next token from
# `softmax(scores)` instead, so the same prompt can give different texts. Before the draw,
# **logits warpers** reshape the distribution, always in this order (transformers'
# `_get_logits_warper`): temperature -> top-k -> top-p.
#
# New here: the three warpers (each drawn as a text bar chart), the three top-p rules of the
# source documents side by side, and `sample` with an explicit random generator.

# %%
import numpy as np
from _common import bars, load, show

from refdecode import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    greedy_search,
    llama_top_p_probs,
    multinomial,
    sample,
    shifted_top_p_warp,
    softmax,
)

model, tokenizer = load()
EOS = PAD = model.config.eos_token_id
prompt = tokenizer.encode("ROMEO:\nI")[None, :]               # int64 (1, T)
T = prompt.shape[1]
logits = model(prompt).logits[:, -1]                         # (1, V) next-token scores


def chart(scores, n=8):
    """Bar chart of the n most probable tokens of softmax(scores) (1, V)."""
    p = softmax(scores)[0]
    top = np.argsort(-p, kind="stable")[:n]
    return bars([repr(tokenizer.decode([t])) for t in top], p[top], width=30, fmt="{:.5f}")


def entropy(scores):
    p = softmax(scores)[0].astype(np.float64)
    return float(-(p[p > 0] * np.log(p[p > 0])).sum())


print(chart(logits))                                          # -> the model's own distribution, top 8:
# ->   "'ll" 0.16848 ##############################
# ->  ' will' 0.08030 ##############
# ->    ' am' 0.06954 ############
# ->  ... (gpt2-tiny: all about 0.00003, nearly uniform)

# %% [markdown]
# ## 1. Temperature  `# NEW`
#
# Divide the scores by T: `softmax(s / T)`. T < 1 sharpens (T -> 0 is greedy), T > 1 flattens.
# Check against `exp(s / T)` normalised by hand in float64, and check that the entropy grows with T.

# %% [markdown]
# ![One step of the shipped model at four temperatures](../docs/img/temperature.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/temperature.svg`).*

# %%
for t in (0.5, 1.0, 2.0):
    warped = TemperatureLogitsWarper(t)(prompt, logits)
    by_hand = np.exp((logits[0].astype(np.float64) - logits.max()) / t)
    by_hand /= by_hand.sum()
    assert np.allclose(softmax(warped)[0], by_hand, rtol=1e-4, atol=1e-7)
    print(f"T = {t}: entropy {entropy(warped):.2f} nats\n{chart(warped, 5)}")
# -> T = 0.5: entropy 1.67 nats, "'ll" 0.576 ...
# -> T = 1.0: entropy 4.44 nats, "'ll" 0.168 ...
# -> T = 2.0: entropy 9.07 nats, "'ll" 0.011 ...  (the bars even out)
assert entropy(logits / 0.5) < entropy(logits) < entropy(logits / 2.0)

# %% [markdown]
# ## 2. Top-k  `# NEW`
#
# Keep the k highest scores, set the rest to -inf; softmax renormalises over the survivors.
# (Ties with the k-th score are all kept, so "at least k".)

# %% [markdown]
# ![One step before and after top-k](../docs/img/top-k.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/top-k.svg`).*

# %%
k = 10
topk = TopKLogitsWarper(top_k=k)(prompt, logits)
kept = np.isfinite(topk[0])
print(kept.sum(), "tokens kept")                              # -> 10 tokens kept
print(chart(topk, 10))                                        # -> "'ll" 0.31757 ... (renormalised over 10)
assert kept.sum() >= k and logits[0, kept].min() >= logits[0, ~kept].max()
assert np.isclose(softmax(topk)[0, kept].sum(), 1.0, atol=1e-5)

# %% [markdown]
# ## 3. Top-p (nucleus)  `# NEW`
#
# Keep the most probable tokens until their mass reaches p. Checked against that sentence,
# computed in float64: a token is kept when the mass of the tokens more probable than it is < p.
# (A 1e-6 margin leaves out the tokens where float32 rounding could decide.)

# %% [markdown]
# ![Sorted probabilities, cumulative mass and the threshold p](../docs/img/top-p.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/top-p.svg`).*

# %% [markdown]
# ![Which tokens the three top-p rules keep](../docs/img/top-p-variants.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/top-p-variants.svg`).*

# %% [markdown]
# ![Top-k 5 and top-p 0.8 on a flat and on a peaked step: different tokens kept](../docs/img/top-k-vs-top-p.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/top-k-vs-top-p.svg`).*

# %%
top_p = 0.9
nucleus = TopPLogitsWarper(top_p=top_p)(prompt, logits)
kept = np.isfinite(nucleus[0])
p64 = softmax(logits)[0].astype(np.float64)
order = np.argsort(-p64, kind="stable")
mass_before = np.empty_like(p64)
mass_before[order] = np.cumsum(p64[order]) - p64[order]      # mass of the more probable tokens
print(f"top-p {top_p}: {kept.sum()} of {p64.size} tokens kept, mass {p64[kept].sum():.3f}")
# -> top-p 0.9: 158 of 50257 tokens kept, mass 0.900   (gpt2-tiny, nearly uniform: 44169 tokens)
assert kept[mass_before < top_p - 1e-6].all() and not kept[mass_before > top_p + 1e-6].any()

# %% [markdown]
# ### Three top-p rules, on the source documents' examples
#
# - transformers (`TopPLogitsWarper`, `top_p_warp`): sort ascending, drop the tail whose mass is
#   `<= 1 - p`;
# - Meta llama's `sample_top_p` (the top-p article; `llama_top_p_probs`): sort descending, drop where
#   `cumsum - p_i > p`;
# - the sampling note's `top_p_filtering` (`shifted_top_p_warp`): drop where `cumsum > p`, shifted right
#   by one.
#
# All three mean "keep until the mass reaches p"; they differ when the mass before a token is
# *exactly* p (transformers drops that token, the other two keep it). The documents' prose and
# their own code also disagree; the numbers below are what the code computes.

# %%
def kept_ids(scores_or_probs):
    return np.flatnonzero(np.isfinite(scores_or_probs[0]) & (scores_or_probs[0] != 0)).tolist()


examples = {
    "article": (np.array([[0.1, 0.3, 0.4, 0.15, 0.05]], dtype=np.float32), 0.8),
    "note": (np.array([[0.4, 0.2, 0.15, 0.15, 0.1]], dtype=np.float32), 0.8),
    "boundary": (np.array([[0.5, 0.25, 0.125, 0.125]], dtype=np.float32), 0.75),
}
results = {}
for name, (probs, p) in examples.items():
    results[name] = (kept_ids(TopPLogitsWarper(p)(None, np.log(probs))),
                     kept_ids(llama_top_p_probs(probs, p)),
                     kept_ids(shifted_top_p_warp(np.log(probs), p)))
    print(f"{name:>8} p={p}: transformers {results[name][0]}, llama {results[name][1]}, shifted {results[name][2]}")
# ->  article p=0.8: transformers [1, 2, 3], llama [1, 2, 3], shifted [1, 2, 3]
# ->     note p=0.8: transformers [0, 1, 2, 3], llama [0, 1, 2, 3], shifted [0, 1, 2, 3]
# -> boundary p=0.75: transformers [0, 1], llama [0, 1, 2], shifted [0, 1, 2]

# By hand: the top-p article's example ("article") sorted 0.4, 0.3, 0.15 -> mass 0.85 >= 0.8 with 3 tokens (its prose keeps 2).
# the sampling note's ("note"): 0.4 + 0.2 + 0.15 = 0.75 < 0.8, so a 4th token is needed (its prose keeps 3).
# boundary: 0.5 + 0.25 = 0.75 = p exactly: transformers stops, "mass before <= p" keeps one more.
assert results == {"article": ([1, 2, 3],) * 3, "note": ([0, 1, 2, 3],) * 3,
                   "boundary": ([0, 1], [0, 1, 2], [0, 1, 2])}

# %% [markdown]
# ## 4. Drawing tokens, and seeds  `# NEW`
#
# refdecode draws with an explicit `np.random.Generator` (`rng=`, or `seed=` to build one); no
# global random state. First the draw itself, `multinomial(probs, n, replacement, rng)`: with
# 20 000 draws the frequencies approach the probabilities.

# %% [markdown]
# ![Five sampling steps of the shipped model: the probabilities end to end in id order and the uniform drawn](../docs/img/sampling-draws.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/sampling-draws.svg`).*

# %%
probs = np.tile(np.array([[0.5, 0.3, 0.2]], dtype=np.float32), (20_000, 1))     # (N, 3)
draws = multinomial(probs, 1, rng=np.random.default_rng(0))[:, 0]              # (N,)
freq = np.bincount(draws, minlength=3) / draws.size
print(bars(["a", "b", "c"], freq, width=30))                  # -> about 0.5, 0.3, 0.2
assert np.allclose(freq, [0.5, 0.3, 0.2], atol=0.015)

# %% [markdown]
# Now the sampling loop. Same seed, same text; a generator you pass in gives the same stream as
# its seed; `top_k=1` leaves one token, so sampling becomes greedy search.

# %%
warpers = [TemperatureLogitsWarper(0.8), TopKLogitsWarper(50), TopPLogitsWarper(0.9)]   # the fixed order
kwargs = dict(logits_warper=warpers, max_length=T + 25, pad_token_id=PAD, eos_token_id=EOS)
a = sample(model, prompt, seed=0, **kwargs)
b = sample(model, prompt, seed=0, **kwargs)
c = sample(model, prompt, rng=np.random.default_rng(0), **kwargs)
d = sample(model, prompt, seed=1, **kwargs)
print("seed 0:", show(tokenizer, a[0, T:]))                   # -> "'ll not, to him all in my father's son,\nI'll not ..."
print("seed 1:", show(tokenizer, d[0, T:]))                   # -> "'ll hear it my father.\n\nSALISTRESS QUICK:\nO, ..."

assert np.array_equal(a, b) and np.array_equal(a, c)

one = sample(model, prompt, logits_warper=[TopKLogitsWarper(1)], max_length=T + 25, pad_token_id=PAD,
             eos_token_id=EOS, seed=123)
assert np.array_equal(one, greedy_search(model, prompt, max_length=T + 25, pad_token_id=PAD, eos_token_id=EOS))

# %% [markdown]
# ## 5. Try it: temperature, top-k and top-p on sliders  `# NEW`
#
# In a notebook (with the `notebooks` extra, which brings ipywidgets), the cell below shows three
# sliders over one bar chart of this step's 12 most probable tokens: blue bars can be drawn, grey ones
# are cut. Each move reruns refdecode's warpers in generate()'s order (temperature -> top-k -> top-p).
# Things to try: T = 0.3 and T = 2 with top-k 50; top-k 50 with top-p 0.5; top-p 0.9 at T = 2 (the
# nucleus grows with T: top-p measures the *tempered* mass). Run as a script it prints the chart at
# generate()'s sampling defaults (T = 1, top-k 50, top-p off).

# %%
from _widgets import warped, warper_explorer  # noqa: E402

warper_explorer(logits, tokenizer)                            # -> sliders (notebook) or the chart at T=1, k=50
# the nucleus grows with T under the same top-p (top-p measures the tempered distribution):
assert warped(logits, 0.5, 50, 0.9)["nucleus"] <= warped(logits, 1.0, 50, 0.9)["nucleus"] \
    <= warped(logits, 2.0, 50, 0.9)["nucleus"]

# %% [markdown]
# **What to remember.** Warpers only reshape the distribution; the draw is the only random step,
# and its generator is an argument. torch and NumPy have different random streams, so refdecode
# reproduces transformers' *distributions*, not its draws (the tests replay transformers' draws
# through `draw=`). Tutorial 05 goes back to search: beam search.

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
# 1. **`temperature_softmax(logits, temperature)`** ★: the probabilities after temperature, float32 (N, V).
#    - softmax(logits / T) over the last axis; a -inf logit gets probability 0.
# 2. **`top_k_filter(scores, top_k)`** ★★: `TopKLogitsWarper(top_k)` by hand: -inf for every score below the
#    k-th largest.
#    - Every score >= the k-th largest stays, so tokens tied with the k-th score are all kept.
#    - `top_k` larger than the vocabulary keeps everything; scores already -inf stay -inf.
# 3. **`llama_top_p(probs, p)`** ★★★: top-p the llama way (the top-p article's `sample_top_p`), float32 (N,
#    V). Compare with `llama_top_p_probs` above.
#    - Sort the probabilities in descending order; a token is zeroed when the mass of the tokens before it
#      is greater than `p`, and kept when that mass is <= p (so the token that crosses p is kept).
#    - Among equal probabilities the lower token id comes first (a stable descending sort,
#      `np.argsort(-probs, kind="stable")`), so when a tie straddles the cut the lower id is kept.
#    - Renormalise the kept probabilities to sum to 1 and return them in vocabulary order.
#
# Solutions: `tutorials/solutions/lab04_sampling.py` (run it to see the checker pass). Try first.

# %%
from _labs import check, hint  # noqa: E402


def temperature_softmax(logits, temperature):
    raise NotImplementedError   # YOUR CODE: float32 (N, V), rows sum to 1


def top_k_filter(scores, top_k):
    raise NotImplementedError   # YOUR CODE: float32 (N, V) with -inf outside the top k


def llama_top_p(probs, p):
    raise NotImplementedError   # YOUR CODE: float32 (N, V), rows sum to 1


check("temperature_softmax", temperature_softmax)
check("top_k_filter", top_k_filter)
check("llama_top_p", llama_top_p)
