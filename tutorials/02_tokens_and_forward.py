# %% [markdown]
# # 02 · Tokens, the GPT-2 forward pass, and the KV cache
#
# Tutorial 01's model was a 15 × 15 table. A real language model computes the same thing -- a
# distribution over the next token -- from the whole prefix:
#
# `text --Tokenizer--> input_ids (B, T) --GPT2--> logits (B, T, V) --softmax--> P(next token)`
#
# New here: the tokenizer, the forward pass, and the **KV cache** that makes one decoding step cost
# one token instead of the whole prefix (with `reorder`, which beam search needs after every step).
# Shape letters as in `refdecode/__init__.py`: B batch, T new tokens, S cached tokens, V vocabulary.

# %%
import time

import numpy as np
from _common import bars, load

from refdecode import softmax

model, tokenizer = load()      # the tutorial model (see _common.py); same calls for any GPT-2
c = model.config
print(f"L={c.n_layer} layers, H={c.n_head} heads, E={c.n_embd}, V={c.vocab_size}, n_positions={c.n_positions}")
# -> L=4 layers, H=4 heads, E=128, V=50257, n_positions=256    (models/tiny-shakespeare)

# %% [markdown]
# ## 1. Text -> tokens  `# NEW`
#
# GPT-2's byte-level BPE: common words are one token, and the leading space belongs to the word,
# so " dog" and "dog" are different tokens. Every GPT-2 checkpoint in `models/` shares this
# tokenizer, so these ids do not depend on the model.

# %%
ids = tokenizer.encode("The dog has")                 # int64 (T,)
print(ids.tolist())                                   # -> [464, 3290, 468]
print([tokenizer.decode([i]) for i in ids])           # -> ['The', ' dog', ' has']
print(tokenizer.encode("dog").tolist())               # -> [9703]
assert ids.tolist() == [464, 3290, 468] and tokenizer.encode("dog").tolist() == [9703]
assert tokenizer.decode(ids) == "The dog has"         # decode(encode(text)) == text

input_ids = ids[None, :]                              # (T,) -> (B=1, T=3)

# %% [markdown]
# ## 2. Tokens -> logits  `# NEW`
#
# One call runs all T positions; position t holds the scores of the token *after* t. For the
# next token we only need the last row.

# %%
out = model(input_ids)
print(out.logits.shape, out.logits.dtype)             # -> (1, 3, 50257) float32
assert out.logits.shape == (1, 3, c.vocab_size) and out.logits.dtype == np.float32

probs = softmax(out.logits[:, -1, :])                 # (B, V): P(next token | "The dog has")
top = np.argsort(-probs[0])[:8]
print(bars([repr(tokenizer.decode([t])) for t in top], probs[0, top], fmt="{:.5f}"))
# ->    ' a' 0.07712 ########################################
# -> ' been' 0.07380 ######################################
# ->  ' the' 0.04435 #######################
# -> ... the 8 most probable next tokens (with gpt2-tiny's random weights all are ~1/V = 0.00002)
assert np.isclose(probs.sum(), 1.0, atol=1e-5)

# %% [markdown]
# ## 3. The KV cache: same logits, less work  `# NEW`
#
# Attention at position t reads the keys and values of positions 0..t. Those of earlier tokens
# never change, so keep them: `model.new_cache(B, capacity)` preallocates them, each call appends
# the new tokens' keys/values in place, and the next call only feeds the new token.

# %%
cache = model.new_cache(batch_size=1, capacity=16)
first = model(input_ids[:, :2], past_key_values=cache)      # "The dog": S = 0 -> 2
print(cache.length)                                         # -> 2
step = model(input_ids[:, 2:], past_key_values=cache)       # " has" alone: S = 2 -> 3
print(step.logits.shape, cache.length)                      # -> (1, 1, 50257) 3

scale = float(np.abs(out.logits).max())
diff = float(np.abs(step.logits[:, -1] - out.logits[:, -1]).max())
print(f"max |cached - full| = {diff:.1e} (logits up to {scale:.1f})")   # -> ~1e-7: float32 rounding only
assert diff <= 1e-5 * scale
assert np.allclose(first.logits, out.logits[:, :2], rtol=0, atol=1e-5 * scale)

