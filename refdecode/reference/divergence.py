r"""How two decoders' steps compare: the verdicts ``refdecode diff`` gives, one stage at a time.

Contract: each ``diff_*`` function compares one part of a step of refdecode's trace (``se``) with the other
engine's (``so``) and returns the :class:`Divergence` found there, or None: :func:`diff_stages` the score
rows stage by stage, :func:`diff_candidates` / :func:`diff_hypotheses` / :func:`diff_done` the beam
bookkeeping, :func:`diff_selected` the tokens chosen. The walk over the steps that calls them, and the
command, are :mod:`refdecode.reference.diff`. Tolerance and verdicts: the module docstring there.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .trace import decode_float

__all__ = ["Divergence", "STAGE_REFERENCE", "RTOL", "tolerance", "diff_stages", "diff_candidates", "diff_hypotheses",
           "diff_done", "diff_selected"]

RTOL = 1e-4

#: stage -> (the refdecode function computing it, its docs page)
STAGE_REFERENCE: dict[str, tuple[str, str]] = {
    "logits": ("refdecode.decoding.loop.decode_step (the model: refdecode.model.modeling.GPT2; cache: KVCache.reorder)",
               "docs/gpt2.md"),
    "log_softmax": ("refdecode.numerics.log_softmax (of the model's logits; cache: KVCache.reorder)",
                    "docs/beam-search.md"),
    "RepetitionPenaltyLogitsProcessor": ("refdecode.processors.logits_process.repetition_penalty_process",
                                         "docs/repetition-penalty.md"),
    "NoRepeatNGramLogitsProcessor": ("refdecode.processors.logits_process.no_repeat_ngram_process", "docs/no-repeat-ngram.md"),
    "MinLengthLogitsProcessor": ("refdecode.processors.logits_process.min_length_process", "docs/min-length.md"),
    "MinNewTokensLengthLogitsProcessor": ("refdecode.processors.logits_process.min_new_tokens_process", "docs/min-length.md"),
    "HammingDiversityLogitsProcessor": ("refdecode.processors.logits_process.hamming_diversity_process",
                                        "docs/group-beam-search.md"),
    "TemperatureLogitsWarper": ("refdecode.processors.logits_warp.temperature_warp", "docs/temperature.md"),
    "TopKLogitsWarper": ("refdecode.processors.logits_warp.top_k_warp", "docs/top-k.md"),
    "TopPLogitsWarper": ("refdecode.processors.logits_warp.top_p_warp", "docs/top-p.md"),
    "candidates": ("refdecode.decoding.beam.bookkeeping.top_candidates (beam sample: refdecode.decoding.beam.beam_search.sample_candidates)",
                   "docs/beam-search.md"),
    "selection/greedy_search": ("refdecode.decoding.greedy.greedy_search (argmax, lowest id on ties)", "docs/greedy.md"),
    "selection/sample": ("refdecode.decoding.randomness.multinomial (the draw)", "docs/sampling.md"),
    "selection/beam": ("refdecode.decoding.beam.beam_scorer.BeamSearchScorer.process", "docs/beam-search.md"),
    "hypotheses": ("refdecode.decoding.beam.beam_scorer.BeamHypotheses.add", "docs/beam-search.md"),
    "is_done": ("refdecode.decoding.beam.beam_scorer.BeamHypotheses.is_done", "docs/beam-search.md"),
    "stopping": ("refdecode.decoding.stopping_criteria.StoppingCriteriaList / BeamSearchScorer.is_done", "docs/stopping.md"),
    "finalize": ("refdecode.decoding.beam.beam_scorer.BeamSearchScorer.finalize", "docs/beam-search.md"),
}


@dataclass
class Divergence:
    """The first place two decoders differ, and why refdecode thinks they do."""

    step: int | None
    stage: str
    row: int | None
    expected: Any
    other: Any
    verdict: str                     # "near-tie" | "algorithmic" | "random draw"
    detail: str
    function: str = ""
    docs: str = ""
    prompt: int | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.function, self.docs = STAGE_REFERENCE.get(self.stage) or _processor_reference(self.stage)

    def report(self) -> str:
        """The human-readable report ``refdecode diff`` prints."""
        where = "after the last step" if self.step is None else f"step {self.step}"
        who = "" if self.row is None else f", row {self.row}"
        who += "" if self.prompt is None else f" (prompt {self.prompt})"
        return "\n".join([f"first divergence: {where}{who}, stage {self.stage}",
                          f"  refdecode: {self.expected}", f"  other:     {self.other}",
                          f"  verdict:   {self.verdict}: {self.detail}",
                          f"  refdecode function: {self.function}", f"  docs: {self.docs}"])

    def to_dict(self) -> dict:
        return asdict(self)


# modules holding the other processors and warpers (their class name is the stage name)
_PROCESSOR_MODULES = ("logits_process", "logits_warp", "truncation_warpers", "exponential_decay", "prompt_penalties",
                      "guidance", "score_cleanup", "bad_words_and_forcing")


def _processor_reference(stage: str) -> tuple[str, str]:
    """A stage named after a processor class outside STAGE_REFERENCE: where refdecode defines it."""
    for name in _PROCESSOR_MODULES:
        try:
            module = importlib.import_module(f"refdecode.processors.{name}")
        except ImportError:
            continue
        if hasattr(module, stage):
            return f"refdecode.processors.{name}.{stage}", "docs/processors.md"
    return f"not a refdecode stage ({stage}: a custom processor?)", "docs/processors.md"


def tolerance(scale: float, rtol: float) -> float:
    """The largest difference two values of a row of scale ``scale`` may have and still agree."""
    return rtol * max(1.0, abs(scale))


# ---- one row of scores


def _values(summary: dict) -> dict[int, float]:
    """token -> value for the entries a row summary holds (all of them when ``values`` is present)."""
    if "values" in summary:
        return {t: decode_float(v) for t, v in enumerate(summary["values"])}
    return {int(t): float(v) for t, v in zip(summary["top_tokens"], summary["top_values"])}


def _kept_count_known(summary: dict, vocab: int) -> bool:
    """Does the summary list every finite entry (so a token absent from it is -inf)?"""
    if "values" in summary:
        return True
    return "n_neg_inf" in summary and vocab - summary["n_neg_inf"] <= len(summary["top_tokens"])


def _row_value(summary: dict, token: int, vocab: int) -> float | None:
    """The token's value in the row, -inf if provably filtered, None if the summary does not hold it."""
    values = _values(summary)
    if token in values:
        return values[token]
    return -math.inf if _kept_count_known(summary, vocab) else None


