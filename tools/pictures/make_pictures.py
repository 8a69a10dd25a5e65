"""Draw the docs' pictures from refdecode's own runs: docs/img/<name>.svg + docs/img/<name>.json.

Every picture is computed here from the package (the decode loops, the processors and warpers,
the KV cache), never typed by hand, and each SVG has a sidecar JSON with the numbers it draws.
``tests/docs/test_pictures.py`` regenerates everything into a temporary folder and compares those
numbers with the committed sidecars, so a picture cannot drift from the code.

Regenerate (after a change that moves a number; then commit docs/img/)::

    python tools/pictures/make_pictures.py            # writes docs/img/
    python tools/pictures/make_pictures.py --out DIR  # somewhere else
    python tools/pictures/make_pictures.py --figure top-p --prompt 'JULIET:\\n' --top-p 0.9 --out DIR
    python tools/pictures/make_pictures.py --lang zh   # the Chinese pictures: docs/img/zh/<name>.svg

``--figure NAME`` draws one picture. The figures of REDRAWABLE (the shipped-model beam tree and the one-step
figures: temperature, top-k, top-p, repetition penalty, the processor pipeline, no-repeat n-gram) take a
prompt, a model folder and their strategy settings from the command line, so an instructor can redraw one
for another prompt or checkpoint; the others are fixed runs (toy models, steps chosen for what they show).

Runs offline in ~20 s on the shipped model (models/tiny-shakespeare; 15 of them are the 40-token runs of
the strategies picture). The beam runs use the real loops (``beam_search``, ``beam_sample``,
``group_beam_search``) with a scorer that records each ``process`` call (the ranked candidates in, the kept
beams out), and every recorded run is checked against ``generate()`` with the same arguments before it is
drawn. The concept pictures of the other pages (pipeline, KV cache, speculative decoding, sampling,
contrastive and constrained search, the warpers, stopping, choosing a strategy) are in concepts.py; the
Llama pictures (RMSNorm, RoPE, SwiGLU, GQA on models/tiny-shakespeare-llama) in llama_pictures.py.

Numbers in the sidecars can differ in their last digit between machines (BLAS summation order); the test
compares them to 1e-5. After a regeneration, commit only the pictures you meant to change.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import math
import re
import sys
from typing import NamedTuple
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import concepts  # noqa: E402  (tools/pictures/concepts.py: the concept pictures)
import llama_pictures  # noqa: E402  (tools/pictures/llama_pictures.py: docs/from-gpt2-to-llama.md)
import svg as S  # noqa: E402  (tools/pictures/svg.py)
import zh  # noqa: E402  (tools/pictures/zh.py: the Chinese labels)

from refdecode import (  # noqa: E402
    GPT2,
    BeamSearchScorer,
    HammingDiversityLogitsProcessor,
    KVCache,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    Tokenizer,
    TopKLogitsWarper,
    TopPLogitsWarper,
    beam_sample,
    beam_search,
    generate,
    greedy_search,
    group_beam_search,
    llama_top_p_probs,
    shifted_top_p_warp,
    softmax,
    temperature_warp,
    top_k_warp,
    top_p_warp,
)
from refdecode.decoding.beam.beam_scorer import BeamHypotheses  # noqa: E402
from refdecode.model.stand_ins import TOY_WORDS, TableModel, toy_tree_model  # noqa: E402

MODEL_DIR = ROOT / "models" / "tiny-shakespeare"
DEAD = -1e8  # candidates of beams that start at -1e9 (not live yet) are not drawn


def r6(x: float) -> float:
    """Round for the sidecar: six decimals (float32 carries ~7 significant digits)."""
    x = float(x)
    return x if not math.isfinite(x) else round(x, 6)


# ---------------------------------------------------------------------------------------------
# Recording the real loops


class RecordingScorer(BeamSearchScorer):
    """A BeamSearchScorer that keeps every ``process`` call: ranked candidates in, kept beams out."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[dict] = []

    def process(self, input_ids, next_scores, next_tokens, next_indices, **kwargs):
        out = super().process(input_ids, next_scores, next_tokens, next_indices, **kwargs)
        self.calls.append({"group": kwargs.get("group_index", 0), "scores": np.array(next_scores[0]),
                           "tokens": np.array(next_tokens[0]), "beams": np.array(next_indices[0]),
                           "out": {k: np.array(v) for k, v in out.items()}})
        return out


class Recorder:
    """Wraps one processor; keeps (ids, scores in, scores out, group) of every call.

    (The loops wrap whatever list they get in a new LogitsProcessorList, so the recording sits on
    the processor. Its signature names ``current_tokens`` / ``beam_group_idx``, so the list passes
    them to it, as transformers' list does for processors that take them.)
    """

    def __init__(self, processor):
        self.processor, self.calls = processor, []

    def __call__(self, input_ids, scores, current_tokens=None, beam_group_idx=None, **kwargs):
        extra = {} if beam_group_idx is None else {"current_tokens": current_tokens, "beam_group_idx": beam_group_idx}
        out = self.processor(input_ids, scores, **extra)
        self.calls.append({"ids": np.array(input_ids), "before": np.array(scores), "after": np.array(out),
                           "group": beam_group_idx or 0})
        return out


def beam_trace(calls: list[dict], group_size: int, eos: list[int], text, initial: list[float]) -> list[dict]:
    """Recorded ``process`` calls of one group of one prompt -> per step, every candidate with its status.

    status: ``kept`` (a running beam of the next step, ``slot`` = its row), ``finished`` (eos ranked
    < K: a finished hypothesis), ``eos ignored`` (eos ranked >= K), ``pruned`` (ranked after the K
    running slots were full). ``logprob`` = candidate score - the running score of its parent beam.
    """
    steps, running = [], list(initial)
    for call in calls:
        cands, n_kept, kept_scores = [], 0, []
        for rank, (score, token, beam) in enumerate(zip(call["scores"], call["tokens"], call["beams"])):
            token, beam = int(token), int(beam)
            parent = running[beam]
            if parent <= DEAD:
                continue
            if token in eos:
                status = "finished" if rank < group_size else "eos ignored"
            elif n_kept < group_size:
                status, n_kept = "kept", n_kept + 1
                kept_scores.append(float(score))
            else:
                status = "pruned"
            cands.append({"rank": rank, "parent": beam, "token": token, "text": text(token), "status": status,
                          "slot": n_kept - 1 if status == "kept" else None,
                          "logprob": r6(float(score) - parent), "score": r6(score)})
        out_scores = call["out"]["next_beam_scores"][:group_size]
        assert np.allclose(kept_scores, out_scores), "the kept candidates are not the scorer's running beams"
        steps.append({"candidates": cands})
        running = [float(s) for s in out_scores]
    return steps


def show(text: str) -> str:
    """A token as drawn: newline as \\n, a leading space as a visible ␣."""
    text = text.replace("\n", "\\n")
    return "␣" + text[1:] if text.startswith(" ") else text


# ---------------------------------------------------------------------------------------------
# The runs (data only; drawing is below)

def shakespeare():
    return Tokenizer(str(MODEL_DIR)), GPT2.from_pretrained(str(MODEL_DIR))


