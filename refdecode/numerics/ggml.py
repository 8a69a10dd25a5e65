r"""ggml's CPU GELU (llama.cpp's forward pass), as ``GGML_GELU_FP16`` builds it: a lookup table in half precision.

Contract: ``ggml_gelu_fp16(x)`` takes float32 and returns float32 of the same shape: the tanh GELU of ``x``
rounded to float16, itself rounded to float16; 0 for x <= -10 and x itself for x >= 10.

ggml (``ggml/src/ggml-cpu/vec.h`` :987-1000, ``ggml_vec_gelu_f32`` with ``GGML_GELU_FP16``) converts each input to
fp16 and reads ``ggml_table_gelu_f16[fp16 bits]``, a table of every fp16 value's GELU computed in float and stored
as fp16; beyond |x| >= 10 it returns 0 or x. So the activation's output holds fp16's 11 significant bits, not
float32's 24: llama.cpp's logits differ from transformers' by up to a few 1e-3 (examples/engines/llama-cpp/
FINDINGS.md, "Numerics"). The table's own float GELU (ggml's ``tanhf`` formula) is taken as refdecode's
``gelu_new``; not checked bit for bit against ggml's table: the two can round to different fp16 values only where
the GELU lies within float32's error of an fp16 rounding boundary.

Docs: docs/last-bit.md.
"""

from __future__ import annotations

import numpy as np

from .plain import gelu_new

__all__ = ["ggml_gelu_fp16"]


def ggml_gelu_fp16(x: np.ndarray) -> np.ndarray:
    """GELU through ggml's fp16 table: fp16(gelu_new(fp16(x))), 0 below -10, x above 10 (float32 in, float32 out)."""
    x = np.asarray(x, dtype=np.float32)
    table = gelu_new(x.astype(np.float16).astype(np.float32)).astype(np.float16).astype(np.float32)
    return np.where(x <= -10.0, np.float32(0), np.where(x >= 10.0, x, table)).astype(np.float32)
