r"""Explain a decode step by step: the best tokens after each processor, the candidates, what was kept and why.

Contract: :func:`render` turns a trace (:mod:`refdecode.reference.trace`) into plain-text tables a student can
read in a terminal; ``refdecode explain PROMPT [generation flags]`` runs ``generate`` with a
:class:`~refdecode.reference.trace.TraceRecorder` on a model in ``models/`` and prints them. Nothing here
computes a score: every number comes from the trace, so the tables show what the loop did.

Per step and live row (beam modes hide the beams that start at -1e9 on the first step):

- the row's text so far and its running score (beam modes);
- a table of its best tokens (the union of the best before and after the processors), one column
  per stage in order: the input (``logits`` or ``log_softmax``), then each processor and warper;
- beam modes: the candidates of each prompt, ranked, with their fate, in the words of
  ``BeamSearchScorer.process``: ``-> beam j`` (keeps running), ``finished`` (an eos ranked below the
  group size: a hypothesis, with its length-penalised score and whether the pool kept it),
  ``eos ranked >= K: ignored``, ``not needed`` (the K running slots were already filled);
- why each prompt (row) is or is not done; after the last step, what stopped the loop and the result.

Docs: docs/traces.md.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable

from .trace import decode_float

__all__ = ["render", "main"]


def _short(name: str) -> str:
    """``RepetitionPenaltyLogitsProcessor`` -> ``RepetitionPenalty`` (column headers)."""
    for suffix in ("LogitsProcessor", "LogitsWarper"):
        if name.endswith(suffix) and name != suffix:
            return name[: -len(suffix)]
    return name


def _fmt(value: float | None) -> str:
    """4 decimals; ``-1e+09`` for the -1e9 start of hidden beams; ``?`` when the trace does not hold it."""
    if value is None:
        return "?"
    if not math.isfinite(value):
        return "-inf" if value < 0 else str(value)
    return f"{value:.4f}" if abs(value) < 1e6 else f"{value:.3g}"


def _value(summary: dict, token: int, vocab: int) -> float | None:
    """A token's value in a row summary; -inf if the summary lists every finite entry and not this one."""
    if "values" in summary:
        return decode_float(summary["values"][token])
    values = dict(zip(summary["top_tokens"], summary["top_values"]))
    if token in values:
        return float(values[token])
    return -math.inf if vocab - summary["n_neg_inf"] <= len(summary["top_tokens"]) else None