def finished_pool(scorer: RecordingScorer, prompt_len: int, alpha: float, text) -> list[dict]:
    """The finished hypotheses of prompt 0 after finalize, best first, with Σ = score · ℓ^α."""
    pool = sorted((beam for hyps in scorer.beam_hyps[0] for beam in hyps.beams), key=lambda b: -b[0])
    rows = []
    for score, hyp, _ in pool:
        gen = [int(t) for t in hyp[prompt_len:]]
        length = len(gen)
        rows.append({"text": text(gen), "length": length, "score": r6(score),
                     "sum_logprobs": r6(score * length ** alpha)})
    return rows


def run_toy_beams(sample_seed: int | None = None) -> dict:
    """Beam search (or beam sample with ``sample_seed``) on the toy tree, K = 2, α = 0, and greedy."""
    model, prompt = toy_tree_model(), np.array([[0]])
    words = lambda ids: " ".join(TOY_WORDS[i] for i in ids)  # noqa: E731
    scorer = RecordingScorer(batch_size=1, num_beams=2, length_penalty=0.0, num_beam_hyps_to_keep=2, max_length=3)
    ids = np.repeat(prompt, 2, axis=0)
    if sample_seed is None:
        out = beam_search(model, ids, scorer, max_length=3, pad_token_id=0, eos_token_id=None)
        ref = generate(model, prompt, max_length=3, num_beams=2, num_return_sequences=2, length_penalty=0.0)
        initial = [0.0, -1e9]
    else:
        out = beam_sample(model, ids, scorer, max_length=3, pad_token_id=0, eos_token_id=None, seed=sample_seed)
        ref = generate(model, prompt, max_length=3, num_beams=2, num_return_sequences=2, do_sample=True,
                       length_penalty=0.0, seed=sample_seed)
        initial = [0.0, 0.0]
    assert np.array_equal(out, ref), "recorded run differs from generate()"
    greedy = generate(model, prompt, max_length=3)[0].tolist()
    steps = beam_trace(scorer.calls, 2, [], lambda t: TOY_WORDS[t], initial)
    for step in steps:
        for c in step["candidates"]:
            c["prob"] = r6(math.exp(c["logprob"]))
    return {"kind": "beam sample" if sample_seed is not None else "beam search",
            "command": ("generate(TableModel(toy), [[The]], max_length=3, num_beams=2, num_return_sequences=2, "
                        "length_penalty=0.0" + (f", do_sample=True, seed={sample_seed})" if sample_seed is not None
                                                else ")")),
            "prompt": "The", "num_beams": 2, "length_penalty": 0.0, "steps": steps,
            "greedy": {"text": words(greedy), "prob": r6(0.5 * 0.4)},
            "returned": [words(row) for row in out.tolist()],
            "finished": finished_pool(scorer, 1, 0.0, lambda ids: words(ids))}


def run_shakespeare_beams(tok, model, prompt_text: str = "ROMEO:\n", K: int = 3, new: int = 5) -> dict:
    """Beam search on the shipped model: "ROMEO:\\n", K = 3, 5 new tokens, default α = 1."""
    prompt = tok.encode(prompt_text)[None, :]
    eos = int(model.config.eos_token_id)
    scorer = RecordingScorer(batch_size=1, num_beams=K, length_penalty=1.0, num_beam_hyps_to_keep=K,
                             max_length=prompt.shape[1] + new)
    out = beam_search(model, np.repeat(prompt, K, axis=0), scorer, max_length=prompt.shape[1] + new,
                      pad_token_id=eos, eos_token_id=eos)
    ref = generate(model, prompt, max_new_tokens=new, num_beams=K, num_return_sequences=K)
    assert np.array_equal(out, ref), "recorded run differs from generate()"
    steps = beam_trace(scorer.calls, K, [eos], lambda t: tok.decode([t]), [0.0] + [-1e9] * (K - 1))
    shown = prompt_text.replace("\n", "\\n")
    return {"kind": "beam search", "prompt": prompt_text, "num_beams": K, "length_penalty": 1.0,
            "command": f'refdecode "{shown}" --num-beams {K} --max-new-tokens {new} (generate(..., num_beams={K}, '
                       f"max_new_tokens={new}, num_return_sequences={K}))",
            "steps": steps, "returned": [tok.decode(row[prompt.shape[1]:]) for row in out],
            "finished": finished_pool(scorer, prompt.shape[1], 1.0, lambda ids: tok.decode(ids))}


def run_group_beams() -> dict:
    """Group beam search on the toy tree: 4 groups of 1 beam, λ = 2 (docs/group-beam-search.md)."""
    model, prompt, K, G, lam = toy_tree_model(), np.array([[0]]), 4, 4, 2.0
    scorer = RecordingScorer(batch_size=1, num_beams=K, length_penalty=0.0, num_beam_hyps_to_keep=K,
                             num_beam_groups=G, max_length=3)
    procs = Recorder(HammingDiversityLogitsProcessor(lam, K, G))
    out = group_beam_search(model, np.repeat(prompt, K, axis=0), scorer, logits_processor=[procs], max_length=3,
                            pad_token_id=0, eos_token_id=None, return_dict_in_generate=True, output_scores=True)
    ref = generate(model, prompt, max_length=3, num_beams=K, num_beam_groups=G, diversity_penalty=lam,
                   num_return_sequences=K, length_penalty=0.0, return_dict_in_generate=True, output_scores=True)
    assert np.array_equal(out.sequences, ref.sequences) and np.allclose(out.sequences_scores, ref.sequences_scores)
    groups = [{"group": g, "steps": [], "paid": 0.0} for g in range(G)]
    for step_idx in range(len(scorer.calls) // G):
        for g in range(G):
            call, proc = scorer.calls[step_idx * G + g], procs.calls[step_idx * G + g]
            assert call["group"] == g and proc["group"] == g
            tok, parent = int(call["out"]["next_beam_tokens"][0]), int(call["out"]["next_beam_indices"][0])
            logprob, after = float(proc["before"][parent, tok]), float(proc["after"][parent, tok])
            wanted = int(np.argmax(proc["before"][parent]))  # what it would have taken without the penalty
            groups[g]["steps"].append({"token": TOY_WORDS[tok], "logprob": r6(logprob), "penalty": r6(logprob - after),
                                       "score": r6(call["out"]["next_beam_scores"][0]),
                                       "without_penalty": TOY_WORDS[wanted]})
            groups[g]["paid"] = r6(groups[g]["paid"] + logprob - after)
    return {"command": "generate(TableModel(toy), [[The]], max_length=3, num_beams=4, num_beam_groups=4, "
                       "diversity_penalty=2.0, num_return_sequences=4, length_penalty=0.0)",
            "diversity_penalty": lam, "groups": groups,
            "returned": [" ".join(TOY_WORDS[i] for i in row) for row in out.sequences.tolist()],
            "returned_scores": [r6(s) for s in out.sequences_scores]}


def one_step(tok, model, context: str) -> tuple[np.ndarray, np.ndarray]:
    """Prompt -> (ids (1, T), last-position logits float32 (1, V)) of the shipped model."""
    ids = tok.encode(context)[None, :]
    return ids, model(ids).logits[:, -1]


def greedy_text(tok, model, prompt: str, n: int) -> str:
    return tok.decode(generate(model, tok.encode(prompt)[None, :], max_new_tokens=n)[0])


def dist(scores: np.ndarray, idx: list[int]) -> list[float]:
    return [r6(p) for p in softmax(scores)[0, idx]]


def run_distributions(tok, model, prompt: str = "ROMEO:\n", n_greedy: int = 19,
                      temps: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0), k: int = 3, p: float = 0.8) -> dict:
    """One greedy step of the shipped model and what each warper / processor does to it."""
    context = greedy_text(tok, model, prompt, n_greedy)   # "... I'll not, my lord": next is . , ; :
    ids, logits = one_step(tok, model, context)
    top = [int(i) for i in np.argsort(-logits[0], kind="stable")[:10]]
    labels = [f"'{show(tok.decode([i]))}'" for i in top]
    penalty = 1.3
    in_context = [bool(np.isin(i, ids)) for i in top]
    penalised = RepetitionPenaltyLogitsProcessor(penalty)(ids, logits)
    sorted_probs = dist(logits, top)
    return {"context": context, "tokens": labels, "token_ids": top, "raw": sorted_probs,
            "cumulative": [r6(c) for c in np.cumsum(softmax(logits)[0, top])],
            "temperature": {str(t): dist(temperature_warp(logits, t), top) for t in temps},
            "top_k": {"k": k, "probs": dist(top_k_warp(logits, k), top)},
            "top_p": {"p": p, "probs": dist(top_p_warp(logits, p), top)},
            "repetition_penalty": {"penalty": penalty, "in_context": in_context,
                                   "logits_before": [r6(x) for x in logits[0, top]],
                                   "logits_after": [r6(x) for x in penalised[0, top]],
                                   "probs": dist(penalised, top)}}