def _mask_difference(exp: dict, oth: dict, vocab: int) -> tuple[int, bool] | None:
    """(token, kept by refdecode?) for the first token filtered on one side only, or None if none is found.

    A token both summaries hold decides first; otherwise, when one side keeps fewer entries, the
    other side's lowest kept entry (``last_token``) is the one at the boundary.
    """
    ev, ov = _values(exp), _values(oth)
    for token in sorted(set(ev) | set(ov)):
        e, o = _row_value(exp, token, vocab), _row_value(oth, token, vocab)
        if e is not None and o is not None and math.isinf(e) != math.isinf(o):
            return token, not math.isinf(e)
    kept_e, kept_o = vocab - exp["n_neg_inf"], vocab - oth.get("n_neg_inf", exp["n_neg_inf"])
    if kept_o < kept_e and "last_token" in exp:
        return exp["last_token"], True
    if kept_o > kept_e and "last_token" in oth:
        return oth["last_token"], False
    return None


def _top_p_margin(token: int, kept_by_ref: bool, before: dict, after: dict, top_p: float) -> tuple[float, str]:
    """How far the top-p decision on ``token`` is from flipping, in probability mass (refdecode's scores).

    The kept mass is ``exp(logsumexp(after) - logsumexp(before))``; a token is kept iff the mass of the
    tokens ranked above it is < top_p. Kept by refdecode: above = kept mass - p(token); filtered by
    refdecode (the next one after the kept set): above = the kept mass.
    """
    lse_in, lse_out = decode_float(before["logsumexp"]), decode_float(after["logsumexp"])
    kept_mass = math.exp(lse_out - lse_in)
    if kept_by_ref:
        value = _values(before).get(token, after.get("last_value") if after.get("last_token") == token else None)
        above = kept_mass - math.exp(value - lse_in)
    else:
        above = kept_mass
    return abs(above - top_p), f"mass of the tokens ranked above it = {above:.6f} against top_p = {top_p} " \
                               f"(kept iff < top_p)"


