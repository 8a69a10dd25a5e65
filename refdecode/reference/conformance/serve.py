r"""``refdecode conformance serve``: refdecode's own implementation of the conformance protocol.

Contract: reads one JSON request per line on standard input, ``{"id", "type", "input"}``, and
writes one JSON response per line on standard output, ``{"id", "output"}`` -- or ``{"id",
"error"}`` when the request cannot be answered -- flushing after each line, until standard input
ends. The answer is the case type's ``run``: the same function ``export`` used for the expected
values, so ``check --cmd "refdecode conformance serve"`` passing 100% tests the harness, and
``--plant NAME`` (see ``plants.py``) serves a deliberately broken refdecode to show that
``check`` catches each classic porting bug.
"""

from __future__ import annotations

import json
import sys
from typing import IO

from .export import dumps
from .kinds import to_json
from .registry import REGISTRY

__all__ = ["answer", "serve"]


def answer(line: str) -> str:
    """One request line -> one response line (without the newline)."""
    request_id = None
    try:
        request = json.loads(line)
        request_id = request.get("id") if isinstance(request, dict) else None
        if not isinstance(request, dict) or request.get("type") not in REGISTRY:
            kind = request.get("type") if isinstance(request, dict) else type(request).__name__
            raise ValueError(f"unknown request type {kind!r}; known: {', '.join(REGISTRY)}")
        case_type = REGISTRY[request["type"]]
        output = case_type.run(case_type.inputs.decode(request["input"]))
        return dumps({"id": request_id, "output": to_json(output)})
    except Exception as err:  # the protocol reports every failure as a response, then goes on
        return dumps({"id": request_id, "error": f"{type(err).__name__}: {err}"})


def serve(stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Answer requests until standard input ends; returns 0."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    for line in stdin:
        if line.strip():
            stdout.write(answer(line) + "\n")
            stdout.flush()
    return 0