def run_pipeline(tok, model, prompt: str = "ROMEO:\n", n_greedy: int = 19, temperature: float = 0.7,
                 top_k: int = 5, top_p: float = 0.8) -> dict:
    """The same step through a processor list in generate()'s order: penalty, then T, top-k, top-p."""
    context = greedy_text(tok, model, prompt, n_greedy)
    ids, logits = one_step(tok, model, context)
    stages = [("raw", None), ("repetition_penalty=1.3", RepetitionPenaltyLogitsProcessor(1.3)),
              (f"temperature={temperature}", TemperatureLogitsWarper(temperature)),
              (f"top_k={top_k}", TopKLogitsWarper(top_k)), (f"top_p={top_p}", TopPLogitsWarper(top_p))]
    top = [int(i) for i in np.argsort(-logits[0], kind="stable")[:6]]
    scores, rows = logits, []
    for name, proc in stages:
        scores = scores if proc is None else LogitsProcessorList([proc])(ids, scores)
        rows.append({"stage": name, "probs": dist(scores, top)})
    together = LogitsProcessorList([p for _, p in stages[1:]])(ids, logits)   # one list, as generate builds it
    assert np.array_equal(together, scores)
    return {"context": context, "tokens": [f"'{show(tok.decode([i]))}'" for i in top], "stages": rows}


def run_top_p_variants() -> dict:
    """The three top-p rules of docs/top-p.md on the examples where they agree and where they differ."""
    cases = [([0.1, 0.3, 0.4, 0.15, 0.05], 0.8, "top-p article's example"),
             ([0.5, 0.25, 0.125, 0.125], 0.75, "mass before token 2 is exactly p"),
             ([0.3, 0.3, 0.3, 0.1], 0.9, "same rule, different floats")]
    rows = []
    for probs, p, why in cases:
        x = np.array([probs], dtype=np.float32)
        rows.append({"probs": probs, "p": p, "why": why, "kept": {
            "transformers": np.isfinite(top_p_warp(np.log(x), p)[0]).tolist(),
            "llama (top-p article)": (llama_top_p_probs(x, p)[0] > 0).tolist(),
            "shifted (sampling note)": np.isfinite(shifted_top_p_warp(np.log(x), p)[0]).tolist()}})
    return {"cases": rows}


def run_no_repeat(tok, model, prompt: str = "ROMEO:\n", n_greedy: int = 14) -> dict:
    """The step where greedy search repeats "I'll not", before and after a no-repeat-2-gram ban."""
    context = greedy_text(tok, model, prompt, n_greedy)   # "... COUNTESS:\nI": greedy says "'ll" again
    ids, logits = one_step(tok, model, context)
    after = NoRepeatNGramLogitsProcessor(2)(ids, logits)
    top = [int(i) for i in np.argsort(-logits[0], kind="stable")[:8]]
    return {"context": context, "ngram_size": 2, "last_token": tok.decode([int(ids[0, -1])]),
            "tokens": [f"'{show(tok.decode([i]))}'" for i in top], "token_texts": [tok.decode([i]) for i in top],
            "before": dist(logits, top), "after": dist(after, top),
            "banned": [bool(np.isneginf(after[0, i])) for i in top]}


def run_min_length() -> dict:
    """docs/min-length.md's model (eos = token 0 always best) with min_length = 5, prompt of 3, greedy."""
    model = TableModel(np.tile(np.array([2.0, 1.0, 0.0], dtype=np.float32), (3, 1)), eos_token_id=0)
    prompt = np.array([[1, 2, 1]])
    procs = Recorder(MinLengthLogitsProcessor(5, eos_token_id=0))
    out = greedy_search(model, prompt, logits_processor=[procs], max_length=9, eos_token_id=0, pad_token_id=0)
    assert np.array_equal(out, generate(model, prompt, max_new_tokens=6, min_length=5))
    steps = [{"length": int(c["ids"].shape[1]), "before": [r6(x) for x in softmax(c["before"])[0]],
              "after": [r6(x) for x in softmax(c["after"])[0]]} for c in procs.calls]
    return {"min_length": 5, "prompt": prompt[0].tolist(), "sequence": out[0].tolist(), "steps": steps}


def run_kv_reorder() -> dict:
    """KVCache.reorder([2, 1, 1, 0]) on 4 rows whose keys hold their own row number."""
    cache = KVCache(n_layer=1, batch_size=4, n_head=1, head_dim=1, capacity=2)
    k = np.arange(4, dtype=np.float32).reshape(4, 1, 1, 1)
    cache.append(0, k, k)
    cache.advance(1)
    beam_idx = [2, 1, 1, 0]
    before = cache.keys(0).ravel().tolist()
    cache.reorder(np.array(beam_idx))
    return {"before": before, "beam_idx": beam_idx, "after": cache.keys(0).ravel().tolist()}


def run_length_penalty() -> dict:
    """Score = Σ / ℓ^α as BeamHypotheses.add computes it, for the beam-search page's two sequences."""
    alphas, lengths = [-1.0, 0.0, 1.0, 2.0], list(range(2, 13))
    seqs = [("“the weather is good today”", 6, -0.6), ("“the weather is really, really good today”", 10, -0.8)]

    def score(sum_logprobs, length, alpha):
        pool = BeamHypotheses(num_beams=1, length_penalty=alpha, early_stopping=False)
        pool.add(np.arange(length), sum_logprobs, generated_len=length)
        return r6(pool.beams[0][0])

    panels = []
    for a in alphas:
        panels.append({"alpha": a, "curves": [[score(s, n, a) for n in lengths] for _, _, s in seqs],
                       "points": [score(s, n, a) for _, n, s in seqs]})
        panels[-1]["winner"] = int(np.argmax(panels[-1]["points"]))
    return {"lengths": lengths, "sequences": [{"text": t, "length": n, "sum_logprobs": s} for t, n, s in seqs],
            "panels": panels}


