r"""``model.safetensors`` -> GPT-2 parameters as float32 arrays, nested under the checkpoint's own names.

Contract: in comes a safetensors file (and the :class:`~refdecode.model.config.GPT2Config` that says which
tensors and shapes to expect); out comes a nested dict that :func:`refdecode.model.gpt2.gpt2` walks::

    params["wte"]                          float32 (V, E)      token embeddings, also the LM head (tied)
    params["wpe"]                          float32 (n_positions, E)
    params["h"][i]["ln_1"]["weight"|"bias"]                 float32 (E,)
    params["h"][i]["attn"]["c_attn"]["weight"|"bias"]       float32 (E, 3E), (3E,)
    params["h"][i]["attn"]["c_proj"]["weight"|"bias"]       float32 (E, E), (E,)
    params["h"][i]["ln_2"]["weight"|"bias"]                 float32 (E,)
    params["h"][i]["mlp"]["c_fc"]["weight"|"bias"]          float32 (E, n_inner), (n_inner,)
    params["h"][i]["mlp"]["c_proj"]["weight"|"bias"]        float32 (n_inner, E), (E,)
    params["ln_f"]["weight"|"bias"]                         float32 (E,)
    params["lm_head"]                      float32 (V, E)      only when tie_word_embeddings is False

The file format (https://github.com/huggingface/safetensors): 8 bytes little-endian u64 N, N bytes of
JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``, then the raw
little-endian tensor bytes, offsets relative to byte 8 + N. It is parsed here directly (a dozen lines)
so that each tensor is read on its own: with ``mmap=False`` (the default) each tensor is read into its
own array; with ``mmap=True`` an F32 tensor is a read-only view of the memory-mapped file (no copy,
loading takes milliseconds, pages are read on first use and shared between processes). F16 and BF16
tensors are upcast to float32 one tensor at a time, so two full copies of the weights never exist at once.

Why reading is the default: decoding GPT-2 124M streams all 500 MB of weights every step, and
measurements with ``benchmarks/bench_model.py`` (1 thread) gave ~10% more tokens/s with
weights in anonymous memory (NumPy asks the kernel for transparent huge pages there; page-cache
pages of a mapped file are 4 kB), for ~0.4 s more load time (from the page cache).
The fast forward pass reads the 2-D weights into another layout (column-major); that loader is
:func:`refdecode.model.fast.layout.load_params_column_major`, built on :func:`checked_tensors` below.

Two layouts are found in the wild and both are accepted:

* what ``save_pretrained`` writes: names prefixed ``transformer.`` (``transformer.h.0.ln_1.weight``), and
  sometimes ``lm_head.weight``;
* the hub's ``openai-community/gpt2`` file: no prefix, no ``lm_head``, and per-layer buffers
  ``h.N.attn.bias`` (the causal mask) and ``h.N.attn.masked_bias``, which are not weights and are ignored.

``lm_head.weight`` with tied embeddings (every GPT-2): transformers 4.38.2 ties ``lm_head.weight`` and
``transformer.wte.weight`` to ONE parameter before loading, then copies the file's tensors into it in
module order, so ``lm_head.weight`` (loaded last) wins for both the input embedding and the output
layer. refdecode does the same: if present, ``lm_head.weight`` is used as ``wte`` (checked on the
golden checkpoint ``f16_gelu`` in ``tests/model/test_gpt2.py``). With ``tie_word_embeddings: false`` both are kept.
Other unexpected tensors are ignored with a warning, as transformers does.

Docs: docs/gpt2.md.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import numpy as np

from .config import GPT2Config
from ..validation import check_allocation, describe, is_integer, warn

__all__ = ["TensorInfo", "read_header", "read_tensor", "to_float32", "expected_shapes", "checked_tensors",
           "load_params", "nest", "nonfinite_tensors"]

# safetensors dtype -> (numpy dtype of the stored bytes, item size), warn
_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"), "F64": np.dtype("<f8"),
           "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
           "U8": np.dtype("u1"), "BOOL": np.dtype("?")}
_BUFFER = re.compile(r"h\.\d+\.attn\.(bias|masked_bias)")  # causal-mask buffers, not weights


# ----------------------------------------------------------------------------------------------------
# safetensors file -> raw tensors (no conversion yet)
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives in a safetensors file: stored dtype name, shape, absolute byte offset, size."""

    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int


