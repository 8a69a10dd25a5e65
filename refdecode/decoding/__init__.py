"""Stage 4 and 5: scores -> the next token(s), until done. The decoding loops and what they share.

- ``loop.py``: what every loop shares (the model calls through the cache, defaults, NaN check, row bookkeeping);
- ``greedy.py``, ``sampling.py``, ``contrastive_search.py``: one token per row per step;
- ``beam/``: beam search and beam sample, group (diverse) beam search, constrained beam search, with the
  scorer, the hypotheses and the beam bookkeeping (only beam loops import it);
- ``assisted_decoding.py`` + ``candidate_generator.py``: several drafted tokens checked per model call;
- ``stopping_criteria.py``: when a row, or the batch, is done;
- ``randomness.py``: every random number (the generator, the multinomial draw, the acceptance uniforms).

The loops are siblings: each imports ``loop.py``, none imports another. Decoding never imports the
reference tooling: a loop is watched through :mod:`refdecode.recorder`'s interface.
"""
