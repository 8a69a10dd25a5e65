r"""``refdecode conformance serve``: refdecode's own implementation of the conformance protocol.

Contract: reads one JSON request per line on standard input, ``{"id", "type", "input"}``, and writes one
JSON response per line on standard output, ``{"id", "output"}`` -- or ``{"id", "error"}`` when the request
cannot be answered -- flushing after each line, until standard input ends. The answer is the case type's
``run``: the same function ``export`` used for the expected values, so ``check --cmd "refdecode conformance
serve"`` passing 100% tests the harness, and ``--plant NAME`` (see ``plants.py``) serves a deliberately broken
refdecode to show that ``check`` catches each classic porting bug.

``--as ENGINE`` (``serve(profile=ENGINE)``) answers the greedy, sampling and beam decodes of GPT-2 checkpoints
(``engines_*``, ``gpt2_greedy`` and ``gpt2_sample``, whose draws are the case's uniforms) as that engine does,
with ``refdecode.reference.engines.decode_as`` under the engine's profile (docs/engines.md), with the outputs that
engine returns (no ``sequences_scores`` where its profile's ``beam_scores`` is False), and ``unsupported`` with
the engine's own reason where the engine refuses the settings (``engines/refusals.py``): ``check`` then passes
exactly the cases where the engine agrees with transformers 4.38.2, fails the others as the engine does, and
counts as unsupported the cases the engine refuses. Decode types the engines cannot answer (per-step
``beam_indices``, beam sample, group beam search) get ``{"id", "unsupported": reason}``, as the engines' adapters
give; other request types are answered as without ``--as``.

A request is untrusted input, and the error names the field, the rule and the value: a line is at most
:data:`MAX_REQUEST_BYTES` (the rest of a longer one is skipped unread); ``NaN`` / ``Infinity`` literals and
numbers beyond float64 are refused (the protocol writes ``"-inf"``, ``"inf"``, ``"nan"``); the input must
match its case type's JSON Schema (the one in the suite's manifest); every integer must be at most
:data:`MAX_COUNT` (no suite case comes near it), which bounds what one request can make refdecode allocate.
"""

from __future__ import annotations

import json
import math
import sys
from typing import IO, Any

from .cases_decode import model_for
from .export import dumps
from ..schema import validate
from .kinds import to_json
from .registry import REGISTRY

__all__ = ["answer", "serve", "MAX_REQUEST_BYTES", "MAX_COUNT", "PROFILE_TYPES"]

MAX_REQUEST_BYTES = 64 * 2**20  # one request line (the largest suite request, a GPT-2-sized row, is ~1 MB)
MAX_COUNT = 2**20               # any integer of a request: sizes, counts, lengths, token ids


class BadRequest(ValueError):
    """A request that does not follow the protocol; the message names the field, the rule and the value."""


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadRequest(f"the number {text[:40]} is beyond float64; write \"inf\" or \"-inf\" for infinities")
    return value


def _literal(name: str) -> Any:
    raise BadRequest(f"{name} is not JSON; write the strings \"-inf\", \"inf\", \"nan\"")


