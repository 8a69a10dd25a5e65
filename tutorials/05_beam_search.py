# %% [markdown]
# # 05 · Beam search, step by step
#
# Tutorial 01 ran `beam_search` as a black box on the toy model. Here we open it. Each step:
#
# 1. every running beam k has a score `s_k` (sum of log-probabilities so far);
# 2. candidates `s_k + log p(v | beam k)` for all K·V pairs; keep the best **2·K** (if up to K of
#    them end with eos, K non-eos ones still remain to continue: the pipeline post, "why 2*num_beams");
# 3. `BeamSearchScorer.process` walks them in rank order: an eos candidate among the top K becomes a
#    finished **hypothesis** (kept in `BeamHypotheses`, at most K per prompt), other candidates fill
#    the K running slots;
# 4. reorder the token ids and the KV cache so that row i continues the beam it came from;
# 5. stop when the scorer `is_done` (no running beam can beat the worst kept hypothesis) or at
#    `max_length`; `finalize` then picks the best hypotheses.
#
# New here: the loop written out with refdecode's own pieces, checked against `beam_search`;
# the length penalty (the 4.26 walkthrough's examples eg1-eg3) and `early_stopping`; then GPT-2.

# %%
import numpy as np
from _common import TOY_EOS, load, show, toy_ids, toy_model, toy_text

from refdecode import BeamHypotheses, BeamSearchScorer, beam_search, greedy_search, log_softmax
from refdecode.decoding.beam.bookkeeping import top_candidates

# %% [markdown]
# ## 1. The loop, on the toy model with an end token  `# NEW`
#
# The toy of tutorial 01, now with "." as eos: after the second word comes "." (0.9) or "!" (0.1);
# after "!", "." or "!" (0.5 each). `length_penalty=0.0`: a score is the plain sum of log-probs.

# %%
model = toy_model(eos=True)
K, max_length, prompt = 2, 8, toy_ids("The")
prompt_len = prompt.shape[1]

scorer = BeamSearchScorer(batch_size=1, num_beams=K, length_penalty=0.0, num_beam_hyps_to_keep=2)
ids = np.repeat(prompt, K, axis=0)                            # (B*K, T): the prompt once per beam
beam_scores = np.array([[0.0, -1e9]], dtype=np.float32)      # (B, K): only beam 0 is live at first
cache = model.new_cache(K, max_length)
logits = model(ids, past_key_values=cache).logits[:, -1]     # (B*K, V) prefill
while True:
    # 2) candidates: the 2K best of the K*V continuations
    total = log_softmax(logits).reshape(1, K, -1) + beam_scores[:, :, None]   # (B*K, V) -> (B, K, V)
    cand_scores, cand_beams, cand_tokens = top_candidates(total, 2 * K)        # (B, 2K) each
    print(f"step {ids.shape[1] - prompt_len + 1} candidates:",
          [f"{toy_text(ids[b])} {toy_text([v])} p={np.exp(s):.3f}"
           for s, b, v in zip(cand_scores[0], cand_beams[0], cand_tokens[0])])
    # 3) the scorer: eos candidates in the top K -> hypotheses; the others -> running beams
    step = scorer.process(ids, cand_scores, cand_tokens, cand_beams, pad_token_id=TOY_EOS,
                          eos_token_id=TOY_EOS, decoder_prompt_len=prompt_len)
    # 4) reorder: row i continues row beam_idx[i]
    beam_idx, next_tokens = step["next_beam_indices"], step["next_beam_tokens"]     # (B*K,) each
    ids = np.concatenate([ids[beam_idx], next_tokens[:, None]], axis=1)            # (B*K, T+1)
    cache.reorder(beam_idx)
    beam_scores = step["next_beam_scores"].reshape(1, K)
    hyps = scorer.beam_hyps[0][0]                             # BeamHypotheses of prompt 0 (group 0)
    print("   running:", [toy_text(r) for r in ids], "  finished:",
          [(toy_text(h), round(float(np.exp(s)), 3)) for s, h, _ in hyps.beams], "  done:", scorer.is_done)
    # 5) stop?
    if scorer.is_done or ids.shape[1] >= max_length:
        break
    logits = model(next_tokens[:, None], past_key_values=cache).logits[:, -1]
# -> step 1 candidates: ['The nice p=0.500', 'The dog p=0.400', 'The car p=0.100', 'The dog p=0.000']
#    (the 4th comes from beam 1: its -1e9 start keeps the K identical copies of the prompt from all
#    being chosen; in float32, -1e9 + log p rounds to -1e9 for every p, and ties go to the lower id)
# -> step 2 candidates: ['The dog has p=0.360', 'The nice woman p=0.200', 'The nice house p=0.150', ...]
# -> step 3 candidates: ['The dog has . p=0.324', 'The nice woman . p=0.180', 'The dog has ! p=0.036', ...]
#       finished: [('The dog has', 0.324), ('The nice woman', 0.18)]   done: False (0.324 > 0.18)
# -> step 4 candidates: [... p=0.018 ...]: nothing can beat 0.18 any more -> done: True

