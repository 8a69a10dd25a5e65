# %% [markdown]
# # 07 · `generate()` end to end, and porting transformers code
#
# Tutorials 03-06 called each algorithm with hand-built processors, warpers and scorers.
# `generate(model, input_ids, **config)` builds all of that from `GenerationConfig` fields, the
# way transformers 4.38.2's `model.generate(...)` does, and picks the algorithm:
#
# | config | algorithm |
# |---|---|
# | `num_beams=1, do_sample=False` | `greedy_search` (tutorial 03) |
# | `num_beams=1, do_sample=True` | `sample` (tutorial 04) |
# | `num_beams>1, do_sample=False` | `beam_search` (tutorial 05) |
# | `num_beams>1, do_sample=True` | `beam_sample` (tutorial 06) |
# | `num_beams>1, num_beam_groups>1` | `group_beam_search` (tutorial 06) |
#
# New here: `generate` and `GenerationConfig`, each mode checked against the explicit call it
# stands for, a batch of prompts with left padding, and a side-by-side port of transformers code.

# %%
import numpy as np
from _common import load, model_dir, show

from refdecode import (
    BeamSearchScorer,
    GenerationConfig,
    HammingDiversityLogitsProcessor,
    LogitsProcessorList,
    NoRepeatNGramLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    beam_search,
    generate,
    greedy_search,
    group_beam_search,
    sample,
)
from refdecode.dispatch import generation_mode

model, tokenizer = load()
EOS = model.config.eos_token_id
prompt = tokenizer.encode("ROMEO:\nI")[None, :]
T, N = prompt.shape[1], 15

# %% [markdown]
# ## 1. One call  `# NEW`
#
# ![One sampled step of the shipped model through every stage of generate(), then the loop](../docs/img/pipeline-overview.svg)
#
# *Drawn from refdecode's own run by `tools/pictures/make_pictures.py` (`docs/img/pipeline-overview.svg`).*
#
# Keyword arguments are `GenerationConfig` fields with transformers' names and defaults
# (`max_length=20` counts the prompt; `max_new_tokens` does not). GPT-2 has no pad token, so
# `generate` uses eos as pad, as transformers does ("Setting `pad_token_id` to `eos_token_id`").

# %%
out = generate(model, prompt, max_new_tokens=N)                       # greedy
print(out.shape, show(tokenizer, out[0, T:]))                         # -> (1, 20) "'ll not be so.\n\nCOUNTESS:\nI'll not"
assert np.array_equal(out, greedy_search(model, prompt, max_length=T + N, pad_token_id=EOS, eos_token_id=EOS))

for kwargs in ({}, {"do_sample": True}, {"num_beams": 4}, {"num_beams": 4, "do_sample": True},
               {"num_beams": 4, "num_beam_groups": 2, "diversity_penalty": 1.0}):
    print(f"{kwargs!s:>60} -> {generation_mode(GenerationConfig(**kwargs))}")
# -> {} -> greedy_search ... {'num_beams': 4, 'num_beam_groups': 2, 'diversity_penalty': 1.0} -> group_beam_search
assert [generation_mode(GenerationConfig(**kw)) for kw in ({}, {"do_sample": True}, {"num_beams": 4})] == \
    ["greedy_search", "sample", "beam_search"]

# %% [markdown]
# ## 2. Each mode is the explicit call of the earlier tutorials  `# NEW`
#
# What `generate` builds, written out: the prompt repeated once per beam, a `BeamSearchScorer`,
# processors from `no_repeat_ngram_size` / `repetition_penalty` / `min_length` / `diversity_penalty`,
# warpers from `temperature` -> `top_k` -> `top_p` (and `top_k=50` is the default whenever sampling).

# %%
# beam search: the 4.26 walkthrough's beam quick start (3 beams, 2 returned, NoRepeatNGram(2)) with GPT-2
via_generate = generate(model, prompt, max_new_tokens=N, num_beams=3, num_return_sequences=2, no_repeat_ngram_size=2)
scorer = BeamSearchScorer(batch_size=1, num_beams=3, num_beam_hyps_to_keep=2, max_length=T + N)
explicit = beam_search(model, np.repeat(prompt, 3, axis=0), scorer,
                       logits_processor=LogitsProcessorList([NoRepeatNGramLogitsProcessor(2)]),
                       max_length=T + N, pad_token_id=EOS, eos_token_id=EOS)
for row in via_generate:
    print("beam:", show(tokenizer, row[T:]))
# -> beam: ' will not be so.\n\nCASSIUS LEONATUS'
# -> beam: ' will not be so.\n\nCASSIUS LEONATO'
assert np.array_equal(via_generate, explicit)