# ---------------------------------------------------------------------------------------------
# Drawing


def draw_tree(data: dict, title: str, show_prob: bool = False) -> S.Svg:
    """Columns = steps; a node per candidate; kept beams solid, the rest faded; finished on the right."""
    nodes = [{"id": "root", "label": data["prompt"].replace("\n", "\\n"), "col": 0, "status": "root", "kids": []}]
    by_slot = {0: "root"}  # running beam row -> node id (step 0: every live row is the prompt)
    index = {"root": nodes[0]}
    for t, step in enumerate(data["steps"], start=1):
        new_slots = {}
        for c in step["candidates"]:
            nid = f"{t}:{c['rank']}"
            node = {"id": nid, "col": t, "kids": [], **c}
            parent = by_slot.get(c["parent"], "root")
            index[parent]["kids"].append(nid)
            index[nid] = node
            nodes.append(node)
            if c["status"] == "kept":
                new_slots[c["slot"]] = nid
        by_slot = new_slots
    returned_best = set()
    best_slot = {n["id"] for n in nodes if n.get("status") == "kept" and n["col"] == len(data["steps"])}
    # the best returned sequence: walk back from the last-step node whose path text equals it
    def path(nid):
        out = []
        while nid != "root":
            out.append(nid)
            nid = next(p["id"] for p in nodes if nid in p["kids"])
        return out[::-1]
    for nid in best_slot:
        toks = [index[x]["text"] for x in path(nid)]
        joined = " ".join(toks) if show_prob else "".join(toks)
        target = data["returned"][0] if show_prob else data["returned"][0]
        if joined == (target.split(" ", 1)[1] if show_prob else target):
            returned_best.update(path(nid))
    greedy = set()
    if "greedy" in data:
        words = data["greedy"]["text"].split()[1:]
        nid = "root"
        for w in words:
            nid = next((k for k in index[nid]["kids"] if index[k]["text"] == w), None)
            if nid is None:
                break
            greedy.add(nid)
    # layout: leaves in DFS order get successive rows; a parent sits at the mean of its children
    row_h, col_w, box_w, box_h, x0, y0 = 40, 134, 118, 32, 16, 56
    counter = [0]

    def place(nid):
        node = index[nid]
        if not node["kids"]:
            node["y"] = y0 + counter[0] * row_h
            counter[0] += 1
        else:
            for k in node["kids"]:
                place(k)
            node["y"] = sum(index[k]["y"] for k in node["kids"]) / len(node["kids"])
    place("root")
    n_cols = len(data["steps"]) + 1
    fin = data["finished"]
    width = x0 + n_cols * col_w + 270
    height = max(y0 + counter[0] * row_h + 10, y0 + 60 + 20 * len(fin) + 130)
    svg = S.Svg(width, height, title)
    svg.text(x0, 22, title, size=15, weight="bold")
    svg.text(x0, 40, f"{data['kind']}, K = {data['num_beams']}, length_penalty α = {data['length_penalty']:g}; "
             "each box: token, log p of the step, Σ = running sum", size=11, fill="#555")
    styles = {"root": ("#eeeeee", "#888", 1.0), "kept": ("#dbe9f6", S.BLUE, 1.0), "pruned": ("#f2f2f2", S.GREY, 0.55),
              "finished": ("#dff2df", S.GREEN, 1.0), "eos ignored": ("#f2f2f2", S.RED, 0.55)}
    for node in nodes:  # edges first
        for k in node["kids"]:
            kid = index[k]
            on_best, on_greedy = k in returned_best, k in greedy
            colour = S.BLUE if on_best else (S.ORANGE if on_greedy else "#999")
            x1, y1 = x0 + node["col"] * col_w + box_w, node["y"] + box_h / 2
            x2, y2 = x0 + kid["col"] * col_w, kid["y"] + box_h / 2
            svg.line(x1, y1, x2, y2, stroke=colour, width=3 if (on_best or on_greedy) else 1,
                     opacity=1.0 if kid["status"] in ("kept", "finished") else 0.45, dash=on_greedy and not on_best)
            if on_best and on_greedy:  # greedy's path is the best one here: its dashes run alongside, so the
                svg.line(x1, y1 + 5, x2, y2 + 5, stroke=S.ORANGE, width=2.5, dash=True)  # legend shows a path
    for node in nodes:
        fill, stroke, opacity = styles[node["status"]]
        x, y = x0 + node["col"] * col_w, node["y"]
        svg.rect(x, y, box_w, box_h, fill=fill, stroke=stroke, opacity=opacity, rx=4,
                 dash=node["status"] in ("pruned", "eos ignored"))
        if node["status"] == "root":
            svg.text(x + 6, y + 20, node["label"], size=12, mono=True, weight="bold")
            continue
        label = show(node["text"]) if not show_prob else node["text"]
        svg.text(x + 5, y + 13, label, size=11, mono=True, weight="bold", opacity=opacity)
        detail = (f"p {S.fmt(node['prob'], 2)}  Σ {S.fmt(node['score'], 2)}" if show_prob
                  else f"{S.fmt(node['logprob'], 2)}  Σ {S.fmt(node['score'], 2)}")
        svg.text(x + 5, y + 27, detail, size=10, fill="#333", opacity=opacity)
        if node["status"] in ("pruned", "eos ignored"):
            svg.text(x + box_w - 4, y + 13, node["status"], size=8, anchor="end", fill=S.RED, opacity=0.9)
    fx = x0 + n_cols * col_w + 10
    svg.text(fx, y0 + 6, "finished hypotheses (best first)", size=12, weight="bold")
    svg.text(fx, y0 + 22, "score = Σ / ℓ^α   (ℓ = generated length)", size=10, fill="#555")
    for i, f in enumerate(fin):
        y = y0 + 42 + 20 * i
        txt = f["text"].replace("\n", "\\n")
        svg.text(fx, y, f"{S.fmt(f['score'], 3)} = {S.fmt(f['sum_logprobs'], 2)}/{f['length']}^{data['length_penalty']:g}",
                 size=10, mono=True, fill=S.BLUE if i == 0 else S.INK)
        svg.text(fx + 150, y, txt if len(txt) < 22 else txt[:21] + "…", size=10, mono=True)
    ly = y0 + 52 + 20 * len(fin)
    legend = [("kept (a running beam)", "kept"), ("pruned: ranked after K kept", "pruned"),
              ("eos ranked < K: finished", "finished"), ("eos ranked ≥ K: ignored", "eos ignored")]
    for i, (label, status) in enumerate(legend):
        fill, stroke, opacity = styles[status]
        svg.rect(fx, ly + 18 * i, 14, 12, fill=fill, stroke=stroke, opacity=opacity)
        svg.text(fx + 20, ly + 18 * i + 10, label, size=10)
    svg.line(fx, ly + 82, fx + 30, ly + 82, stroke=S.BLUE, width=3)
    svg.text(fx + 36, ly + 86, "best returned sequence", size=10)
    if greedy:
        svg.line(fx, ly + 100, fx + 30, ly + 100, stroke=S.ORANGE, width=3, dash=True)
        svg.text(fx + 36, ly + 104, f"greedy: {data['greedy']['text']} (p = {S.fmt(data['greedy']['prob'], 2)})",
                 size=10)
    return svg


