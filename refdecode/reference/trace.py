r"""Step traces: what each decoding step computed, stage by stage, as JSON any language can read.

Contract: the decode loops call a *recorder* (the interface: :mod:`refdecode.recorder`) once per stage
(the raw scores, each processor and warper, the candidates, the selection, the scorer's bookkeeping, the
stop). :class:`TraceRecorder` implements it: it summarises every stage into plain dicts,
:meth:`TraceRecorder.to_dict` returns the trace (JSON-serialisable; the schema is
``refdecode/reference/trace_schema.json``, :data:`TRACE_SCHEMA`), and :func:`replay` rebuilds a beam search's
output from a trace alone. This module never sees the model; it reads the scorer's state.

A row of V scores is stored as its ``top_n`` best entries (value descending, lower token first on
ties; finite values only) plus statistics of the whole row, and all V values when
``V <= full_vocab_max``:

================  ======================================================================
``top_tokens``    int token ids of the ``top_n`` best finite entries
``top_values``    their values (float32 values written as JSON numbers)
``n_neg_inf``     how many entries are ``-inf`` (filtered)
``finite_sum``    float64 sum of the finite entries
``absmax``        max ``|x|`` over the finite entries (the row's *scale*)
``logsumexp``     :math:`\log\sum_{x \text{ finite}} e^{x}` in float64 (probabilities: ``exp(x - logsumexp)``)
``crc32``         zlib CRC-32 of the row as little-endian float32 bytes (bit-exact equality only)
``last_token``    the lowest finite entry (the last one a filter kept; ties: the highest id), ``last_value`` its value
``values``        every entry, only for small vocabularies
================  ======================================================================

Non-finite numbers are written as the strings ``"-inf"``, ``"inf"``, ``"nan"`` (JSON has no
infinities). Docs: docs/traces.md.
"""

from __future__ import annotations

import inspect
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..generation_rules import eos_list
from ..recorder import Recorder

__all__ = ["TraceRecorder", "summarize_rows", "encode_float", "decode_float",
           "done_reason", "replay", "load_trace", "save_trace", "TRACE_SCHEMA", "TRACE_FORMAT_VERSION",
           "TRANSFORMERS_VERSION"]

TRACE_FORMAT_VERSION = 1
TRANSFORMERS_VERSION = "4.38.2"
TRACE_SCHEMA: dict = json.loads((Path(__file__).with_name("trace_schema.json")).read_text(encoding="utf-8"))

# the GenerationConfig fields a trace header repeats (what the other engine must be run with)
_SETTINGS = ("max_length", "num_beams", "num_beam_groups", "do_sample", "num_return_sequences", "length_penalty",
             "early_stopping", "eos_token_id", "pad_token_id", "temperature", "top_k", "top_p",
             "repetition_penalty", "no_repeat_ngram_size", "min_length", "min_new_tokens", "diversity_penalty")


# ---- numbers in JSON


def encode_float(x: float) -> float | str:
    """A float for JSON: itself if finite, else ``"-inf"`` / ``"inf"`` / ``"nan"``.

    >>> encode_float(np.float32(0.5)), encode_float(-np.inf)
    (0.5, '-inf')
    """
    x = float(x)
    if np.isfinite(x):
        return x
    return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")


def decode_float(x: float | str) -> float:
    """The inverse of :func:`encode_float`.

    >>> decode_float("-inf"), decode_float(2)
    (-inf, 2.0)
    """
    return float(x)


def summarize_rows(scores: np.ndarray, top_n: int, full_vocab_max: int) -> list[dict]:
    """float32 (N, V) scores -> N JSON-ready summaries (see the module docstring for the fields).

    >>> s = summarize_rows(np.array([[0.5, -np.inf, 2.0]], dtype=np.float32), top_n=2, full_vocab_max=8)[0]
    >>> s["top_tokens"], s["top_values"], s["n_neg_inf"], s["finite_sum"], s["values"]
    ([2, 0], [2.0, 0.5], 1, 2.5, [0.5, '-inf', 2.0])
    """
    scores = np.asarray(scores)
    out = []
    for row in scores.reshape(-1, scores.shape[-1]):
        pool = np.flatnonzero(np.isfinite(row))                # finite entries, ascending token id
        vals = row[pool].astype(np.float64)
        if pool.size > top_n:  # keep the entries >= the top_n-th best (ties included), in id order
            kth = np.partition(row[pool], pool.size - top_n)[pool.size - top_n]
            pool = pool[row[pool] >= kth]
        top = pool[np.argsort(-row[pool], kind="stable")[:top_n]]  # value desc, token asc
        m = float(vals.max()) if vals.size else 0.0
        summary = {
            "top_tokens": [int(t) for t in top],
            "top_values": [float(row[t]) for t in top],
            "n_neg_inf": int(np.isneginf(row).sum()),
            "finite_sum": float(vals.sum()),
            "absmax": float(np.abs(vals).max()) if vals.size else 0.0,
            "logsumexp": encode_float(m + np.log(np.exp(vals - m).sum())) if vals.size else "-inf",
            "crc32": zlib.crc32(np.ascontiguousarray(row, dtype="<f4").tobytes()),
        }
        if vals.size:  # the lowest finite entry (the last one kept by a filter); ties: the highest id
            last = int(np.flatnonzero(row == vals.min())[-1])
            summary["last_token"], summary["last_value"] = last, float(row[last])
        if row.size <= full_vocab_max:
            summary["values"] = [encode_float(x) for x in row]
        out.append(summary)
    return out


