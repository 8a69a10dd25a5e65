"""The pictures of docs/from-gpt2-to-llama.md: RMSNorm, RoPE, SwiGLU and GQA on models/tiny-shakespeare-llama.

Each run takes a real prompt through the first layer of the shipped Llama with refdecode's own functions
(``refdecode/model/llama.py``: ``rms_norm``, ``rope_cos_sin``, ``apply_rotary_pos_emb``, ``repeat_kv``,
``swiglu_mlp``), step by step so the intermediate vectors can be drawn, and checks the result against the
model itself (``refdecode.from_pretrained``): the layer written out here, followed by the model's other
layers, must give the model's logits. The numbers drawn are in each picture's sidecar JSON, which
``tests/docs/test_pictures.py`` compares with a fresh run.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import svg as S

from refdecode import Tokenizer, from_pretrained
from refdecode.model.llama import apply_rotary_pos_emb, repeat_kv, rms_norm, rope_cos_sin, swiglu_mlp
from refdecode.numerics import softmax

ROOT = Path(__file__).resolve().parents[2]
LLAMA_DIR = ROOT / "models" / "tiny-shakespeare-llama"
PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"


def r6(x: float) -> float:
    return round(float(x), 6)


def show(text: str) -> str:
    """A token as drawn: newline as \\n, a leading space as a visible ␣."""
    text = text.replace("\n", "\\n")
    return "␣" + text[1:] if text.startswith(" ") else text


# ---------------------------------------------------------------------------------------------
# the run: layer 0 of the shipped Llama, written out


def layer_zero(model, ids: np.ndarray) -> dict:
    """Layer 0 on one prompt (T,), every intermediate kept: the embedding, q and k, the gate input."""
    c = model.config
    H, H_kv, D = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    w = model.params["layers"][0]
    attn, mlp = w["self_attn"], w["mlp"]
    T = len(ids)
    x = model.params["embed_tokens"][ids]                                          # (T, E)
    h = rms_norm(x, w["input_layernorm"]["weight"], c.rms_norm_eps)
    q = (h @ attn["q_proj"]["weight"].T).reshape(1, T, H, D).transpose(0, 2, 1, 3)     # (1, H, T, D)
    k = (h @ attn["k_proj"]["weight"].T).reshape(1, T, H_kv, D).transpose(0, 2, 1, 3)  # (1, H_kv, T, D)
    v = (h @ attn["v_proj"]["weight"].T).reshape(1, T, H_kv, D).transpose(0, 2, 1, 3)
    cos, sin = rope_cos_sin(np.arange(T, dtype=np.int64)[None], c)                 # (1, T, D)
    q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
    keys, values = repeat_kv(k_rot, c.n_rep), repeat_kv(v, c.n_rep)              # (1, H, T, D)
    scores = q_rot @ keys.transpose(0, 1, 3, 2) / np.float32(math.sqrt(D))       # (1, H, T, T)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, np.finfo(np.float32).min)
    o = (softmax(scores, axis=-1) @ values).transpose(0, 2, 1, 3).reshape(T, H * D)
    x_mid = x + o @ attn["o_proj"]["weight"].T                                    # (T, E)
    m = rms_norm(x_mid, w["post_attention_layernorm"]["weight"], c.rms_norm_eps)
    gate = m @ mlp["gate_proj"]["weight"].T                                        # (T, F)
    out = x_mid + swiglu_mlp(m, **mlp)
    hidden = model(ids[None], output_hidden_states=True).hidden_states[1][0]     # the model's own layer 0
    assert np.allclose(out, hidden, atol=1e-4 * float(np.abs(hidden).max())), "layer 0 written out != the model"
    return {"x": x, "q": q[0], "k": k[0], "gate": gate, "config": c}


def run_all() -> dict[str, dict]:
    model = from_pretrained(str(LLAMA_DIR))
    tok = Tokenizer(str(LLAMA_DIR))
    ids = tok.encode(PROMPT)
    tokens = [tok.decode([int(t)]) for t in ids]
    run = layer_zero(model, ids)
    return {"llama-rmsnorm": run_rmsnorm(run, tokens), "llama-rope": run_rope(run, tokens),
            "llama-swiglu": run_swiglu(run, tokens), "llama-gqa": run_gqa(model, tok)}


def run_rmsnorm(run: dict, tokens: list[str]) -> dict:
    """The embedding of the prompt's first token, LayerNorm'ed and RMSNorm'ed (gains 1, no bias)."""
    x = run["x"][0].astype(np.float32)                                            # (E,)
    ones = np.ones_like(x)
    eps = run["config"].rms_norm_eps
    ln = (x - x.mean()) / np.sqrt(x.var() + np.float32(eps))
    rms = rms_norm(x[None], ones, eps)[0]
    return {"token": tokens[0], "mean": r6(x.mean()), "std": r6(x.std()), "rms": r6(np.sqrt(np.mean(x * x))),
            "layer_norm": [r6(v) for v in ln], "rms_norm": [r6(v) for v in rms],
            "max_abs_difference": r6(np.abs(ln - rms).max())}


