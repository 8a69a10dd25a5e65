"""The concept pictures, for tools/pictures/make_pictures.py: one run + one drawing each.

Every picture is drawn from a real run of the package on the shipped model (or the page's own toy model),
each run checked against ``generate()`` with the same arguments before it is drawn:

- ``pipeline-overview`` (index): one sampled step through every stage, then the loop appending tokens;
- ``kv-cache`` (gpt2): two left-padded prompts, prefill then decode steps, the cache per layer, position ids;
- ``speculative-decoding``: prompt lookup's rounds, draft -> verify -> accept, against greedy;
- ``top-k-vs-top-p`` (top-k, top-p): the same k and p on a flat and on a peaked step keep different tokens;
- ``strategies`` (choosing-a-strategy): likelihood (mean log p) against diversity (distinct-2), and a decision chart;
- ``sampling-draws`` (sampling): each step's probabilities laid on [0, 1) in id order and the uniform drawn;
- ``contrastive-search``: each step's k candidates, probability, degeneration penalty and score;
- ``constrained-beam-search``: the candidates of each step, their banks and the round-robin keep;
- ``entropy-warpers`` (entropy-sampling): what typical, epsilon, eta and min-p keep on a flat and a peaked step.
"""

from __future__ import annotations

import math
import sys

import numpy as np

import svg as S

from refdecode import (
    ConstrainedBeamSearchScorer,
    ForcedEOSTokenLogitsProcessor,
    NoBadWordsLogitsProcessor,
    SequenceBiasLogitsProcessor,
    UnbatchedClassifierFreeGuidanceLogitsProcessor,
    EpsilonLogitsWarper,
    EtaLogitsWarper,
    GenerationConfig,
    MinPLogitsWarper,
    PhrasalConstraint,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
    assisted_decoding,
    constrained_beam_search,
    generate,
    log_softmax,
    multinomial,
    sample,
    softmax,
)
from refdecode.decoding import contrastive_search as cs_module
from refdecode.decoding.beam import constrained_beam_scorer as cbs_module
from refdecode.decoding.candidate_generator import PromptLookupCandidateGenerator
from refdecode.model.gpt2 import default_position_ids
from refdecode.model.stand_ins import TableModel
from refdecode.pipeline import logits_processors, logits_warpers


def r6(x: float) -> float:
    x = float(x)
    return x if not math.isfinite(x) else round(x, 6)


def show(text: str) -> str:
    """A token as drawn: newline as \\n, a leading space as a visible ␣."""
    text = text.replace("\n", "\\n")
    return "␣" + text[1:] if text.startswith(" ") else text


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class RecordingDraw:
    """A ``draw=`` that draws exactly as ``multinomial`` and keeps, per call, the probabilities, the uniform
    (replayed from the generator's state before the draw) and the tokens."""

    def __init__(self):
        self.calls: list[dict] = []

    def __call__(self, probs, num_samples, replacement, rng):
        state = rng.bit_generator.state
        tokens = multinomial(probs, num_samples, replacement, rng)
        replay = np.random.Generator(type(rng.bit_generator)())
        replay.bit_generator.state = state
        self.calls.append({"probs": np.asarray(probs, dtype=np.float64), "u": replay.random(probs.shape[0]),
                           "tokens": np.array(tokens)})
        return tokens


class StageRecorder:
    """Wraps one processor or warper of a list: keeps the scores it returned at each call."""

    def __init__(self, name, processor):
        self.name, self.processor, self.outputs = name, processor, []

    def __call__(self, input_ids, scores, **kwargs):
        out = self.processor(input_ids, scores)
        self.outputs.append(np.array(out))
        return out


# ---------------------------------------------------------------------------------------------
# index: the whole pipeline, one sampled step


def run_pipeline_overview(tok, model) -> dict:
    prompt, n_new, seed = "ROMEO:\n", 6, 0
    cfg = dict(do_sample=True, repetition_penalty=1.3, temperature=0.7, top_k=50, top_p=0.9)
    ids = tok.encode(prompt)[None, :]
    config = GenerationConfig(max_new_tokens=n_new, **cfg)
    procs = [StageRecorder(type(p).__name__, p) for p in logits_processors(config, ids.shape[1])]
    warps = [StageRecorder(type(w).__name__, w) for w in logits_warpers(config)]
    draw = RecordingDraw()
    logits_seen = []

    class Model:  # the model, keeping each call's shapes and the cache length after it
        config = model.config
        generation_config = getattr(model, "generation_config", None)

        def new_cache(self, *a):
            return model.new_cache(*a)

        def __call__(self, input_ids, **kw):
            out = model(input_ids, **kw)
            logits_seen.append({"fed": [int(t) for t in input_ids[0]], "logits_shape": list(out.logits.shape),
                                "cache_length": int(kw["past_key_values"].length)})
            return out

    out = sample(Model(), ids, logits_processor=procs, logits_warper=warps, max_length=ids.shape[1] + n_new,
                 pad_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, seed=seed, draw=draw)
    ref = generate(model, ids, max_new_tokens=n_new, seed=seed, **cfg)
    assert np.array_equal(out, ref), "recorded run differs from generate()"
    logits0 = model(ids).logits[0, -1]
    top = [int(i) for i in np.argsort(-logits0, kind="stable")[:5]]
    stages = [{"stage": "logits (softmax)", "probs": [r6(p) for p in softmax(logits0)[top]]}]
    for rec in procs + warps:
        stages.append({"stage": rec.name, "probs": [r6(p) for p in softmax(rec.outputs[0][0])[top]]})
    first = draw.calls[0]
    chosen = int(first["tokens"][0, 0])
    p = first["probs"][0] / first["probs"][0].sum()
    steps = []
    for call, seen in zip(draw.calls, logits_seen):
        t = int(call["tokens"][0, 0])
        steps.append({"fed": [tok.decode([i]) for i in seen["fed"]], "logits_shape": seen["logits_shape"],
                      "cache_length": seen["cache_length"], "token": tok.decode([t]), "u": r6(call["u"][0]),
                      "nucleus": int(np.count_nonzero(call["probs"][0]))})
    return {"command": f"generate(gpt, tok.encode({prompt!r}), max_new_tokens={n_new}, seed={seed}, "
                       + ", ".join(f"{k}={v}" for k, v in cfg.items()) + ")",
            "prompt": prompt, "prompt_tokens": [tok.decode([int(i)]) for i in ids[0]],
            "prompt_ids": [int(i) for i in ids[0]], "vocab": int(model.config.vocab_size),
            "top_tokens": [tok.decode([i]) for i in top], "stages": stages,
            "first_draw": {"u": r6(first["u"][0]), "token": tok.decode([chosen]), "prob": r6(p[chosen]),
                           "nucleus": int(np.count_nonzero(p))},
            "steps": steps, "text": tok.decode(out[0])}


