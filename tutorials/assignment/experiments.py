"""Problem 5 of the assignment (docs/course/assignment.md): how temperature and top-p trade diversity for
likelihood. Graded by hand with the handout's rubric: this file, your table and analysis.md.

Fill in the three measures, then run ``python experiments.py``: for each setting it samples N continuations of
each prompt and prints one row per setting (distinct-1, distinct-2, self-BLEU, mean log-likelihood per token).
You may generate with refdecode's ``generate`` here (the experiments are not auto-graded) or with your own
``decoding.sample``; say which in analysis.md. Use the same seeds for every setting.
"""

from __future__ import annotations

import numpy as np

PROMPTS = ["ROMEO:\n", "KING HENRY:\n", "First Citizen:\n", "JULIET:\n"]
SETTINGS = [dict(temperature=t, top_p=1.0) for t in (0.5, 0.8, 1.0, 1.3)] + \
           [dict(temperature=1.0, top_p=p) for p in (0.5, 0.8, 0.95)]
N_SAMPLES, MAX_NEW_TOKENS = 8, 40


def distinct_n(texts, n):
    """Distinct-n (Li et al. 2016): the number of distinct n-grams of tokens over all ``texts`` (lists of token
    ids), divided by the total number of n-grams. 1.0 = nothing repeats; near 0 = the same phrases again."""
    raise NotImplementedError


def self_bleu(texts, max_n=4):
    """Self-BLEU (Zhu et al. 2018, Texygen): the mean over texts of BLEU-``max_n`` of one text (hypothesis)
    against all the others (references): geometric mean of the clipped n-gram precisions for n = 1..max_n, times
    the brevity penalty. Higher = the samples resemble each other (less diverse). Say how you smooth zero counts."""
    raise NotImplementedError


def log_likelihood(model, prompt_ids, continuation_ids):
    """The model's own mean log-probability per token of ``continuation_ids`` after ``prompt_ids`` (the untempered
    model: temperature 1, no truncation). Higher = what the model itself finds more likely."""
    raise NotImplementedError


def run():
    """Sample, measure and print one row per setting."""
    from refdecode import GPT2, Tokenizer, generate
    from selfcheck import MODEL_DIR

    model, tok = GPT2.from_pretrained(MODEL_DIR), Tokenizer(MODEL_DIR)
    print("setting                       distinct-1  distinct-2  self-BLEU  log-lik/token")
    for setting in SETTINGS:
        texts, loglik = [], []
        for p, prompt in enumerate(PROMPTS):
            ids = np.array([tok.encode(prompt)])
            for s in range(N_SAMPLES):
                out = generate(model, ids, do_sample=True, top_k=0, max_new_tokens=MAX_NEW_TOKENS, seed=1000 * p + s,
                               **setting)
                new = out[0, ids.shape[1]:].tolist()
                texts.append(new)
                loglik.append(log_likelihood(model, ids[0].tolist(), new))
        print(f"{str(setting):30s}{distinct_n(texts, 1):10.3f}{distinct_n(texts, 2):12.3f}{self_bleu(texts):11.3f}"
              f"{np.mean(loglik):15.3f}")


if __name__ == "__main__":
    run()
