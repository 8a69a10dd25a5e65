"""A tiny torch -> NumPy shim: the names transformers' generation tests use, backed by NumPy.

The scenario modules of this folder import ``torch``, ``nn``, ``ids_tensor``, ``floats_tensor``,
``torch_device``, ``expand`` (``parameterized.expand``), ``AutoTokenizer``, ``AutoModelForCausalLM`` and
``AutoConfig`` from here, and the generation classes from ``refdecode``. ``tools/transformers_api/
run_against_4382.py`` swaps this module for ``tools/transformers_api/torch_shim.py`` (real torch) and
``refdecode`` for transformers 4.38.2, and runs the same scenario files there.

``Tensor`` is an ``np.ndarray`` subclass with torch's method names (``clone``, ``to``, ``unsqueeze``,
``repeat``, ``sum(dim=)``, ``exp``, ``softmax``, ``size``, ``sort(descending=)``, ...). Called the NumPy
way (``axis=``, as NumPy's own functions call them on a subclass) the methods behave as NumPy's, so an
array handed to refdecode computes exactly as a plain ndarray. A refdecode processor returns a copy of
its input, so its result is a ``Tensor`` too.

Hub models: the Auto classes resolve the hub ids the tests name (``hf-internal-testing/tiny-random-gpt2``,
``distilgpt2``, ``gpt2``) to the shipped ``models/gpt2-tiny`` (random weights, GPT-2's vocabulary and
tokenizer); nothing is downloaded. ``AutoModelForCausalLM`` returns the refdecode model with
transformers' method spelling ``model.generate(input_ids, ...)`` (refdecode's is ``generate(model, input_ids, ...)``).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import refdecode
from transformers_api.params import expand

__all__ = ["torch", "nn", "Tensor", "slow", "ids_tensor", "floats_tensor", "torch_device", "expand",
           "AutoTokenizer", "AutoModelForCausalLM", "AutoConfig", "CaptureStdout", "MODELS", "LOCAL_MODEL"]

torch_device = "cpu"
slow = pytest.mark.slow  # the package's marker for tests of 0.3 s or more (the torch shim's is a no-op)
MODELS = Path(__file__).resolve().parents[2] / "models"
LOCAL_MODEL = MODELS / "gpt2-tiny"
# the hub ids transformers' generation tests load, and the shipped stand-in each resolves to
HUB_STAND_INS = {"hf-internal-testing/tiny-random-gpt2": LOCAL_MODEL, "distilgpt2": LOCAL_MODEL,
                 "distilbert/distilgpt2": LOCAL_MODEL, "gpt2": LOCAL_MODEL, "openai-community/gpt2": LOCAL_MODEL}

_NUMPY_KW = {"axis", "out", "keepdims", "initial", "where", "kind", "order", "dtype"}


def _numpy_caller() -> bool:
    """Whether the method was called from NumPy or refdecode (NumPy semantics) rather than from a test (torch's).

    Where torch and NumPy give one method name two meanings (``repeat``, ``sort``, ``max``, ``min``,
    ``nonzero``), code inside NumPy and refdecode gets NumPy's, so refdecode computes on a ``Tensor``
    exactly as on a plain ndarray."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return caller.split(".")[0] in ("numpy", "refdecode")


def _wrap(out: Any) -> Any:
    if type(out) is np.ndarray:
        return out.view(Tensor)
    if type(out) in (tuple, list):
        return type(out)(_wrap(o) for o in out)
    return out


def _dim(args: tuple, kwargs: dict) -> Any:
    """torch's ``dim`` (positional or keyword), or None."""
    return kwargs.pop("dim", args[0] if args else None)


class Tensor(np.ndarray):
    """``np.ndarray`` with the torch methods the generation tests call."""

    def __new__(cls, data: Any, dtype: Any = None) -> "Tensor":
        return np.asarray(data, dtype=dtype).view(cls)

    # --- copies, dtypes, devices
    def clone(self) -> "Tensor":
        return self.copy()

    def to(self, *args: Any, **kwargs: Any) -> "Tensor":
        dtype = kwargs.get("dtype", next((a for a in args if isinstance(a, (type, np.dtype))), None))
        return self.astype(dtype) if dtype is not None else self

    def long(self) -> "Tensor":
        return self.astype(np.int64)

    def float(self) -> "Tensor":
        return self.astype(np.float32)

    def cpu(self) -> "Tensor":
        return self

    def numpy(self) -> np.ndarray:
        return self.view(np.ndarray)

    @property
    def device(self) -> str:
        return torch_device

    # --- shapes
    @property
    def size(self) -> "_Size":  # NumPy's ``a.size`` (an int) that torch's ``t.size(dim)`` can call
        return _Size(np.ndarray.size.__get__(self), self.shape)

    def unsqueeze(self, dim: int) -> "Tensor":
        return np.expand_dims(self, dim)

    def repeat(self, *sizes: Any, **kwargs: Any) -> "Tensor":
        if _numpy_caller() or kwargs:  # NumPy's: repeat elements (np.tile calls it positionally)
            return super().repeat(*sizes, **kwargs)
        return Tensor(np.tile(self.view(np.ndarray), _shape(sizes)))  # torch's: tile

    def nonzero(self) -> Any:
        if _numpy_caller():
            return super().nonzero()
        return _NonZero(np.ndarray.nonzero(self.view(np.ndarray)))

    # --- reductions: torch's dim= (returning values and indices for max/min), NumPy's axis=
    def sum(self, *args: Any, **kwargs: Any) -> Any:
        if "dim" in kwargs:
            kwargs["axis"] = kwargs.pop("dim")
        return super().sum(*args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        if _numpy_caller() or not (args or "dim" in kwargs):
            return super().max(*args, **kwargs)
        dim = _dim(args, kwargs)
        return super().max(axis=dim), self.argmax(axis=dim)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        if _numpy_caller() or not (args or "dim" in kwargs):
            return super().min(*args, **kwargs)
        dim = _dim(args, kwargs)
        return super().min(axis=dim), self.argmin(axis=dim)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        if "dim" in kwargs:
            kwargs["axis"] = kwargs.pop("dim")
        return super().any(*args, **kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Any:
        if "dim" in kwargs:
            kwargs["axis"] = kwargs.pop("dim")
        return super().all(*args, **kwargs)

    def sort(self, *args: Any, **kwargs: Any) -> Any:
        if _numpy_caller() or args or set(kwargs) & _NUMPY_KW:  # NumPy's in-place sort
            return super().sort(*args, **kwargs)
        dim = kwargs.get("dim", -1)
        base = self.view(np.ndarray)
        order = np.argsort(-base if kwargs.get("descending") else base, axis=dim, kind="stable")
        return Tensor(np.take_along_axis(base, order, axis=dim)), Tensor(order)

    # --- NumPy functions on a Tensor return a Tensor, as torch functions return tensors
    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _wrap(super().__array_function__(func, types, args, kwargs))

    # --- elementwise
    def exp(self) -> "Tensor":
        return np.exp(self)

    def log(self) -> "Tensor":
        return np.log(self)

    def softmax(self, dim: int = -1) -> "Tensor":
        return _softmax(self, dim=dim)

    def allclose(self, other: Any, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
        return bool(np.allclose(self, other, rtol=rtol, atol=atol))

    def tolist(self) -> Any:
        return self.view(np.ndarray).tolist()


class _Size(int):
    """``Tensor.size``: an int (NumPy's element count) that, called, answers torch's ``size()`` / ``size(dim)``."""

    def __new__(cls, count: int, shape: tuple) -> "_Size":
        obj = super().__new__(cls, count)
        obj._shape = shape
        return obj

    def __call__(self, dim: int | None = None) -> Any:
        return self._shape if dim is None else self._shape[dim]


class _NonZero(tuple):
    """``Tensor.nonzero()``: NumPy's tuple of index arrays, which as an array is torch's (N, ndim) index tensor."""

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.stack(self, axis=-1) if len(self) else np.zeros((0, 0), dtype=np.int64)
        return out if dtype is None else out.astype(dtype)

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        return Tensor(np.asarray(self))

    def tolist(self) -> Any:
        return np.asarray(self).tolist()


def _t(x: Any, dtype: Any = None) -> Tensor:
    return x if isinstance(x, Tensor) and dtype is None else Tensor(x, dtype=dtype)


def _float_dtype(data: Any) -> Any:
    """torch.tensor's default dtype: float32 for floats, int64 for ints, bool for bools."""
    arr = np.asarray(data)
    if arr.dtype.kind == "f":
        return np.float32
    return np.int64 if arr.dtype.kind in "iu" else None


def _log(x: Any) -> Tensor:
    with np.errstate(divide="ignore"):  # torch.log(0) is -inf without a warning
        return Tensor(np.log(np.asarray(x)))


def _softmax(x: Any, dim: int = -1) -> Tensor:
    return Tensor(refdecode.softmax(np.asarray(x, dtype=np.float32), axis=dim))


def _log_softmax(x: Any, dim: int = -1) -> Tensor:
    return Tensor(refdecode.log_softmax(np.asarray(x, dtype=np.float32), axis=dim))


def _assert_close(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None, **_: Any) -> None:
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol or 1.3e-6, atol=atol or 1e-5)


class _Finfo:
    def __init__(self, dtype: Any) -> None:
        info = np.finfo(dtype)
        self.max, self.min, self.eps = float(info.max), float(info.min), float(info.eps)


def _dtype_kw(kwargs: dict, default: Any) -> Any:
    kwargs.pop("device", None)
    return kwargs.pop("dtype", default)


def _make_torch() -> types.ModuleType:
    """The ``torch`` namespace of the shim."""
    t = types.ModuleType("torch")
    t.float = t.float32 = np.float32
    t.long = t.int64 = np.int64
    t.int = t.int32 = np.int32
    t.bool = np.bool_
    t.Tensor = Tensor
    t.tensor = lambda data, **kw: Tensor(data, dtype=_dtype_kw(kw, _float_dtype(data)))
    t.as_tensor = lambda data, **kw: Tensor(data, dtype=_dtype_kw(kw, None))
    t.LongTensor = lambda data: Tensor(data, dtype=np.int64)
    t.FloatTensor = lambda data: Tensor(data, dtype=np.float32)
    t.ones = lambda *shape, **kw: Tensor(np.ones(_shape(shape), dtype=_dtype_kw(kw, np.float32)))
    t.zeros = lambda *shape, **kw: Tensor(np.zeros(_shape(shape), dtype=_dtype_kw(kw, np.float32)))
    t.full = lambda shape, value, **kw: Tensor(np.full(shape, value, dtype=_dtype_kw(kw, np.float32)))
    t.ones_like = lambda x, **kw: Tensor(np.ones_like(x, dtype=_dtype_kw(kw, None)))
    t.zeros_like = lambda x, **kw: Tensor(np.zeros_like(x, dtype=_dtype_kw(kw, None)))
    t.arange = lambda *args, **kw: Tensor(np.arange(*args, dtype=_dtype_kw(kw, _float_dtype(args[-1]) if args
                                                                           else np.int64)))
    t.cat = lambda seq, dim=0: Tensor(np.concatenate([np.asarray(s) for s in seq], axis=dim))
    t.stack = lambda seq, dim=0: Tensor(np.stack([np.asarray(s) for s in seq], axis=dim))
    t.clone = lambda x: _t(x).copy()
    t.log = _log
    t.exp = lambda x: Tensor(np.exp(np.asarray(x)))
    t.neg = lambda x: Tensor(-np.asarray(x))
    t.isinf = lambda x: Tensor(np.isinf(np.asarray(x)))
    t.isneginf = lambda x: Tensor(np.isneginf(np.asarray(x)))
    t.isnan = lambda x: Tensor(np.isnan(np.asarray(x)))
    t.eq = lambda a, b: Tensor(np.asarray(a) == np.asarray(b))
    t.gt = lambda a, b: Tensor(np.asarray(a) > np.asarray(b))
    t.all = lambda x, dim=None: Tensor(np.all(np.asarray(x), axis=dim))
    t.any = lambda x, dim=None: Tensor(np.any(np.asarray(x), axis=dim))
    t.allclose = lambda a, b, rtol=1e-5, atol=1e-8: bool(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol))
    t.finfo = _Finfo
    t.randint = lambda low, high, size, **kw: Tensor(_rng.integers(low, high, size=size, dtype=np.int64))
    t.manual_seed = lambda seed: refdecode.set_seed(seed)
    t.testing = types.SimpleNamespace(assert_close=_assert_close)
    t.device = lambda name="cpu": name
    t.no_grad = _NoGrad
    t.nn = nn
    return t


class _NoGrad:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, fn: Any) -> Any:
        return fn


def _shape(shape: tuple) -> tuple:
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


nn = types.ModuleType("torch.nn")
nn.functional = types.SimpleNamespace(softmax=_softmax, log_softmax=_log_softmax)
torch = _make_torch()

# ids_tensor / floats_tensor: transformers' tests/test_modeling_common.py helpers (random ids in [0, vocab),
# uniform floats in [0, scale)); seeded per process so a failure reproduces
_rng = np.random.default_rng(0)


def ids_tensor(shape: Any, vocab_size: int, rng: Any = None, name: Any = None) -> Tensor:
    return Tensor(_rng.integers(0, vocab_size, size=tuple(shape), dtype=np.int64))


def floats_tensor(shape: Any, scale: float = 1.0, rng: Any = None, name: Any = None) -> Tensor:
    return Tensor((_rng.random(size=tuple(shape)) * scale).astype(np.float32))


# ---- hub ids -> shipped models
def _local(name: Any) -> Path:
    path = HUB_STAND_INS.get(str(name), Path(str(name)))
    if not Path(path).is_dir():
        raise OSError(f"{name!r} is not a local model folder and has no stand-in in tests/transformers_api/shim.py "
                      f"(nothing is downloaded)")
    return Path(path)


class _GenerateMethod:
    """A refdecode model with transformers' ``model.generate(...)`` spelling; everything else is the model's."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        return refdecode.generate(self._model, *args, **kwargs)

    def to(self, device: Any) -> "_GenerateMethod":  # devices are torch's; NumPy computes on the CPU
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._model(*args, **kwargs)


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(name: Any, **kwargs: Any) -> Any:
        return _GenerateMethod(refdecode.GPT2.from_pretrained(_local(name)))


class AutoTokenizer:
    @staticmethod
    def from_pretrained(name: Any, **kwargs: Any) -> Any:
        return refdecode.Tokenizer(_local(name))


class AutoConfig:
    @staticmethod
    def from_pretrained(name: Any, **kwargs: Any) -> Any:
        return refdecode.GPT2Config.from_json_file(_local(name) / "config.json")


class CaptureStdout:
    """transformers.testing_utils.CaptureStdout: ``with CaptureStdout() as cs: ...; cs.out``."""

    def __enter__(self) -> "CaptureStdout":
        import io
        self._old, self._buf = sys.stdout, io.StringIO()
        sys.stdout = self._buf
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.stdout = self._old
        self.out = self._buf.getvalue()
