"""Conformance suites exported once per session (fixtures), and one request through ``serve``'s answer."""

from __future__ import annotations

import io
import json
import math
import sys
import time

import pytest

from refdecode.reference.conformance.check import Implementation, check
from refdecode.reference.conformance.export import export
from refdecode.reference.conformance.registry import REGISTRY, select
from refdecode.reference.conformance.serve import answer

UNIT_TYPES = select("processors_and_warpers,beam_hypotheses")
DECODE_TYPES = [t for t in select(None) if t not in UNIT_TYPES]  # the opt-in groups need uncommitted checkpoints
DECODE_LIMIT = 5
#: the case types examples/conformance-js/ implements (it answers ``unsupported`` to the rest)
JS_TYPES = ["temperature", "top_k", "top_p", "repetition_penalty", "no_repeat_ngram", "min_length", "min_new_tokens",
            "hamming_diversity", "log_softmax", "beam_hypotheses", "beam_scorer", "greedy", "sample", "beam_search",
            "frequency_penalty", "presence_penalty", "logit_bias"]

@pytest.fixture(scope="session")
def unit_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("unit_suite")
    export(root, types=UNIT_TYPES)
    return root


@pytest.fixture(scope="session")
def decode_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("decode_suite")
    export(root, types=DECODE_TYPES, limit=DECODE_LIMIT)
    return root


def ask(type_name: str, inp: dict) -> dict:
    response = json.loads(answer(json.dumps({"id": "t/0", "type": type_name, "input": inp})))
    assert "error" not in response, response
    return response["output"]


SERVE = f'"{sys.executable}" -m refdecode.cli conformance serve'


def run_check(root, command: str = SERVE, only: str | None = None, **options) -> tuple[int, list[str]]:
    out = io.StringIO()
    status = check(root, command, only=only, out=out, **options)
    return status, out.getvalue().splitlines()


def python_implementation(tmp_path, body: str) -> str:
    """A shell command running ``body`` (a Python program answering on stdin/stdout) from a file in tmp_path."""
    path = tmp_path / "impl.py"
    path.write_text("import json, sys, time\n" + body)
    return f'"{sys.executable}" "{path}"'


def scaled_timeout(command: str, least: float, factor: float = 4.0) -> int:
    """A timeout for tests of ``check``'s timeouts on this machine as busy as it is now: ``factor`` x the measured
    wall time of ``command`` starting and answering one request, started as ``check`` starts it (its own session:
    on a kernel with autogroup scheduling a new session competes as a group of its own, and on a busy machine that
    is 30 s for a start and refdecode's import that take 1 s idle), at least ``least`` seconds; whole seconds, so
    messages read "within 15 s". A healthy answer then comes well within it, and a hang still runs past it."""
    request = json.dumps({"id": "baseline/0099", "type": "min_length", "input": {}})
    start = time.monotonic()
    implementation = Implementation(command)
    try:
        assert implementation.ask(request, 600).strip()        # one response line: the command answers
    finally:
        implementation.close(kill=True)
    return max(math.ceil(least), math.ceil(factor * (time.monotonic() - start)))
