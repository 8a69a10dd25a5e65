r"""The fast forward pass: GPT-2 as in :mod:`refdecode.model.gpt2`, rewritten to touch memory less, and its weight layout.

Opt-in: ``GPT2.from_pretrained(path, forward="fast")`` (:mod:`refdecode.model.modeling`) runs
:func:`~refdecode.model.fast.forward.gpt2_fast` on weights read by
:func:`~refdecode.model.fast.layout.load_params_measured`. Same contract and same math as the plain
:func:`refdecode.model.gpt2.gpt2`; logits agree to float32 rounding and ``generate`` picks the same tokens
(tests/model/fast/test_forward.py). This package imports :mod:`refdecode.model.gpt2`, never the reverse.

- ``forward.py``: the forward pass (blocked causal attention, in-place kernels, few-row products);
- ``products.py``: the weight products of 1-16 rows, each way chosen by a short measurement on the machine at hand;
- ``layout.py``: the weight layout (row- or column-major per shape, as measured) those products read fastest;
- ``llama.py``: the Llama family's forward pass on the same products (``Llama.from_pretrained(path, forward="fast")``),
  q/k/v and gate/up fused, grouped-query attention without repeating the cache.

Why it is opt-in, with the figures: docs/gpt2.md and benchmarks/README.md.
"""

from .forward import gpt2_fast
from .layout import load_params_column_major, load_params_measured

__all__ = ["gpt2_fast", "load_params_column_major", "load_params_measured"]