def draw_pipeline_overview(d: dict) -> S.Svg:
    W, H = 1120, 506
    svg = S.Svg(W, H, "The decoding pipeline, one real run")
    svg.text(16, 22, "The pipeline on one real run: the shipped model, “ROMEO:\\n”, sampling (seed 0)", size=15,
             weight="bold")
    svg.text(16, 40, "generate(..., do_sample=True, repetition_penalty=1.3, temperature=0.7, top_k=50, top_p=0.9, "
             "max_new_tokens=6); step 1 shown stage by stage, then the loop", size=11, fill="#555")
    bw, bh, y0, gap = 168, 286, 60, 18
    boxes = ["1 · tokenizer", "2 · model (+ KV cache)", "3 · processors", "3 · warpers", "4 · draw", "5 · stop?"]
    xs = [16 + i * (bw + gap) for i in range(len(boxes))]
    for i, (x, title) in enumerate(zip(xs, boxes)):
        svg.rect(x, y0, bw, bh, fill="#f7f9fc", stroke="#9bb7d4", rx=6)
        svg.text(x + 8, y0 + 18, title, size=12, weight="bold", fill=S.BLUE)
        if i:
            svg.line(x - gap + 2, y0 + bh / 2, x - 3, y0 + bh / 2, stroke=S.INK, width=1.5, arrow=True)
    # 1 tokenizer
    x = xs[0]
    svg.text(x + 8, y0 + 40, "prompt text", size=10, fill="#555")
    svg.text(x + 8, y0 + 56, "“ROMEO:\\n”", size=12, mono=True)
    svg.text(x + 8, y0 + 80, "input_ids (1, T = %d)" % len(d["prompt_ids"]), size=10, fill="#555")
    for j, (t, i) in enumerate(zip(d["prompt_tokens"], d["prompt_ids"])):
        svg.text(x + 8, y0 + 98 + 16 * j, f"{show(t):6} {i}", size=11, mono=True)
    # 2 model
    x, first = xs[1], d["steps"][0]
    shape = first["logits_shape"]
    svg.text(x + 8, y0 + 40, "prefill: all T tokens at once", size=10, fill="#555")
    svg.text(x + 8, y0 + 56, f"logits ({shape[0]}, {shape[1]}, {shape[2]})", size=11, mono=True)
    svg.text(x + 8, y0 + 72, f"cache: {first['cache_length']} positions / layer", size=10)
    svg.text(x + 8, y0 + 94, "last position, softmax:", size=10, fill="#555")
    raw = d["stages"][0]["probs"]
    for j, (t, p) in enumerate(zip(d["top_tokens"], raw)):
        y = y0 + 110 + 18 * j
        svg.text(x + 8, y + 9, clip(show(t), 7), size=10, mono=True)
        svg.rect(x + 62, y, 80 * p / max(raw) , 11, fill=S.BLUE)
        svg.text(x + 64 + 80 * p / max(raw), y + 9, S.fmt(p, 3), size=9, fill="#444")
    svg.text(x + 8, y0 + 214, f"(+ {d['vocab'] - 5} more tokens)", size=9, fill="#777")

    def stage_bars(x, names_idx, label):
        svg.text(x + 8, y0 + 40, label, size=10, fill="#555")
        y = y0 + 52
        for k in names_idx:
            st = d["stages"][k]
            svg.text(x + 8, y + 10, st["stage"].replace("LogitsProcessor", "").replace("LogitsWarper", ""), size=10,
                     weight="bold")
            y += 14
            top = max(st["probs"]) or 1
            for t, p in zip(d["top_tokens"], st["probs"]):
                svg.text(x + 8, y + 8, clip(show(t), 6), size=9, mono=True)
                svg.rect(x + 56, y, 70 * p / top, 8, fill=S.BLUE if p > 0 else S.GREY)
                svg.text(x + 58 + 70 * p / top, y + 8, S.fmt(p, 3) if p > 0 else "0 (cut)", size=8,
                         fill="#444" if p > 0 else S.RED)
                y += 10
            y += 6
        return y

    n_proc = 1 + sum(1 for s in d["stages"][1:] if "Processor" in s["stage"])
    y_end = stage_bars(xs[2], range(1, n_proc), "on the logits (all modes)")
    in_prompt = [t for t in d["top_tokens"] if t in d["prompt_tokens"]]
    if not in_prompt:  # the penalty divides the logits of tokens already in the sequence: none of these five
        svg.text(xs[2] + 8, y_end + 6, "barely changed: none of these", size=9, fill="#555")
        svg.text(xs[2] + 8, y_end + 18, "5 tokens is in the prompt yet", size=9, fill="#555")
    stage_bars(xs[3], range(n_proc, len(d["stages"])), "sampling only; softmax after each")
    # 4 draw
    x, fd = xs[4], d["first_draw"]
    svg.text(x + 8, y0 + 40, f"nucleus: {fd['nucleus']} tokens left", size=10, fill="#555")
    svg.text(x + 8, y0 + 58, f"u = {S.fmt(fd['u'], 4)} (uniform)", size=11, mono=True)
    svg.text(x + 8, y0 + 76, "cumulative p in id order", size=10, fill="#555")
    svg.text(x + 8, y0 + 90, "first to pass u:", size=10, fill="#555")
    svg.text(x + 8, y0 + 112, f"→ “{show(fd['token'])}”", size=14, weight="bold", fill=S.ORANGE)
    svg.text(x + 8, y0 + 130, f"p = {S.fmt(fd['prob'], 3)}", size=11)
    svg.text(x + 8, y0 + 160, "greedy would take", size=10, fill="#555")
    svg.text(x + 8, y0 + 176, f"“{show(d['top_tokens'][0])}” (the argmax)", size=11)
    # 5 stop
    x = xs[5]
    svg.text(x + 8, y0 + 40, "append the token:", size=10, fill="#555")
    svg.text(x + 8, y0 + 56, f"input_ids (1, {len(d['prompt_ids']) + 1})", size=11, mono=True)
    svg.text(x + 8, y0 + 80, "max_new_tokens reached?", size=10)
    svg.text(x + 8, y0 + 96, "eos drawn?", size=10)
    svg.text(x + 8, y0 + 118, "no: feed only the new", size=10, weight="bold")
    svg.text(x + 8, y0 + 132, "token to the model", size=10, weight="bold")
    svg.text(x + 8, y0 + 146, "(the cache holds the rest)", size=10)
    # the loop
    ly = y0 + bh + 40
    svg.line(xs[5] + bw / 2, y0 + bh, xs[5] + bw / 2, ly - 12, stroke=S.INK, width=1.2)
    svg.line(xs[5] + bw / 2, ly - 12, xs[1] + bw / 2, ly - 12, stroke=S.INK, width=1.2)
    svg.line(xs[1] + bw / 2, ly - 12, xs[1] + bw / 2, y0 + bh + 3, stroke=S.INK, width=1.2, arrow=True)
    svg.text(xs[3], ly - 16, "the loop: steps 2, 3, … (decode: 1 token in, 1 position added to the cache)",
             size=10, anchor="middle", fill="#555")
    svg.text(16, ly + 14, "step", size=10, fill="#555")
    svg.text(16, ly + 30, "fed to model", size=10, fill="#555")
    svg.text(16, ly + 46, "cache after", size=10, fill="#555")
    svg.text(16, ly + 62, "u drawn", size=10, fill="#555")
    svg.text(16, ly + 78, "token out", size=10, fill="#555")
    cw = 160
    for j, st in enumerate(d["steps"]):
        x = 110 + j * cw
        svg.text(x, ly + 14, str(j + 1), size=10, weight="bold")
        fed = "".join(show(t) for t in st["fed"])
        svg.text(x, ly + 30, clip(fed, 18) + ("  (prefill)" if j == 0 else ""), size=10, mono=True)
        svg.text(x, ly + 46, f"{st['cache_length']} positions", size=10)
        svg.text(x, ly + 62, S.fmt(st["u"], 3) + f"  ({st['nucleus']} left)", size=10)
        svg.text(x, ly + 78, f"“{show(st['token'])}”", size=11, weight="bold", fill=S.ORANGE)
    svg.text(16, ly + 104, "text: " + clip(d["text"].replace("\n", "\\n"), 90), size=12, mono=True)
    return svg


# ---------------------------------------------------------------------------------------------
# gpt2: the KV cache


def run_kv_cache(tok, model) -> dict:
    prompts, n_new = ["ROMEO:\n", "JULIET:\nO Romeo, Romeo"], 3
    ids, mask = tok.encode_batch(prompts)
    c = model.config
    cache = model.new_cache(len(prompts), ids.shape[1] + n_new)
    calls, seq, am = [], ids, mask
    out = model(ids, attention_mask=am, past_key_values=cache)
    calls.append({"fed": ids.shape[1], "positions": default_position_ids(am, 0, *ids.shape).tolist(),
                  "cache_length": int(cache.length), "key_shape": list(cache.keys(0).shape)})
    for _ in range(n_new):
        nxt = np.argmax(out.logits[:, -1], axis=-1)[:, None]
        seq = np.concatenate([seq, nxt], axis=1)
        S0 = int(cache.length)
        am = np.concatenate([am, np.ones((len(prompts), 1), am.dtype)], axis=1)
        pos = default_position_ids(am, S0, len(prompts), 1)
        out = model(nxt, attention_mask=am, past_key_values=cache)
        calls.append({"fed": 1, "positions": pos.tolist(), "cache_length": int(cache.length),
                      "key_shape": list(cache.keys(0).shape)})
    ref = generate(model, ids, attention_mask=mask, max_new_tokens=n_new, pad_token_id=tok.pad_token_id)
    assert np.array_equal(seq, ref), "the hand-driven prefill + decode differs from generate()"
    # every layer's keys are written at each cached slot, the pads too (they are masked, not skipped)
    filled = [[bool(np.abs(cache.keys(layer)[b, :, s]).sum() > 0) for s in range(int(cache.length))]
              for layer in range(c.n_layer) for b in range(len(prompts))]
    return {"prompts": prompts, "n_layer": int(c.n_layer), "n_head": int(c.n_head), "head_dim": int(c.head_dim),
            "mask": am.tolist(), "tokens": [[tok.decode([int(t)]) for t in row] for row in seq],
            "prompt_len": int(ids.shape[1]), "calls": calls, "all_slots_written": all(all(f) for f in filled),
            "texts": [tok.decode(row[mask_row.astype(bool)]) for row, mask_row in zip(seq, am)]}


