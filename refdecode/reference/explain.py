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

Sampling modes (``sample``, ``beam_sample``) show each stage's *probabilities* (softmax of that stage's
scores, from the trace's ``logsumexp``) instead of scores, the nucleus size (the tokens a draw can still
reach: finite after the last warper), and, when the trace holds the draws (``refdecode explain`` records
them through ``generate(draw=...)``), the uniform drawn and the chosen token's rank by probability. Beam
modes say which rows start at -1e9 and how each returned score was computed (Σ log p / ℓ^α).

Docs: docs/traces.md.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable

import numpy as np

from ..decoding.randomness import multinomial
from ..generation_rules import eos_list
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


def _prob(summary: dict, token: int, vocab: int) -> float | None:
    """softmax of the stage's row at ``token``: exp(value - logsumexp of the row)."""
    value, lse = _value(summary, token, vocab), summary.get("logsumexp")
    if value is None or lse is None:
        return None
    return 0.0 if value == -math.inf else math.exp(value - decode_float(lse))


def _stage_table(step: dict, row: int, text: Callable[[int], str], top: int, vocab: int,
                 probs: bool = False) -> list[str]:
    """Best tokens of ``row`` through every stage of the step (columns), best final score first; with
    ``probs``, each stage's probabilities (columns ``p <stage>``) instead of its scores."""
    stages = [s for s in step["stages"] if row in s["rows"]]
    summaries = [s["values"][s["rows"].index(row)] for s in stages]
    first, last = summaries[0], summaries[-1]
    tokens = list(dict.fromkeys(last["top_tokens"][:top] + first["top_tokens"][:top]))
    tokens.sort(key=lambda t: -(v if (v := _value(last, t, vocab)) is not None else -math.inf))
    cell = _prob if probs else _value
    body = [[text(t)] + [_fmt(cell(s, t, vocab)) for s in summaries] for t in tokens]
    lines = _table(["token"] + [("p " if probs else "") + _short(s["name"]) for s in stages], body)
    if probs:
        lines.append(f"    nucleus: {vocab - last['n_neg_inf']} of {vocab} tokens can be drawn after the last stage")
    return lines


def _draw_lines(step: dict, row: int, text: Callable[[int], str]) -> list[str]:
    """The uniform each draw of ``row`` used, the token it reached and that token's rank by probability."""
    lines = []
    for d in step.get("draws", []):
        if row in d.get("rows", {}):
            for u, token, rank, p, n in d["rows"][row]:
                lines.append(f"    draw: u = {u:.4f} (inverse CDF over token ids) -> {text(token)}, "
                             f"rank {rank} of {n} by probability, p = {p:.4f}")
    return lines


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
    eos = eos_list(eos, no_token=True) or []
    size = settings.get("num_beams", 1) // (settings.get("num_beam_groups") or 1)
    lines = []
    for stage_rows in dict.fromkeys(tuple(s["rows"]) for s in step["stages"]):
        hidden = [row for row in stage_rows if running.get(row, 0.0) <= -1e8]
        if hidden:
            lines.append(f"  rows {', '.join(map(str, hidden))}: copies of the prompt at running score -1e9, so every "
                         "candidate of this first step extends row 0 of its prompt (not shown)")
        for row in stage_rows:
            if running.get(row, 0.0) <= -1e8:
                continue
            lines.append(f'  row {row} "{row_text(seqs[row])}"  running score {_fmt(running.get(row, 0.0))}')
            lines += _stage_table(step, row, text, top, vocab, probs=trace.get("mode") == "beam_sample")
            lines += _draw_lines(step, row, text)
    for cand in step.get("candidates", []):
        group = cand.get("group", 0)
        fates = _fates(cand, size, eos, done_before.get((cand["prompt"], group), False), step.get("hypotheses", []),
                       settings.get("length_penalty", 1.0))
        body = [[str(r), str(b), text(t), _fmt(s), f] for r, (b, t, s, f) in
                enumerate(zip(cand["beams"], cand["tokens"], cand["scores"], fates))]
        where = f"prompt {cand['prompt']}" + (f", group {group}" if settings.get("num_beam_groups", 1) > 1 else "")
        vocab_size = trace.get("vocab_size", 1)
        for d in step.get("draws", []):
            for u, flat, rank, p, n in d.get("prompts", {}).get(cand["prompt"], []):
                lines.append(f"  draw for {where}: u = {u:.4f} -> beam {flat // vocab_size} token "
                             f"{text(flat % vocab_size)}, rank {rank} of {n} candidates by probability, p = {p:.4f}")
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
                lines += _stage_table(step, row, token_text, top, trace.get("vocab_size", 0), probs=mode == "sample")
                lines += _draw_lines(step, row, token_text)
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
    sources = _score_sources(trace, running) if beams else []
    for i, seq in enumerate(final.get("sequences", [])):
        score = final.get("sequence_scores", [None] * (i + 1))[i]
        extra = "" if score is None else f"  score {score:.4f}" + \
            (f" (p = {math.exp(score):.4f})" if settings.get("length_penalty") == 0.0 else "")
        lines.append(f'result {i}: "{row_text(seq)}"{extra}')
        if score is not None and beams:
            lines.append("  " + _how_scored(score, sources, settings.get("length_penalty", 1.0)))
    return "\n".join(lines)


