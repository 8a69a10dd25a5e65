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
        found = (diff_stages(se, so, settings, vocab, rtol) or diff_candidates(se, so, rtol)
                 or diff_selected(se, so, mode, vocab, rtol, same_draws) or diff_hypotheses(se, so, settings, rtol)
                 or diff_done(se, so, rtol))
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


# ---- files and the command


def load_other(path: str | Path) -> Any:
    """A trace (JSON object), or token ids: a JSON list of rows, or one row of whitespace-separated ints per line."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            return [[int(x) for x in line.split()] for line in text.splitlines() if line.strip()]
        except ValueError:
            raise ValueError(f"{path}: neither JSON nor lines of integer token ids") from None
    if isinstance(data, dict):
        return load_trace(path)
    if isinstance(data, list) and data and all(isinstance(x, int) for x in data):
        return [data]
    if isinstance(data, list) and all(isinstance(r, list) and all(isinstance(x, int) for x in r) for r in data):
        return data
    raise ValueError(f"{path}: expected a trace object or a list of token-id rows")


def main(argv: list[str] | None = None) -> int:
    """``refdecode diff EXPECTED OTHER``: print the first divergence; exit 0 if none, 1 if one is found."""
    ap = argparse.ArgumentParser(
        prog="refdecode diff",
        description="Find the first step and stage where another decoder departs from refdecode. EXPECTED is the "
                    "trace refdecode wrote (refdecode PROMPT ... --trace FILE); OTHER is the other engine's trace "
                    "in the same schema (docs/traces.md), or for greedy and sampling just its token ids (a JSON "
                    "list of rows, or one row of integers per line).")
    ap.add_argument("expected", type=Path, help="refdecode's trace (JSON)")
    ap.add_argument("other", type=Path, help="the other engine's trace (JSON) or token ids")
    ap.add_argument("--rtol", type=float, default=RTOL, help="relative tolerance on scores (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print the divergence as JSON")
    ap.add_argument("--same-draws", action="store_true",
                    help="both engines sampled with the same uniforms (EXPECTED records them per step, as `refdecode "
                         "conformance trace` writes it): a different sampled token is then algorithmic, not a "
                         "different random stream")
    args = ap.parse_args(argv)
    if not args.rtol > 0:
        raise SystemExit(f"refdecode diff: --rtol has to be > 0, but is {args.rtol}")
    expected = load_trace(args.expected)
    found = first_divergence(expected, load_other(args.other), rtol=args.rtol, same_draws=args.same_draws)
    if found is None:
        print(json.dumps(None) if args.json else f"no divergence in {len(expected['steps'])} steps")
        return 0
    print(json.dumps(found.to_dict()) if args.json else found.report())
    return 1