def run_rope(run: dict, tokens: list[str]) -> dict:
    """Head 0's query of the first token rotated to positions 0..15; the q.k score against distance."""
    c = run["config"]
    D = c.head_dim
    q, k = run["q"][0, 0], run["k"][0, 1]                                          # (D,): token 0's query, token 1's key
    positions = np.arange(16, dtype=np.int64)
    cos, sin = rope_cos_sin(positions[None], c)                                    # (1, 16, D)
    q_at = apply_rotary_pos_emb(np.broadcast_to(q, (1, 1, 16, D)).copy(), np.broadcast_to(k, (1, 1, 16, D)).copy(),
                                cos, sin)[0][0, 0]                                # (16, D)
    pairs = [0, D // 4, D // 2 - 1]
    distances = list(range(0, 33))
    curves = {}
    for offset in (0, 100):
        pos_q = np.array([[offset + d for d in distances]], dtype=np.int64)       # the query d tokens after the key
        pos_k = np.full_like(pos_q, offset)
        cq, sq = rope_cos_sin(pos_q, c)
        ck, sk = rope_cos_sin(pos_k, c)
        n = len(distances)
        qq = apply_rotary_pos_emb(np.broadcast_to(q, (1, 1, n, D)).copy(), np.broadcast_to(q, (1, 1, n, D)).copy(),
                                  cq, sq)[0][0, 0]
        kk = apply_rotary_pos_emb(np.broadcast_to(k, (1, 1, n, D)).copy(), np.broadcast_to(k, (1, 1, n, D)).copy(),
                                  ck, sk)[1][0, 0]
        curves[str(offset)] = [r6(v) for v in (qq * kk).sum(-1) / math.sqrt(D)]
    return {"query_token": tokens[0], "key_token": tokens[1], "head": 0, "head_dim": D,
            "rope_theta": float(c.rope_theta), "pairs": pairs,
            "theta": [r6(float(c.rope_theta) ** (-2 * i / D)) for i in pairs],
            "points": {str(i): [[r6(q_at[m, i]), r6(q_at[m, i + D // 2])] for m in range(16)] for i in pairs},
            "norm_at_positions": [r6(np.linalg.norm(q_at[m])) for m in range(16)],
            "distances": distances, "scores_by_offset": curves}


def run_swiglu(run: dict, tokens: list[str]) -> dict:
    """SiLU and GPT-2's GELU on a grid; layer 0's gate inputs for the prompt's last token."""
    z = np.linspace(-5.0, 5.0, 41)
    silu = z / (1.0 + np.exp(-z))
    gelu = 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))
    gate = run["gate"][-1].astype(np.float64)                                       # (I,)
    return {"token": tokens[-1], "intermediate_size": len(gate), "z": [r6(v) for v in z],
            "silu": [r6(v) for v in silu], "gelu_new": [r6(v) for v in gelu],
            "gate_inputs": [r6(v) for v in gate],
            "share_below_minus_2": r6(np.mean(gate < -2.0)), "share_above_2": r6(np.mean(gate > 2.0))}


def run_gqa(model, tok) -> dict:
    """The KV cache of a 64-token prefill: its arrays' bytes as stored (H_kv heads) and with H heads."""
    c = model.config
    ids = tok.encode(open(ROOT / "docs" / "from-gpt2-to-llama.md", encoding="utf-8").read()[:2000])[:64]
    cache = model.new_cache(1, len(ids))
    model(ids[None], past_key_values=cache)
    stored = sum(cache.keys(layer).nbytes + cache.values(layer).nbytes for layer in range(c.num_hidden_layers))
    per_layer_shape = list(cache.keys(0).shape)
    H, H_kv = c.num_attention_heads, c.num_key_value_heads
    return {"tokens": len(ids), "layers": c.num_hidden_layers, "query_heads": H, "key_value_heads": H_kv,
            "head_dim": c.head_dim, "key_shape": per_layer_shape, "bytes_stored": int(stored),
            "bytes_without_gqa": int(stored * H // H_kv),
            "query_head_reads": [j // (H // H_kv) for j in range(H)]}


# ---------------------------------------------------------------------------------------------
# drawing


def axes(svg, x0, y0, w, h, xlim, ylim, xlabel, ylabel):
    """A plot box; returns (x, y) -> pixel mapping."""
    svg.rect(x0, y0, w, h, fill="#ffffff", stroke="#bbb")
    fx = lambda v: x0 + (v - xlim[0]) / (xlim[1] - xlim[0]) * w    # noqa: E731
    fy = lambda v: y0 + h - (v - ylim[0]) / (ylim[1] - ylim[0]) * h    # noqa: E731
    if ylim[0] < 0 < ylim[1]:
        svg.line(x0, fy(0), x0 + w, fy(0), stroke="#ccc")
    if xlim[0] < 0 < xlim[1]:
        svg.line(fx(0), y0, fx(0), y0 + h, stroke="#ccc")
    for v in (xlim[0], xlim[1]):
        svg.text(fx(v), y0 + h + 14, S.fmt(v, 0 if float(v).is_integer() else 2), size=10, anchor="middle",
                 fill="#666")
    for v in (ylim[0], ylim[1]):
        svg.text(x0 - 4, fy(v) + 4, S.fmt(v, 0 if float(v).is_integer() else 2), size=10, anchor="end", fill="#666")
    svg.text(x0 + w / 2, y0 + h + 30, xlabel, size=11, anchor="middle")
    svg.text(x0 - 30, y0 + h / 2, ylabel, size=11, anchor="middle", rotate=-90)
    return fx, fy


def draw_rmsnorm(d: dict) -> S.Svg:
    n = len(d["rms_norm"])
    svg = S.Svg(760, 450, "RMSNorm against LayerNorm on a hidden state of the tiny Llama")
    svg.text(16, 22, f"LayerNorm and RMSNorm of the embedding of “{show(d['token'])}” (gain 1, no bias)", size=14,
             weight="bold")
    svg.text(16, 40, f"the input of layer 0's first RMSNorm: mean {S.fmt(d['mean'], 4)}, standard deviation "
             f"{S.fmt(d['std'], 4)}, root mean square {S.fmt(d['rms'], 4)}", size=11, fill="#555")
    lim = math.ceil(max(abs(v) for v in d["layer_norm"] + d["rms_norm"]))
    fx, fy = axes(svg, 60, 60, 660, 200, (0, n - 1), (-lim, lim), "", "value")
    svg.polyline([(fx(i), fy(v)) for i, v in enumerate(d["layer_norm"])], stroke=S.BLUE, width=2.5, opacity=0.6)
    svg.polyline([(fx(i), fy(v)) for i, v in enumerate(d["rms_norm"])], stroke=S.ORANGE, width=1.2)
    svg.rect(540, 66, 12, 4, fill=S.BLUE)
    svg.text(558, 72, "LayerNorm: (x - mean) / std", size=10)
    svg.rect(540, 82, 12, 4, fill=S.ORANGE)
    svg.text(558, 88, "RMSNorm: x / rms", size=10)
    diff = [a - b for a, b in zip(d["layer_norm"], d["rms_norm"])]
    dl = max(abs(v) for v in diff) * 1.2 or 1.0
    svg.text(60, 296, f"LayerNorm - RMSNorm: at most {S.fmt(d['max_abs_difference'], 4)} (values reach "
             f"{S.fmt(max(abs(v) for v in d['rms_norm']), 2)}); nearly the same for every entry: -mean / std",
             size=10, fill="#555")
    fx, fy = axes(svg, 60, 304, 660, 80, (0, n - 1), (-round(dl, 2), round(dl, 2)),
                  f"entry i of the hidden state (E = {n})", "difference")
    svg.polyline([(fx(i), fy(v)) for i, v in enumerate(diff)], stroke=S.RED, width=1.2)
    return svg


def draw_rope(d: dict) -> S.Svg:
    svg = S.Svg(900, 360, "RoPE on the tiny Llama: a query rotated by position; scores depend on distance only")
    svg.text(16, 22, f"RoPE: head {d['head']}'s query of “{show(d['query_token'])}” at positions 0 to 15 "
             f"(D = {d['head_dim']}, theta = {d['rope_theta']:g})", size=14, weight="bold")
    for j, i in enumerate(d["pairs"]):
        pts = d["points"][str(i)]
        r = max(math.hypot(a, b) for a, b in pts) * 1.15 or 1.0
        cx, cy, R = 90 + j * 170, 170, 70
        svg.circle(cx, cy, R, fill="#f6f6f6", stroke="#ccc")
        svg.text(cx, 70, f"pair ({i}, {i + d['head_dim'] // 2})", size=11, anchor="middle", weight="bold")
        svg.text(cx, 84, f"theta = {S.fmt(d['theta'][j], 4)} rad / position", size=10, anchor="middle", fill="#555")
        for m, (a, b) in enumerate(pts):
            x, y = cx + a / r * R, cy - b / r * R
            svg.circle(x, y, 3.5 if m else 5, fill=S.PALETTE[0] if m else S.RED)
            if m in (0, 1, 2, 15) or (j == 2 and m == 15):
                svg.text(x + 5, y - 4, str(m), size=9, fill="#444")
        svg.text(cx, 262, "entry i (right) against i + D/2 (up)", size=9, anchor="middle", fill="#666")
    svg.text(90, 290, "red: position 0. The fastest pair turns 1 radian per position, the slowest barely moves;",
             size=10, fill="#555")
    svg.text(90, 304, "every position keeps the length: " + S.fmt(min(d["norm_at_positions"]), 4) + " to "
             + S.fmt(max(d["norm_at_positions"]), 4), size=10, fill="#555")
    curves = d["scores_by_offset"]
    vals = [v for c in curves.values() for v in c]
    pad = 0.15 * (max(vals) - min(vals)) or 0.1
    lo, hi = round(min(vals) - pad, 2), round(max(vals) + pad, 2)
    fx, fy = axes(svg, 600, 70, 270, 190, (0, d["distances"][-1]), (lo, hi), "distance n - m (tokens)",
                  "score q·k / √D")
    for (off, ys), color, width in zip(curves.items(), (S.BLUE, S.ORANGE), (4, 1.5)):
        svg.polyline([(fx(x), fy(y)) for x, y in zip(d["distances"], ys)], stroke=color, width=width,
                     opacity=0.6 if width > 2 else 1)
    svg.text(735, 60, f"query “{show(d['query_token'])}”, key “{show(d['key_token'])}”", size=11, anchor="middle",
             weight="bold")
    svg.text(600, 300, "key at position 0 (wide blue) or 100 (orange):", size=10, fill="#555")
    svg.text(600, 314, "the same curve, whatever the offset", size=10, fill="#555")
    return svg


def draw_swiglu(d: dict) -> S.Svg:
    svg = S.Svg(760, 340, "SiLU, the gate of SwiGLU, against GPT-2's GELU")
    svg.text(16, 22, "SwiGLU's gate: silu(z) = z·sigmoid(z), against GPT-2's gelu_new", size=14, weight="bold")
    svg.text(16, 40, f"dots: the {d['intermediate_size']} gate inputs z = (h Wg)_j of layer 0 for the token "
             f"“{show(d['token'])}”; {S.fmt(100 * d['share_below_minus_2'], 1)} % below -2 (gate nearly shut), "
             f"{S.fmt(100 * d['share_above_2'], 1)} % above 2", size=11, fill="#555")
    fx, fy = axes(svg, 60, 60, 640, 220, (-5, 5), (-1, 5), "z", "activation")
    svg.polyline([(fx(z), fy(v)) for z, v in zip(d["z"], d["gelu_new"])], stroke=S.ORANGE, width=1.5, dash=True)
    svg.polyline([(fx(z), fy(v)) for z, v in zip(d["z"], d["silu"])], stroke=S.BLUE, width=2)
    for z in d["gate_inputs"]:
        if -5 <= z <= 5:
            svg.circle(fx(z), fy(z / (1 + math.exp(-z))), 2, fill=S.GREEN)
    svg.rect(80, 70, 12, 4, fill=S.BLUE)
    svg.text(98, 76, "silu (Llama's gate)", size=10)
    svg.rect(80, 86, 12, 4, fill=S.ORANGE)
    svg.text(98, 92, "gelu_new (GPT-2)", size=10)
    return svg


def draw_gqa(d: dict) -> S.Svg:
    H, H_kv = d["query_heads"], d["key_value_heads"]
    svg = S.Svg(820, 360, "Grouped-query attention and the KV cache of the tiny Llama")
    svg.text(16, 22, f"GQA: {H} query heads share {H_kv} key/value heads (n_rep = {H // H_kv})", size=14,
             weight="bold")
    for j in range(H):
        x = 40 + j * 80
        svg.rect(x, 70, 60, 30, fill="#dbe9f6", stroke=S.BLUE, rx=4)
        svg.text(x + 30, 90, f"q head {j}", size=11, anchor="middle")
        kv = d["query_head_reads"][j]
        kx = 40 + kv * 160 + 50
        svg.line(x + 30, 100, kx + 30, 170, stroke="#777", arrow=True)
    for kv in range(H_kv):
        kx = 40 + kv * 160 + 50
        svg.rect(kx, 172, 60, 30, fill="#ffe3c6", stroke=S.ORANGE, rx=4)
        svg.text(kx + 30, 192, f"kv head {kv}", size=11, anchor="middle")
    svg.text(40, 230, "repeat_kv copies kv head 0 for q heads 0, 1 and kv head 1 for q heads 2, 3", size=10,
             fill="#555")
    svg.text(40, 246, "after the cache: the cache stores the key/value heads only", size=10, fill="#555")
    kb = [d["bytes_stored"] / 1024, d["bytes_without_gqa"] / 1024]
    S.bar_panel(svg, 420, 50, 380, 260, f"KV cache after a {d['tokens']}-token prefill (KiB)",
                [f"{H_kv} kv heads", f"{H} kv heads"], kb, [S.ORANGE, S.GREY], math.ceil(max(kb) * 1.15 / 50) * 50,
                value_digits=0)
    svg.text(610, 345, f"{d['layers']} layers x keys and values x (1, heads, {d['tokens']}, {d['head_dim']}) float32",
             size=10, anchor="middle", fill="#555")
    return svg


def build() -> dict:
    """name -> (sidecar data, picture)."""
    data = run_all()
    draw = {"llama-rmsnorm": draw_rmsnorm, "llama-rope": draw_rope, "llama-swiglu": draw_swiglu,
            "llama-gqa": draw_gqa}
    return {name: (d, draw[name](d)) for name, d in data.items()}