def draw_groups(data: dict) -> S.Svg:
    groups = data["groups"]
    col_w, x0, y0 = 190, 16, 60
    n_steps = len(groups[0]["steps"])
    svg = S.Svg(x0 * 2 + col_w * len(groups), y0 + 70 * n_steps + 150, "Group beam search on the toy tree")
    svg.text(x0, 22, "Group beam search: 4 groups of 1 beam, diversity_penalty λ = 2 (toy tree)", size=15,
             weight="bold")
    svg.text(x0, 40, "groups run in turn; a token chosen this step by an earlier group costs λ per earlier choice",
             size=11, fill="#555")
    for g, grp in enumerate(groups):
        x = x0 + g * col_w
        svg.text(x + 8, y0 + 8, f"group {g}", size=13, weight="bold", fill=S.PALETTE[g % len(S.PALETTE)])
        for t, st in enumerate(grp["steps"]):
            y = y0 + 20 + 70 * t
            svg.rect(x + 4, y, col_w - 16, 58, fill="#f7f7f7", stroke="#ccc", rx=4)
            svg.text(x + 12, y + 18, f"step {t + 1}: {st['token']}", size=12, weight="bold")
            svg.text(x + 12, y + 34, f"log p {S.fmt(st['logprob'], 3)}", size=10)
            svg.text(x + col_w - 16, y + 34, f"Σ {S.fmt(st['score'], 3)}", size=10, anchor="end")
            if st["penalty"] > 0:
                svg.text(x + 12, y + 50, f"paid λ·{st['penalty'] / data['diversity_penalty']:g} = {S.fmt(st['penalty'], 1)}",
                         size=10, fill=S.RED, weight="bold")
            elif st["without_penalty"] != st["token"]:
                svg.text(x + 12, y + 50, f"avoided “{st['without_penalty']}” (penalised)", size=10, fill=S.RED)
        y = y0 + 20 + 70 * n_steps
        svg.text(x + 8, y + 10, f"paid: {S.fmt(grp['paid'], 1)}", size=11, fill=S.RED if grp["paid"] else S.INK,
                 weight="bold")
    y = y0 + 20 + 70 * n_steps + 36
    svg.text(x0, y, "returned (score includes the penalties):", size=11, weight="bold")
    for i, (s, sc) in enumerate(zip(data["returned"], data["returned_scores"])):
        svg.text(x0 + 8, y + 20 + 18 * i, f"{S.fmt(sc, 3)}  {s}", size=11, mono=True)
    return svg


def draw_bars(panels: list[dict], title: str, subtitle: str, panel_w=230, h=300, ymax=None, min_width=0) -> S.Svg:
    svg = S.Svg(max(16 + panel_w * len(panels) + 10, min_width), h + 60, title)
    svg.text(16, 22, title, size=15, weight="bold")
    svg.text(16, 40, subtitle, size=11, fill="#555")
    ymax = ymax or max(max(v for v in p["values"] if math.isfinite(v)) for p in panels) * 1.1
    for i, p in enumerate(panels):
        S.bar_panel(svg, 16 + i * panel_w, 50, panel_w - 10, h, p["title"], p["labels"], p["values"], p["colors"],
                    p.get("ymax", ymax), notes=p.get("notes"), cumulative=p.get("cumulative"),
                    threshold=p.get("threshold"))
    return svg


def distribution_pictures(d: dict) -> dict[str, S.Svg]:
    labels, raw = d["tokens"], d["raw"]
    where = d.get("model", "shipped model")   # "model": a redraw on another checkpoint (--model)
    ctx = "after “…" + d["context"][-22:].replace("\n", "\\n") + f"” ({where}, greedy context), 10 most probable"
    blue = [S.BLUE] * len(raw)
    temp = [{"title": f"T = {t}", "labels": labels[:6], "values": v[:6], "colors": blue}
            for t, v in d["temperature"].items()]
    pics = {"temperature": draw_bars(temp, "Temperature: softmax(logits / T)", ctx.replace("10 most", "6 most")
                                     + "; T > 1 moves mass to the other 50 251 tokens")}
    keep_k = [v > 0 for v in d["top_k"]["probs"]]
    pics["top-k"] = draw_bars(
        [{"title": "raw", "labels": labels, "values": raw, "colors": blue},
         {"title": f"top-k, k = {d['top_k']['k']} (renormalised)", "labels": labels, "values": d["top_k"]["probs"],
          "colors": [S.BLUE if k else S.GREY for k in keep_k]}],
        "Top-k: keep the k best, renormalise", ctx, panel_w=320)
    keep_p = [v > 0 for v in d["top_p"]["probs"]]
    pics["top-p"] = draw_bars(
        [{"title": f"sorted p, cumulative mass, p = {d['top_p']['p']}", "labels": labels, "values": raw,
          "colors": [S.BLUE if k else S.GREY for k in keep_p], "cumulative": d["cumulative"],
          "threshold": d["top_p"]["p"], "ymax": 1.0},
         {"title": "top-p kept set, renormalised", "labels": labels, "values": d["top_p"]["probs"],
          "colors": [S.BLUE if k else S.GREY for k in keep_p], "ymax": 1.0}],
        "Top-p: the smallest set whose mass reaches p", ctx + "; line = cumulative mass, dashed = p", panel_w=340)
    rp = d["repetition_penalty"]
    marks = ["in ctx" if c else "" for c in rp["in_context"]]
    pics["repetition-penalty"] = draw_bars(
        [{"title": "raw", "labels": labels, "values": raw, "colors": [S.ORANGE if c else S.BLUE for c in rp["in_context"]],
          "notes": marks},
         {"title": f"repetition_penalty = {rp['penalty']}", "labels": labels, "values": rp["probs"],
          "colors": [S.ORANGE if c else S.BLUE for c in rp["in_context"]], "notes": marks}],
        "Repetition penalty: tokens already in the input (orange) lose", ctx, panel_w=340)
    return pics


def draw_pipeline(d: dict) -> S.Svg:
    panels = [{"title": st["stage"], "labels": d["tokens"], "values": st["probs"],
               "colors": [S.BLUE if v > 0 else S.GREY for v in st["probs"]]} for st in d["stages"]]
    return draw_bars(panels, "One step through the processors, in generate()'s order (each panel: softmax after it)",
                     "after “…" + d["context"][-22:].replace("\n", "\\n") + f"” ({d.get('model', 'shipped model')}); "
                     "the repetition penalty acts on logits, then the warpers: temperature → top-k → top-p",
                     panel_w=220, h=280, ymax=1.0)  # 220: six 3-decimal labels side by side never touch