def draw_kv_cache(d: dict) -> S.Svg:
    T, n = d["prompt_len"], len(d["calls"]) - 1
    cols = T + n
    cw, x0, y0 = 62, 150, 92
    W = max(x0 + cols * cw + 30, 16 + 4 * (12 * cols + 90))
    svg = S.Svg(W, 500, "The KV cache: prefill, decode, left padding")
    svg.text(16, 22, "The KV cache on the shipped model: 2 left-padded prompts, prefill then 3 greedy steps", size=15,
             weight="bold")
    svg.text(16, 40, "one slot per position per row, in each of the L = %d layers (keys and values (B, H = %d, S, D = %d)"
             "); a pad slot is written too, and masked" % (d["n_layer"], d["n_head"], d["head_dim"]), size=11,
             fill="#555")
    phase_fill = ["#dbe9f6"] + ["#ffe3c6", "#ffd19c", "#ffbe73"]
    # column headers: which call wrote the slot
    for s in range(cols):
        call = 0 if s < T else s - T + 1
        svg.text(x0 + s * cw + cw / 2 - 2, y0 - 20, "slot %d" % s, size=9, anchor="middle", fill="#666")
    svg.text(x0 + T * cw / 2, y0 - 34, f"call 1: prefill, T = {T} tokens in one pass", size=11, anchor="middle",
             weight="bold", fill=S.BLUE)
    for j in range(n):
        svg.text(x0 + (T + j) * cw + cw / 2, y0 - 34, f"call {j + 2}", size=11, anchor="middle", weight="bold",
                 fill="#c46200")
    mask = d["mask"]
    pos_last = [[None] * cols for _ in mask]
    s_at = 0
    for call in d["calls"]:
        for b, row in enumerate(call["positions"]):
            for j, p in enumerate(row):
                pos_last[b][s_at + j] = p
        s_at += call["fed"]
    for b, row in enumerate(d["tokens"]):
        y = y0 + b * 70
        svg.text(16, y + 18, f"row {b}", size=12, weight="bold")
        svg.text(16, y + 34, clip(d["prompts"][b].replace("\n", "\\n"), 18), size=10, mono=True, fill="#555")
        for s in range(cols):
            x = x0 + s * cw
            pad = mask[b][s] == 0
            fill = "#eeeeee" if pad else phase_fill[0 if s < T else min(s - T + 1, 3)]
            svg.rect(x + 2, y, cw - 4, 46, fill=fill, stroke="#bbb" if pad else "#8aa", rx=4, dash=pad)
            svg.text(x + cw / 2, y + 17, clip(show(row[s]), 7) if not pad else "pad", size=10, anchor="middle",
                     mono=True, fill="#999" if pad else S.INK, weight="bold")
            svg.text(x + cw / 2, y + 32, f"pos {pos_last[b][s]}", size=9, anchor="middle",
                     fill=S.RED if pad else "#333")
            svg.text(x + cw / 2, y + 42, f"mask {mask[b][s]}", size=8, anchor="middle", fill="#777")
    # legend for positions
    ly = y0 + 2 * 70 + 6
    svg.text(16, ly, "position ids = cumsum(mask) − 1, pads set to 1: each row's first real token is at position 0, "
             "so the padded row is encoded as if it had no pads", size=10, fill="#333")
    # the layers, growing: each sheet is one layer's keys (values alike), one column per cached slot
    gy = ly + 30
    svg.text(16, gy, "per layer, after each call: keys and values (B, H, S, D); S grows by the tokens fed "
             "(one column per slot; the call's new columns coloured)", size=12, weight="bold")
    sw = 12
    for j, call in enumerate(d["calls"]):
        x = 16 + j * (sw * cols + 90)
        kind = "prefill" if j == 0 else "decode"
        svg.text(x, gy + 22, f"call {j + 1} ({kind}): {call['fed']} token{'s' if call['fed'] > 1 else ''} × 2 rows",
                 size=11, weight="bold", fill=S.BLUE if j == 0 else "#c46200")
        new_from = call["cache_length"] - call["fed"]
        for layer in range(d["n_layer"]):
            ox, oy = x + (d["n_layer"] - 1 - layer) * 6, gy + 34 + layer * 7
            for s_ in range(call["cache_length"]):
                fill = phase_fill[min(j, 3)] if s_ >= new_from else "#e9eef3"
                svg.rect(ox + s_ * sw, oy, sw, 34, fill=fill, stroke="#8a8a8a")
        svg.text(x, gy + 34 + d["n_layer"] * 7 + 44, f"{d['n_layer']} layers × K, V of shape", size=10)
        svg.text(x, gy + 34 + d["n_layer"] * 7 + 58, f"({len(d['tokens'])}, {d['n_head']}, {call['cache_length']}, "
                 f"{d['head_dim']}) each", size=10, mono=True)
    gy += 16
    svg.text(16, gy + 34 + d["n_layer"] * 7 + 62, "without a cache every step would run all S positions through "
             "every layer again; with it a decode step runs 1 position and attends over the S cached keys",
             size=10, fill="#555")
    ry = gy + 34 + d["n_layer"] * 7 + 88
    for b, text in enumerate(d["texts"]):
        svg.text(16, ry + 16 * b, f"row {b}: " + text.replace("\n", "\\n"), size=11, mono=True)
    svg.height = ry + 16 * len(d["texts"]) + 6
    svg.items[1] = f'<rect x="0" y="0" width="{svg.width:g}" height="{svg.height:g}" fill="#ffffff"/>'
    return svg


# ---------------------------------------------------------------------------------------------
# speculative decoding: prompt lookup's rounds


class RecordingLookup(PromptLookupCandidateGenerator):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rounds: list[dict] = []

    def get_candidates(self, input_ids):
        cand, scores = super().get_candidates(input_ids)
        draft = cand[0, input_ids.shape[1]:].tolist()
        dummy = draft == [0] and 0 not in input_ids[0].tolist()   # no earlier match: 4.38.2's dummy token 0
        self.rounds.append({"start": int(input_ids.shape[1]), "draft": draft, "dummy": dummy})
        return cand, scores

    def update_candidate_strategy(self, input_ids, scores, num_matches):
        r = self.rounds[-1]
        r["accepted"] = int(num_matches)
        r["appended"] = input_ids[0, r["start"]:].tolist()
        return super().update_candidate_strategy(input_ids, scores, num_matches)


def run_speculative(tok, model) -> dict:
    prompt, n_new, c = "ROMEO:\n", 40, 10
    ids = tok.encode(prompt)[None, :]
    gen = RecordingLookup(num_output_tokens=c)
    out = assisted_decoding(model, ids, gen, max_length=ids.shape[1] + n_new, pad_token_id=tok.eos_token_id,
                            eos_token_id=tok.eos_token_id)
    ref = generate(model, ids, max_new_tokens=n_new, prompt_lookup_num_tokens=c)
    greedy = generate(model, ids, max_new_tokens=n_new)
    assert np.array_equal(out, ref), "recorded run differs from generate()"
    words = lambda ts: [tok.decode([t]) for t in ts]  # noqa: E731
    rounds = [{"draft": words(r["draft"]), "dummy": r["dummy"], "accepted": r["accepted"],
               "appended": words(r["appended"])} for r in gen.rounds]
    return {"command": f"generate(gpt, tok.encode({prompt!r}), max_new_tokens={n_new}, prompt_lookup_num_tokens={c})",
            "prompt": prompt, "new_tokens": n_new, "model_calls": len(rounds), "rounds": rounds,
            "same_as_greedy": bool(np.array_equal(out, greedy)), "text": tok.decode(out[0])}