final = scorer.finalize(ids, beam_scores.reshape(-1), max_length=max_length, pad_token_id=TOY_EOS,
                        eos_token_id=TOY_EOS, decoder_prompt_len=prompt_len)
print([toy_text(s) for s in final["sequences"]], [round(float(np.exp(s)), 3) for s in final["sequence_scores"]])
# -> ['The dog has .', 'The nice woman .'] [0.324, 0.18]      (finalize puts the eos back)

assert [toy_text(s) for s in final["sequences"]] == ["The dog has .", "The nice woman ."]
assert np.allclose(np.exp(final["sequence_scores"]), [0.4 * 0.9 * 0.9, 0.5 * 0.4 * 0.9], rtol=1e-5)
assert ids.shape[1] == prompt_len + 4                        # stopped by is_done after 4 steps, not max_length

# the same with refdecode's beam_search
out = beam_search(model, np.repeat(prompt, K, axis=0),
                  BeamSearchScorer(batch_size=1, num_beams=K, length_penalty=0.0, num_beam_hyps_to_keep=2),
                  max_length=max_length, pad_token_id=TOY_EOS, eos_token_id=TOY_EOS,
                  output_scores=True, return_dict_in_generate=True)
assert np.array_equal(out.sequences, final["sequences"])
assert np.array_equal(out.sequences_scores, final["sequence_scores"])

# %% [markdown]
# ## 2. Length penalty  `# NEW`
#
# A finished hypothesis scores `sum_logprobs / length ** length_penalty` (`BeamHypotheses.add`).
# Summed log-probs only go down as a sequence grows, so with penalty 0 short sequences win;
# penalty > 0 favours longer ones. The 4.26 walkthrough's examples: "今天天气很好" (6 tokens, sum -0.6)
# against "今天天气真的真的很好" (10 tokens, sum -0.8).

# %% [markdown]
# ![Score against length for several length penalties](../docs/img/length-penalty.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/length-penalty.svg`).*

# %%
for alpha, short_by_hand, long_by_hand in ((0.0, -0.6, -0.8), (1.0, -0.6 / 6, -0.8 / 10), (2.0, -0.6 / 36, -0.8 / 100)):
    h = BeamHypotheses(num_beams=2, length_penalty=alpha, early_stopping=False)
    h.add(np.zeros(6, dtype=np.int64), -0.6, generated_len=6)
    h.add(np.zeros(10, dtype=np.int64), -0.8, generated_len=10)
    (s_short, _, _), (s_long, _, _) = h.beams
    winner = "short" if s_short > s_long else "long"
    print(f"length_penalty={alpha}: short {s_short:.4f}, long {s_long:.4f} -> {winner} wins")
    assert np.isclose(s_short, short_by_hand) and np.isclose(s_long, long_by_hand)
    assert winner == ("short" if alpha == 0.0 else "long")
# -> length_penalty=0.0: short -0.6000, long -0.8000 -> short wins    (eg1)
# -> length_penalty=1.0: short -0.1000, long -0.0800 -> long wins     (eg2)
# -> length_penalty=2.0: short -0.0167, long -0.0080 -> long wins     (eg3: a larger gap)

# %% [markdown]
# ## 3. When is a prompt done? `early_stopping`  `# NEW`
#
# Once K hypotheses are kept, `is_done(best, cur_len)` compares the worst kept score `w` with what
# the best running candidate (sum of log-probs `best`) could still reach:
#
# - `True`: done at once;
# - `False` (the default, a heuristic): done if `w >= best / (cur_len - prompt) ** alpha`, as if
#   the running beam stopped now;
# - `"never"`: with alpha > 0, assume it runs to `max_length`: `w >= best / (max_length - prompt) ** alpha`.
#
# One kept hypothesis with score -2.0 / 2 = -1.0 (alpha = 1, 2 generated tokens), prompt length 0:

# %%
rows = {}
for early in (True, False, "never"):
    h = BeamHypotheses(num_beams=1, length_penalty=1.0, early_stopping=early, max_length=10)
    h.add(np.zeros(2, dtype=np.int64), -2.0, generated_len=2)
    rows[early] = [h.is_done(best, cur_len=3) for best in (-2.5, -3.5)]
    print(f"early_stopping={early!s:>5}: best -2.5 -> {rows[early][0]}, best -3.5 -> {rows[early][1]}")
# -> True : done, done
# -> False: -1.0 >= -2.5/3 = -0.83? no;  -1.0 >= -3.5/3 = -1.17? yes
# -> never: -1.0 >= -2.5/10? no;          -1.0 >= -3.5/10? no
assert rows == {True: [True, True], False: [False, True], "never": [False, False]}

# %% [markdown]
# ## 4. On GPT-2  `# NEW`
#
# `beam_search` with 4 beams and the default length penalty 1.0. `sequences_scores` is the
# length-normalised sum of log-probs; recompute it from a plain forward pass (no cache, no beams).

