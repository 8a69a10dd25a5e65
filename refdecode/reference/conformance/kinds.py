r"""Field kinds of the conformance suite: one description per field gives its JSON Schema, its decoding and its comparison.

Contract: a case type declares its ``input`` and ``output`` fields as kinds (``F32(2)`` a float32
(B, V) array, ``I64(1)``, ``FLOAT``, ``INT``, ``BOOL``, ``STR``, ``Nullable(...)``, ``Enum(...)``,
``ListOf(...)``, ``Obj({...})``); this module turns a kind into

- a JSON Schema (:meth:`Kind.schema`, the subset :func:`refdecode.reference.schema.validate` understands),
- JSON (:func:`to_json`: arrays as nested lists, float32 values written as the shortest decimal
  that reads back to the same float32 (arrays of more than 4096 values: the exact float64 decimal), ``-inf``/``inf``/``nan`` as the strings ``"-inf"``,
  ``"inf"``, ``"nan"``, since JSON has no infinities; big arrays as ``{"npy": path}`` files),
- NumPy values (:meth:`Kind.decode`), and back.

>>> to_json(np.array([[0.1, -np.inf]], dtype=np.float32))
[[0.1, '-inf']]
>>> F32(2).decode([[0.1, "-inf"]])
array([[ 0.1, -inf]], dtype=float32)
>>> from refdecode.reference.schema import validate
>>> validate([[0.1, "-inf"]], F32(2).schema())
[]
>>> validate([[0.1, "x"]], F32(2).schema())
["$[0][1]: 'x' is not a number or one of '-inf', 'inf', 'nan'"]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..schema import NUMBER

__all__ = ["Kind", "F32", "F64", "I64", "obj", "Scalar", "FLOAT", "INT", "BOOL", "STR", "Nullable", "Enum", "ListOf", "Obj",
           "ANY", "to_json", "NONFINITE"]

NONFINITE = {"-inf": -math.inf, "inf": math.inf, "nan": math.nan}
SHORTEST_LIMIT = 4096  # float32 arrays up to this size are written as shortest float32 decimals, larger ones
                       # as exact float64 decimals (the same float32 once rounded; they live in .npy on disk)


# ----------------------------------------------------------------------------------------------
# JSON values


def _float(x: float, f32: bool) -> float | str:
    """One float -> JSON: the shortest decimal of the float32 (or float64) value, or a string if not finite."""
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return float(str(np.float32(x))) if f32 else float(x)


def to_json(value: Any) -> Any:
    """NumPy arrays and scalars (nested in dicts, lists, tuples) -> plain JSON values; see the module docstring."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            f32 = value.dtype == np.float32 and value.size <= SHORTEST_LIMIT  # short decimals cost ~1 us each
            flat = [_float(x, f32) for x in value.ravel().tolist()]
            return np.array(flat, dtype=object).reshape(value.shape).tolist() if value.ndim != 1 else flat
        if value.dtype.kind == "b":
            return value.tolist()
        return value.astype(np.int64).tolist()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _float(float(value), isinstance(value, np.float32))
    return value


# ----------------------------------------------------------------------------------------------
# Kinds


class Kind:
    """A field's type: its JSON Schema and how a JSON value becomes a NumPy/Python value."""

    def schema(self) -> dict:
        raise NotImplementedError

    def decode(self, value: Any) -> Any:
        return value


_NUMBER = NUMBER
_NPY = {"type": "object", "properties": {"npy": {"type": "string"}}, "required": ["npy"],
        "additionalProperties": False}


def _nested(item: dict, ndim: int) -> dict:
    schema = item
    for _ in range(ndim):
        schema = {"type": "array", "items": schema}
    return schema


@dataclass(frozen=True)
class F32(Kind):
    """A float32 array of ``ndim`` dimensions (``-inf`` etc. as strings); may be stored as ``{"npy": path}``."""
    ndim: int

    def schema(self) -> dict:
        return {"anyOf": [_nested(_NUMBER, self.ndim), _NPY]} if self.ndim else _NUMBER

    def decode(self, value: Any) -> np.ndarray:
        return _array(value, np.float32, self.ndim)