def done_reason(hyps: Any, best_sum_logprobs: float, cur_len: int, prompt_len: int) -> dict:
    """Why ``hyps.is_done(best_sum_logprobs, cur_len, prompt_len)`` says what it says, with its numbers.

    Mirrors :meth:`refdecode.decoding.beam.beam_scorer.BeamHypotheses.is_done` (same branches, same arithmetic).

    >>> from refdecode.decoding.beam.beam_scorer import BeamHypotheses
    >>> h = BeamHypotheses(1, 1.0, False); h.add(np.array([7]), -1.0, generated_len=1)
    >>> done_reason(h, -3.0, cur_len=2, prompt_len=0)["reason"]
    'worst finished score -1.0000 >= best attainable -1.5000 (= -3.0000 / 2^1.0, early_stopping=False)'
    """
    held, k = len(hyps), hyps.num_beams
    if held < k:
        return {"done": False, "reason": f"{held} of {k} finished hypotheses held: not done before the pool is full"}
    if hyps.early_stopping is True:
        return {"done": True, "reason": f"early_stopping=True and the pool holds {k} hypotheses"}
    length = cur_len - prompt_len
    if hyps.early_stopping is not False and hyps.length_penalty > 0.0:
        length = hyps.max_length - prompt_len  # "never" with a positive penalty: the longest reachable
    attainable = best_sum_logprobs / length ** hyps.length_penalty
    done = bool(hyps.worst_score >= attainable)
    sign = ">=" if done else "<"
    return {"done": done, "worst_score": float(hyps.worst_score), "best_attainable": float(attainable),
            "reason": f"worst finished score {hyps.worst_score:.4f} {sign} best attainable {attainable:.4f} "
                      f"(= {best_sum_logprobs:.4f} / {length}^{hyps.length_penalty}, "
                      f"early_stopping={hyps.early_stopping})"}


# ---- the trace recorder