# %% [markdown]
# ![The beam search tree of a five-step run on the shipped model](../docs/img/beam-tree-shakespeare.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/beam-tree-shakespeare.svg`).*

# %%
gpt2, tokenizer = load()
EOS = gpt2.config.eos_token_id
prompt = tokenizer.encode("ROMEO:\nI")[None, :]
T, K = prompt.shape[1], 4
out = beam_search(gpt2, np.repeat(prompt, K, axis=0), BeamSearchScorer(batch_size=1, num_beams=K),
                  max_length=T + 12, pad_token_id=EOS, eos_token_id=EOS, output_scores=True,
                  return_dict_in_generate=True)
print(show(tokenizer, out.sequences[0]), float(out.sequences_scores[0]))
# -> 'ROMEO:\nI will not be so.\n\nKING EDWARD:\n' -1.3557...
print(out.beam_indices.tolist())          # -> per generated token, the beam row it extended (-1: padding)
# -> [[0, 1, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, -1, -1, -1, -1, -1]]

generated = out.sequences[0, T:].tolist()
if EOS in generated:                      # a finished hypothesis ends at its first eos (which is scored)
    generated = generated[: generated.index(EOS) + 1]
full = log_softmax(gpt2(out.sequences[:, : T + len(generated)]).logits[0])    # (T_out, V)
logprobs = [float(full[T - 1 + i, tok]) for i, tok in enumerate(generated)]
by_hand = sum(logprobs) / len(generated) ** 1.0
print(f"recomputed {by_hand:.5f}")                    # -> recomputed -1.35576
assert np.isclose(out.sequences_scores[0], by_hand, rtol=1e-4, atol=1e-5)

greedy = greedy_search(gpt2, prompt, max_length=T + 12, pad_token_id=EOS, eos_token_id=EOS)
g = log_softmax(gpt2(greedy).logits[0])
greedy_logprob = sum(float(g[T - 1 + i, t]) for i, t in enumerate(greedy[0, T:]))
print(f"sum log p: greedy {greedy_logprob:.3f}, beam {sum(logprobs):.3f}")
# -> sum log p: greedy -17.756, beam -16.269   (beam search found a more probable 12-token continuation)

# %% [markdown]
# ## 5. Step through a beam search  `# NEW`
#
# In a notebook (with the `notebooks` extra), the cell below shows a slider (and a play button) over
# the steps of the toy tree's beam search: each position redraws the tree of
# `docs/img/beam-tree-toy.svg` up to that step -- which candidates each beam proposed, which K were
# kept, which were pruned -- and the last one adds the finished pool. `beam_stepper("shakespeare")`
# steps through the shipped model's search of the docs (`docs/img/beam-tree-shakespeare.svg`). Run as a
# script it prints each step's candidates and their fate.

# %%
from _widgets import beam_steps, beam_stepper  # noqa: E402

beam_stepper("toy")                                           # -> slider (notebook) or the steps as text
toy_run = beam_steps("toy")
assert [sum(c["status"] == "kept" for c in s["candidates"]) for s in toy_run["steps"]] == [2, 2]   # K = 2
assert toy_run["returned"][0] == "The dog has"                # 0.36, the page's answer

# %% [markdown]
# **What to remember.** Beam search keeps K prefixes, ranks 2K candidates, moves eos-ending ones
# into a pool of K finished hypotheses, and stops when the pool cannot be beaten. The length
# penalty (default 1.0, *not* neutral) and `early_stopping` decide what "beaten" means.
# Tutorial 06 makes the K beams differ from each other.

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
# 1. **`hypothesis_score(sum_logprobs, generated_len, length_penalty)`** ★: the score `BeamHypotheses.add`
#    gives a finished hypothesis.
#    - score = sum_logprobs / generated_len ** length_penalty, with `generated_len` the generated tokens
#      (eos included), not the whole sequence.
# 2. **`is_done(worst_score, best_sum_logprobs, cur_len, length_penalty, early_stopping, max_length,
#    decoder_prompt_len)`** ★★★: `BeamHypotheses.is_done` for a pool that is already full (the worst
#    hypothesis scores `worst_score`); a bool.
#    - `early_stopping=True`: done as soon as the pool is full, whatever the scores.
#    - `False`: done when worst_score >= best_sum_logprobs / (cur_len - decoder_prompt_len) **
#      length_penalty (done on equality).
#    - `"never"`: the same with the largest reachable length, max_length - decoder_prompt_len, when
#      length_penalty > 0; for length_penalty <= 0 it uses the current length like False.
#
# Solutions: `tutorials/solutions/lab05_beam_search.py` (run it to see the checker pass). Try first.

# %%
from _labs import check, hint  # noqa: E402


def hypothesis_score(sum_logprobs, generated_len, length_penalty):
    raise NotImplementedError   # YOUR CODE: a float


def is_done(worst_score, best_sum_logprobs, cur_len, length_penalty, early_stopping, max_length,
            decoder_prompt_len):
    raise NotImplementedError   # YOUR CODE: True or False


check("hypothesis_score", hypothesis_score)
check("is_done", is_done)
