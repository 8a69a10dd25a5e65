"""refdecode.reference.conformance.kinds: array kinds round-trip through JSON."""

from __future__ import annotations

import json
import numpy as np
import refdecode
import refdecode.reference.conformance  # noqa: F401  (registers the case types)
from refdecode.reference.conformance.kinds import F32, I64, to_json
from conformance_suites import DECODE_LIMIT, DECODE_TYPES, UNIT_TYPES, decode_suite, unit_suite  # noqa: F401  (fixtures)


def test_array_kinds_round_trip():
    a = np.array([[0.1, -np.inf, 3.4028235e38]], dtype=np.float32)
    assert np.array_equal(F32(2).decode(json.loads(json.dumps(to_json(a)))), a)
    assert I64(1).decode([1, 2]).dtype == np.int64