class TraceRecorder(Recorder):
    """Records every stage of every step; ``to_dict()`` is the trace, ``save(path)`` writes it as JSON.

    Args:
        top_n: how many best entries of each row to keep per stage.
        full_vocab_max: keep whole rows when the vocabulary has at most this many entries.

    >>> from refdecode import generate
    >>> from refdecode.model.stand_ins import TableModel
    >>> model = TableModel(np.log(np.array([[.1, .5, .4], [.1, .1, .8], [.9, .05, .05]], dtype=np.float32)))
    >>> trace = TraceRecorder()
    >>> generate(model, np.array([[0]]), max_new_tokens=2, repetition_penalty=1.5, trace=trace).tolist()
    [[0, 1, 2]]
    >>> t = trace.to_dict(); [s["name"] for s in t["steps"][0]["stages"]], t["stop"]["reason"]
    (['logits', 'RepetitionPenaltyLogitsProcessor'], 'MaxLengthCriteria(max_length=3) fired')
    """

    def __init__(self, top_n: int = 20, full_vocab_max: int = 1024):
        if not isinstance(top_n, int) or top_n < 1:
            raise ValueError(f"`top_n` has to be a positive integer, but is {top_n!r}")
        if not isinstance(full_vocab_max, int) or full_vocab_max < 0:
            raise ValueError(f"`full_vocab_max` has to be a non-negative integer, but is {full_vocab_max!r}")
        self.top_n, self.full_vocab_max = top_n, full_vocab_max
        self.header: dict = {}
        self.steps: list[dict] = []
        self.stop: dict | None = None
        self.result: dict | None = None
        self._group: int | None = None
        self._rows: list[int] = []
        self._done_before: np.ndarray | None = None    # (B, G) the scorer's done flags before this step
        self._pool_seen: dict[int, tuple] = {}          # id -> hypothesis tuples already reported
        self._history: dict[int, list[tuple[int, ...]]] = {}  # group -> beam-index history per row
        self._unfinished: np.ndarray | None = None

    # -- the Recorder interface

    def start(self, mode: str, input_ids: np.ndarray, config: Any = None) -> None:
        settings = {name: getattr(config, name) for name in _SETTINGS if config is not None}
        self.header = {"mode": mode, "prompt": np.asarray(input_ids).tolist(), "settings": settings}

    def step(self, input_ids: np.ndarray, group: int | None = None, rows: np.ndarray | None = None) -> None:
        cur_len = int(input_ids.shape[1]) + 1
        if not self.steps or self.steps[-1]["cur_len"] != cur_len:
            self.steps.append({"step": len(self.steps), "cur_len": cur_len, "stages": [], "selected": []})
            self.header.setdefault("prompt_len", cur_len - 1)
            self.header.setdefault("num_rows", int(input_ids.shape[0]))
        self._group = group
        self._rows = list(range(input_ids.shape[0])) if rows is None else [int(r) for r in rows]

    def stage(self, name: str, scores: np.ndarray) -> np.ndarray:
        self.header.setdefault("vocab_size", int(scores.shape[-1]))
        record = {"name": name, "rows": self._rows, "values": summarize_rows(scores, self.top_n, self.full_vocab_max)}
        if self._group is not None:
            record["group"] = self._group
        self.steps[-1]["stages"].append(record)
        return scores

    def ranked(self, tokens: np.ndarray, scores: np.ndarray) -> None:
        self.steps[-1].setdefault("ranked", []).extend(
            {"row": r, "tokens": [int(t) for t in tokens[i]], "scores": [float(x) for x in scores[i]]}
            for i, r in enumerate(self._rows))

    def selected(self, tokens: np.ndarray, unfinished: np.ndarray | None = None) -> None:
        step = self.steps[-1]
        step["selected"].append({"rows": self._rows, "tokens": [int(t) for t in tokens]})
        if unfinished is not None:
            before = self._unfinished if self._unfinished is not None else np.ones_like(unfinished)
            eos = self.header.get("settings", {}).get("eos_token_id")
            eos = eos_list(eos, no_token=True) or []
            step["done"] = [{"row": r, "done": not bool(u), "reason": _row_reason(bool(b), bool(u), int(t) in eos)}
                            for r, (b, u, t) in enumerate(zip(before, unfinished, tokens))]
            self._unfinished = np.array(unfinished)

    def beam_step(self, scorer: Any, out: dict, cand_scores: np.ndarray, cand_beams: np.ndarray,
                  cand_tokens: np.ndarray, input_ids: np.ndarray, eos: list[int] | None, prompt_len: int) -> None:
        group, size, step = self._group or 0, scorer.group_size, self.steps[-1]
        done_now = _done_flags(scorer)
        if self._done_before is None:
            self._done_before = np.zeros_like(done_now)
        history = self._history.setdefault(group, [() for _ in range(input_ids.shape[0])])
        cur_len = int(input_ids.shape[1]) + 1
        for b in range(scorer.batch_size):
            step.setdefault("candidates", []).append(
                {"prompt": b, "group": group, "scores": [float(s) for s in cand_scores[b]],
                 "beams": [int(k) for k in cand_beams[b]], "tokens": [int(t) for t in cand_tokens[b]]})
            hyps = _pool(scorer, b, group)
            if not self._done_before[b, group]:
                step.setdefault("hypotheses", []).extend(
                    self._hypotheses(hyps, b, group, size, (cand_scores[b], cand_beams[b], cand_tokens[b]),
                                     input_ids, eos, cur_len - prompt_len, history))
                why = done_reason(hyps, float(cand_scores[b].max()), cur_len, prompt_len)
            else:
                why = {"done": True, "reason": "done at an earlier step (pad step: pad tokens, score 0)"}
            step.setdefault("done", []).append({"prompt": b, "group": group, **why})
        beam_idx = out["next_beam_indices"]
        step["selected"].append({"rows": self._rows, "tokens": [int(t) for t in out["next_beam_tokens"]],
                                 "beam_idx": [int(i) for i in beam_idx],
                                 "beam_scores": [float(s) for s in out["next_beam_scores"]]})
        self._history[group] = [history[i] + (int(i),) for i in beam_idx]
        self._done_before = done_now.copy()

    def stopped(self, criteria: Any, input_ids: np.ndarray, all_done: bool = False) -> None:
        # criteria objects only: a plain function may have side effects (the CLI's progress bar is one)
        fired = [c for c in criteria if not inspect.isfunction(c) and np.any(c(input_ids, None))]
        if all_done:
            reason = "every prompt done (BeamSearchScorer.is_done)"
        elif fired:
            reason = " and ".join(f"{_criterion_name(c)} fired" for c in fired)
        else:
            reason = "every row finished (eos)"
        self.stop = {"step": len(self.steps) - 1, "cur_len": int(input_ids.shape[1]), "reason": reason}

    def final(self, sequences: np.ndarray, sequence_scores: np.ndarray | None = None,
              beam_indices: np.ndarray | None = None) -> None:
        self.result = {"sequences": np.asarray(sequences).tolist()}
        if sequence_scores is not None:
            self.result["sequence_scores"] = [float(s) for s in sequence_scores]
        if beam_indices is not None:
            self.result["beam_indices"] = np.asarray(beam_indices).tolist()

    # -- output

    def to_dict(self) -> dict:
        """The trace: ``format``, versions, the header, ``steps``, ``stop``, ``final`` (see TRACE_SCHEMA)."""
        version = sys.modules["refdecode"].__version__  # read, not imported: the package imports this module
        trace = {"format": "refdecode-trace", "version": TRACE_FORMAT_VERSION, "refdecode": version,
                 "transformers": TRANSFORMERS_VERSION, "top_n": self.top_n, **self.header, "steps": self.steps}
        if self.stop is not None:
            trace["stop"] = self.stop
        if self.result is not None:
            trace["final"] = self.result
        return trace

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_dict` as JSON (strict: no NaN/Infinity literals)."""
        save_trace(self.to_dict(), path)

    # -- helpers

    def _hypotheses(self, hyps: Any, b: int, group: int, size: int, candidates: tuple, input_ids: np.ndarray,
                    eos: list[int] | None, generated_len: int, history: list) -> list[dict]:
        """The eos candidates ``process`` offered to ``hyps`` this step (rank < group size), each with the
        score the pool holds for it (read from the pool's new entries, matched by tokens in insertion
        order) and ``kept``; a hypothesis the pool refused gets the score ``add`` computes."""
        scores, beams, tokens = candidates  # (C,) each, of prompt b, best first
        new = [h for h in hyps.beams if id(h) not in self._pool_seen]
        self._pool_seen.update({id(h): h for h in new})
        offered = []
        for rank in range(min(size, len(tokens))):
            if eos is None or int(tokens[rank]) not in eos:
                continue
            row = b * size + int(beams[rank])
            match = next((h for h in new if np.array_equal(h[1], input_ids[row])), None)
            if match is not None:
                new.remove(match)
            score = match[0] if match is not None else float(scores[rank]) / (generated_len ** hyps.length_penalty)
            offered.append({"prompt": b, "group": group, "rank": rank, "row": row, "token": int(tokens[rank]),
                            "sum_logprobs": float(scores[rank]), "generated_len": generated_len, "score": float(score),
                            "beam_indices": [int(i) for i in history[row] + (row,)], "kept": match is not None})
        return offered


def _pool(scorer: Any, b: int, group: int) -> Any:
    """The BeamHypotheses of prompt ``b``, group ``group``: ``beam_hyps[b][group]`` (BeamSearchScorer) or
    ``beam_hyps[b]`` (ConstrainedBeamSearchScorer, one group)."""
    hyps = scorer.beam_hyps[b]
    return hyps[group] if isinstance(hyps, list) else hyps


def _done_flags(scorer: Any) -> np.ndarray:
    """The scorer's done flags as (B, G) bool (the constrained scorer keeps (B,))."""
    return np.asarray(scorer.done).reshape(scorer.batch_size, -1)


def _row_reason(before: bool, after: bool, eos: bool) -> str:
    """Greedy / sample: why a row is (not) done, from its flag before and after the step and its token."""
    if not before:
        return "finished at an earlier step (pad token appended)"
    if after:
        return "running"
    return "emitted eos" if eos else "stopped by a stopping criterion"


def _criterion_name(criterion: Any) -> str:
    if hasattr(criterion, "max_length"):
        return f"{type(criterion).__name__}(max_length={criterion.max_length})"
    return type(criterion).__name__


# ---- files


def save_trace(trace: dict, path: str | Path) -> None:
    """Write a trace dict as JSON (``allow_nan=False``: the file is strict JSON)."""
    Path(path).write_text(json.dumps(trace, allow_nan=False, separators=(",", ":")) + "\n", encoding="utf-8")


#: the largest trace file read (a trace keeps the top_n entries of a full-vocabulary row: megabytes, not more)
MAX_TRACE_BYTES = 512 * 2**20


def load_trace(path: str | Path) -> dict:
    """Read a trace written by :func:`save_trace` (or by another engine, in the same schema).

    Every problem is one ValueError naming the file: not a regular file (a FIFO, a folder), over
    ``MAX_TRACE_BYTES``, not UTF-8, not JSON, not a refdecode trace, or not valid under ``trace_schema.json``
    (the first errors, each with its JSON path); FileNotFoundError for a missing file.
    """
    from ..text.files import read_json_file
    from .schema import validate

    trace = read_json_file(path, "trace", dict, max_bytes=MAX_TRACE_BYTES)
    if trace.get("format") != "refdecode-trace":
        raise ValueError(f"{path}: not a refdecode trace (expected an object with \"format\": \"refdecode-trace\")")
    errors = validate(trace, TRACE_SCHEMA)
    if errors:
        raise ValueError(f"{path}: not a valid trace (trace_schema.json): " + "; ".join(errors[:3]))
    return trace


# ---- replay


def _pool_add(pool: list, score: float, seq: list[int], indices: tuple[int, ...], capacity: int) -> None:
    """BeamHypotheses.add's keep rule on a list of (score, seq, indices); pool[0] is the oldest."""
    worst = min(s for s, _, _ in pool) if pool else 1e9
    if len(pool) < capacity or score > worst:
        pool.append((score, seq, indices))
        if len(pool) > capacity:
            lowest = min(range(len(pool)), key=lambda i: (pool[i][0], i))  # earliest among equal scores
            del pool[lowest]


def replay(trace: dict) -> dict[str, np.ndarray]:
    """A beam search's ``sequences`` and ``beam_indices`` rebuilt from its trace alone (no model, no scorer).

    Walks the steps: each row's tokens and beam-index history follow ``beam_idx`` and the selected
    tokens; each offered hypothesis enters its prompt's pool by ``BeamHypotheses.add``'s rule (the
    recorded score); prompts not done at the end add their running beams (last ``beam_scores``
    divided by generated length^alpha); the best ``num_return_sequences`` are popped per prompt and
    padded as ``finalize`` does. Beam search and beam sample (one group) only.
    """
    s = trace["settings"]
    if trace["mode"] not in ("beam_search", "beam_sample"):
        raise ValueError(f"replay rebuilds beam_search / beam_sample traces, but the trace's mode is {trace['mode']!r}")
    k, alpha, keep = s["num_beams"], s["length_penalty"], s["num_return_sequences"]
    eos = eos_list(s["eos_token_id"], no_token=True) or []
    prompt_len = len(trace["prompt"][0])
    seqs = [list(p) for p in trace["prompt"] for _ in range(k)]     # (B*K, T) rows
    hist: list[tuple[int, ...]] = [() for _ in seqs]
    pools: list[list] = [[] for _ in trace["prompt"]]
    done = [False for _ in trace["prompt"]]
    beam_scores = [0.0 for _ in seqs]
    for step in trace["steps"]:
        for h in step.get("hypotheses", []):
            _pool_add(pools[h["prompt"]], h["score"], list(seqs[h["row"]]), hist[h["row"]] + (h["row"],), k)
        sel = step["selected"][0]
        seqs = [seqs[i] + [t] for i, t in zip(sel["beam_idx"], sel["tokens"])]
        hist = [hist[i] + (i,) for i in sel["beam_idx"]]
        beam_scores = sel["beam_scores"]
        done = [d["done"] for d in step["done"]]
    best = []
    for b, pool in enumerate(pools):
        if not done[b]:
            for row in range(b * k, (b + 1) * k):
                generated = len(seqs[row]) - prompt_len
                _pool_add(pool, beam_scores[row] / generated ** alpha, seqs[row], hist[row], k)
        ranked = sorted(pool, key=lambda h: h[0])   # stable, ascending; the best is popped from the end
        best += [ranked.pop() for _ in range(keep)]
    width = max(len(seq) for _, seq, _ in best) + 1
    width = min(width, s["max_length"]) if s.get("max_length") is not None else width
    pad = s["pad_token_id"] if s["pad_token_id"] is not None else 0     # as finalize
    sequences = np.full((len(best), width), pad, dtype=np.int64)
    indices = np.full((len(best), width), -1, dtype=np.int64)
    for i, (_, seq, idx) in enumerate(best):
        sequences[i, : len(seq)] = seq
        indices[i, : len(idx)] = idx
        if len(seq) < width:
            sequences[i, len(seq)] = eos[0]
    return {"sequences": sequences, "beam_indices": indices}