# %% [markdown]
# ### Cache vs no cache: timing
#
# Twenty greedy steps both ways. Without a cache every step runs the whole prefix again (O(T²)
# work for T tokens); with it, one token per step. Both ask only for the last position's logits
# (`logits_to_keep=1`), so the difference is the cache alone. The times depend on the machine and
# are printed, not checked; the tokens must be identical.

# %%
n_new = 20
prompt = tokenizer.encode("ROMEO:\nWhat light through yonder window breaks?")[None, :]   # (1, T)

t0 = time.perf_counter()
seq = prompt
for _ in range(n_new):                                        # no cache: the whole sequence every step
    logits = model(seq, logits_to_keep=1).logits[:, -1]       # (1, V)
    seq = np.concatenate([seq, logits.argmax(-1)[:, None]], axis=1)
t_full = time.perf_counter() - t0

t0 = time.perf_counter()
cache = model.new_cache(1, prompt.shape[1] + n_new)
logits = model(prompt, past_key_values=cache, logits_to_keep=1).logits[:, -1]   # prefill once
seq_cached = prompt
for _ in range(n_new):                                        # cached: one token per step
    nxt = logits.argmax(-1)[:, None]                          # (1, 1)
    seq_cached = np.concatenate([seq_cached, nxt], axis=1)
    logits = model(nxt, past_key_values=cache, logits_to_keep=1).logits[:, -1]
t_cached = time.perf_counter() - t0

print(f"no cache {t_full * 1e3:.0f} ms, cache {t_cached * 1e3:.0f} ms")
# -> e.g. no cache 91 ms, cache 26 ms (tiny-shakespeare); on gpt2-tiny (E=32) the output layer
#    (E x V) dominates every step and both take about the same time
print(repr(tokenizer.decode(seq_cached[0, prompt.shape[1]:])))   # -> '\n\nCALIBAN:\nI am a man, sir.\n\nFALST'
assert np.array_equal(seq, seq_cached)

# %% [markdown]
# ## 4. Reordering the cache for beam search  `# NEW`
#
# In beam search (tutorial 05) each step may drop a beam and continue another one twice. Row i of
# the next step continues row `beam_idx[i]` of this step, so its cached keys/values must become
# that row's: `cache.reorder(beam_idx)`, in place. The neural-speed article's example: four beams,
# `beam_idx = [2, 1, 1, 0]`.
#
# Check: reorder a cache of four prompts, feed one more token, and compare with running the
# reordered prompts from scratch.

# %% [markdown]
# ![KVCache.reorder with beam_idx 2, 1, 1, 0: rows moving](../docs/img/kv-cache-reorder.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/kv-cache-reorder.svg`).*

# %%
texts = ["The dog has", "The nice woman", "The car drives", "ROMEO:"]
batch = np.stack([tokenizer.encode(t) for t in texts])    # (B=4, T=3): all four are 3 tokens
print(batch.tolist())
# -> [[464, 3290, 468], [464, 3621, 2415], [464, 1097, 10182], [33676, 4720, 25]]
assert batch[3].tolist() == [33676, 4720, 25]                  # "ROM" "EO" ":"

cache = model.new_cache(4, 8)
model(batch, past_key_values=cache)
beam_idx = np.array([2, 1, 1, 0])
cache.reorder(beam_idx)                                   # row i <- old row beam_idx[i]
next_token = np.full((4, 1), 11, dtype=np.int64)          # "," for every row
reordered = model(next_token, past_key_values=cache).logits[:, -1]                   # (4, V)
scratch = model(np.concatenate([batch[beam_idx], next_token], axis=1)).logits[:, -1]  # (4, V)
print(np.abs(reordered - scratch).max() <= 1e-5 * np.abs(scratch).max())           # -> True
assert np.allclose(reordered, scratch, rtol=0, atol=1e-5 * np.abs(scratch).max())
assert np.allclose(reordered[1], reordered[2])            # rows 1 and 2 now continue the same beam

