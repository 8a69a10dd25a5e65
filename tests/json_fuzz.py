"""Hypothesis strategies for fuzzed JSON configuration files (config.json, generation_config.json)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

FUZZ_EXAMPLES = int(__import__("os").environ.get("REFDECODE_FUZZ_EXAMPLES", "300"))


def json_file_contents(fields: list[str]):
    """Bytes of a file: a JSON object over ``fields`` (with a valid base half the time), any JSON, or raw bytes."""
    objects = st.fixed_dictionaries({}, optional={name: JSON_VALUES for name in fields})
    return st.one_of(
        objects.map(lambda d: json.dumps(d, allow_nan=True).encode()),
        objects.map(lambda d: json.dumps({"model_type": "gpt2", "n_embd": 8, "n_head": 2} | d).encode()),
        JSON_VALUES.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=30),
    )


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 70), st.integers(), st.floats(), st.text(max_size=5),
                    st.sampled_from(["gpt2", "gelu_new", "relu", "false", "true"]))
JSON_VALUES = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3) |
                           st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
