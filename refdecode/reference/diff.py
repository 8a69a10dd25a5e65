r"""Where did two decoders part? The first divergence between refdecode's trace and another engine's.

Contract: ``first_divergence(expected, other)`` -> :class:`Divergence` or None. ``expected`` is a
refdecode trace (:mod:`refdecode.reference.trace`); ``other`` is a trace in the same schema (any subset of
its fields: what the other engine does not record is not compared) or, for greedy and sampling,
just the other engine's token ids (rows, prompt included or not). It knows nothing about models.

The walk, per step, in the order the loop computes things: the input row (``logits`` or
``log_softmax``), each processor and warper, the beam candidates, the selection (tokens,
``beam_idx``, running scores), the hypotheses offered to ``BeamHypotheses``, ``is_done``; after
the steps, the number of steps (stopping) and the final sequences. The first difference wins.

Tolerance: two values agree when :math:`|a - b| \le \text{rtol}\cdot\max(1, \text{scale})`, where the
scale is the row's largest finite magnitude (``absmax``) and rtol = 1e-4 (docs/golden-reference.md).
Token ids, ``beam_idx`` and which entries are ``-inf`` must be equal.

Verdicts:

- **near-tie**: the other engine chose differently between options that refdecode scores within the
  tolerance of each other (two tokens, two candidates, a token at the top-k / top-p boundary, a
  pool score against the ``is_done`` bound): numerical drift, not a bug.
- **algorithmic**: refdecode's margin is larger than the tolerance, or a value computed from agreeing
  inputs differs: the other engine computes something else.
- **random draw** (sampling): the other engine drew a token refdecode also allows; the random
  streams differ (share the uniforms: docs/golden-reference.md).

Docs: docs/traces.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .divergence import (RTOL, Divergence, diff_candidates, diff_done, diff_hypotheses, diff_selected, diff_stages)
from .trace import load_trace

__all__ = ["first_divergence", "load_other", "main"]

# ---- the walk


def _as_trace(other: Any, expected: dict) -> dict:
    """Token ids (rows) -> a minimal trace holding only each step's selected tokens."""
    if isinstance(other, dict):
        return other
    if expected.get("mode") not in ("greedy_search", "sample"):
        raise ValueError(f"token ids alone can be compared for greedy_search and sample traces only, but the "
                         f"expected trace's mode is {expected.get('mode')!r}: pass the other engine's trace")
    prompt_len = expected.get("prompt_len", 0)
    prompts = [row for row in expected.get("prompt", [])]
    per_prompt = max(1, len(other) // len(prompts)) if prompts else 1  # num_return_sequences rows per prompt
    rows = [list(r)[prompt_len:] if prompts and list(r)[:prompt_len] == prompts[min(i // per_prompt, len(prompts) - 1)]
            else list(r) for i, r in enumerate(other)]
    n = max((len(r) for r in rows), default=0)
    steps = [{"step": k, "selected": [{"tokens": [r[k] if k < len(r) else None for r in rows]}]} for k in range(n)]
    return {"format": "refdecode-trace", "version": 1, "steps": steps, "tokens_only": True}


def _with_cache_hint(found: Divergence, previous: dict | None) -> Divergence:
    """A model-input row that differs right after a step that moved beams: say so (the cache reorder)."""
    if found.stage not in ("logits", "log_softmax") or previous is None:
        return found
    moved = [sel["beam_idx"] for sel in previous["selected"] if "beam_idx" in sel and
             sel["beam_idx"] != list(range(len(sel["beam_idx"])))]
    if moved:
        found.detail += (f"; the previous step reordered the beams (beam_idx {moved[0]}): a KV cache that is not "
                         "reordered with beam_idx (KVCache.reorder, docs/gpt2.md) gives exactly this")
    else:
        found.detail += "; the model's input or the model differs (the previous step agreed)"
    return found


def first_divergence(expected: dict, other: Any, rtol: float = RTOL, same_draws: bool = False) -> Divergence | None:
    """The first divergence of ``other`` (a trace dict, or token-id rows) from refdecode's trace ``expected``.

    ``same_draws``: both sides sampled with the same uniforms (those ``expected`` records per step, as a
    conformance case's trace does), so a different sampled token is algorithmic, and the verdict names the filter
    stage that explains it when it can.
    """
    other = _as_trace(other, expected)
    settings, mode, vocab = expected.get("settings", {}), expected.get("mode", ""), expected.get("vocab_size", 0)
    previous = None
    for se, so in zip(expected["steps"], other["steps"]):
        try:
            found = _row_counts(se, so) or _diff_step(se, so, settings, mode, vocab, rtol, same_draws)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:  # a record of another layout
            raise ValueError(f"step {se.get('step', '?')}: OTHER's record does not have the layout of refdecode's "
                             f"({type(err).__name__}: {err}); docs/traces.md describes each field") from None
        if found:
            return _with_cache_hint(found, previous)
        previous = se
    n_e, n_o = len(expected["steps"]), len(other["steps"])
    if n_e != n_o:
        reason = expected.get("stop", {}).get("reason", "?")
        return Divergence(min(n_e, n_o), "stopping", None, f"{n_e} steps (stopped: {reason})", f"{n_o} steps",
                          "algorithmic", "every recorded step agreed, but one engine stopped earlier")
    fe, fo = expected.get("final", {}), other.get("final", {})
    for key in ("sequences", "beam_indices"):
        if key in fe and key in fo and fe[key] != fo[key]:
            return Divergence(None, "finalize", None, f"{key} {fe[key]}", f"{key} {fo[key]}", "algorithmic",
                              "every step agreed; the choice among finished hypotheses differs")
    return None


def _diff_step(se: dict, so: dict, settings: dict, mode: str, vocab: int, rtol: float,
               same_draws: bool) -> Divergence | None:
    """One step, stage by stage in the loop's order: the first difference."""
    return (diff_stages(se, so, settings, vocab, rtol) or diff_candidates(se, so, rtol)
            or diff_selected(se, so, mode, vocab, rtol, same_draws) or diff_hypotheses(se, so, settings, rtol)
            or diff_done(se, so, rtol))


def _row_counts(se: dict, so: dict) -> Divergence | None:
    """A step whose selection holds more or fewer rows in OTHER (a prompt or a returned sequence too many)."""
    for e, o in zip(se.get("selected", []), so.get("selected") or []):
        n_e, n_o = len(e.get("tokens", [])), len(o.get("tokens", []))
        if "tokens" in o and n_e != n_o:
            return Divergence(se["step"], "rows", None, f"{n_e} rows", f"{n_o} rows", "algorithmic",
                              f"OTHER selects tokens for {n_o} rows where refdecode has {n_e} (a prompt or a "
                              f"returned sequence {'too many' if n_o > n_e else 'missing'})")
    return None


# ---- files and the command


def load_other(path: str | Path, vocab_size: int = 0) -> Any:
    """A trace (JSON object, validated as :func:`~refdecode.reference.trace.load_trace` does), or token ids: a
    JSON list of rows, one row of whitespace-separated ints per line, or a conformance response line
    ``{"id": ..., "output": {"sequences": [[...]]}}`` (what an implementation answered for a case), each id in [0, ``vocab_size``) when the
    vocabulary size is known (> 0). Every problem is one ValueError naming the file; an empty file is one."""
    from ..text.files import read_text_file
    from .trace import MAX_TRACE_BYTES

    text = read_text_file(path, "trace or token-id file", MAX_TRACE_BYTES)
    if not text.strip():
        raise ValueError(f"{path}: the file is empty (expected a trace or token ids)")
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: not valid JSON: nested too deeply") from None
    except json.JSONDecodeError:
        try:
            data = [[int(x) for x in line.split()] for line in text.splitlines() if line.strip()]
        except ValueError:
            raise ValueError(f"{path}: neither JSON nor lines of integer token ids") from None
    if isinstance(data, dict) and "format" not in data and "id" in data:  # a conformance response line
        output = data.get("output")
        if not isinstance(output, dict) or "sequences" not in output:
            why = {k: data[k] for k in ("error", "unsupported") if k in data}
            raise ValueError(f"{path}: a conformance response without output.sequences {why or ''}".rstrip())
        data = output["sequences"]
    elif isinstance(data, dict):
        return load_trace(path)
    if isinstance(data, list) and data and all(_is_id(x) for x in data):
        data = [data]
    if not (isinstance(data, list) and data and all(isinstance(r, list) and all(_is_id(x) for x in r) for r in data)):
        raise ValueError(f"{path}: expected a trace object or a non-empty list of rows of integer token ids")
    bad = [x for r in data for x in r if x < 0 or (vocab_size > 0 and x >= vocab_size)]
    if bad:
        limit = f"[0, {vocab_size})" if vocab_size > 0 else ">= 0"
        raise ValueError(f"{path}: token id {bad[0]} is outside the vocabulary: ids are {limit}")
    return data


def _is_id(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def main(argv: list[str] | None = None) -> int:
    """``refdecode diff EXPECTED OTHER``: print the first divergence; exit 0 if none, 1 if one is found, 2 when an
    input is wrong (a missing or unreadable file, not a trace, token ids outside the vocabulary: one line)."""
    ap = argparse.ArgumentParser(
        prog="refdecode diff",
        description="Find the first step and stage where another decoder departs from refdecode. EXPECTED is the "
                    "trace refdecode wrote (refdecode PROMPT ... --trace FILE); OTHER is the other engine's trace "
                    "in the same schema (docs/traces.md), or for greedy and sampling just its token ids (a JSON "
                    "list of rows, one row of integers per line, or its conformance response line for the case). Exit status: 0 no divergence, 1 a divergence "
                    "found, 2 an input is wrong (one line on stderr).")
    ap.add_argument("expected", type=Path, help="refdecode's trace (JSON)")
    ap.add_argument("other", type=Path, help="the other engine's trace (JSON) or token ids")
    ap.add_argument("--rtol", type=float, default=RTOL, help="relative tolerance on scores (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print the divergence as JSON")
    ap.add_argument("--same-draws", action="store_true",
                    help="both engines sampled with the same uniforms (EXPECTED records them per step, as `refdecode "
                         "conformance trace` writes it): a different sampled token is then algorithmic, not a "
                         "different random stream")
    args = ap.parse_args(argv)
    try:
        if not 0 < args.rtol < float("inf"):
            raise ValueError(f"--rtol has to be a finite number > 0, but is {args.rtol}")
        expected = load_trace(args.expected)
        other = load_other(args.other, expected.get("vocab_size", 0))
        found = first_divergence(expected, other, rtol=args.rtol, same_draws=args.same_draws)
    except (ValueError, OSError) as err:  # the input is wrong: one line, status 2 (1 means "a divergence")
        print(f"refdecode diff: error: {err}", file=sys.stderr)
        return 2
    if found is None:
        print(json.dumps(None) if args.json else f"no divergence in {len(expected['steps'])} steps")
        return 0
    print(json.dumps(found.to_dict()) if args.json else found.report())
    return 1