def draw_variants(data: dict) -> S.Svg:
    cell, x0, y0, label_w = 64, 16, 56, 190
    rules = list(data["cases"][0]["kept"])
    height = y0 + sum(40 + 26 * len(rules) for _ in data["cases"]) + 30
    svg = S.Svg(x0 + label_w + cell * 5 + 40, height, "Top-p: three rules")
    svg.text(x0, 22, "Top-p: which tokens three ways of writing the rule keep", size=15, weight="bold")
    svg.text(x0, 40, "green = kept, grey = dropped; numbers are the probabilities", size=11, fill="#555")
    y = y0
    for case in data["cases"]:
        svg.text(x0, y + 14, f"p = {case['p']}: {case['why']}", size=12, weight="bold")
        y += 22
        for rule in rules:
            svg.text(x0 + label_w - 8, y + 17, rule, size=11, anchor="end")
            for j, (prob, kept) in enumerate(zip(case["probs"], case["kept"][rule])):
                svg.rect(x0 + label_w + j * cell, y, cell - 4, 22, fill="#cdebc9" if kept else "#eeeeee",
                         stroke=S.GREEN if kept else "#bbb", rx=3)
                svg.text(x0 + label_w + j * cell + (cell - 4) / 2, y + 16, f"{prob:g}", size=11, anchor="middle",
                         fill=S.INK if kept else "#999")
            y += 26
        y += 18
    return svg


def draw_no_repeat(d: dict) -> S.Svg:
    banned = [t for t, b in zip(d["token_texts"], d["banned"]) if b]
    title = (f"No-repeat n-gram: “{show(d['last_token'])}{banned[0]}” has occurred, so “{banned[0]}” is banned"
             if banned else f"No-repeat n-gram: no {d['ngram_size']}-gram would repeat at this step, nothing banned")
    ctx = ("after “…" + d["context"][-20:].replace("\n", "\\n") + f"”: greedy would say “{d['token_texts'][0]}”"
           f" (the first {d['ngram_size']}-gram ending there has occurred before)")
    return draw_bars([{"title": "raw", "labels": d["tokens"], "values": d["before"], "colors": [S.BLUE] * 8},
                      {"title": f"no_repeat_ngram_size = {d['ngram_size']}", "labels": d["tokens"],
                       "values": d["after"], "colors": [S.GREY if b else S.BLUE for b in d["banned"]],
                       "notes": ["banned" if b else "" for b in d["banned"]]}],
                     title, ctx, panel_w=320, min_width=760)


def draw_min_length(d: dict) -> S.Svg:
    panels = []
    for st in d["steps"]:
        banned = [b > 0 and a == 0 for b, a in zip(st["before"], st["after"])]
        panels.append({"title": f"length {st['length']}", "labels": ["eos (0)", "1", "2"], "values": st["after"],
                       "colors": [S.GREY if b else S.BLUE for b in banned], "notes": ["banned" if b else "" for b in banned]})
    return draw_bars(panels, f"Min length {d['min_length']}: eos is banned while the length (prompt included) < "
                     f"{d['min_length']}", f"prompt {d['prompt']}, greedy; output {d['sequence']}", panel_w=180,
                     h=240, ymax=1.0, min_width=720)


def draw_kv(d: dict) -> S.Svg:
    svg = S.Svg(640, 250, "KV cache reorder")
    svg.text(16, 22, f"KVCache.reorder({d['beam_idx']}): row i takes old row beam_idx[i]", size=15, weight="bold")
    svg.text(16, 40, "rows = beams; each row holds its beam's keys and values for all cached positions", size=11,
             fill="#555")
    lx, rx, y0, h = 60, 380, 70, 40
    svg.text(lx + 50, y0 - 8, "before", size=12, anchor="middle", weight="bold")
    svg.text(rx + 50, y0 - 8, "after", size=12, anchor="middle", weight="bold")
    for i, v in enumerate(d["before"]):
        svg.rect(lx, y0 + i * h, 100, h - 8, fill=S.PALETTE[int(v)], opacity=0.85, rx=4)
        svg.text(lx + 50, y0 + i * h + 21, f"row {i}: beam {int(v)}", size=11, anchor="middle", fill="#fff",
                 weight="bold")
    for i, (src, v) in enumerate(zip(d["beam_idx"], d["after"])):
        svg.rect(rx, y0 + i * h, 100, h - 8, fill=S.PALETTE[int(v)], opacity=0.85, rx=4)
        svg.text(rx + 50, y0 + i * h + 21, f"row {i}: beam {int(v)}", size=11, anchor="middle", fill="#fff",
                 weight="bold")
        svg.line(lx + 100, y0 + src * h + 16, rx - 4, y0 + i * h + 16, stroke=S.PALETTE[int(v)], width=2, arrow=True)
    dropped = sorted(set(range(len(d["before"]))) - set(d["beam_idx"]))
    svg.text(16, y0 + 4 * h + 16, f"old row {dropped} is dropped (its beam lost); old row 1 is copied twice "
             "(two beams now share its history)", size=11)
    return svg


def draw_length_penalty(d: dict) -> S.Svg:
    pw, ph, x0, y0 = 230, 230, 16, 60
    svg = S.Svg(x0 + pw * len(d["panels"]) + 10, y0 + ph + 80, "Length penalty")
    svg.text(x0, 22, "Length penalty: score = Σ / ℓ^α of the beam-search page's two sequences", size=15,
             weight="bold")
    svg.text(x0, 40, "lines: the same Σ at other lengths ℓ; dots: the sequences' real lengths (6 and 10); "
             "higher score wins", size=11, fill="#555")
    ls = d["lengths"]
    for i, p in enumerate(d["panels"]):
        px = x0 + i * pw
        vals = [v for c in p["curves"] for v in c]
        lo, hi = min(vals), max(max(vals), 0.0)
        sx = lambda n: px + 40 + (n - ls[0]) / (ls[-1] - ls[0]) * (pw - 60)  # noqa: E731
        sy = lambda v: y0 + 20 + (hi - v) / (hi - lo) * (ph - 50)  # noqa: E731
        svg.text(px + pw / 2, y0 + 8, f"α = {p['alpha']:g}", size=13, anchor="middle", weight="bold")
        svg.line(px + 40, sy(lo), px + 40, sy(hi), stroke="#888")
        svg.line(px + 40, sy(lo), px + pw - 20, sy(lo), stroke="#888")
        for v in (lo, hi):
            svg.text(px + 36, sy(v) + 4, S.fmt(v, 2), size=9, anchor="end", fill="#666")
        for n in (ls[0], 6, 10, ls[-1]):
            svg.text(sx(n), sy(lo) + 14, str(n), size=9, anchor="middle", fill="#666")
        for j, (curve, point, seq) in enumerate(zip(p["curves"], p["points"], d["sequences"])):
            colour = [S.BLUE, S.ORANGE][j]
            svg.polyline([(sx(n), sy(v)) for n, v in zip(ls, curve)], stroke=colour, width=1.5)
            svg.circle(sx(seq["length"]), sy(point), 5 if j == p["winner"] else 3.5, colour,
                       stroke=S.INK if j == p["winner"] else "none")
            # the higher point's label above it, the other's below (never on a curve); left of points in the
            # right half, so no label runs past the panel's (or the picture's) right edge
            right = sx(seq["length"]) > px + pw / 2
            above = point >= max(p["points"]) or sy(point) > sy(lo) - 18   # (below would sit on the axis)
            svg.text(sx(seq["length"]) + (-7 if right else 7), sy(point) + (-8 if above else 15), S.fmt(point, 3),
                     size=9, fill=colour, anchor="end" if right else "start")
        svg.text(px + pw / 2, sy(lo) + 30, f"winner: sequence {p['winner'] + 1}", size=11, anchor="middle",
                 weight="bold", fill=[S.BLUE, S.ORANGE][p["winner"]])
    ly = y0 + ph + 34
    for j, seq in enumerate(d["sequences"]):  # one line each: side by side they ran past the right edge
        svg.text(x0, ly + 16 * j, f"sequence {j + 1}: {seq['text']}, ℓ = {seq['length']}, Σ = {seq['sum_logprobs']}",
                 size=11, fill=[S.BLUE, S.ORANGE][j])
    return svg