def _boundary_verdict(name: str, token: int, kept_by_ref: bool, before: dict | None, after: dict,
                      settings: dict, vocab: int, rtol: float) -> tuple[str, str]:
    """Is a token filtered on one side only a near-tie at the filter's boundary (on refdecode's scores)?"""
    if before is None:
        return "algorithmic", "no input row recorded to measure the margin"
    if name == "TopPLogitsWarper" and settings.get("top_p") is not None and "logsumexp" in before:
        gap, why = _top_p_margin(token, kept_by_ref, before, after, settings["top_p"])
        return ("near-tie" if gap <= rtol else "algorithmic"), f"{why}: margin {gap:.2e}, tolerance {rtol:.0e}"
    values = sorted(_values(before).items(), key=lambda tv: (-tv[1], tv[0]))
    after_vals = _values(after)
    kept = [v for t, v in values if not math.isinf(after_vals.get(t, -math.inf))]
    dropped = [v for t, v in values if math.isinf(after_vals.get(t, -math.inf))]
    value = dict(values).get(token)
    side = dropped if kept_by_ref else kept
    if value is None or not side:
        return "algorithmic", "refdecode's margin at the boundary cannot be measured from the recorded entries"
    boundary = max(side) if kept_by_ref else min(side)
    gap = abs(value - boundary)
    verdict = "near-tie" if gap <= tolerance(before.get("absmax", 1.0), rtol) else "algorithmic"
    return verdict, f"its input score {value:.6g} vs the other side of the boundary {boundary:.6g}: margin {gap:.2e}"


def _diff_row(name: str, exp: dict, oth: dict, before: dict | None, settings: dict, vocab: int,
              rtol: float) -> tuple[str, Any, Any, str, str] | None:
    """Compare one row at one stage: (what, refdecode's, other's, verdict, detail), or None if they agree."""
    oth = {"n_neg_inf": sum(v == "-inf" for v in oth["values"]), **oth} if "values" in oth else oth
    mask = _mask_difference(exp, oth, vocab)
    if mask is not None or exp["n_neg_inf"] != oth.get("n_neg_inf", exp["n_neg_inf"]):
        kept_e, kept_o = vocab - exp["n_neg_inf"], vocab - oth.get("n_neg_inf", exp["n_neg_inf"])
        if mask is None:
            return ("filtered entries", f"{kept_e} kept", f"{kept_o} kept", "algorithmic",
                    "a different number of entries is -inf (the tokens are outside the recorded top entries)")
        token, by_ref = mask
        verdict, why = _boundary_verdict(name, token, by_ref, before, exp, settings, vocab, rtol)
        return (f"token {token} filtered", f"kept ({kept_e} kept)" if by_ref else f"filtered ({kept_e} kept)",
                f"filtered ({kept_o} kept)" if by_ref else f"kept ({kept_o} kept)", verdict, why)
    tol, ev, ov = tolerance(exp.get("absmax", 1.0), rtol), _values(exp), _values(oth)
    for token in sorted(set(ev) & set(ov), key=lambda t: -abs(ev[t] - ov[t]) if math.isfinite(ev[t]) else 0):
        e, o = ev[token], ov[token]
        if math.isfinite(e) and abs(e - o) > tol:
            return (f"token {token} value", e, o, "algorithmic",
                    f"differs by {abs(e - o):.3g} > tolerance {tol:.1e} while every earlier stage agreed")
        break
    return None


def diff_stages(se: dict, so: dict, settings: dict, vocab: int, rtol: float) -> Divergence | None:
    """The input row and every processor/warper of one step, in order."""
    if not so.get("stages"):
        return None
    names_e = [(s["name"], s.get("group")) for s in se["stages"]]
    names_o = [(s["name"], s.get("group")) for s in so["stages"]]
    before: dict[int, dict] = {}
    for j, (a, b) in enumerate(zip(se["stages"], so["stages"])):
        if names_e[j] != names_o[j]:
            return Divergence(se["step"], a["name"], None, [n for n, _ in names_e], [n for n, _ in names_o],
                              "algorithmic", "the stages differ in name or order: the processor/warper list "
                              "(or its order: processors, then temperature -> top-k -> top-p) is not the same")
        for i, (row, ex, ot) in enumerate(zip(a["rows"], a["values"], b["values"])):
            found = _diff_row(a["name"], ex, ot, before.get(row), settings, vocab, rtol)
            if found:
                what, e, o, verdict, detail = found
                return Divergence(se["step"], a["name"], row, f"{what}: {e}", f"{what}: {o}", verdict, detail)
            before[row] = ex
    if len(names_e) != len(names_o):
        extra = (names_e if len(names_e) > len(names_o) else names_o)[min(len(names_e), len(names_o))][0]
        return Divergence(se["step"], extra, None, [n for n, _ in names_e], [n for n, _ in names_o],
                          "algorithmic", f"one engine applies {extra} here and the other does not")
    return None


