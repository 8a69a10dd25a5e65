r"""The weight layout of the fast forward pass: every 2-D weight stored column-major, read so from the file.

Contract: :func:`load_params_column_major` returns the same nested float32 parameters as
:func:`refdecode.model.checkpoint.load_params` (same names, shapes and values), with ``wte``, an untied
``lm_head`` and the Conv1D weights ``c_attn``, ``c_proj``, ``c_fc`` laid out column-major: the same values,
stored so that the LM head ``x @ wte.T`` streams one contiguous matrix and the products of
:func:`refdecode.model.fast.forward.linear` can take W^T's contiguous rows (a gemv for one row, blocks for 2-16).
:func:`head_rows` adds a row-major copy of the LM head for the few-row steps, on first use.
Only the fast forward pass asks for it (``GPT2.from_pretrained(path, forward="fast")``); the plain one
reads the weights as stored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import TensorInfo, checked_tensors, nest, read_header, read_tensor, to_float32  # noqa: F401  (read_header: the doctest)
from ..config import GPT2Config
from .products import storage_order

__all__ = ["load_params_measured", "load_params_column_major", "read_tensor_column_major", "transpose_into",
           "head_rows"]

#: The tensors stored column-major: the LM head matrices and the Conv1D weights.
MATRIX = re.compile(r"wte\.weight|lm_head\.weight|h\.\d+\.(attn|mlp)\.c_(attn|proj|fc)\.weight")


def load_params_measured(path: str | Path, config: GPT2Config) -> dict[str, Any]:
    """:func:`refdecode.model.checkpoint.load_params` (``mmap=False``) with each 2-D weight stored in the order in
    which this machine multiplies one row by it fastest (:func:`refdecode.model.fast.products.storage_order`,
    measured once per shape and process; ~0.1 s per shape).

    The weight W of a product ``x @ W`` is the Conv1D weight as stored (E_in, E_out) and, for the LM head, ``wte.T``
    (E, V): a row-major W keeps a Conv1D weight as in the file and stores ``wte`` column-major, a column-major W
    the reverse. GPT-2 124M on AVX2 (AMD EPYC): row-major for all but the MLP's c_proj (3072 -> 768); on the AVX-512
    VMs the column-major layout of :func:`load_params_column_major` had measured fastest for one row.
    """
    tensors = checked_tensors(path, config)
    out = {}
    for name, info in tensors.items():
        if MATRIX.fullmatch(name) is None or info.nbytes == 0:
            out[name] = to_float32(info.dtype, read_tensor(path, info))
            continue
        head = not name.startswith("h.")  # wte / lm_head (V, E): its product's W is the transpose
        shape = info.shape[::-1] if head else info.shape  # W (E_in, E_out)
        row_major_w = storage_order(shape) == "C"
        out[name] = _read_in(path, info, column_major=row_major_w == head)
    return nest(out)


def load_params_column_major(path: str | Path, config: GPT2Config) -> dict[str, Any]:
    """:func:`refdecode.model.checkpoint.load_params` (``mmap=False``) with the 2-D weights stored column-major.

    One tensor at a time, so two full copies of the weights never coexist (F32 matrices are read from the
    file in blocks straight into their new layout).
    """
    return nest({name: _read(path, name, info) for name, info in checked_tensors(path, config).items()})


def read_tensor_column_major(path: str | Path, info: TensorInfo, rows_per_read: int = 4096) -> np.ndarray:
    """A 2-D F32 tensor (V, E) read into column-major storage: the same values, kept in memory as (E, V) rows.

    Why: the tied LM head computes ``x @ wte.T`` every step. With ``wte`` column-major, ``wte.T`` is a
    C-contiguous (E, V) matrix and the product is one gemv streaming it front to back (GPT-2 124M, 2
    threads: 4.8 ms instead of 6.4 ms per token, and 11.6 ms instead of 19.5 ms for 4 beams; see
    benchmarks/README.md). The embedding lookup ``wte[ids]`` then gathers T strided rows, which costs
    nothing next to it. Blocks of ``rows_per_read`` rows are read and written transposed, so only one
    full copy of the matrix is ever in memory.

    >>> import tempfile
    >>> from safetensors.numpy import save_file
    >>> path = Path(tempfile.mkdtemp()) / "w.safetensors"
    >>> save_file({"w": np.arange(6, dtype=np.float32).reshape(3, 2)}, str(path))
    >>> w = read_tensor_column_major(path, read_header(path)["w"], rows_per_read=2)
    >>> w.tolist(), w.flags.f_contiguous
    ([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], True)
    """
    V, E = info.shape
    out = np.empty((E, V), dtype=np.float32)  # (E, V) row-major == (V, E) column-major
    with open(path, "rb") as f:
        for start in range(0, V, rows_per_read):
            n = min(rows_per_read, V - start)
            f.seek(info.offset + 4 * start * E)
            transpose_into(out[:, start : start + n], np.fromfile(f, dtype=np.float32, count=n * E).reshape(n, E))
    return out.T  # (V, E), a view


def head_rows(params: dict[str, Any]) -> np.ndarray:
    """The LM head's matrix (V, E) stored row-major, for the products of a few rows; made on first use, then kept in
    ``params["head_rows"]``.

    Why a second copy: one row streams the column-major head fastest (``x @ wte.T``, one contiguous gemv), but a
    few rows (beams, prompt lookup's verification) are multiplied in blocks of whole rows of W^T
    (:func:`refdecode.model.fast.forward.few_rows_product`), which must be contiguous. Made only when a decode
    first multiplies 2-16 rows (a beam step, prompt lookup's verification, or the prefill of a 2-16-token prompt): GPT-2 124M's ``wte``, 154 MB more, ~0.1 s once.
    A model whose head is already row-major (memory-mapped weights) gets it as it is, without a copy.

    >>> p = {"wte": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(3, 2))}
    >>> rows = head_rows(p)
    >>> bool(rows.flags.c_contiguous and np.array_equal(rows, p["wte"]) and head_rows(p) is rows)
    True
    """
    if "head_rows" not in params:
        head = params.get("lm_head", params["wte"])  # (V, E)
        if head.flags.c_contiguous:
            params["head_rows"] = head
        else:
            rows = np.empty(head.shape, dtype=np.float32)
            transpose_into(rows, np.asarray(head.T))  # (E, V) -> (V, E) row-major
            params["head_rows"] = rows
    return params["head_rows"]


def transpose_into(out: np.ndarray, a: np.ndarray, tile: int = 64) -> None:
    """``out[...] = a.T`` in square tiles; a (R, C) -> out (C, R).

    Why tiles: ``out[...] = a.T`` walks one of the two arrays with a stride of a whole row, so every
    element costs a cache miss; 64 x 64 tiles (16 kB) are read and written while they sit in the L1 cache
    (a (768, 3072) float32 matrix: 15 ms -> 2.3 ms; GPT-2's wte: 330 -> 55 ms).

    >>> out = np.empty((3, 2), dtype=np.float32)
    >>> transpose_into(out, np.arange(6, dtype=np.float32).reshape(2, 3), tile=2)
    >>> out.tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    R, C = a.shape
    for i in range(0, R, tile):
        for j in range(0, C, tile):
            out[j : j + tile, i : i + tile] = a[i : i + tile, j : j + tile].T



def _read(path: str | Path, name: str, info: TensorInfo) -> np.ndarray:
    """One tensor as float32: 2-D weights column-major, the others as stored."""
    return _read_in(path, info, column_major=MATRIX.fullmatch(name) is not None and info.nbytes > 0)


def _read_in(path: str | Path, info: TensorInfo, column_major: bool) -> np.ndarray:
    """One tensor as float32, stored column-major or as in the file (row-major)."""
    if column_major and info.dtype == "F32":
        return read_tensor_column_major(path, info)  # no second copy of the matrix
    tensor = to_float32(info.dtype, read_tensor(path, info))
    if not column_major:
        return tensor
    out = np.empty(tensor.shape[::-1], dtype=np.float32)  # F16/BF16: upcast, then reorder
    transpose_into(out, tensor)
    return out.T