def _check_counts(value: Any, path: str = "input") -> None:
    """Every integer at most MAX_COUNT in magnitude (the request's sizes bound refdecode's allocations)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int) and abs(value) > MAX_COUNT:
        raise BadRequest(f"{path} is {value}: serve answers integers up to {MAX_COUNT} in magnitude (sizes, counts "
                         "and token ids of a suite case are far below it)")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        _check_counts(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}")


def _parse(line: str) -> tuple[Any, dict]:
    """(the request's id, the request) of one line, or BadRequest saying what is wrong with it."""
    try:
        request = json.loads(line, parse_float=_float, parse_constant=_literal)
    except json.JSONDecodeError as e:
        raise BadRequest(f"the request is not JSON: {e.msg} at column {e.colno}") from None
    except RecursionError:
        raise BadRequest("the request nests too deeply") from None
    if not isinstance(request, dict):
        raise BadRequest(f"the request has to be a JSON object {{\"id\", \"type\", \"input\"}}, got a "
                         f"{type(request).__name__}")
    request_id = request.get("id")
    if request.get("type") not in REGISTRY:
        raise BadRequest(f"unknown request type {str(request.get('type'))[:60]!r}; known: {', '.join(REGISTRY)}")
    if not isinstance(request.get("input"), dict):
        raise BadRequest("`input` has to be a JSON object")
    errors = validate(request["input"], REGISTRY[request["type"]].inputs.schema(), "input")
    if errors:
        raise BadRequest("; ".join(errors[:3]))
    _check_counts(request["input"])
    return request_id, request


#: Decode types an engine profile answers (sequences, and sequences_scores for beams where the engine returns them).
PROFILE_TYPES = ("engines_greedy", "engines_beam_search", "engines_124m_greedy", "engines_124m_beam_search",
                 "gpt2_greedy", "gpt2_sample", "engines_llama_greedy", "engines_llama_beam_search", "llama_greedy",
                 "llama_sample")


def _as_engine(profile: str, case_type: Any, request: dict) -> dict:
    """The response body of a decode request answered under ``profile``: output or unsupported."""
    from ..engines import NextTokenLogits, decode_as, refusal, rules_for

    inp = case_type.inputs.decode(request["input"])
    if request["type"] not in PROFILE_TYPES:
        return {"unsupported": f"{request['type']}: an engine profile gives sequences (and beam scores) of greedy, "
                               "sampling and beam decodes only"}
    model = model_for(inp["model"], inp["config"])
    reason = refusal(profile, inp["config"], len(inp["input_ids"][0]), model.config)
    if reason is not None:  # the engine itself refuses these settings (engines/refusals.py): so does its profile
        return {"unsupported": reason}
    # the model as the suite's other decodes load it (at most 8 kept); the logits memo lives for one request only:
    # kept across requests it would hold a (V,) row per prefix ever seen (gigabytes over a suite)
    logits = NextTokenLogits(model)
    output = decode_as(profile, logits, inp["input_ids"], inp["attention_mask"], inp["config"], inp.get("uniforms"))
    if not rules_for(profile).beam_scores:  # only what the engine returns: check compares nothing it does not give
        output.pop("sequences_scores", None)
    return {"output": output}


def answer(line: str, profile: str | None = None) -> str:
    """One request line -> one response line (without the newline); ``profile``: answer decodes as that engine."""
    request_id = None
    try:
        try:
            request_id = json.loads(line).get("id")  # for the error response; the checks follow
        except Exception:  # noqa: BLE001 -- whatever the line is, _parse says what is wrong with it
            pass
        request_id, request = _parse(line)
        case_type = REGISTRY[request["type"]]
        if profile is not None and ("config" in request["input"] or request["type"] in PROFILE_TYPES):
            body = _as_engine(profile, case_type, request)
            if "unsupported" in body:
                return dumps({"id": request_id, "unsupported": body["unsupported"]})
            return dumps({"id": request_id, "output": to_json(body["output"])})
        output = case_type.run(case_type.inputs.decode(request["input"]))
        return dumps({"id": request_id, "output": to_json(output)})
    except (ValueError, TypeError) as err:  # a refused request or argument: the protocol's error response
        return dumps({"id": _plain(request_id), "error": f"{type(err).__name__}: {err}"})
    except Exception as err:  # noqa: BLE001 -- anything else is refdecode's bug: say so, keep serving
        return dumps({"id": _plain(request_id), "error": f"internal error ({type(err).__name__}: {err}); please "
                                                          "report it with the request"})


def _plain(request_id: Any) -> Any:
    """The id echoed back only if it is a JSON scalar (a string, a number), else None."""
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def serve(stdin: IO[str] | None = None, stdout: IO[str] | None = None, profile: str | None = None) -> int:
    """Answer requests until standard input ends (decodes as the engine ``profile`` when given); returns 0."""
    if profile is not None:
        from ..engines import rules_for

        rules_for(profile)   # an unknown engine is refused before any request is read
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    while line := stdin.readline(MAX_REQUEST_BYTES + 1):
        if len(line) > MAX_REQUEST_BYTES and not line.endswith("\n"):
            while (rest := stdin.readline(2**20)) and not rest.endswith("\n"):
                pass  # skip the rest of the line unread
            response = dumps({"id": None, "error": f"ValueError: the request line is longer than {MAX_REQUEST_BYTES} "
                                                   "bytes"})
        elif not line.strip():
            continue
        else:
            response = answer(line, profile)
        stdout.write(response + "\n")
        stdout.flush()
    return 0
