"""Stage 3: logits -> scores. Every logits processor and warper, one interface: ``(input_ids, scores) -> scores``.

``input_ids`` int (N, T), ``scores`` float32 (N, V) in, a NEW float32 (N, V) array out (never in place).

- ``logits_process.py``: the base classes and the classic processors (repetition penalty, no-repeat n-gram,
  min length, min new tokens, Hamming diversity);
- ``logits_warp.py``: temperature, top-k, top-p (and the source documents' top-p variants);
- ``truncation_warpers.py``: typical, epsilon, eta and min-p sampling (the truncation rules past top-p);
- ``bad_words_and_forcing.py``: bad words, sequence bias, prefix constraints, forced / suppressed tokens;
- ``prompt_penalties.py``: the prompt's repetition penalty and n-gram ban (``encoder_*``);
- ``serving_penalties.py``: the serving API's presence and frequency penalties and logit bias (in no version
  of transformers);
- ``guidance.py``: classifier-free guidance (runs a model it is given);
- ``exponential_decay.py``: the exponentially growing eos bonus (``exponential_decay_length_penalty``);
- ``score_cleanup.py``: NaN/inf removal and log-softmax renormalisation;
- ``transformers5.py``: transformers 5.x's processor rules where they depart from 4.38.2 (``semantics="5"`` and
  the ``transformers-5`` engine profile), the one home for a later version's rules;
- ``arguments.py``: the checks of their arguments (and the decorator that runs them before a rule).

The order ``generate`` builds them in is :mod:`refdecode.pipeline`. Processors never import decoding; the
float details of the rules (torch's softmax, cumsum and sort order) come from :mod:`refdecode.numerics`.
"""
