"""refdecode.reference.conformance.serve: one request line -> one response line; failures are responses."""

from __future__ import annotations

import json
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.serve import answer
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


def test_answer_reports_errors_as_responses():
    assert json.loads(answer("not json"))["error"].startswith("JSONDecodeError")
    response = json.loads(answer('{"id": "x/1", "type": "top_k", "input": {"scores": [[1.0]], "top_k": 0, '
                                 '"min_tokens_to_keep": 1}}'))
    assert response["id"] == "x/1" and "top_k" in response["error"]