def _score_sources(trace: dict, running: dict) -> list[tuple[float, int, str]]:
    """(Σ log p, ℓ, where) of every hypothesis the pool saw: those ``process`` added (eos) and the beams still
    running at the end, which ``finalize`` adds with ℓ = the generated length so far."""
    found = [(h["sum_logprobs"], h["generated_len"], f"finished at step {s['step']}")
             for s in trace["steps"] for h in s.get("hypotheses", [])]
    if trace["steps"]:
        length = trace["steps"][-1]["cur_len"] - trace.get("prompt_len", 0)
        found += [(score, length, "still running at the end (finalize)") for score in running.values() if score > -1e8]
    return found


def _how_scored(score: float, sources: list[tuple[float, int, str]], alpha: float) -> str:
    """``score = Σ / ℓ^α``, with the Σ and ℓ of the hypothesis it came from."""
    for total, length, where in sources:
        if math.isclose(total / length ** alpha, score, rel_tol=1e-5, abs_tol=1e-6):
            return f"= Σ log p / ℓ^α = {total:.4f} / {length}^{alpha} ({where})"
    return "= Σ log p / ℓ^α (hypothesis not in the trace)"


def recording_draw(trace: object) -> Callable[..., np.ndarray]:
    """A ``draw=`` for ``generate`` that draws exactly as :func:`~refdecode.decoding.randomness.multinomial` and
    records, in the current step of ``trace`` (a TraceRecorder), each row's uniforms, tokens, their rank by
    probability and the nucleus size (the tokens with p > 0). The uniforms are replayed from the generator's
    state before the draw, so the tokens are the ones ``multinomial`` draws."""
    def draw(probs: np.ndarray, num_samples: int, replacement: bool, rng: np.random.Generator) -> np.ndarray:
        state = rng.bit_generator.state
        tokens = multinomial(probs, num_samples, replacement, rng)          # (N, num_samples)
        replay = np.random.Generator(type(rng.bit_generator)())
        replay.bit_generator.state = state
        uniforms = np.stack([replay.random(probs.shape[0]) for _ in range(num_samples)], axis=1)  # (N, num_samples)
        p = np.asarray(probs, dtype=np.float64)
        p = p / p.sum(axis=-1, keepdims=True)
        rows: dict[int, list] = {}
        step = trace.steps[-1]                                               # type: ignore[attr-defined]
        names = getattr(trace, "_rows", [])
        per_prompt = len(names) != len(p)      # beam sample draws over each prompt's K*V flat candidates
        for i, row in enumerate(range(len(p)) if per_prompt else names):
            rank = [int(np.sum(p[i] > p[i, t]) + np.sum((p[i] == p[i, t])[:t]) + 1) for t in tokens[i]]
            rows[int(row)] = [(float(u), int(t), r, float(p[i, t]), int(np.count_nonzero(p[i])))
                              for u, t, r in zip(uniforms[i], tokens[i], rank)]
        step.setdefault("draws", []).append({"prompts" if per_prompt else "rows": rows})
        return tokens
    return draw


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
        sampling = options.get("do_sample", False)
        generate(model, **inputs, seed=args.seed, tokenizer=tokenizer, trace=trace,
                 **({"draw": recording_draw(trace)} if sampling else {}), **options)
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