#: safetensors' own limit on the JSON header (its Rust reader refuses larger headers)
MAX_HEADER_BYTES = 100_000_000


def read_header(path: str | Path) -> dict[str, TensorInfo]:
    """Parse a safetensors header: ``{name: TensorInfo}``; no tensor data is read.

    Raises FileNotFoundError for a missing file, and ValueError naming the file (and the tensor) for a
    bad header: not JSON, an entry whose ``dtype``/``shape``/``data_offsets`` have the wrong JSON types,
    offsets that do not match the shape, tensors whose bytes overlap, or bytes beyond the end of the
    file (a truncated download).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint file not found: {path}")
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: not a safetensors file ({size} bytes, shorter than its 8-byte header size)")
        n = int.from_bytes(head, "little")
        if n > size - 8 or n > MAX_HEADER_BYTES:
            raise ValueError(f"{path}: truncated or not a safetensors file (header of {n} bytes, file of {size}, "
                             f"at most {MAX_HEADER_BYTES} allowed)")
        raw_header = f.read(n)
    try:
        header = json.loads(raw_header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: not a safetensors file (header is not JSON: {e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: not a safetensors file (header is not a JSON object)")
    tensors = {name: _tensor_info(path, name, info, 8 + n, size) for name, info in header.items()
               if name != "__metadata__"}
    _check_no_overlap(path, tensors)
    return tensors


def _tensor_info(path: Path, name: str, info: Any, data_start: int, size: int) -> TensorInfo:
    """One header entry ``{"dtype": str, "shape": [int, ...], "data_offsets": [begin, end]}`` -> TensorInfo."""
    def bad(why: str) -> ValueError:
        return ValueError(f"{path}: malformed header entry for tensor {name!r} ({why}): {describe(info)}")

    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
        raise bad('it must be an object with "dtype", "shape" and "data_offsets"')
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str):
        raise bad('"dtype" must be a string')
    if dtype not in _DTYPES:
        raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {dtype}")
    if not isinstance(shape, list) or not all(is_integer(d) and d >= 0 for d in shape):
        raise bad('"shape" must be a list of integers >= 0')
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(is_integer(o) for o in offsets):
        raise bad('"data_offsets" must be a list of two integers [begin, end]')
    begin, end = offsets
    nbytes = math.prod(shape) * _DTYPES[dtype].itemsize  # Python ints: no int64 overflow on absurd shapes
    if not 0 <= begin <= end or end - begin != nbytes:
        raise ValueError(f"{path}: tensor {name!r} has data_offsets {[begin, end]} for {nbytes} bytes")
    if data_start + end > size:
        raise ValueError(
            f"{path}: truncated file: tensor {name!r} needs bytes up to {data_start + end}, file has {size}"
        )
    return TensorInfo(dtype, tuple(shape), data_start + begin, nbytes)


def _check_no_overlap(path: Path, tensors: dict[str, TensorInfo]) -> None:
    """Two tensors may not share bytes (safetensors' own reader refuses such a file; ours read both)."""
    spans = sorted((t.offset, t.offset + t.nbytes, name) for name, t in tensors.items() if t.nbytes)
    for (_, end_a, a), (begin_b, _, b) in zip(spans, spans[1:]):
        if begin_b < end_a:
            raise ValueError(f"{path}: tensors {a!r} and {b!r} overlap in the file (bytes {begin_b} to "
                             f"{end_a} belong to both)")


def read_tensor(path: str | Path, info: TensorInfo, mmap: bool = False) -> np.ndarray:
    """One tensor in its stored dtype (BF16 as uint16) and shape.

    ``mmap=False``: read into a new array (one copy, in anonymous memory).
    ``mmap=True``: a read-only view of the memory-mapped file (no copy; pages are read on first use).
    """
    dtype = _DTYPES[info.dtype]
    if info.nbytes == 0:
        return np.zeros(info.shape, dtype=dtype)
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=info.offset, shape=info.shape)
    return np.fromfile(path, dtype=dtype, count=info.nbytes // dtype.itemsize, offset=info.offset).reshape(info.shape)


def to_float32(dtype: str, raw: np.ndarray) -> np.ndarray:
    """One stored tensor -> float32: F32 stays a view (no copy); F16 is upcast; BF16 is widened bitwise.

    bfloat16 is the top 16 bits of a float32, so shifting its bits left by 16 gives the float32 exactly.

    >>> to_float32("BF16", np.array([0x3F80, 0xC000], dtype=np.uint16))   # 1.0 and -2.0
    array([ 1., -2.], dtype=float32)
    """
    if dtype == "F32":
        return raw.view(np.ndarray)  # no copy (a plain ndarray view of a memmap)
    if dtype == "F16":
        return raw.astype(np.float32)
    if dtype == "BF16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    raise ValueError(f"expected a floating tensor (F32, F16 or BF16), got dtype {dtype}")


# ----------------------------------------------------------------------------------------------------
# raw tensors -> checked GPT-2 parameters
# ----------------------------------------------------------------------------------------------------


def expected_shapes(config: GPT2Config) -> dict[str, tuple[int, ...]]:
    """Every weight GPT-2 needs, by hub name (no ``transformer.`` prefix), with its shape.

    >>> shapes = expected_shapes(GPT2Config(vocab_size=10, n_positions=8, n_embd=4, n_layer=1, n_head=2))
    >>> shapes["wte.weight"], shapes["h.0.attn.c_attn.weight"], shapes["h.0.mlp.c_proj.weight"]
    ((10, 4), (4, 12), (16, 4))
    """
    return dict(_expected_items(config))


def _expected_items(config: GPT2Config) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every weight, in :func:`expected_shapes`' order, one at a time."""
    E, F = config.n_embd, config.inner_dim
    yield from {"wte.weight": (config.vocab_size, E), "wpe.weight": (config.n_positions, E)}.items()
    for i in range(config.n_layer):
        yield from {
            f"h.{i}.ln_1.weight": (E,), f"h.{i}.ln_1.bias": (E,),
            f"h.{i}.attn.c_attn.weight": (E, 3 * E), f"h.{i}.attn.c_attn.bias": (3 * E,),
            f"h.{i}.attn.c_proj.weight": (E, E), f"h.{i}.attn.c_proj.bias": (E,),
            f"h.{i}.ln_2.weight": (E,), f"h.{i}.ln_2.bias": (E,),
            f"h.{i}.mlp.c_fc.weight": (E, F), f"h.{i}.mlp.c_fc.bias": (F,),
            f"h.{i}.mlp.c_proj.weight": (F, E), f"h.{i}.mlp.c_proj.bias": (E,),
        }.items()
    yield from {"ln_f.weight": (E,), "ln_f.bias": (E,)}.items()
    if not config.tie_word_embeddings:
        yield "lm_head.weight", (config.vocab_size, E)


def checked_tensors(path: str | Path, config: GPT2Config) -> dict[str, TensorInfo]:
    """Where each weight GPT-2 needs lies in ``model.safetensors`` (either layout), by hub name; nothing is read.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: truncated/invalid file, or a tensor missing or of the wrong shape (naming the
            tensor, the expected shape and the one found).
    """
    path = Path(path)
    stored = read_header(path)
    # 0) sizes first: a config.json asking for n_layer=10**8 must not build 10**9 names before failing
    check_allocation("the weights", 4 * config.n_params(), f"{config.n_params():,} float32 parameters for "
                     f"`n_layer`={config.n_layer}, `n_embd`={config.n_embd}, `vocab_size`={config.vocab_size}, "
                     f"`n_positions`={config.n_positions}")
    n_needed = 12 * config.n_layer + 4 + (0 if config.tie_word_embeddings else 1)
    if n_needed > len(stored):  # name the first missing tensor without listing all n_needed names
        names = {k[len("transformer."):] if k.startswith("transformer.") else k for k in stored}
        if config.tie_word_embeddings and "lm_head.weight" in names:
            names.add("wte.weight")
        name, shape = next((n, s) for n, s in _expected_items(config) if n not in names)
        raise ValueError(f"{path}: missing tensor {name!r} (expected shape {shape}); the config (n_layer="
                         f"{config.n_layer}) needs {n_needed} tensors, the file holds {len(stored)}")
    # 1) strip save_pretrained's "transformer." prefix; keep lm_head.weight under its own name
    by_name = {(k[len("transformer."):] if k.startswith("transformer.") else k): v for k, v in stored.items()}
    shapes = expected_shapes(config)
    if config.tie_word_embeddings and "lm_head.weight" in by_name:
        by_name["wte.weight"] = by_name.pop("lm_head.weight")  # transformers 4.38.2: lm_head wins (see above)
    # 2) check names and shapes before reading anything
    for name, shape in shapes.items():
        if name not in by_name:
            raise ValueError(f"{path}: missing tensor {name!r} (expected shape {shape})")
        if by_name[name].shape != shape:
            raise ValueError(f"{path}: tensor {name!r} has shape {by_name[name].shape}, expected {shape}")
    unexpected = sorted(k for k in by_name if k not in shapes and not _BUFFER.fullmatch(k))
    if unexpected:
        warn(f"{path}: ignoring {len(unexpected)} unexpected tensors: {unexpected[:5]}")
    return {name: by_name[name] for name in shapes}


def load_params(path: str | Path, config: GPT2Config, mmap: bool = False) -> dict[str, Any]:
    """Read ``model.safetensors`` (either layout) into the nested float32 parameter dict described above.

    Args:
        path: the ``model.safetensors`` file.
        config: says which tensors and shapes to expect.
        mmap: F32 tensors are read into memory (False) or become views of the memory-mapped file (True).

    Raises: as :func:`checked_tensors`.
    """
    # 3) read and convert one tensor at a time, so two full copies of the weights never coexist
    flat = {name: to_float32(info.dtype, read_tensor(path, info, mmap))
            for name, info in checked_tensors(path, config).items()}
    return nest(flat)


def nest(flat: dict[str, np.ndarray], single: tuple[str, ...] = ("wte", "wpe", "lm_head")) -> dict[str, Any]:
    """``{"h.0.ln_1.weight": a, ...}`` -> ``{"h": [{"ln_1": {"weight": a}}], ...}`` (lists for layers).

    The modules named in ``single`` (GPT-2's ``wte``, ``wpe`` and ``lm_head``; Llama's ``embed_tokens`` and
    ``lm_head``) hold a single matrix each, so their ``.weight`` level is dropped.

    >>> nest({"h.0.ln_1.weight": 1, "h.1.ln_1.weight": 2, "wte.weight": 3})
    {'h': [{'ln_1': {'weight': 1}}, {'ln_1': {'weight': 2}}], 'wte': 3}
    """
    out: dict[str, Any] = {}
    for name, value in flat.items():
        parts = name.split(".")
        if parts[0] in single:
            out[parts[0]] = value
            continue
        node: Any = out
        for key, nxt in zip(parts[:-1], parts[1:]):
            if key.isdigit():
                i = int(key)
                while len(node) <= i:
                    node.append({})
                node = node[i]
            else:
                node = node.setdefault(key, [] if nxt.isdigit() else {})
        node[parts[-1]] = value
    return out


def nonfinite_tensors(params: Any, prefix: str = "") -> list[str]:
    """Names (``h.0.attn.c_attn.weight (3 non-finite of 2304)``) of the arrays in nested params that hold NaN or inf.

    >>> nonfinite_tensors({"h": [{"ln_1": {"weight": np.array([1.0, np.nan], dtype=np.float32)}}], "wte": np.zeros(2)})
    ['h.0.ln_1.weight (1 non-finite of 2)']
    """
    if isinstance(params, np.ndarray):
        n = int(params.size - np.count_nonzero(np.isfinite(params)))
        return [f"{prefix.rstrip('.')} ({n} non-finite of {params.size})"] if n else []
    items = params.items() if isinstance(params, dict) else enumerate(params) if isinstance(params, list) else ()
    return [name for key, value in items for name in nonfinite_tensors(value, f"{prefix}{key}.")]