# ---------------------------------------------------------------------------------------------


class Settings(NamedTuple):
    """What an instructor can change from the command line; None = the figure's own default (the docs' run).

    (A NamedTuple, not a dataclass: the tests and tutorials/_widgets.py load this file by path, unregistered.)
    """

    prompt: str | None = None
    model: Path | None = None
    max_new_tokens: int | None = None
    num_beams: int | None = None
    temperature: tuple[float, ...] | None = None
    top_p: float | None = None
    top_k: int | None = None

    def given(self) -> set[str]:
        return {name for name in self._fields if getattr(self, name) is not None}


# figure -> the options it takes (besides --prompt and --model); every other figure is a fixed run.
# max_new_tokens is the figure's own length: the beam tree's new tokens, or the greedy tokens before the
# drawn step for the one-step figures.
REDRAWABLE = {
    "beam-tree-shakespeare": {"max_new_tokens", "num_beams"},
    "temperature": {"max_new_tokens", "temperature"},
    "top-k": {"max_new_tokens", "top_k"},
    "top-p": {"max_new_tokens", "top_p"},
    "repetition-penalty": {"max_new_tokens"},
    "processor-pipeline": {"max_new_tokens", "temperature", "top_k", "top_p"},
    "no-repeat-ngram": {"max_new_tokens"},
}


def check_settings(figure: str | None, settings: Settings) -> None:
    """Options only for a figure that uses them; ranges as generate() checks them (ValueError naming the option)."""
    given = settings.given()
    known = sorted({p.stem for p in (ROOT / "docs" / "img").glob("*.json")} | set(REDRAWABLE))
    if figure is not None and figure not in known:
        raise ValueError(f"--figure must be one of {', '.join(known)}, got {figure!r}")
    if given and figure is None:
        raise ValueError(f"--{sorted(given)[0].replace('_', '-')} needs --figure NAME (one of: "
                         f"{', '.join(sorted(REDRAWABLE))})")
    if figure is not None and given - {"prompt", "model"} - REDRAWABLE.get(figure, set()):
        bad = sorted(given - {"prompt", "model"} - REDRAWABLE.get(figure, set()))[0]
        takes = sorted(REDRAWABLE.get(figure, set()))
        raise ValueError(f"--figure {figure} does not use --{bad.replace('_', '-')}"
                         + (f"; it takes --prompt, --model, --{', --'.join(t.replace('_', '-') for t in takes)}"
                            if takes else " (a fixed run: it takes no options)"))
    if given & {"prompt", "model"} and figure not in REDRAWABLE:
        raise ValueError(f"--figure {figure} is a fixed run (a toy model or a chosen step): it takes no --prompt or "
                         f"--model; figures that do: {', '.join(sorted(REDRAWABLE))}")
    s = settings
    if s.prompt is not None and not s.prompt:
        raise ValueError("--prompt must not be empty")
    if s.model is not None and not (Path(s.model) / "config.json").is_file():
        raise ValueError(f"--model must be a checkpoint folder with a config.json, got {s.model}")
    if s.max_new_tokens is not None and not s.max_new_tokens >= 1:
        raise ValueError(f"--max-new-tokens must be an int >= 1, got {s.max_new_tokens}")
    if s.num_beams is not None and not s.num_beams >= 2:
        raise ValueError(f"--num-beams must be an int >= 2 (a beam tree), got {s.num_beams}")
    if s.temperature is not None and not all(t > 0 for t in s.temperature):
        raise ValueError(f"--temperature must be > 0, got {list(s.temperature)}")
    if s.temperature is not None and figure == "processor-pipeline" and len(s.temperature) != 1:
        raise ValueError(f"--temperature takes one value for processor-pipeline, got {list(s.temperature)}")
    if s.top_p is not None and not 0.0 < s.top_p <= 1.0:
        raise ValueError(f"--top-p must be a float > 0 and <= 1, got {s.top_p}")
    if s.top_k is not None and not s.top_k >= 1:
        raise ValueError(f"--top-k must be an int >= 1, got {s.top_k}")


def redraw(figure: str, settings: Settings) -> tuple[dict, S.Svg]:
    """One figure of REDRAWABLE on the instructor's prompt, model and settings (none given: the docs' run).

    With settings, the sidecar also names the model folder and the settings given."""
    s = settings
    model_dir = Path(s.model) if s.model is not None else MODEL_DIR
    tok, model = Tokenizer(str(model_dir)), GPT2.from_pretrained(str(model_dir))
    prompt = s.prompt if s.prompt is not None else "ROMEO:\n"
    if figure == "beam-tree-shakespeare":
        data = run_shakespeare_beams(tok, model, prompt, s.num_beams or 3, s.max_new_tokens or 5)
    elif figure == "processor-pipeline":
        data = run_pipeline(tok, model, prompt, s.max_new_tokens or 19, (s.temperature or (0.7,))[0],
                            s.top_k or 5, s.top_p or 0.8)
    elif figure == "no-repeat-ngram":
        data = run_no_repeat(tok, model, prompt, s.max_new_tokens or 14)
    else:
        temps = tuple(sorted({1.0, *s.temperature})) if s.temperature else (0.5, 1.0, 1.5, 2.0)
        data = run_distributions(tok, model, prompt, s.max_new_tokens or 19, temps, s.top_k or 3, s.top_p or 0.8)
    if s.given():
        data = {**data, "model": model_dir.name,
                "settings": {k: getattr(s, k) for k in sorted(s.given() - {"model"})}}
    if figure == "beam-tree-shakespeare":
        where = "the shipped model" if model_dir == MODEL_DIR else model_dir.name
        shown = prompt.replace("\n", "\\n")
        return data, draw_tree(data, f"Beam search on {where}: “{shown}”, {s.max_new_tokens or 5} new tokens")
    if figure == "processor-pipeline":
        return data, draw_pipeline(data)
    if figure == "no-repeat-ngram":
        return data, draw_no_repeat(data)
    return data, distribution_pictures(data)[figure]