# %% [markdown]
# `cache.expand(K)` is the other half: prefill a prompt once, then give each of its K beams a
# copy (rows b*K .. b*K+K-1, the order of `np.repeat`).

# %%
cache = model.new_cache(1, 8)
model(batch[:1], past_key_values=cache)
beams = cache.expand(3)
print(beams.batch_size, beams.length)                     # -> 3 3
assert beams.batch_size == 3 and np.array_equal(beams.keys(0)[0], beams.keys(0)[2])

# %% [markdown]
# ## 5. A batch of different lengths: left padding
#
# Rows of a batch must be the same length. Decoder-only models append on the right, so short rows
# are padded on the **left** and `attention_mask` marks the pads with 0; positions are computed
# from the mask, so a padded row gives the same logits as the prompt alone.

# %% [markdown]
# ![Two left-padded prompts in the KV cache: prefill, then one slot per decode step; pads masked, position ids from 0 at each row's first real token](../docs/img/kv-cache.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/kv-cache.svg`).*

# %%
input_ids, attention_mask = tokenizer.encode_batch(["The dog has", "Hi"])
print(input_ids.tolist(), attention_mask.tolist())
# -> [[464, 3290, 468], [50256, 50256, 17250]] [[1, 1, 1], [0, 0, 1]]
padded = model(input_ids, attention_mask=attention_mask).logits[1, -1]
alone = model(tokenizer.encode("Hi")[None, :]).logits[0, -1]
assert np.allclose(padded, alone, rtol=0, atol=1e-5 * np.abs(alone).max())
assert attention_mask.sum(axis=1).tolist() == [3, 1]

# %% [markdown]
# **What to remember.** `model(input_ids, attention_mask=, past_key_values=)` returns logits for
# the new tokens and the grown cache. The decoding loops of the next tutorials call it once for the
# prompt (prefill) and then once per step with the chosen token(s).

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
# 1. **`position_ids(attention_mask)`** ★★: the position ids GPT-2 gets for a left-padded batch, int (B, T).
#    - Real tokens count from 0 at each row's first real token (`cumsum(mask) - 1`).
#    - Pad positions are set to 1, as transformers' generation does (`masked_fill_(mask == 0, 1)`).
# 2. **`reorder_rows(keys, beam_idx)`** ★: the keys of one layer, float32 (N, H, S, D), after a beam step
#    (`cache.reorder`).
#    - New row i continues old row `beam_idx[i]` (a gather: `new[i] = old[beam_idx[i]]`); a row can be
#      copied twice and another dropped.
# 3. **`rope(x, position_ids, theta)`** ★★★: RoPE on the queries (or keys) of one layer, float32 (B, H, T, D),
#    at the positions int (B, T), in transformers' layout
#    ([From GPT-2 to Llama](../docs/from-gpt2-to-llama.md#rope)).
#    - Pair i (i = 0 ... D/2 - 1) is the entries (i, i + D/2): transformers' `rotate_half` layout, not the
#      neighbours (2i, 2i + 1) of Meta's and llama2.c's code.
#    - Pair i turns by position * theta ** (-2i / D) radians: `x * cos + rotate_half(x) * sin`, with
#      `rotate_half(x) = [-x[D/2:], x[:D/2]]` and cos, sin of the D/2 angles written twice.
#    - Each row turns by its own position ids (a left-padded row's first real token is at 0).
#
# Solutions: `tutorials/solutions/lab02_tokens_and_forward.py` (run it to see the checker pass). Try first.

# %%
from _labs import check, hint  # noqa: E402


def position_ids(attention_mask):
    raise NotImplementedError   # YOUR CODE: int (B, T)


def reorder_rows(keys, beam_idx):
    raise NotImplementedError   # YOUR CODE: float32 (N, H, S, D)


def rope(x, position_ids, theta):
    raise NotImplementedError   # YOUR CODE: float32 (B, H, T, D)


check("position_ids", position_ids)
check("reorder_rows", reorder_rows)
check("rope", rope)
