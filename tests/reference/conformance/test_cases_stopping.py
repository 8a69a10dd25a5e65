"""refdecode.reference.conformance.cases_stopping: stop strings and eos, hand-worked requests through serve's answer."""

from __future__ import annotations

import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from conformance_suites import ask


def test_stop_strings_must_end_in_the_last_token():
    strings = ["a", "b", "\n", "\n\n", "b\nc"]
    inp = {"token_strings": strings, "input_ids": [[0, 3], [2, 2], [3, 0], [0, 4]], "stop_strings": ["\n\n"]}
    assert ask("stop_strings", inp) == {"done": [True, True, False, False]}
    inp = {"token_strings": strings, "input_ids": [[0, 4], [1, 2], [1, 0]], "stop_strings": ["b\n"]}
    assert ask("stop_strings", inp) == {"done": [True, True, False]}


def test_eos_token_looks_at_the_last_token_only():
    out = ask("eos_token", {"input_ids": [[1, 2], [2, 5], [0, 7]], "eos_token_id": [2, 7]})
    assert out == {"done": [True, False, True]}
