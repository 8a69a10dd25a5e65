r"""refdecode's own step trace of a decode case: what ``conformance trace`` writes and ``check`` diffs against.

Contract: :func:`trace_case` takes a case as :func:`~refdecode.reference.conformance.suite.load_suite` returns it
(a decode type: ``model``, ``input_ids``, ``attention_mask``, ``config``, and ``uniforms`` when sampling) and
returns the trace dict of :class:`~refdecode.reference.trace.TraceRecorder` for that decode, run exactly as the
case's expected output was computed (the case's uniforms drawn in order for a sampling case). A port that writes
its own trace in the same schema, or just its token ids, compares with it through ``refdecode diff``
(docs/traces.md). Assisted and prompt-lookup decodes are not traced (several tokens per model call).
"""

from __future__ import annotations

from typing import Any

from ...decoding.randomness import multinomial
from ..trace import TraceRecorder
from .cases_decode import UniformStream, model_for, quiet_generate
from .registry import REGISTRY

__all__ = ["trace_case", "find_case"]


def trace_case(case: dict) -> dict:
    """The step trace of a decode case (see the module docstring); ValueError for a case that is not a decode."""
    case_type = REGISTRY.get(case.get("type"))
    inp = case_type.inputs.decode(case["input"]) if case_type is not None else None
    if inp is None or not {"model", "input_ids", "config"} <= set(inp):
        raise ValueError(f"case {case.get('id')!r} is not a decode (a case with `model`, `input_ids` and `config`): "
                         "only decodes have a step trace")
    if "assistant" in inp or "prompt_lookup_num_tokens" in inp:
        raise ValueError(f"case {case['id']!r} is an assisted decode: several tokens per model call are not traced")
    config = dict(inp["config"])
    extra: dict[str, Any] = {}
    used: list[list[float]] = []  # per draw (one per step): the uniforms it consumed
    if config.get("do_sample"):
        stream = UniformStream(inp["uniforms"])

        def draw(probs: Any, n: int, replacement: bool, rng: Any) -> Any:
            start = stream.used
            tokens = multinomial(probs, n, replacement, stream)
            used.append([float(u) for u in stream.uniforms[start:stream.used]])
            return tokens
        extra["draw"] = draw
    recorder = TraceRecorder()
    quiet_generate(model_for(inp["model"], config), inp, config, trace=recorder, **extra)
    trace = recorder.to_dict()
    trace["engine"] = f"refdecode, conformance case {case['id']}"
    for step, uniforms in zip(trace["steps"], used):  # the case's uniforms: an implementation draws with them too
        step["uniforms"] = uniforms
    return trace


def find_case(cases: list[dict], case_id: str) -> dict:
    """The case with id ``case_id``; ValueError listing a few ids of the suite when there is none."""
    for case in cases:
        if case["id"] == case_id:
            return case
    sample = ", ".join(c["id"] for c in cases[:3])
    raise ValueError(f"no case {case_id!r} in the suite (ids look like {sample}, ...)")
