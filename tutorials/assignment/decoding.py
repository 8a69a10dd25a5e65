"""Problems 2-4 of the assignment (docs/course/assignment.md): write the whole decoding loop yourself.

Fill in the functions marked ``raise NotImplementedError``, in order: greedy (problem 2), then sampling
(problem 3), then beam search (problem 4). Check them on public cases with ``python selfcheck.py`` (in this
folder); the grader runs the same functions on hidden cases. Each must equal transformers 4.38.2's
``generate`` token for token (refdecode's ``generate`` is that answer); the rules below are what makes it exact.

What you get and may use:

- ``model(input_ids) -> logits``: ``input_ids`` int (N, T), no padding -> float32 (N, V), the logits of the
  next token after each row (``selfcheck.NextTokenModel``; also ``model.vocab_size``, ``model.eos_token_id``).
- numpy, and from refdecode only ``softmax`` and ``log_softmax`` (``from refdecode import log_softmax``), the
  model and the tokenizer. Nothing of refdecode's processors, decoding or ``generate``: in the grader they
  cannot be imported, and a function that calls them scores 0.

Rules shared by the three functions:

- ``input_ids`` is int (B, T) with B prompts of the same length; return int64 rows that start with the prompt.
- ``eos_token_id`` (an int, or None for "never stop"): a row that emits it is finished; every later token of
  that row is ``eos_token_id`` again (it is also the pad token). Stop when every row has finished, or after
  ``max_new_tokens`` steps, whichever comes first (so the result can be shorter than T + max_new_tokens).
- float32 throughout, as the model gives it (a Python float constant keeps an array float32).
"""

from __future__ import annotations

import numpy as np


# ---- problem 2: greedy (10 points) ------------------------------------------------------------------------


def greedy(model, input_ids, max_new_tokens, eos_token_id=None):
    """Append the highest-scoring token of each row, step by step.

    Ties: the lowest token id (what ``np.argmax`` returns). Returns int64 (B, T + n), n <= max_new_tokens.
    """
    raise NotImplementedError


# ---- problem 3: sampling (20 points) ----------------------------------------------------------------------


def warp(scores, temperature, top_k, top_p):
    """The warpers, in transformers' order: temperature, then top-k, then top-p. (N, V) float32 -> (N, V).

    - temperature: ``scores / temperature`` (1.0 changes nothing).
    - top-k (0 = off): every score below the k-th largest of its row becomes -inf; ties with the k-th stay;
      k larger than V keeps everything.
    - top-p (1.0 = off): sort each row ascending (ties: lower token id first), softmax the sorted row, take the
      cumulative sum in float64 and round it to float32; remove the sorted positions whose cumulative mass is
      ``<= float32(1 - top_p)``, but never the last one (the most probable token); removed scores become -inf.
    """
    raise NotImplementedError


def draw(probs, u):
    """One token per row from ``probs`` (N, V) float32 with the uniforms ``u`` (N,) in [0, 1).

    Inverse CDF, in float64: the token is the first index whose cumulative probability is larger than
    ``u * (the row's total)``; if rounding puts ``u * total`` at the total, the last token with p > 0.
    """
    raise NotImplementedError


def sample(model, input_ids, max_new_tokens, temperature, top_k, top_p, uniforms, eos_token_id=None):
    """Sampling: at step s, row b draws its token from softmax(warp(scores)) with ``uniforms[s, b]``.

    ``uniforms`` float64 (max_new_tokens, B); a finished row still uses up its uniform. Returns int64 (B, T + n).
    """
    raise NotImplementedError


# ---- problem 4: beam search (30 points) -------------------------------------------------------------------


def beam_search(model, input_ids, max_new_tokens, num_beams, length_penalty, early_stopping, eos_token_id=None):
    """Beam search with K = ``num_beams`` beams per prompt; returns the best finished hypothesis of each prompt.

    Returns ``(sequences, sequence_scores)``: int64 (B, W) and float32 (B,). The rules (transformers 4.38.2):

    1. Each prompt starts with K copies; running scores are 0 for beam 0 and -1e9 for the others (so step 1
       expands beam 0 only).
    2. Each step, every beam's ``log_softmax(logits)`` plus its running score gives K*V candidates per prompt;
       take the 2K best (ties: the lower ``beam * V + token`` first).
    3. Walk them best first: a candidate ending in eos is a finished hypothesis if its rank is < K (else it is
       skipped): its tokens without the eos, scored ``score / generated_len ** length_penalty`` with
       ``generated_len`` = the new tokens including the eos. The other candidates, in order, become the K
       running beams of the next step.
    4. A prompt keeps its K best finished hypotheses (a new one must beat the worst; when one too many, the
       lowest goes, the earliest on a tie). It is done when it holds K and: ``early_stopping=True``: at once;
       ``False``: the best candidate score of this step / generated_len ** length_penalty cannot beat the
       worst kept; ``"never"``: the same with ``max_new_tokens`` as the length when ``length_penalty > 0``.
       A done prompt takes no more hypotheses.
    5. Stop when every prompt is done or after ``max_new_tokens`` steps. Then the running beams of prompts
       not done join their pool (length = the new tokens so far); each prompt returns its best hypothesis (the
       later one on a tie). Rows shorter than W = min(longest + 1, T + max_new_tokens) get eos, then eos as pad.
    """
    raise NotImplementedError
