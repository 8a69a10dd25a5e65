"""refdecode.reference.schema: the JSON Schema subset validator, checked against the jsonschema package."""

import json
from importlib import resources

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refdecode.reference.schema import NUMBER, validate

TRACE_SCHEMA = json.loads(resources.files("refdecode.reference").joinpath("trace_schema.json").read_text())

SCHEMAS = [
    {"type": "integer", "minimum": 0},
    {"type": ["integer", "null"]},
    {"enum": ["a", "b"]},
    {"const": "refdecode-trace"},
    NUMBER,
    {"type": "array", "items": NUMBER, "minItems": 1},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"type": "object", "required": ["n"], "additionalProperties": False,
     "properties": {"n": {"type": "integer"}, "xs": {"type": "array", "items": {"type": "boolean"}}}},
    {"$defs": {"row": {"type": "array", "items": {"type": "integer"}}}, "type": "array",
     "items": {"$ref": "#/$defs/row"}},
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from(["a", "b", "inf", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["n", "xs", "z"]), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(value=json_values, schema=st.sampled_from(SCHEMAS))
def test_agrees_with_jsonschema_on_what_is_valid(value, schema):
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert (validate(value, schema) == []) == expected


def test_messages_name_the_path_the_rule_and_the_value():
    schema = SCHEMAS[7]
    assert validate({"n": 1, "z": 2}, schema) == ["$: unexpected field 'z'"]
    assert validate({}, schema) == ["$: missing required field 'n'"]
    assert validate({"n": 1, "xs": [True, 3]}, schema) == ["$.xs[1]: 3 is not of type boolean"]
    assert validate(-1, SCHEMAS[0]) == ["$: -1 is below the minimum 0"]
    assert validate(["x"], SCHEMAS[5]) == ["$[0]: 'x' is not a number or one of '-inf', 'inf', 'nan'"]
    assert validate([], SCHEMAS[5]) == ["$: 0 items, at least 1 expected"]


def test_booleans_are_not_numbers_and_long_values_are_shortened():
    assert validate(True, {"type": "integer"}) == ["$: True is not of type integer"]
    (message,) = validate("x" * 500, {"type": "integer"})
    assert len(message) < 100 and message.endswith("... is not of type integer")


def test_only_local_references_resolve():
    with pytest.raises(ValueError, match="only local references"):
        validate(1, {"$ref": "https://example.org/schema.json"})


def test_the_trace_schema_is_in_the_subset_it_understands():
    minimal = {"format": "refdecode-trace", "version": 1}
    assert (validate(minimal, TRACE_SCHEMA) == []) == jsonschema.Draft202012Validator(TRACE_SCHEMA).is_valid(minimal)