def build() -> dict[str, tuple[dict, S.Svg]]:
    """name -> (sidecar data, picture). Everything is computed here, from the package."""
    tok, model = shakespeare()
    toy = run_toy_beams()
    toy_sample = run_toy_beams(sample_seed=3)
    shakes = run_shakespeare_beams(tok, model)
    groups = run_group_beams()
    dists = run_distributions(tok, model)
    variants, no_rep, min_len = run_top_p_variants(), run_no_repeat(tok, model), run_min_length()
    pipeline = run_pipeline(tok, model)
    kv, lp = run_kv_reorder(), run_length_penalty()
    pics = {
        "beam-tree-toy": (toy, draw_tree(toy, "Beam search on the toy tree: greedy finds 0.2, two beams find 0.36",
                                         show_prob=True)),
        "beam-sample-toy": (toy_sample, draw_tree(toy_sample, "Beam sample, seed 3: both beams draw “nice”",
                                                  show_prob=True)),
        "beam-tree-shakespeare": (shakes, draw_tree(shakes, "Beam search on the shipped model: “ROMEO:\\n”, "
                                                            "5 new tokens")),
        "group-beam-search": (groups, draw_groups(groups)),
        "top-p-variants": (variants, draw_variants(variants)),
        "no-repeat-ngram": (no_rep, draw_no_repeat(no_rep)),
        "min-length": (min_len, draw_min_length(min_len)),
        "kv-cache-reorder": (kv, draw_kv(kv)),
        "processor-pipeline": (pipeline, draw_pipeline(pipeline)),
        "length-penalty": (lp, draw_length_penalty(lp)),
    }
    for name, svg in distribution_pictures(dists).items():
        pics[name] = (dists, svg)
    pics.update(concepts.build(tok, model))
    pics.update(llama_pictures.build())
    return pics


def write(out_dir: Path, figure: str | None = None, settings: Settings = Settings(), lang: str = "en",
          font: Path | None = None) -> list[str]:
    """Draw every picture (or only ``figure``) into out_dir; with settings, ``figure`` is redrawn on them.

    ``lang="zh"``: the same pictures with Chinese labels (tools/pictures/zh.py) as out_dir/zh/<name>.svg, no
    sidecar (the numbers are the English picture's); with ``font`` (WenQuanYi Micro Hei, needs fontTools) each
    picture carries the subset of it that its Chinese characters need."""
    check_settings(figure, settings)
    if lang not in ("en", "zh"):
        raise ValueError(f"--lang must be en or zh, got {lang!r}")
    S.TRANSLATE = zh.translate if lang == "zh" else None
    try:
        if figure in REDRAWABLE:
            pics = {figure: redraw(figure, settings)}
        else:
            pics = build()
            pics = pics if figure is None else {figure: pics[figure]}
    finally:
        S.TRANSLATE = None
    out_dir = out_dir / "zh" if lang == "zh" else out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for name, (data, svg) in sorted(pics.items()):
        text = str(svg)
        if lang == "zh" and font is not None:
            text = embed_cjk_font(text, font)
        (out_dir / f"{name}.svg").write_text(text, encoding="utf-8")
        if lang == "en":
            (out_dir / f"{name}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                                  encoding="utf-8")
        names.append(name)
    return names


#: the code points the pictures' embedded font covers (those of tools/docs/make_cjk_font.py)
CJK = re.compile("[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
DEFAULT_FONT = ROOT / "tools" / "docs" / "_font_src" / "usr" / "share" / "fonts" / "truetype" / "wqy" / "wqy-microhei.ttc"


def embed_cjk_font(svg: str, font: Path) -> str:
    """The picture with an @font-face "refdecode CJK": a WOFF subset of ``font`` holding exactly its CJK characters,
    inline (data: URL), so the labels render without a CJK font installed, in <img> and opened alone."""
    from fontTools import subset  # only the Chinese pictures need fontTools (sh tools/docs/setup_cjk_font.sh)
    from fontTools.ttLib import TTFont

    chars = sorted(set(CJK.findall(svg)))
    tt = TTFont(str(font), fontNumber=0, recalcTimestamp=False)
    missing = [c for c in chars if ord(c) not in tt.getBestCmap()]
    if missing:
        raise ValueError(f"the font {font} has no glyph for {''.join(missing)!r}")
    options = subset.Options()
    options.flavor, options.layout_features, options.name_IDs, options.notdef_outline = "woff", [], ["*"], True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(tt)
    tt.flavor = "woff"
    buffer = io.BytesIO()
    tt.save(buffer, reorderTables=True)
    face = (f'<style>@font-face {{ font-family: "{S.CJK_FAMILY}"; '
            f'src: url("data:font/woff;base64,{base64.b64encode(buffer.getvalue()).decode("ascii")}") format("woff"); }}'
            "</style>")
    return svg.replace("<defs>", "<defs>" + face, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Redraw one figure for a lecture: --figure beam-tree-shakespeare --prompt 'JULIET:\\n' --num-beams 2 "
               "--out /tmp/pics. A prompt's \\n is a newline. Options per figure: "
               + "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(REDRAWABLE.items())))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="output folder (default: docs/img)")
    parser.add_argument("--figure", metavar="NAME", help="draw only this picture (a docs/img/ file name, no .svg)")
    parser.add_argument("--prompt", help="the prompt (default: the figure's own, 'ROMEO:\\n')")
    parser.add_argument("--model", type=Path, help="a checkpoint folder (default: models/tiny-shakespeare)")
    parser.add_argument("--max-new-tokens", type=int, help="beam tree: new tokens; one-step figures: greedy "
                                                            "tokens before the drawn step")
    parser.add_argument("--num-beams", type=int)
    parser.add_argument("--temperature", type=float, nargs="+", help="one value or several (the temperature "
                                                                     "figure draws T = 1 and each)")
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--top-k", type=int)
    parser.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="zh: the Chinese pictures, OUT/zh/<name>.svg (labels from tools/pictures/zh.py, the CJK "
                             "glyphs embedded: needs fontTools and the font, sh tools/docs/setup_cjk_font.sh)")
    parser.add_argument("--font", type=Path, default=DEFAULT_FONT, help="with --lang zh: WenQuanYi Micro Hei")
    args = parser.parse_args(argv)
    prompt = args.prompt.replace("\\n", "\n") if args.prompt is not None else None
    settings = Settings(prompt, args.model, args.max_new_tokens, args.num_beams,
                        tuple(args.temperature) if args.temperature else None, args.top_p, args.top_k)
    if args.out == ROOT / "docs" / "img" and settings.given():
        parser.error("with options the picture differs from the docs' one: give --out DIR (not docs/img)")
    try:
        if args.lang == "zh" and not args.font.is_file():
            raise ValueError(f"--font {args.font} is not a file (sh tools/docs/setup_cjk_font.sh fetches it)")
        names = write(args.out, args.figure, settings, args.lang, args.font if args.lang == "zh" else None)
    except ValueError as e:
        parser.error(str(e))
    where = args.out / "zh" if args.lang == "zh" else args.out
    print(f"wrote {len(names)} pictures ({'.svg' if args.lang == 'zh' else '.svg + .json'}) to {where}: "
          f"{', '.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