@dataclass(frozen=True)
class F64(F32):
    """A float64 array (the uniforms of a sampling case): JSON numbers with all 17 significant digits."""

    def decode(self, value: Any) -> np.ndarray:
        return _array(value, np.float64, self.ndim)


@dataclass(frozen=True)
class I64(Kind):
    """An int64 array of ``ndim`` dimensions; may be stored as ``{"npy": path}``."""
    ndim: int

    def schema(self) -> dict:
        return {"anyOf": [_nested({"type": "integer"}, self.ndim), _NPY]}

    def decode(self, value: Any) -> np.ndarray:
        if not isinstance(value, np.ndarray) and any(isinstance(x, float) for x in _flat(value)):
            raise ValueError("integer arrays hold integers only")
        return _array(value, np.int64, self.ndim)


@dataclass(frozen=True)
class Scalar(Kind):
    """A JSON scalar: "number", "integer", "boolean" or "string"."""
    json_type: str

    def schema(self) -> dict:
        return _NUMBER if self.json_type == "number" else {"type": self.json_type}

    def decode(self, value: Any) -> Any:
        if self.json_type == "number":
            return NONFINITE[value] if isinstance(value, str) else float(value)
        return value


FLOAT, INT, BOOL, STR = Scalar("number"), Scalar("integer"), Scalar("boolean"), Scalar("string")


@dataclass(frozen=True)
class Nullable(Kind):
    """``null`` or the inner kind."""
    inner: Kind

    def schema(self) -> dict:
        return {"anyOf": [{"type": "null"}, self.inner.schema()]}

    def decode(self, value: Any) -> Any:
        return None if value is None else self.inner.decode(value)


@dataclass(frozen=True)
class Enum(Kind):
    """One of the listed JSON values (e.g. ``early_stopping``: true, false or "never")."""
    values: tuple

    def schema(self) -> dict:
        return {"enum": list(self.values)}


@dataclass(frozen=True)
class ListOf(Kind):
    """A JSON list of items of one kind (lengths may differ: histories, steps of a decode)."""
    item: Kind

    def schema(self) -> dict:
        return {"type": "array", "items": self.item.schema()}

    def decode(self, value: Any) -> list:
        return [self.item.decode(v) for v in value]


@dataclass(frozen=True)
class Obj(Kind):
    """A JSON object with these fields, nothing else; all required unless listed in ``optional``.

    ``may_omit``: output fields a response may leave out (they are compared when present).
    """
    fields: tuple  # ((name, kind), ...): a tuple so the kind stays hashable
    optional: tuple = ()
    may_omit: tuple = ()

    def schema(self) -> dict:
        return {"type": "object", "properties": {name: kind.schema() for name, kind in self.fields},
                "required": [name for name, _ in self.fields if name not in self.optional],
                "additionalProperties": False}

    def decode(self, value: dict) -> dict:
        kinds = dict(self.fields)
        return {name: kinds[name].decode(v) for name, v in value.items() if name in kinds}


@dataclass(frozen=True)
class _Any(Kind):
    def schema(self) -> dict:
        return {}


ANY = _Any()


def obj(optional: tuple = (), may_omit: tuple = (), **fields: Kind) -> Obj:
    """``Obj`` from keyword arguments, in the order given."""
    return Obj(tuple(fields.items()), tuple(optional), tuple(may_omit))


def _array(value: Any, dtype: type, ndim: int) -> np.ndarray:
    """Nested lists (floats may be "-inf", "inf", "nan": NumPy parses those strings) -> an array of ``ndim`` dims."""
    array = np.array(value, dtype=dtype)
    if array.size == 0 and array.ndim < ndim:
        array = array.reshape(array.shape + (0,) * (ndim - array.ndim))
    if array.ndim != ndim:
        raise ValueError(f"expected {ndim} dimensions, got {array.ndim}")
    return array


def _flat(value: Any):
    if isinstance(value, list):
        for item in value:
            yield from _flat(item)
    else:
        yield value