# ---- beams


def diff_candidates(se: dict, so: dict, rtol: float) -> Divergence | None:
    """Candidate lists per prompt: count, then (beam, token) and score rank by rank."""
    for ce, co in zip(se.get("candidates", []), so.get("candidates") or []):
        if len(ce["tokens"]) != len(co["tokens"]):
            return Divergence(se["step"], "candidates", None, f"{len(ce['tokens'])} candidates",
                              f"{len(co['tokens'])} candidates", "algorithmic",
                              "beam search takes max(2, 1 + n_eos) * num_beams candidates (so num_beams non-eos "
                              "ones remain when eos candidates leave)", prompt=ce["prompt"])
        tol = tolerance(max(abs(s) for s in ce["scores"]), rtol)
        pairs = list(zip(ce["beams"], ce["tokens"]))
        for j, (pe, po) in enumerate(zip(pairs, zip(co["beams"], co["tokens"]))):
            e_score, o_score = ce["scores"][j], co["scores"][j]
            if pe == po and abs(e_score - o_score) <= tol:
                continue
            if pe == po:
                return Divergence(se["step"], "candidates", None, f"rank {j} {pe} score {e_score:.6g}",
                                  f"score {o_score:.6g}", "algorithmic",
                                  "same candidate, different accumulated score (running score + log-prob)",
                                  prompt=ce["prompt"])
            margin = e_score - (ce["scores"][pairs.index(po)] if po in pairs else ce["scores"][-1])
            verdict = "near-tie" if margin <= tol else "algorithmic"
            bound = "" if po in pairs else " at least (the other's candidate is not among refdecode's)"
            return Divergence(se["step"], "candidates", None, f"rank {j}: (beam, token) {pe} score {e_score:.6g}",
                              f"rank {j}: (beam, token) {po} score {o_score:.6g}", verdict,
                              f"refdecode's margin between the two is {margin:.3g}{bound}, tolerance {tol:.1e}",
                              prompt=ce["prompt"])
    return None


def diff_hypotheses(se: dict, so: dict, settings: dict, rtol: float) -> Divergence | None:
    he, ho = se.get("hypotheses", []), so.get("hypotheses")
    if ho is None:
        return None
    for e, o in zip(he, ho):
        for key in ("prompt", "row", "token", "generated_len"):
            if key in o and e[key] != o[key]:
                return Divergence(se["step"], "hypotheses", e["row"], f"{key} = {e[key]}", f"{key} = {o[key]}",
                                  "algorithmic", "a different hypothesis, length or pool decision",
                                  prompt=e["prompt"])
        if abs(e["score"] - o["score"]) > tolerance(e["score"], rtol):
            alpha, same_sum = settings.get("length_penalty", 1.0), abs(e["sum_logprobs"] - o["sum_logprobs"]) <= \
                tolerance(e["sum_logprobs"], rtol)
            implied = (o["sum_logprobs"] / o["score"]) ** (1 / alpha) if alpha and o["score"] else float("nan")
            detail = (f"same sum of log-probs, different score: refdecode divides by generated_len^alpha = "
                      f"{e['generated_len']}^{alpha}; the other's score implies a length of {implied:.4g}"
                      if same_sum else "the summed log-probabilities differ")
            return Divergence(se["step"], "hypotheses", e["row"], f"score {e['score']:.6g}",
                              f"score {o['score']:.6g}", "algorithmic", detail, prompt=e["prompt"])
        if "kept" in o and e["kept"] != o["kept"]:
            return Divergence(se["step"], "hypotheses", e["row"], f"kept = {e['kept']}", f"kept = {o['kept']}",
                              "algorithmic", "same hypothesis and score, a different pool decision "
                              "(kept iff fewer than num_beams are held or the score beats the worst)",
                              prompt=e["prompt"])
    if len(he) != len(ho):
        return Divergence(se["step"], "hypotheses", None, f"{len(he)} hypotheses offered",
                          f"{len(ho)} hypotheses offered", "algorithmic",
                          "only eos candidates ranked below the group size become hypotheses")
    return None