def draw_speculative(d: dict) -> S.Svg:
    cw, x0, y0, rh, rh_dummy = 64, 120, 78, 46, 26
    heights = [rh_dummy if rd["dummy"] else rh for rd in d["rounds"]]
    width = x0 + 12 * cw + 40
    svg = S.Svg(width, y0 + sum(heights) + 76, "Speculative decoding: draft, verify, accept")
    svg.text(16, 22, f"Prompt lookup on the shipped model: {d['new_tokens']} new tokens in {d['model_calls']} model "
             f"calls (greedy needs {d['new_tokens']})", size=15, weight="bold")
    svg.text(16, 40, "each call: draft ≤ 10 tokens that followed the last 2 (else 1) tokens earlier in the text → one "
             "forward pass over them → keep the agreeing prefix + 1", size=11, fill="#555")
    legend = [("#cdebc9", S.GREEN, "draft = model's argmax: accepted"), ("#f9d2d2", S.RED, "first draft it rejects"),
              ("#f2f2f2", "#bbb", "not used (after the rejection)"), ("#dbe9f6", S.BLUE, "model's own token (+1)")]
    for i, (fill, stroke, label) in enumerate(legend):
        svg.rect(16 + i * 205, 50, 14, 12, fill=fill, stroke=stroke)
        svg.text(36 + i * 205, 60, label, size=10)
    y = y0
    for r, rd in enumerate(d["rounds"]):
        n = rd["accepted"]
        svg.text(16, y + 15, f"call {r + 1}: +{n + 1}", size=11, weight="bold")
        if rd["dummy"]:   # one line: the dummy draft, rejected, and the model's token beside it
            svg.rect(x0, y, cw - 4, 20, fill="#f9d2d2", stroke=S.RED, rx=3)
            svg.text(x0 + 4, y + 14, clip(show(rd["draft"][0]), 8), size=10, mono=True)
            svg.text(x0 + cw + 2, y + 14, "→", size=11, fill="#555")
            svg.rect(x0 + cw + 16, y, cw - 4, 20, fill="#dbe9f6", stroke=S.BLUE, rx=3)
            svg.text(x0 + cw + 20, y + 14, clip(show(rd["appended"][0]), 8), size=10, mono=True, weight="bold")
            svg.text(x0 + 2 * cw + 22, y + 14, "neither the last 2 tokens nor the last one occurred before: "
                     "4.38.2 drafts token 0", size=9, fill="#777")
            y += rh_dummy
            continue
        capped = n < len(rd["draft"]) and rd["draft"][n] == rd["appended"][n]  # stopped by max length, not rejected
        if capped:
            svg.text(x0 + len(rd["draft"]) * cw + 4, y + 14, "max length reached", size=9, fill="#777")
        for j, t in enumerate(rd["draft"]):
            fill, stroke = (("#cdebc9", S.GREEN) if j < n else ("#f9d2d2", S.RED) if j == n and not capped
                            else ("#f2f2f2", "#bbb"))
            svg.rect(x0 + j * cw, y, cw - 4, 20, fill=fill, stroke=stroke, rx=3, dash=j > n or (capped and j == n))
            svg.text(x0 + j * cw + 4, y + 14, clip(show(t), 8), size=10, mono=True, fill="#999" if j > n else S.INK)
        svg.text(x0 - 6, y + 36, "model:", size=9, anchor="end", fill="#555")
        for j, t in enumerate(rd["appended"]):
            own = j == n
            svg.rect(x0 + j * cw, y + 23, cw - 4, 18, fill="#dbe9f6" if own else "#ffffff",
                     stroke=S.BLUE if own else "#cfe3cf", rx=3)
            svg.text(x0 + j * cw + 4, y + 36, clip(show(t), 8), size=10, mono=True, weight="bold" if own else "normal",
                     fill=S.INK if own else "#6a9a6a")
        y += rh
    y += 10
    svg.text(16, y, "output = greedy search's, token for token: " + ("yes" if d["same_as_greedy"] else "NO"),
             size=12, weight="bold", fill=S.GREEN if d["same_as_greedy"] else S.RED)
    svg.text(16, y + 18, "(a draft is kept only if it equals the model's argmax at its position, in float32: a near-"
             "tie could flip, see the page). With no earlier match, 4.38.2 drafts token 0 (“!”)", size=10, fill="#555")
    svg.text(16, y + 40, "text: " + clip(d["text"].replace("\n", "\\n"), 110), size=11, mono=True)
    return svg


# ---------------------------------------------------------------------------------------------
# top-k vs top-p on a flat and a peaked step


def step_logits(tok, model, n_greedy: int):
    """The shipped model's last-position logits after "ROMEO:\\n" + n_greedy greedy tokens, and the context."""
    ids = generate(model, tok.encode("ROMEO:\n")[None, :], max_new_tokens=n_greedy)
    return tok.decode(ids[0]), model(ids).logits[:, -1]


def run_top_k_vs_top_p(tok, model) -> dict:
    k, p, shown = 5, 0.8, 24
    cases = []
    for kind, n in (("flat", 9), ("peaked", 11)):
        context, logits = step_logits(tok, model, n)
        probs = softmax(logits)[0]
        top = [int(i) for i in np.argsort(-probs, kind="stable")[:shown]]
        kept_k = np.isfinite(TopKLogitsWarper(k)(None, logits))[0]
        kept_p = np.isfinite(TopPLogitsWarper(p)(None, logits))[0]
        cases.append({"kind": kind, "context": context, "tokens": [tok.decode([i]) for i in top],
                      "probs": [r6(probs[i]) for i in top],
                      "top_k": {"kept": int(kept_k.sum()), "mass": r6(probs[kept_k].sum()),
                                "shown_kept": [bool(kept_k[i]) for i in top]},
                      "top_p": {"kept": int(kept_p.sum()), "mass": r6(probs[kept_p].sum()),
                                "shown_kept": [bool(kept_p[i]) for i in top]}})
    assert cases[0]["top_p"]["kept"] > k > cases[1]["top_p"]["kept"], "the steps no longer show the contrast"
    return {"k": k, "p": p, "cases": cases}


def draw_top_k_vs_top_p(d: dict) -> S.Svg:
    pw, ph, x0, y0 = 470, 230, 16, 60
    svg = S.Svg(x0 + 2 * pw + 10, y0 + 2 * (ph + 40) + 10, "Top-k against top-p")
    svg.text(x0, 22, f"Top-k (k = {d['k']}) and top-p (p = {d['p']}) on a flat and on a peaked step of the shipped "
             "model", size=15, weight="bold")
    svg.text(x0, 40, "blue = kept, grey = cut; the 24 most probable tokens of each step. A fixed k keeps too few on "
             "a flat step and too many on a peaked one; p adapts", size=11, fill="#555")
    for r, case in enumerate(d["cases"]):
        y = y0 + r * (ph + 40)
        ctx = case["context"][-18:].replace("\n", "\\n")
        svg.text(x0, y + 12, f"{case['kind']} step, after “…{ctx}” (top token p = {S.fmt(case['probs'][0], 3)})",
                 size=12, weight="bold")
        for c, rule in enumerate(("top_k", "top_p")):
            info = case[rule]
            title = (f"top-k = {d['k']}: keeps {info['kept']} tokens, mass {S.fmt(info['mass'], 3)}" if rule == "top_k"
                     else f"top-p = {d['p']}: keeps {info['kept']} tokens, mass {S.fmt(info['mass'], 3)}")
            labels = [f"'{clip(show(t), 6)}'" for t in case["tokens"]]
            S.bar_panel(svg, x0 + c * pw, y + 18, pw - 10, ph, title, labels, case["probs"],
                        [S.BLUE if k else S.GREY for k in info["shown_kept"]], max(case["probs"]) * 1.1,
                        value_digits=2, label_size=9, values_shown=False)
    return svg


# ---------------------------------------------------------------------------------------------
# choosing a strategy: likelihood against diversity


STRATEGIES = [("greedy", {}, False), ("beam, K=4", {"num_beams": 4}, False),
              ("contrastive α=0.6, k=4", {"penalty_alpha": 0.6, "top_k": 4}, False),
              ("sampling T=1 (top-k 50)", {"do_sample": True}, True),
              ("T=0.7 (top-k 50)", {"do_sample": True, "temperature": 0.7}, True),
              ("top-p 0.9", {"do_sample": True, "top_k": 0, "top_p": 0.9}, True),
              ("typical 0.9", {"do_sample": True, "top_k": 0, "typical_p": 0.9}, True)]


def run_strategies(tok, model) -> dict:
    prompt, n_new, seeds = "ROMEO:\n", 40, [0, 1, 2]
    ids = tok.encode(prompt)[None, :]
    T = ids.shape[1]

    def mean_logp(row):  # the model's own log-probability of what was generated (docs/choosing-a-strategy.md)
        logp = log_softmax(model(row[None]).logits[0])
        return float(np.mean([logp[t - 1, row[t]] for t in range(T, len(row))]))

    def distinct2(row):
        bigrams = list(zip(row[T:].tolist(), row[T + 1:].tolist()))
        return len(set(bigrams)) / len(bigrams)

    rows = []
    for name, kw, sampled in STRATEGIES:
        runs = []
        for seed in (seeds if sampled else [None]):
            out = generate(model, ids, max_new_tokens=n_new, **kw, **({} if seed is None else {"seed": seed}))[0]
            runs.append({"seed": seed, "mean_logp": r6(mean_logp(out)), "distinct2": r6(distinct2(out)),
                         "text": tok.decode(out[T:])})
        rows.append({"name": name, "kwargs": kw, "runs": runs})
    return {"prompt": prompt, "new_tokens": n_new, "strategies": rows}


