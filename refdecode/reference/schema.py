r"""A validator for the JSON Schema subset refdecode's schemas use, with messages a person can act on.

Contract: ``validate(value, schema) -> list of errors`` (empty when valid), each prefixed by the JSON path of the
offending value. It understands ``type`` (one or a list), ``enum``, ``const``, ``anyOf``, ``oneOf``, ``properties``,
``required``, ``additionalProperties: false``, ``items``, ``minItems``, ``minimum`` and ``$ref`` to ``#/$defs/...``
of the root schema: what the conformance cases' schemas (:mod:`refdecode.reference.conformance.kinds`) and the
step traces' (``trace_schema.json``) are written in. No dependency on ``jsonschema`` (a test dependency only).

>>> validate({"n": -1}, {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}})
['$.n: -1 is below the minimum 0']
"""

from __future__ import annotations

from typing import Any

__all__ = ["validate", "NUMBER"]

#: a float32 value in refdecode's JSON: a number, or one of the strings of the non-finite values
NUMBER = {"anyOf": [{"type": "number"}, {"enum": ["-inf", "inf", "nan"]}]}

_TYPES = {"number": (int, float), "integer": (int,), "boolean": (bool,), "string": (str,), "null": (type(None),),
          "array": (list,), "object": (dict,)}
_MAX_ERRORS = 5


def _is_type(value: Any, name: str | list) -> bool:
    if isinstance(name, list):
        return any(_is_type(value, n) for n in name)
    if name in ("number", "integer") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[name])


def _resolve(schema: dict, root: dict) -> dict:
    """``{"$ref": "#/$defs/name"}`` -> that definition of ``root`` (other references are not used here)."""
    ref = schema["$ref"]
    if not ref.startswith("#/"):
        raise ValueError(f"only local references (#/...) are resolved, not {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _alternatives(value: Any, options: list, root: dict, path: str, how: str) -> list[str]:
    matching = [o for o in options if not validate(value, o, path, root)]
    if how == "anyOf" and matching or how == "oneOf" and len(matching) == 1:
        return []
    if how == "oneOf" and len(matching) > 1:
        return [f"{path}: {_short(value)} matches {len(matching)} of the allowed forms, exactly one is allowed"]
    if options == NUMBER["anyOf"]:
        return [f"{path}: {value!r} is not a number or one of '-inf', 'inf', 'nan'"]
    fitting = [o for o in options if "type" in o and _is_type(value, o["type"])]  # the form it tried
    if len(fitting) == 1:
        return validate(value, fitting[0], path, root)
    return [f"{path}: {_short(value)} matches none of the allowed forms"]


def validate(value: Any, schema: dict, path: str = "$", root: dict | None = None) -> list[str]:
    """Errors of ``value`` against ``schema`` (empty if valid), each prefixed by its JSON path; at most a few."""
    root = schema if root is None else root
    if "$ref" in schema:
        return validate(value, _resolve(schema, root), path, root)
    for how in ("anyOf", "oneOf"):
        if how in schema:
            return _alternatives(value, schema[how], root, path, how)
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {_short(value)} is not one of {schema['enum']}"]
    if "const" in schema and value != schema["const"]:
        return [f"{path}: {_short(value)} is not {schema['const']!r}"]
    if "type" in schema and not _is_type(value, schema["type"]):
        return [f"{path}: {_short(value)} is not of type {schema['type']}"]
    if "minimum" in schema and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value < schema["minimum"]:
        return [f"{path}: {value!r} is below the minimum {schema['minimum']}"]
    errors: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        errors += [f"{path}: missing required field {name!r}" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            if name in properties:
                errors += validate(item, properties[name], f"{path}.{name}", root)
            elif schema.get("additionalProperties", True) is False:
                errors.append(f"{path}: unexpected field {name!r}")
            if len(errors) > _MAX_ERRORS:
                break
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: {len(value)} items, at least {schema['minItems']} expected")
        if "items" in schema:
            for i, item in enumerate(value):
                errors += validate(item, schema["items"], f"{path}[{i}]", root)
                if len(errors) > _MAX_ERRORS:
                    break
    return errors


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."