def diff_done(se: dict, so: dict, rtol: float) -> Divergence | None:
    for e, o in zip(se.get("done", []), so.get("done") or []):
        if e["done"] != o["done"]:
            near = "worst_score" in e and abs(e["worst_score"] - e["best_attainable"]) <= tolerance(e["worst_score"], rtol)
            stage = "is_done" if "prompt" in e else "stopping"
            return Divergence(se["step"], stage, e.get("row"), f"done={e['done']} ({e['reason']})",
                              f"done={o['done']}" + (f" ({o['reason']})" if "reason" in o else ""),
                              "near-tie" if near else "algorithmic",
                              "the worst finished score and the bound are within tolerance" if near
                              else "refdecode's decision is not close", prompt=e.get("prompt"))
    return None


# ---- selection


def _final_stage(step: dict, row: int) -> dict | None:
    """The last recorded stage's summary of ``row`` (what the selection read)."""
    for stage in reversed(step["stages"]):
        if row in stage["rows"]:
            return stage["values"][stage["rows"].index(row)]
    return None


def _filtering_stage(step: dict, row: int, token: int, vocab: int) -> str | None:
    """The first stage at which ``token`` became -inf in ``row``, if the trace shows it."""
    for stage in step["stages"]:
        if row in stage["rows"]:
            value = _row_value(stage["values"][stage["rows"].index(row)], token, vocab)
            if value is not None and math.isinf(value) and value < 0:
                return stage["name"]
    return None


def _token_verdict(step: dict, mode: str, row: int, e_tok: int, o_tok: int, vocab: int,
                   rtol: float, same_draws: bool = False) -> tuple[str, str, str]:
    """(stage, verdict, detail) for a row where the other engine appended another token than refdecode."""
    filtered = _filtering_stage(step, row, o_tok, vocab)
    if filtered:
        return filtered, "algorithmic", f"refdecode's {filtered} filtered token {o_tok} out (-inf): it cannot be chosen"
    stage = "selection/sample" if mode in ("sample", "beam_sample") else "selection/greedy_search"
    if stage == "selection/sample" and same_draws and step.get("uniforms") and row < len(step["uniforms"]):
        return _same_draw_verdict(step, row, e_tok, o_tok, step["uniforms"][row])
    if stage == "selection/sample":
        return stage, "random draw", f"token {o_tok} is allowed by refdecode too: the random streams differ " \
                                     "(if both drew the same uniforms, say so: refdecode diff --same-draws)"
    summary = _final_stage(step, row)
    if summary is None:
        return stage, "algorithmic", "no scores recorded"
    e_val, o_val = _row_value(summary, e_tok, vocab), _row_value(summary, o_tok, vocab)
    tol = tolerance(summary.get("absmax", 1.0), rtol)
    if o_val is None:
        low = min(summary["top_values"])
        return stage, "algorithmic" if e_val - low > tol else "near-tie", \
            f"token {o_tok} is not among refdecode's top {len(summary['top_tokens'])}: margin >= {e_val - low:.3g}"
    verdict = "near-tie" if e_val - o_val <= tol else "algorithmic"
    return stage, verdict, f"refdecode scores {e_tok}: {e_val:.6g}, {o_tok}: {o_val:.6g}; margin " \
                           f"{e_val - o_val:.3g}, tolerance {tol:.1e}"


def _inverse_cdf(values: list[float], u: float) -> int:
    """The token the uniform ``u`` draws from softmax(values): refdecode's multinomial on one row (float32
    probabilities, a float64 cumulative sum, the first index whose sum exceeds u * total)."""
    import numpy as np

    from ..numerics import softmax

    probs = softmax(np.asarray(values, dtype=np.float32)[None])[0].astype(np.float64)
    cdf = np.cumsum(probs)
    return min(int(np.count_nonzero(cdf <= u * cdf[-1])), int(np.flatnonzero(probs)[-1]))


