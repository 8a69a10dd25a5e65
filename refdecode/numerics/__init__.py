"""The numerics wing: float32 arithmetic, plain and torch-exact, for everything above it (the ground floor).

- ``plain.py``: NumPy's softmax, log_softmax and the activations (the model's numerics; what a reader
  expects ``softmax`` to be);
- ``torch_cpu.py``: torch 2.x's CPU ``softmax``, ``log_softmax`` and ``cumsum`` bit for bit (the lane
  order of its vector kernels), for the rules whose kept set the last bit decides;
- ``torch_reduce.py``: torch's CPU ``sum`` over the last axis bit for bit (its cascade over 8 lanes), and
  ``logsumexp`` and ``Categorical(logits=...).entropy()`` built on it (eta's entropy), and torch's elementwise
  ``exp`` / ``log`` / ``sqrt`` (``vml_*``);
- ``mkl_vml.py``: those three bit for bit, MKL's VML kernels (what torch's CPU build calls) written out;
- ``sleef.py``: the SLEEF ``expf`` / ``logf`` those kernels call, and an exact float32 FMA;
- ``introsort.py``: ``torch.sort``'s CPU order on ties (libstdc++'s introsort);
- ``ggml.py``: llama.cpp's CPU GELU, an fp16 lookup table (an engine's numerics, for its profile).

Nothing here imports the rest of the package. Docs: docs/last-bit.md.
"""

from .plain import ACT2FN, gelu, gelu_new, log_softmax, relu, silu, softmax
from .torch_cpu import on_finite_support, torch_cumsum, torch_log_softmax, torch_scatter, torch_softmax, torch_sort
from .torch_reduce import categorical_entropy, torch_logsumexp, torch_nansum, torch_sum, vml_exp, vml_log, vml_sqrt
from .introsort import torch_cpu_sort_order, torch_order_at_cut
from .ggml import ggml_gelu_fp16

__all__ = [
    "softmax", "log_softmax", "gelu_new", "gelu", "relu", "silu", "ACT2FN",
    "torch_softmax", "torch_log_softmax", "torch_cumsum", "torch_sort", "torch_scatter", "on_finite_support",
    "torch_sum", "torch_nansum", "torch_logsumexp", "categorical_entropy", "vml_exp", "vml_log", "vml_sqrt",
    "torch_cpu_sort_order", "torch_order_at_cut", "ggml_gelu_fp16",
]
