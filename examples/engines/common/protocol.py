r"""The conformance protocol loop for engine adapters written in Python (docs/conformance.md, "The protocol").

An adapter gives ``serve`` one function, ``answer(request) -> output``: the request is the parsed JSON line
``{"id", "type", "input"}``; the output is the dict that goes under ``"output"``. It raises
:class:`Unsupported` when the engine cannot express the case (the response is then
``{"id", "unsupported": reason}``, which ``check`` counts apart from failures), and any other exception
becomes ``{"id", "error": "Type: message"}``. One response line per request, flushed, until standard
input ends. Only the standard library: the adapter runs inside the engine's own environment.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

__all__ = ["Unsupported", "serve", "floats", "decode_request"]


class Unsupported(Exception):
    """The engine has no way to express this case (an option it lacks); the message says which."""


def decode_request(request: dict) -> tuple[str, dict, dict]:
    """(type, input, a copy of its ``config``) of a decode request; :class:`Unsupported` for any other request."""
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request (this adapter answers decodes only)")
    return kind, inp, dict(inp["config"])


def floats(value: Any) -> Any:
    """The suite's JSON floats back to Python floats: ``"-inf"``, ``"inf"``, ``"nan"`` strings included."""
    if isinstance(value, list):
        return [floats(v) for v in value]
    if isinstance(value, str) and value in ("-inf", "inf", "nan"):
        return float(value)
    return value


def _json_safe(value: Any) -> Any:
    """NaN and infinities as the suite's strings; everything else unchanged (lists walked)."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    return value


def respond(line: str, answer: Callable[[dict], dict]) -> str:
    """One request line -> one response line (no newline)."""
    request_id = None
    try:
        request = json.loads(line)
        request_id = request.get("id")
        return json.dumps({"id": request_id, "output": _json_safe(answer(request))}, separators=(",", ":"))
    except Unsupported as why:
        return json.dumps({"id": request_id, "unsupported": str(why)}, separators=(",", ":"))
    except Exception as err:  # the protocol reports a failure as a response and goes on
        traceback.print_exc(file=sys.stderr)
        return json.dumps({"id": request_id, "error": f"{type(err).__name__}: {err}"}, separators=(",", ":"))


def serve(answer: Callable[[dict], dict], stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Answer requests until standard input ends; returns 0."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    for line in stdin:
        if line.strip():
            stdout.write(respond(line, answer) + "\n")
            stdout.flush()
    return 0