def draw_strategies(d: dict) -> S.Svg:
    W, H = 1124, 520
    svg = S.Svg(W, H, "Choosing a strategy")
    svg.text(16, 22, "Choosing a strategy: what each one writes on the shipped model, and which to pick", size=15,
             weight="bold")
    svg.text(16, 40, f"“ROMEO:\\n” + {d['new_tokens']} tokens; likelihood = the model's mean log p per token, diversity = "
             "distinct-2 (distinct bigrams / bigrams); sampled ones: seeds 0, 1, 2", size=11, fill="#555")
    px, py, pw, ph = 70, 70, 450, 360
    pts = [(r["distinct2"], r["mean_logp"]) for s in d["strategies"] for r in s["runs"]]
    xlo, xhi = 0.3, 1.02
    ylo = math.floor(min(p[1] for p in pts) * 2) / 2
    yhi = math.ceil(max(p[1] for p in pts) * 2) / 2
    sx = lambda v: px + (v - xlo) / (xhi - xlo) * pw  # noqa: E731
    sy = lambda v: py + (yhi - v) / (yhi - ylo) * ph  # noqa: E731
    svg.line(px, py + ph, px + pw, py + ph, stroke="#888")
    svg.line(px, py, px, py + ph, stroke="#888")
    for v in (0.4, 0.6, 0.8, 1.0):
        svg.line(sx(v), py + ph, sx(v), py + ph + 4, stroke="#888")
        svg.text(sx(v), py + ph + 16, f"{v:.1f}", size=9, anchor="middle", fill="#666")
    v = ylo
    while v <= yhi + 1e-9:
        svg.line(px - 4, sy(v), px, sy(v), stroke="#888")
        svg.text(px - 6, sy(v) + 3, f"{v:.1f}", size=9, anchor="end", fill="#666")
        v += 0.5
    svg.text(px + pw / 2, py + ph + 34, "diversity: distinct-2 →", size=11, anchor="middle")
    svg.text(px - 44, py + ph / 2, "likelihood: mean log p →", size=11, anchor="middle", rotate=-90)
    labels = []
    for i, st in enumerate(d["strategies"]):
        colour = (S.PALETTE + ["#17becf"])[i]
        xs = [r["distinct2"] for r in st["runs"]]
        ys = [r["mean_logp"] for r in st["runs"]]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        if len(xs) > 1:  # the seeds: small dots, and their range as whiskers through the mean
            svg.line(sx(min(xs)), sy(my), sx(max(xs)), sy(my), stroke=colour, width=1, opacity=0.6)
            svg.line(sx(mx), sy(min(ys)), sx(mx), sy(max(ys)), stroke=colour, width=1, opacity=0.6)
            for x, y in zip(xs, ys):
                svg.circle(sx(x), sy(y), 2.5, colour)
        svg.circle(sx(mx), sy(my), 6, colour, stroke=S.INK)
        labels.append([sx(mx), sy(my), st["name"] + (" (mean of 3)" if len(xs) > 1 else ""), colour])
    for side in (True, False):  # labels left of points on the right half, right of the others; no overlaps
        group = sorted((lb for lb in labels if (lb[0] > px + pw / 2) == side), key=lambda lb: lb[1])
        last = -1e9
        for lb in group:
            ly = max(lb[1] + 4, last + 14)
            last = ly
            lx = lb[0] - 10 if side else lb[0] + 10
            if abs(ly - 4 - lb[1]) > 6:
                svg.line(lb[0], lb[1], lx + (2 if side else -2), ly - 4, stroke=lb[3], width=0.8, opacity=0.7)
            svg.text(lx, ly, lb[2], size=10, fill=lb[3], weight="bold", anchor="end" if side else "start")
    # the decision chart: questions in a column, each "yes" to the right, each "no" down; no line crosses a box
    cx, qw, lx, lw = 590, 210, 830, 280
    svg.text(cx, 78, "Which to pick", size=13, weight="bold")

    def node(x, y, w, text, fill="#f7f7f7", stroke="#999", lines=()):
        h = 24 + 14 * len(lines)
        svg.rect(x, y, w, h, fill=fill, stroke=stroke, rx=5)
        svg.text(x + 8, y + 16, text, size=11, weight="bold")
        for j, line in enumerate(lines):
            svg.text(x + 8, y + 30 + 14 * j, line, size=10, fill="#333")
        return h

    def measured(name):
        st = next(st for st in d["strategies"] if st["name"] == name)
        m = sum(r["mean_logp"] for r in st["runs"]) / len(st["runs"])
        dv = sum(r["distinct2"] for r in st["runs"]) / len(st["runs"])
        return f"here: log p {m:.2f}, distinct-2 {dv:.2f}"

    def yes(y):
        svg.line(cx + qw, y, lx - 4, y, arrow=True)
        svg.text(cx + qw + 6, y - 5, "yes", size=10, fill="#555")

    def no(y1, y2):
        svg.line(cx + 40, y1, cx + 40, y2 - 3, arrow=True)
        svg.text(cx + 46, (y1 + y2) / 2 + 4, "no", size=10, fill="#555")

    q1 = node(cx, 92, qw, "One correct answer?", fill="#fff6d6", stroke="#d4b300",
              lines=("translation, summary, short", "answer, code: maximise p"))
    yes(92 + 20)
    node(lx, 92, lw, "greedy search", fill="#dbe9f6", stroke=S.BLUE, lines=("cheapest: 1 row per step",
                                                                            measured("greedy")))
    node(lx, 150, lw, "beam search, K = 4", fill="#dbe9f6", stroke=S.BLUE,
         lines=("more probable, K rows per step; with", "no_repeat_ngram_size, length_penalty",
                measured("beam, K=4")))
    no(92 + q1, 236)
    q2 = node(cx, 236, qw, "Open-ended text?", fill="#fff6d6", stroke="#d4b300",
              lines=("story, dialogue: the most", "probable text is bland, repeats"))
    yes(236 + 20)
    node(lx, 236, lw, "sampling: T 0.7 or top-p 0.9", fill="#ffe3c6", stroke=S.ORANGE,
         lines=("(top-k 50 is on by default)", measured("top-p 0.9")))
    node(lx, 294, lw, "contrastive search", fill="#ffe3c6", stroke=S.ORANGE,
         lines=("deterministic, penalises repeats", measured("contrastive α=0.6, k=4")))
    no(236 + q2, 370)
    node(cx, 370, qw, "Several good answers?", fill="#fff6d6", stroke="#d4b300",
         lines=("options to choose from",))
    yes(370 + 20)
    node(lx, 370, lw, "sample-and-rank, beam sample,", fill="#e8f5e4", stroke=S.GREEN,
         lines=("group beam search; sample-and-rank:", "draw N, keep the most probable",
                "(N rows per step)"))
    svg.text(16, H - 30, "Up and left = probable and repetitive (greedy, beam); down and right = varied and less "
             "probable per token (sampling). No point is best on both axes:", size=10, fill="#333")
    svg.text(16, H - 16, "the task decides which axis matters (the page's worked example has the texts).", size=10,
             fill="#333")
    return svg


# ---------------------------------------------------------------------------------------------
# sampling: the draws


def run_sampling_draws(tok, model) -> dict:
    prompt, n_new, seed = "ROMEO:\n", 5, 0
    ids = tok.encode(prompt)[None, :]
    draw = RecordingDraw()
    config = GenerationConfig(do_sample=True, max_new_tokens=n_new)
    out = sample(model, ids, logits_processor=logits_processors(config, ids.shape[1]),
                 logits_warper=logits_warpers(config), max_length=ids.shape[1] + n_new,
                 pad_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, seed=seed, draw=draw)
    assert np.array_equal(out, generate(model, ids, do_sample=True, max_new_tokens=n_new, seed=seed))
    steps = []
    for i, call in enumerate(draw.calls):
        p = call["probs"][0] / call["probs"][0].sum()
        nz = np.flatnonzero(p)                             # ascending ids: multinomial's cumulative order
        t = int(call["tokens"][0, 0])
        rank = int(np.sum(p > p[t]) + 1)
        steps.append({"context": tok.decode(out[0, : ids.shape[1] + i]), "u": r6(call["u"][0]),
                      "ids": nz.tolist(), "tokens": [tok.decode([int(j)]) for j in nz],
                      "probs": [r6(p[j]) for j in nz], "chosen": tok.decode([t]), "chosen_id": t,
                      "chosen_prob": r6(p[t]), "rank": rank, "argmax": tok.decode([int(np.argmax(p))])})
    return {"command": f"generate(gpt, tok.encode({prompt!r}), do_sample=True, max_new_tokens={n_new}, seed={seed})",
            "steps": steps, "text": tok.decode(out[0])}