def _same_draw_verdict(step: dict, row: int, e_tok: int, o_tok: int, u: float) -> tuple[str, str, str]:
    """Both engines drew with the uniform ``u``, so a different token means a different distribution: name the
    filter stage when dropping refdecode's least probable kept token, or keeping its most probable filtered one,
    makes ``u`` draw the other token (a top-p boundary, a top-k tie), else say the probabilities differ."""
    stages = [s for s in step["stages"] if row in s["rows"]]
    rows = [s["values"][s["rows"].index(row)] for s in stages]
    if not rows or "values" not in rows[-1]:
        return "selection/sample", "algorithmic", f"the same uniform {u:.6g} draws token {e_tok} here: token " \
                                                  f"{o_tok} means the probabilities differ"
    final = [decode_float(v) for v in rows[-1]["values"]]
    last = stages[-1]["name"]
    kept = [t for t, v in enumerate(final) if math.isfinite(v)]
    fewer = list(final)
    fewer[min(kept, key=lambda t: (final[t], -t))] = -math.inf           # the least probable kept token dropped
    variants = [("keeps one token too few: the least probable token refdecode keeps", fewer)]
    before = [decode_float(v) for v in rows[-2]["values"]] if len(rows) > 1 and "values" in rows[-2] else None
    if before is not None:
        dropped = [t for t, v in enumerate(final) if not math.isfinite(v) and math.isfinite(before[t])]
        if dropped:
            more = list(final)
            back = max(dropped, key=lambda t: (before[t], -t))
            more[back] = before[back]
            variants.append(("keeps one token too many: the most probable token refdecode filters", more))
    for what, values in variants:
        if len(kept) > 1 and _inverse_cdf(values, u) == o_tok:
            return last, "algorithmic", f"same uniform {u:.6g}: refdecode draws token {e_tok}; the other engine's " \
                                        f"token {o_tok} is what it draws when {last} {what}"
    return "selection/sample", "algorithmic", f"same uniform {u:.6g}: refdecode draws token {e_tok} from its " \
                                              f"distribution after {last}; token {o_tok} means the probabilities differ"


def _running_before(step: dict, row: int) -> bool:
    """Was ``row`` still running when this greedy / sample step began? (beam traces: always)"""
    done = {d["row"]: d["reason"] for d in step.get("done", []) if "row" in d}
    return not done.get(row, "").startswith("finished at an earlier step")


def diff_selected(se: dict, so: dict, mode: str, vocab: int, rtol: float,
                  same_draws: bool = False) -> Divergence | None:
    for e, o in zip(se["selected"], so.get("selected") or []):
        if "beam_idx" in e and "beam_idx" in o and e["beam_idx"] != o["beam_idx"]:
            r = next(i for i, (a, b) in enumerate(zip(e["beam_idx"], o["beam_idx"])) if a != b)
            return Divergence(se["step"], "selection/beam", e["rows"][r], f"beam_idx {e['beam_idx']}",
                              f"beam_idx {o['beam_idx']}", "algorithmic",
                              "same candidates, different running beams (eos handling or slot filling)")
        for i, (a, b) in enumerate(zip(e["tokens"], o["tokens"])):
            row = e.get("rows", list(range(len(e["tokens"]))))[i]
            if b is None and not _running_before(se, row):
                continue  # the other engine's row ended with its eos; refdecode pads finished rows
            if b is None:
                return Divergence(se["step"], "stopping", row, f"token {a}", "the row has ended", "algorithmic",
                                  "the other engine's row is shorter while refdecode's row is still running")
            if a != b:
                if "beam_idx" in e:
                    return Divergence(se["step"], "selection/beam", row, f"token {a}", f"token {b}", "algorithmic",
                                      "same candidates, different running beams")
                stage, verdict, detail = _token_verdict(se, mode, row, a, b, vocab, rtol, same_draws)
                return Divergence(se["step"], stage, row, f"token {a}", f"token {b}", verdict, detail)
        for a, b in zip(e.get("beam_scores", []), o.get("beam_scores", [])):
            if abs(a - b) > tolerance(a, rtol):
                return Divergence(se["step"], "selection/beam", None, f"beam score {a:.6g}", f"beam score {b:.6g}",
                                  "algorithmic", "the running scores differ while the candidates agreed")
    return None