# sampling: temperature -> top-k -> top-p, with a seed
via_generate = generate(model, prompt, max_new_tokens=N, do_sample=True, temperature=0.8, top_p=0.9, seed=0)
explicit = sample(model, prompt, logits_warper=[TemperatureLogitsWarper(0.8), TopKLogitsWarper(50),
                                                TopPLogitsWarper(0.9)],
                  max_length=T + N, pad_token_id=EOS, eos_token_id=EOS, seed=0)
print("sample:", show(tokenizer, via_generate[0, T:]))     # -> "'ll not, to him all in my father's son,\nI'll"
assert np.array_equal(via_generate, explicit)

# group beam search: diversity_penalty adds the Hamming processor
via_generate = generate(model, prompt, max_new_tokens=N, num_beams=4, num_beam_groups=2, diversity_penalty=1.0,
                        num_return_sequences=2)
scorer = BeamSearchScorer(batch_size=1, num_beams=4, num_beam_groups=2, num_beam_hyps_to_keep=2, max_length=T + N)
explicit = group_beam_search(model, np.repeat(prompt, 4, axis=0), scorer,
                             logits_processor=LogitsProcessorList([HammingDiversityLogitsProcessor(1.0, 4, 2)]),
                             max_length=T + N, pad_token_id=EOS, eos_token_id=EOS)
assert np.array_equal(via_generate, explicit)

# %% [markdown]
# ## 3. Everything the loop saw: `return_dict_in_generate`  `# NEW`
#
# Same field names as transformers: `sequences`, `scores` (one (B·K, V) array per step: the
# processed scores), and for beam modes `sequences_scores` and `beam_indices`.

# %%
res = generate(model, prompt, max_new_tokens=5, num_beams=2, return_dict_in_generate=True, output_scores=True)
print(res.sequences.shape, len(res.scores), res.scores[0].shape, res.sequences_scores.shape, res.beam_indices.shape)
# -> (1, 10) 5 (2, 50257) (1,) (1, 10)
assert len(res.scores) == res.sequences.shape[1] - T == 5 and res.scores[0].shape == (2, model.config.vocab_size)

# %% [markdown]
# ## 4. A batch of prompts  `# NEW`
#
# Left padding and an attention mask (tutorial 02): every row of the batch gives the tokens its
# prompt gives alone. (Not with `repetition_penalty`: transformers 4.38.2 counts the pad tokens --
# eos, for GPT-2 -- as "already generated" and penalises eos in padded rows; refdecode does the same.)

# %%
texts = ["ROMEO:\nI", "JULIET:\nO Romeo, Romeo! wherefore art thou"]
input_ids, attention_mask = tokenizer.encode_batch(texts)             # (2, T_max), left-padded
batch = generate(model, input_ids, attention_mask=attention_mask, max_new_tokens=10)
for b, text in enumerate(texts):
    one = tokenizer.encode(text)[None, :]
    alone = generate(model, one, max_new_tokens=10)[0, one.shape[1]:]          # new tokens only
    new = batch[b, input_ids.shape[1]:]
    print(show(tokenizer, new))       # -> "'ll not be so.\n\nCOUNTESS" / ' art thou?\n\nROSALIND:'
    # the same tokens; if this row ended early, the batch pads it with eos while the other row runs on
    assert np.array_equal(new[: len(alone)], alone) and (new[len(alone):] == EOS).all()

# %% [markdown]
# ## 5. Configs: from the model directory, validated once  `# NEW`
#
# `GenerationConfig.from_pretrained(dir)` reads `generation_config.json`. Like transformers'
# `from_pretrained`, `GPT2.from_pretrained` loads that file into `model.generation_config`, which
# `generate` uses as its defaults; `generation_config=` replaces it for one call and keyword
# arguments override single fields. Bad values raise `ValueError` naming the field
# (transformers often only warns, then fails later).

# %%
config = GenerationConfig.from_pretrained(model_dir())
print(config.eos_token_id, config.max_length)     # -> 50256 20 (the file sets only the special ids)
assert config == model.generation_config          # NEW: loaded with the model, as in transformers
out = generate(model, prompt, generation_config=config, max_new_tokens=N)   # kwargs override the config
assert out.shape[1] <= T + N
try:
    generate(model, prompt, num_beams=2, num_return_sequences=3)
except ValueError as err:
    print(err)                   # -> `num_return_sequences` (3) has to be smaller or equal to `num_beams` (2).
else:
    raise AssertionError("expected a ValueError")

