"""The beam loops and their bookkeeping: K partial sequences per prompt, finished ones kept as hypotheses.

- ``beam_scorer.py``: :class:`~refdecode.decoding.beam.beam_scorer.BeamHypotheses` (the pool of finished
  hypotheses: add, is_done) and :class:`~refdecode.decoding.beam.beam_scorer.BeamSearchScorer` (process,
  finalize), with the length penalty;
- ``bookkeeping.py``: candidates, the scorer's step, rows / cache / history following the beams, finalize;
- ``beam_search.py``: beam search and beam sample (one loop); ``group_beam_search.py``: diverse beam search;
- ``constraints.py``, ``constrained_beam_scorer.py``, ``constrained_beam_search.py``: beams that must
  contain given phrases (``force_words_ids``, ``constraints``).
"""