def draw_sampling_draws(d: dict) -> S.Svg:
    x0, w, y0, rh = 16, 900, 84, 78
    svg = S.Svg(x0 + w + 30, y0 + rh * len(d["steps"]) + 40, "Sampling: the draw")
    svg.text(x0, 22, "Sampling (shipped model, seed 0): each step's probabilities end to end on [0, 1), and the "
             "uniform u drawn", size=15, weight="bold")
    svg.text(x0, 40, "generate(..., do_sample=True, seed=0): top-k 50 by default, so 50 segments, in token-id order (as "
             "torch.multinomial sums them);", size=11, fill="#555")
    svg.text(x0, 54, "the token whose segment holds u is drawn: often not the most probable one", size=11, fill="#555")
    for i, st in enumerate(d["steps"]):
        y = y0 + i * rh
        ctx = st["context"][-24:].replace("\n", "\\n")
        svg.text(x0, y + 4, f"step {i + 1}, after “…{ctx}”:  u = {S.fmt(st['u'], 4)} → “{show(st['chosen'])}” "
                 f"(p = {S.fmt(st['chosen_prob'], 3)}, rank {st['rank']} of {len(st['ids'])}; the argmax is "
                 f"“{show(st['argmax'])}”)", size=11, weight="bold")
        acc, by = 0.0, y + 12
        for t, p, tid in zip(st["tokens"], st["probs"], st["ids"]):
            chosen = tid == st["chosen_id"]
            svg.rect(x0 + acc * w, by, p * w, 26, fill=S.ORANGE if chosen else ("#9ec5e8" if p > 0.03 else "#c9ddef"),
                     stroke="#fff")
            if p * w > 34 or chosen:
                svg.text(x0 + (acc + p / 2) * w, by + 17, clip(show(t), max(2, int(p * w / 7))), size=9,
                         anchor="middle", mono=True, weight="bold" if chosen else "normal")
            acc += p
        ux = x0 + st["u"] * w
        svg.line(ux, by - 4, ux, by + 34, stroke=S.RED, width=2)
        svg.text(ux, by + 46, "u", size=10, anchor="middle", fill=S.RED, weight="bold")
        svg.text(x0, by + 46, "0", size=9, fill="#666")
        svg.text(x0 + w, by + 46, "1", size=9, anchor="end", fill="#666")
    svg.text(x0, y0 + rh * len(d["steps"]) + 8, "text: " + d["text"].replace("\n", "\\n"), size=11, mono=True)
    return svg


# ---------------------------------------------------------------------------------------------
# contrastive search