# %% [markdown]
# ## 6. Porting transformers code
#
# | transformers 4.38.2 (torch) | refdecode (NumPy) |
# |---|---|
# | `tok = AutoTokenizer.from_pretrained(path)` | `tok = Tokenizer(path)` |
# | `tok.padding_side = "left"; tok.pad_token = tok.eos_token` | (`encode_batch` always pads on the left with eos) |
# | `model = GPT2LMHeadModel.from_pretrained(path)` | `model = GPT2.from_pretrained(path)` |
# | `enc = tok(texts, return_tensors="pt", padding=True)` | `input_ids, attention_mask = tok.encode_batch(texts)` |
# | `torch.manual_seed(0)` | `seed=0` (or `rng=np.random.default_rng(0)`) in the call |
# | `out = model.generate(**enc, max_new_tokens=20, num_beams=4)` | `out = generate(model, input_ids, attention_mask=attention_mask, max_new_tokens=20, num_beams=4)` |
# | `model.beam_search(input_ids, beam_scorer, ...)` | `beam_search(model, input_ids, beam_scorer, ...)` |
# | `input_ids.repeat_interleave(num_beams, dim=0)` | `np.repeat(input_ids, num_beams, axis=0)` |
# | `tok.batch_decode(out, skip_special_tokens=True)` | `[tok.decode(r, skip_special_tokens=True) for r in out]` |
#
# The processors, warpers, stopping criteria, `BeamSearchScorer` and `GenerationConfig` keep their
# transformers names and arguments. Tokens match transformers exactly for greedy and beam modes;
# for sampling, the distributions match but torch's and NumPy's random streams differ. From the
# shell, `refdecode "ROMEO:" --num-beams 4` runs the same `generate`.
#
# The same program in both, side by side:

# %%
# transformers 4.38.2:
#   tok = AutoTokenizer.from_pretrained("models/tiny-shakespeare"); tok.padding_side = "left"
#   tok.pad_token = tok.eos_token
#   model = GPT2LMHeadModel.from_pretrained("models/tiny-shakespeare")
#   enc = tok(texts, return_tensors="pt", padding=True)
#   out = model.generate(**enc, max_new_tokens=10, num_beams=4, num_return_sequences=2, no_repeat_ngram_size=2)
#   print(tok.batch_decode(out, skip_special_tokens=True))
input_ids, attention_mask = tokenizer.encode_batch(texts)
out = generate(model, input_ids, attention_mask=attention_mask, max_new_tokens=10, num_beams=4,
               num_return_sequences=2, no_repeat_ngram_size=2)
print([tokenizer.decode(r, skip_special_tokens=True) for r in out])
# -> ['ROMEO:\nI will not be so.\n\nKING EDWARD', "ROMEO:\nI'll not, my lord.\n\nCASS",
# ->  'JULIET:\nO Romeo, Romeo! wherefore art thou?\n\nCARDINAL WOLSEY', 'JULIET:\nO Romeo, ... PANDER:']
assert out.shape[0] == 2 * 2 and out.shape[1] <= input_ids.shape[1] + 10        # (B*R, T_out)

# %% [markdown]
# **What to remember.** `generate` = config -> processors/warpers -> one of five loops. When a
# result surprises you, call the loop yourself with the objects `generate` would build (section 2)
# and look inside (tutorials 03-06).

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
# 1. **`generation_mode(config)`** ★: which loop `generate()` runs for a dict of GenerationConfig fields
#    (`{"num_beams": 4, "do_sample": True}` -> `"beam_sample"`).
#    - Answer with transformers' mode names: "greedy_search", "sample", "beam_search", "beam_sample",
#      "group_beam_search".
#    - Only `do_sample=True` samples: `top_k` alone changes nothing (it only warns).
#    - num_beams > 1 with num_beam_groups > 1 is "group_beam_search".
# 2. **`stop_on_token`** ★★: a `StoppingCriteria` subclass, built as `stop_on_token(token_id)`. The checker
#    passes it to `generate` (`stopping_criteria=[...]`) and compares with a model whose eos is that token.
#    - Stop once the **last** token of every row (`input_ids[:, -1]`) is `token_id`; return a bool.
#
# Solutions: `tutorials/solutions/lab07_generate.py` (run it to see the checker pass). Try first.

# %%
from _labs import check, hint  # noqa: E402


from refdecode import StoppingCriteria


def generation_mode(config):
    raise NotImplementedError   # YOUR CODE: a string


class stop_on_token(StoppingCriteria):
    def __init__(self, token_id):
        self.token_id = token_id

    def __call__(self, input_ids, scores, **kwargs):
        raise NotImplementedError   # YOUR CODE: True to stop


check("generation_mode", generation_mode)
check("stop_on_token", stop_on_token)