def _table(header: list[str], rows: list[list[str]], left: tuple[str, ...] = ("token", "fate")) -> list[str]:
    """Aligned columns: text columns (``left``) flush left, numbers flush right."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    align = [str.ljust if h in left else str.rjust for h in header]
    return ["    " + "  ".join(a(c, w) for a, c, w in zip(align, cells, widths)).rstrip() for cells in [header, *rows]]


def _stage_table(step: dict, row: int, text: Callable[[int], str], top: int, vocab: int) -> list[str]:
    """Best tokens of ``row`` through every stage of the step (columns), best final score first."""
    stages = [s for s in step["stages"] if row in s["rows"]]
    summaries = [s["values"][s["rows"].index(row)] for s in stages]
    first, last = summaries[0], summaries[-1]
    tokens = list(dict.fromkeys(last["top_tokens"][:top] + first["top_tokens"][:top]))
    tokens.sort(key=lambda t: -(v if (v := _value(last, t, vocab)) is not None else -math.inf))
    body = [[text(t)] + [_fmt(_value(s, t, vocab)) for s in summaries] for t in tokens]
    return _table(["token"] + [_short(s["name"]) for s in stages], body)


def _fates(cand: dict, size: int, eos: list[int], done_before: bool, hyps: list[dict], alpha: float) -> list[str]:
    """What ``BeamSearchScorer.process`` did with each candidate, in rank order."""
    if done_before:
        return ["prompt already done: pad step"] * len(cand["tokens"])
    fates, running = [], 0
    for rank, token in enumerate(cand["tokens"]):
        if running == size:
            fates.append("not needed (beams filled)")
        elif token in eos and rank >= size:
            fates.append(f"eos ranked >= {size}: ignored")
        elif token in eos:
            h = next((h for h in hyps if h["prompt"] == cand["prompt"] and h.get("rank") == rank), None)
            fates.append("finished" if h is None else
                         f"finished: {h['sum_logprobs']:.4f} / {h['generated_len']}^{alpha} = {h['score']:.4f}, "
                         + ("kept" if h["kept"] else "not kept (pool full, worse)"))
        else:
            fates.append(f"-> beam {running}")
            running += 1
    return fates


def _beam_lines(step: dict, trace: dict, seqs: list, running: dict, text: Callable[[int], str],
                row_text: Callable[[list[int]], str], top: int, done_before: dict) -> list[str]:
    settings, vocab = trace.get("settings", {}), trace.get("vocab_size", 0)
    eos = settings.get("eos_token_id")
    eos = [] if eos is None else [eos] if isinstance(eos, int) else eos
    size = settings.get("num_beams", 1) // (settings.get("num_beam_groups") or 1)
    lines = []
    for stage_rows in dict.fromkeys(tuple(s["rows"]) for s in step["stages"]):
        for row in stage_rows:
            if running.get(row, 0.0) <= -1e8:
                continue
            lines.append(f'  row {row} "{row_text(seqs[row])}"  running score {_fmt(running.get(row, 0.0))}')
            lines += _stage_table(step, row, text, top, vocab)
    for cand in step.get("candidates", []):
        group = cand.get("group", 0)
        fates = _fates(cand, size, eos, done_before.get((cand["prompt"], group), False), step.get("hypotheses", []),
                       settings.get("length_penalty", 1.0))
        body = [[str(r), str(b), text(t), _fmt(s), f] for r, (b, t, s, f) in
                enumerate(zip(cand["beams"], cand["tokens"], cand["scores"], fates))]
        where = f"prompt {cand['prompt']}" + (f", group {group}" if settings.get("num_beam_groups", 1) > 1 else "")
        lines.append(f"  candidates of {where} (score = running score + processed log-prob):")
        lines += _table(["rank", "beam", "token", "score", "fate"], body)
    return lines


def render(trace: dict, token_text: Callable[[int], str] = str, top: int = 5,
           row_text: Callable[[list[int]], str] | None = None) -> str:
    """The trace as text: per step, the stage tables, candidates and fates, ``is_done``; then the stop and result.

    ``token_text`` turns a token id into its text (default: the id); ``row_text`` a row's ids into its
    text (default: the token texts joined by spaces); ``top`` best tokens per table.
    """
    row_text = row_text or (lambda ids: " ".join(token_text(t) for t in ids))
    mode, settings = trace.get("mode", "?"), trace.get("settings", {})
    beams = "beam" in mode
    repeat = settings.get("num_beams", 1) if beams else settings.get("num_return_sequences", 1) or 1
    seqs = [list(p) for p in trace.get("prompt", []) for _ in range(repeat)]
    size = settings.get("num_beams", 1) // (settings.get("num_beam_groups") or 1)
    running = {r: (0.0 if (mode != "beam_search" and mode != "group_beam_search") or r % size == 0 else -1e9)
               for r in range(len(seqs))}
    done_before: dict = {}
    lines = [f"{mode}: " + ", ".join(f"{k}={v}" for k, v in settings.items() if v is not None)]
    for step in trace["steps"]:
        lines.append(f"step {step['step']} (cur_len {step['cur_len']})")
        if beams:
            lines += _beam_lines(step, trace, seqs, running, token_text, row_text, top, done_before)
        else:
            for row in range(len(seqs)):
                lines.append(f'  row {row} "{row_text(seqs[row])}"')
                lines += _stage_table(step, row, token_text, top, trace.get("vocab_size", 0))
        new = list(seqs)
        for sel in step["selected"]:
            rows = sel.get("rows", list(range(len(sel["tokens"]))))
            for j, (row, token) in enumerate(zip(rows, sel["tokens"])):
                source = rows[sel["beam_idx"][j]] if "beam_idx" in sel else row
                new[row] = seqs[source] + [token]
                running[row] = sel["beam_scores"][j] if "beam_scores" in sel else 0.0
            if "beam_idx" not in sel:
                lines.append("  chosen: " + ", ".join(f"row {r}: {token_text(t)}" for r, t in zip(rows, sel["tokens"])))
        seqs = new
        for d in step.get("done", []):
            who = f"prompt {d['prompt']}" + (f" group {d['group']}" if d.get("group") else "") if "prompt" in d \
                else f"row {d['row']}"
            lines.append(f"  {who}: {'done' if d['done'] else 'not done'}: {d['reason']}")
            done_before[(d.get("prompt"), d.get("group", 0))] = d["done"]
    if "stop" in trace:
        lines.append(f"stopped after step {trace['stop']['step']}: {trace['stop']['reason']}")
    final = trace.get("final", {})
    for i, seq in enumerate(final.get("sequences", [])):
        score = final.get("sequence_scores", [None] * (i + 1))[i]
        extra = "" if score is None else f"  score {score:.4f}" + \
            (f" (p = {math.exp(score):.4f})" if settings.get("length_penalty") == 0.0 else "")
        lines.append(f'result {i}: "{row_text(seq)}"{extra}')
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``refdecode explain PROMPT [generation flags] [--top N]``: run generate with a trace and print it."""
    from ..cli import UsageError, generation_parser, load_generation
    from ..generate import generate
    from .trace import TraceRecorder

    ap = generation_parser("refdecode explain", (
        "Explain a decode step by step: the best tokens with their scores after each processor and warper, "
        "the beam candidates and what was kept and why, and why each prompt is or is not done. Takes the "
        "flags of the generation command (refdecode --help); docs/traces.md."))
    ap.add_argument("--top", type=int, default=5, help="best tokens shown per row and step (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.top < 1:
        ap.error(f"--top has to be >= 1, but is {args.top}")
    try:
        model, tokenizer, options = load_generation(args)
        trace = TraceRecorder(top_n=max(20, args.top))
        inputs = tokenizer([args.prompt], return_tensors="np")
        generate(model, **inputs, seed=args.seed, tokenizer=tokenizer, trace=trace, **options)
    except (UsageError, ValueError, TypeError) as e:
        print(f"refdecode explain: error: {e}", file=sys.stderr)
        return 2
    if args.trace is not None:
        trace.save(args.trace)
    try:
        print(render(trace.to_dict(), lambda t: _visible(tokenizer.decode([t])), top=args.top,
                     row_text=lambda ids: tokenizer.decode(ids).replace("\n", "\\n")), flush=True)
    except BrokenPipeError:  # `refdecode explain ... | head`: the reader left (as the generation command)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def _visible(text: str) -> str:
    """Token text for a table cell: newlines as ``\\n``, spaces as ``␣`` (GPT-2 tokens often start with one)."""
    return text.replace("\n", "\\n").replace(" ", "␣")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