def run_contrastive(tok, model) -> dict:
    prompt, n_new, alpha, k = "ROMEO:\n", 6, 0.6, 4
    ids = tok.encode(prompt)[None, :]
    calls = []
    original = cs_module.contrastive_scores

    def recording(context, candidates, probs, penalty_alpha):
        out = original(context, candidates, probs, penalty_alpha)
        calls.append({"probs": np.array(probs[0]), "penalty": np.array(cs_module.degeneration_penalty(
            context, candidates)[0]), "scores": np.array(out[0])})
        return out

    cs_module.contrastive_scores = recording
    try:
        out = cs_module.contrastive_search(model, ids, top_k=k, penalty_alpha=alpha, max_length=ids.shape[1] + n_new,
                                           pad_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    finally:
        cs_module.contrastive_scores = original
    assert np.array_equal(out, generate(model, ids, max_new_tokens=n_new, penalty_alpha=alpha, top_k=k))
    steps = []
    for i, call in enumerate(calls):
        logits = model(out[:, : ids.shape[1] + i]).logits[0, -1]
        cand = [int(t) for t in np.argsort(-softmax(logits), kind="stable")[:k]]
        chosen = int(out[0, ids.shape[1] + i])
        assert chosen == cand[int(np.argmax(call["scores"]))]
        steps.append({"candidates": [tok.decode([t]) for t in cand], "probs": [r6(x) for x in call["probs"]],
                      "penalty": [r6(x) for x in call["penalty"]], "scores": [r6(x) for x in call["scores"]],
                      "chosen": int(np.argmax(call["scores"]))})
    return {"command": f"generate(gpt, tok.encode({prompt!r}), max_new_tokens={n_new}, penalty_alpha={alpha}, "
                       f"top_k={k})", "alpha": alpha, "k": k, "steps": steps, "text": tok.decode(out[0]),
            "greedy_text": tok.decode(generate(model, ids, max_new_tokens=n_new)[0])}


def draw_contrastive(d: dict) -> S.Svg:
    a, k = d["alpha"], d["k"]
    pw, x0, y0, rowh = 350, 16, 78, 20
    n = len(d["steps"])
    ncol = 3
    ph = 34 + rowh * k + 14
    nrow = math.ceil(n / ncol)
    svg = S.Svg(x0 + ncol * pw + 10, y0 + nrow * ph + 60, "Contrastive search")
    svg.text(x0, 22, f"Contrastive search on the shipped model, α = {a}, k = {k}: score = (1 − α)·p − α·max cos",
             size=15, weight="bold")
    svg.text(x0, 40, "each step: the k most probable tokens, their probability p, their degeneration penalty (the "
             "largest cosine similarity of their hidden state", size=11, fill="#555")
    svg.text(x0, 54, "with any earlier position's) and the score; the highest score is taken (green), not always "
             "the most probable (first row)", size=11, fill="#555")
    for i, st in enumerate(d["steps"]):
        x, y = x0 + (i % ncol) * pw, y0 + (i // ncol) * ph
        svg.rect(x, y, pw - 10, ph - 8, fill="#fafafa", stroke="#ccc", rx=5)
        svg.text(x + 8, y + 16, f"step {i + 1}", size=12, weight="bold")
        for j, head in enumerate(("p", "max cos", "score")):
            svg.text(x + 110 + j * 76, y + 16, head, size=10, fill="#555", anchor="middle")
        for r in range(k):
            yy = y + 24 + r * rowh
            chosen = r == st["chosen"]
            if chosen:
                svg.rect(x + 4, yy, pw - 18, rowh - 2, fill="#e1f3dc", stroke=S.GREEN, rx=3)
            svg.text(x + 8, yy + 13, clip(show(st["candidates"][r]), 9), size=10, mono=True,
                     weight="bold" if chosen else "normal")
            svg.rect(x + 80, yy + 4, 60 * st["probs"][r], 10, fill=S.BLUE)
            svg.text(x + 82 + 60 * st["probs"][r], yy + 13, S.fmt(st["probs"][r], 3), size=9)
            svg.rect(x + 158, yy + 4, 36 * max(st["penalty"][r], 0), 10, fill=S.RED, opacity=0.7)
            svg.text(x + 160 + 36 * max(st["penalty"][r], 0), yy + 13, S.fmt(st["penalty"][r], 2), size=9)
            svg.text(x + 300, yy + 13, S.fmt(st["scores"][r], 3), size=10, anchor="end",
                     weight="bold" if chosen else "normal", fill=S.GREEN if chosen else S.INK)
    y = y0 + nrow * ph + 14
    svg.text(x0, y, "contrastive: " + d["text"].replace("\n", "\\n"), size=11, mono=True)
    svg.text(x0, y + 18, "greedy:      " + d["greedy_text"].replace("\n", "\\n"), size=11, mono=True, fill="#666")
    return svg


# ---------------------------------------------------------------------------------------------
# constrained beam search: banks and the round robin


def run_constrained() -> dict:
    p = np.array([[.1, .5, .3, .1], [.1, .1, .7, .1], [.5, .1, .3, .1], [.4, .2, .2, .2]], dtype=np.float32)
    model = TableModel(np.log(p))
    prompt, K, max_length = np.array([[0]]), 2, 4
    kept_calls = []
    original = cbs_module.bank_round_robin

    def recording(banks, scores, n):
        keep = original(banks, scores, n)
        caller = sys._getframe(1).f_locals   # step_sentence_constraint's candidates, as it built them
        rows, tokens, ids = caller["all_rows"], caller["all_tokens"], caller["input_ids"]
        n_topk = len(caller["sent_beam_indices"])
        kept_calls.append([{"seq": ids[int(r)].tolist()[1:] + [int(t)], "score": r6(s), "bank": int(b),
                            "source": "top-k" if j < n_topk else "forced",
                            "kept": int(np.flatnonzero(keep == j)[0]) if j in keep else None}
                           for j, (r, t, s, b) in enumerate(zip(rows, tokens, scores, banks))])
        return keep

    scorer = ConstrainedBeamSearchScorer(batch_size=1, num_beams=K, constraints=[PhrasalConstraint([3])],
                                         max_length=max_length)
    cbs_module.bank_round_robin = recording
    try:
        out = constrained_beam_search(model, np.repeat(prompt, K, axis=0), scorer, max_length=max_length,
                                      eos_token_id=0, pad_token_id=0, return_dict_in_generate=True,
                                      output_scores=True)
    finally:
        cbs_module.bank_round_robin = original
    kw = dict(num_beams=K, max_length=max_length, eos_token_id=0, pad_token_id=0, return_dict_in_generate=True,
              output_scores=True)
    forced = generate(model, prompt, force_words_ids=[[3]], **kw)
    plain = generate(model, prompt, **kw)
    assert np.array_equal(out.sequences, forced.sequences)
    return {"command": "generate(TableModel(log p), [[0]], force_words_ids=[[3]], num_beams=2, max_length=4, "
                       "eos_token_id=0, pad_token_id=0)", "probs": p.tolist(), "steps": kept_calls,
            "forced": {"sequence": forced.sequences[0].tolist(), "score": r6(forced.sequences_scores[0])},
            "plain": {"sequence": plain.sequences[0].tolist(), "score": r6(plain.sequences_scores[0])}}


def draw_constrained(d: dict) -> S.Svg:
    cw, x0, y0, bh = 270, 16, 70, 34
    n = max(len(s) for s in d["steps"])
    svg = S.Svg(x0 + cw * len(d["steps"]) + 270, y0 + n * (bh + 6) + 120, "Constrained beam search")
    svg.text(x0, 22, "Constrained beam search, token 3 forced (the page's bigram model, K = 2): each step's "
             "candidates and their banks", size=15, weight="bold")
    svg.text(x0, 40, "bank = how much of the constraint a candidate has fulfilled; the K kept are taken round-robin: "
             "the best of the highest bank, then of the next, …", size=11, fill="#555")
    for s, cands in enumerate(d["steps"]):
        x = x0 + s * cw
        svg.text(x, y0 - 8, f"step {s + 1}", size=12, weight="bold")
        order = sorted(range(len(cands)), key=lambda j: (-cands[j]["bank"], -cands[j]["score"]))
        for r, j in enumerate(order):
            c = cands[j]
            y = y0 + r * (bh + 6)
            kept = c["kept"] is not None
            svg.rect(x, y, cw - 20, bh, fill="#dbe9f6" if kept else "#f2f2f2", stroke=S.BLUE if kept else "#bbb",
                     rx=4, dash=not kept, opacity=1.0 if kept else 0.8)
            svg.text(x + 8, y + 14, "0 " + " ".join(str(t) for t in c["seq"]), size=11, mono=True, weight="bold")
            svg.text(x + 8, y + 28, f"Σ log p {S.fmt(c['score'], 3)}", size=10)
            badge = S.GREEN if c["bank"] else "#888"
            svg.rect(x + 116, y + 5, 52, 14, fill=badge, rx=7)
            svg.text(x + 142, y + 16, f"bank {c['bank']}", size=9, anchor="middle", fill="#fff", weight="bold")
            svg.text(x + 116, y + 30, c["source"], size=9, fill=S.ORANGE if c["source"] == "forced" else "#555",
                     weight="bold" if c["source"] == "forced" else "normal")
            svg.text(x + cw - 26, y + 21, f"kept #{c['kept'] + 1}" if kept else "dropped", size=10, anchor="end",
                     fill=S.BLUE if kept else "#999", weight="bold" if kept else "normal")
    fx = x0 + cw * len(d["steps"]) + 6
    svg.text(fx, y0 - 8, "result (score = Σ / ℓ)", size=12, weight="bold")
    svg.text(fx, y0 + 14, "plain:  " + " ".join(map(str, d["plain"]["sequence"])) + f"   {S.fmt(d['plain']['score'], 3)}",
             size=11, mono=True)
    svg.text(fx, y0 + 32, "forced: " + " ".join(map(str, d["forced"]["sequence"])) +
             f"   {S.fmt(d['forced']['score'], 3)}", size=11, mono=True, fill=S.GREEN, weight="bold")
    svg.text(fx, y0 + 56, "token 0 is eos; a hypothesis", size=10, fill="#555")
    svg.text(fx, y0 + 70, "finishes only once 3 is in it", size=10, fill="#555")
    y = y0 + n * (bh + 6) + 20
    svg.text(x0, y, "next-token probabilities (row = previous token):", size=11, weight="bold")
    for i, row in enumerate(d["probs"]):
        svg.text(x0 + 8, y + 18 + 16 * i, f"after {i}: " + "  ".join(f"{v:.1f}" for v in row), size=10, mono=True)
    return svg


# ---------------------------------------------------------------------------------------------
# entropy-based warpers


def run_entropy_warpers(tok, model) -> dict:
    shown = 14
    rules = [("top-p 0.9", TopPLogitsWarper(0.9)), ("typical 0.9", TypicalLogitsWarper(0.9)),
             ("epsilon 0.02", EpsilonLogitsWarper(0.02)), ("eta 0.02", EtaLogitsWarper(0.02)),
             ("min-p 0.1", MinPLogitsWarper(0.1))]
    cases = []
    for kind, n in (("flat", 9), ("peaked", 11)):
        context, logits = step_logits(tok, model, n)
        probs = softmax(logits)[0]
        top = [int(i) for i in np.argsort(-probs, kind="stable")[:shown]]
        entropy = float(-(probs[probs > 0] * np.log(probs[probs > 0])).sum())
        kept = {}
        for name, warper in rules:
            mask = np.isfinite(warper(None, logits))[0]
            kept[name] = {"shown": [bool(mask[i]) for i in top], "count": int(mask.sum()),
                          "mass": r6(probs[mask].sum())}
        eta = min(0.02, math.sqrt(0.02) * math.exp(-entropy))
        cases.append({"kind": kind, "context": context, "entropy": r6(entropy), "tokens": [tok.decode([i]) for i in top],
                      "probs": [r6(probs[i]) for i in top], "kept": kept,
                      "thresholds": {"epsilon 0.02": 0.02, "eta 0.02": r6(eta), "min-p 0.1": r6(0.1 * probs.max())}})
    return {"rules": [name for name, _ in rules], "cases": cases}


def draw_entropy_warpers(d: dict) -> S.Svg:
    cell, x0, label_w = 54, 16, 110
    n = len(d["cases"][0]["tokens"])
    per_case = 44 + 24 * (len(d["rules"]) + 1)
    svg = S.Svg(x0 + label_w + cell * n + 200, 60 + per_case * len(d["cases"]) + 20, "Entropy-based warpers")
    svg.text(x0, 22, "Typical, epsilon, eta and min-p (and top-p) on a flat and on a peaked step of the shipped model",
             size=15, weight="bold")
    svg.text(x0, 40, "green = kept; the 14 most probable tokens with their probabilities; right: tokens kept in all "
             "(of 50 257) and the cut-off each rule used", size=11, fill="#555")
    y = 60
    for case in d["cases"]:
        ctx = case["context"][-18:].replace("\n", "\\n")
        svg.text(x0, y + 14, f"{case['kind']} step, after “…{ctx}”: entropy H = {S.fmt(case['entropy'], 2)} nats",
                 size=12, weight="bold")
        y += 24
        for j, (t, p) in enumerate(zip(case["tokens"], case["probs"])):
            svg.text(x0 + label_w + j * cell + cell / 2 - 2, y + 14, clip(show(t), 7), size=9, anchor="middle",
                     mono=True)
        y += 22
        for rule in d["rules"]:
            svg.text(x0 + label_w - 8, y + 16, rule, size=11, anchor="end")
            for j, (p, kept) in enumerate(zip(case["probs"], case["kept"][rule]["shown"])):
                svg.rect(x0 + label_w + j * cell, y, cell - 4, 22, fill="#cdebc9" if kept else "#eeeeee",
                         stroke=S.GREEN if kept else "#bbb", rx=3)
                svg.text(x0 + label_w + j * cell + (cell - 4) / 2, y + 15, S.fmt(p, 3), size=10, anchor="middle",
                         fill=S.INK if kept else "#999")
            info = case["kept"][rule]
            thr = case["thresholds"].get(rule)
            note = f"keeps {info['count']}" + (f", p ≥ {S.fmt(thr, 4)}" if thr is not None else "")
            svg.text(x0 + label_w + n * cell + 6, y + 15, note, size=10)
            y += 24
        y += 20
    return svg

# ---------------------------------------------------------------------------------------------
# bad words, sequence bias, forced eos; guidance; stopping


def bars_svg(panels, title, subtitle, panel_w=230, h=270, ymax=1.0):
    svg = S.Svg(16 + panel_w * len(panels) + 10, h + 60, title)
    svg.text(16, 22, title, size=15, weight="bold")
    svg.text(16, 40, subtitle, size=11, fill="#555")
    for i, pn in enumerate(panels):
        S.bar_panel(svg, 16 + i * panel_w, 50, panel_w - 10, h, pn["title"], pn["labels"], pn["values"],
                    pn["colors"], ymax, notes=pn.get("notes"))
    return svg


def run_bad_words(tok, model) -> dict:
    """One step of the shipped model through three of the page's processors, each on the raw logits."""
    context, logits = step_logits(tok, model, 19)          # "... I'll not, my lord": next is . , ; :
    ids = tok.encode(context)[None, :]
    assert np.array_equal(model(ids).logits[:, -1], logits)
    eos = tok.eos_token_id
    top = [int(i) for i in np.argsort(-logits[0], kind="stable")[:5]] + [eos]
    banned, boosted = top[0], top[2]
    stages = [("raw", None),
              (f"bad_words_ids [[{banned}]]", NoBadWordsLogitsProcessor([[banned]], eos_token_id=eos)),
              (f"sequence_bias +2 on {boosted}", SequenceBiasLogitsProcessor({(boosted,): 2.0})),
              ("forced eos, last step",
               ForcedEOSTokenLogitsProcessor(max_length=ids.shape[1] + 1, eos_token_id=eos))]
    rows = []
    for name, proc in stages:
        out = logits if proc is None else proc(ids, logits)
        rows.append({"stage": name, "probs": [r6(x) for x in softmax(out)[0, top]],
                     "minus_inf": [bool(np.isneginf(out[0, i])) for i in top]})
    return {"context": context, "tokens": [tok.decode([i]) for i in top], "token_ids": top, "banned": banned,
            "boosted": boosted, "eos": eos, "stages": rows}


def draw_bad_words(d: dict) -> S.Svg:
    labels = [f"'{clip(show(t), 8)}'" if i != d["eos"] else "eos" for t, i in zip(d["tokens"], d["token_ids"])]
    panels = [{"title": st["stage"], "labels": labels, "values": st["probs"],
               "colors": [S.GREY if m else (S.ORANGE if i == d["boosted"] and k == 2 else S.BLUE)
                          for m, i in zip(st["minus_inf"], d["token_ids"])],
               "notes": ["−inf" if m else "" for m in st["minus_inf"]]} for k, st in enumerate(d["stages"])]
    ctx = d["context"][-22:].replace("\n", "\\n")
    return bars_svg(panels, "Bad words, sequence bias and forced eos on one step (each on the raw logits)",
                    f"after “…{ctx}” (shipped model): the 5 most probable tokens and eos; softmax of each processor's "
                    "output", panel_w=260)


def run_guidance(tok, model) -> dict:
    prompt = "ROMEO:\nI'll not"
    ids = tok.encode(prompt)[None, :]
    logits = model(ids).logits[:, -1]
    cond = log_softmax(logits)
    uncond = log_softmax(model(ids[:, -1:]).logits[:, -1])   # the unconditional branch: the last prompt token
    scales = [1.5, 3.0]
    outs = {g: UnbatchedClassifierFreeGuidanceLogitsProcessor(g, model)(ids, logits) for g in scales}
    for g, out in outs.items():
        assert np.allclose(out, g * (cond - uncond) + uncond, atol=1e-5), "guidance is not γ(c − u) + u"
    top = [int(i) for i in np.argsort(-(outs[3.0][0]), kind="stable")[:4]]
    top += [int(i) for i in np.argsort(-cond[0], kind="stable")[:4] if int(i) not in top][:2]
    probs = lambda x: [r6(v) for v in softmax(x)[0, top]]  # noqa: E731
    return {"prompt": prompt, "unconditional": tok.decode(ids[0, -1:]), "tokens": [tok.decode([i]) for i in top],
            "panels": [{"title": "without the prompt (u)", "probs": probs(uncond)},
                       {"title": "with the prompt (γ = 1)", "probs": probs(cond)}] +
                      [{"title": f"guidance_scale γ = {g:g}", "probs": probs(outs[g])} for g in scales]}


def draw_guidance(d: dict) -> S.Svg:
    labels = [f"'{clip(show(t), 8)}'" for t in d["tokens"]]
    panels = [{"title": pn["title"], "labels": labels, "values": pn["probs"],
               "colors": [S.ORANGE if j == 0 else S.BLUE for j in range(len(labels))]} for pn in d["panels"]]
    return bars_svg(panels, "Classifier-free guidance: γ·(log p(·|prompt) − log p(·|last token)) + log p(·|last token)",
                    f"“{d['prompt']}”".replace("\n", "\\n") + f" on the shipped model; the unconditional branch sees only "
                    f"“{show(d['unconditional'])}”; γ > 1 boosts what the prompt adds", panel_w=250,
                    ymax=max(max(pn["probs"]) for pn in d["panels"]) * 1.15)


def run_stopping() -> dict:
    """A batch of three on a bigram table (eos = 0, pad = 4): rows finish at different steps."""
    nxt = {1: 2, 2: 3, 3: 0, 0: 0, 4: 4}                      # 1 -> 2 -> 3 -> eos
    table = np.full((5, 5), -5.0, dtype=np.float32)
    for a, b in nxt.items():
        table[a, b] = 5.0
    model = TableModel(table, eos_token_id=0)
    prompts = np.array([[1], [2], [3]])
    runs = []
    for n in (6, 2):
        out = generate(model, prompts, max_new_tokens=n, eos_token_id=0, pad_token_id=4)
        finished = [0 in row[1:].tolist() for row in out]
        runs.append({"max_new_tokens": n, "sequences": out.tolist(),
                     "reason": "every row emitted eos" if all(finished) else "max_length reached",
                     "finished": finished})
    return {"eos": 0, "pad": 4, "names": {"0": "eos", "1": "a", "2": "b", "3": "c", "4": "pad"}, "runs": runs}


def draw_stopping(d: dict) -> S.Svg:
    cw, rh, x0, y0 = 54, 30, 16, 70
    svg = S.Svg(x0 + 2 * (cw * 8 + 60) - 40, y0 + 3 * rh + 90, "Stopping")
    svg.text(x0, 22, "Stopping: one answer for the whole batch; a finished row gets pad until every row is done",
             size=15, weight="bold")
    svg.text(x0, 40, "three prompts a, b, c of a bigram table (a → b → c → eos); eos = 0, pad_token_id = 4",
             size=11, fill="#555")
    for k, run in enumerate(d["runs"]):
        x = x0 + k * (cw * 8 + 60)
        svg.text(x, y0 - 8, f"max_new_tokens = {run['max_new_tokens']}: stops after {len(run['sequences'][0]) - 1} "
                 f"steps ({run['reason']})", size=12, weight="bold")
        for r, row in enumerate(run["sequences"]):
            y = y0 + r * rh + 6
            seen_eos = False
            for j, t in enumerate(row):
                name = d["names"][str(t)]
                kind = "prompt" if j == 0 else ("pad" if seen_eos else ("eos" if t == d["eos"] else "token"))
                seen_eos = seen_eos or (j > 0 and t == d["eos"])
                fill = {"prompt": "#eeeeee", "token": "#dbe9f6", "eos": "#f9d2d2", "pad": "#f7f7f7"}[kind]
                stroke = {"prompt": "#888", "token": S.BLUE, "eos": S.RED, "pad": "#bbb"}[kind]
                svg.rect(x + j * cw, y, cw - 4, rh - 6, fill=fill, stroke=stroke, rx=3, dash=kind == "pad")
                svg.text(x + j * cw + (cw - 4) / 2, y + 16, name, size=11, anchor="middle", mono=True,
                         fill="#999" if kind == "pad" else S.INK, weight="bold" if kind == "eos" else "normal")
            done = run["finished"][r]
            svg.text(x + len(row) * cw + 2, y + 16, "finished" if done else "unfinished", size=10,
                     fill=S.GREEN if done else S.RED)
    y = y0 + 3 * rh + 30
    svg.text(x0, y, "the eos row check runs per row (unfinished flags); max_length is a criterion for the batch: "
             "with 2 new tokens, row a is cut before its eos", size=11)
    svg.text(x0, y + 18, "(transformers 4.38.2: every StoppingCriteria returns one bool; the per-row flags stop a row, "
             "only all of them stop the loop)", size=10, fill="#555")
    return svg


def build(tok, model) -> dict:
    """name -> (sidecar data, picture)."""
    pics = {}
    for name, run, draw in (
            ("pipeline-overview", lambda: run_pipeline_overview(tok, model), draw_pipeline_overview),
            ("kv-cache", lambda: run_kv_cache(tok, model), draw_kv_cache),
            ("speculative-decoding", lambda: run_speculative(tok, model), draw_speculative),
            ("top-k-vs-top-p", lambda: run_top_k_vs_top_p(tok, model), draw_top_k_vs_top_p),
            ("strategies", lambda: run_strategies(tok, model), draw_strategies),
            ("sampling-draws", lambda: run_sampling_draws(tok, model), draw_sampling_draws),
            ("contrastive-search", lambda: run_contrastive(tok, model), draw_contrastive),
            ("constrained-beam-search", run_constrained, draw_constrained),
            ("entropy-warpers", lambda: run_entropy_warpers(tok, model), draw_entropy_warpers),
            ("bad-words-and-forcing", lambda: run_bad_words(tok, model), draw_bad_words),
            ("guidance", lambda: run_guidance(tok, model), draw_guidance),
            ("stopping", run_stopping, draw_stopping)):
        data = run()
        pics[name] = (data, draw(data))
    return pics
