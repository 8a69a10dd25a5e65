"""The docs' pictures (docs/img/*.svg) cannot drift from the code: redraw them and compare the numbers.

``tools/pictures/make_pictures.py`` draws every picture from refdecode's own runs and writes a
sidecar JSON with the numbers it drew. Here the script runs into a temporary folder and each new
sidecar must equal the committed one (floats to 1e-5: the drawn labels show at most 3 decimals),
so a change that moves a beam, a score or a probability fails until the pictures are regenerated
(``python tools/pictures/make_pictures.py``) and committed. Pixels are not compared. It also
checks that every algorithm page shows at least one of these pictures and that they are valid SVG.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from conftest import ROOT

IMG = ROOT / "docs" / "img"
DOCS = ROOT / "docs"
SCRIPT = ROOT / "tools" / "pictures" / "make_pictures.py"
ALGORITHM_PAGES = ["greedy.md", "beam-search.md", "beam-sample.md", "group-beam-search.md", "temperature.md",
                   "top-k.md", "top-p.md", "repetition-penalty.md", "no-repeat-ngram.md", "min-length.md", "gpt2.md",
                   "from-gpt2-to-llama.md", "sampling.md", "contrastive-search.md", "constrained-beam-search.md",
                   "entropy-sampling.md", "speculative-decoding.md", "processors.md", "bad-words-and-forcing.md",
                   "guidance.md", "stopping.md",
                   # and the index and choosing-a-strategy
                   "index.md", "choosing-a-strategy.md"]


def load_script():
    spec = importlib.util.spec_from_file_location("make_pictures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("img")
    names = load_script().write(out)
    return out, names


def same(new, old, path="") -> list[str]:
    """Differences between two JSON values: exact for str/int/bool/None, 1e-5 for floats."""
    if isinstance(new, dict) and isinstance(old, dict):
        if new.keys() != old.keys():
            return [f"{path}: keys {sorted(new)} != {sorted(old)}"]
        return [d for k in new for d in same(new[k], old[k], f"{path}.{k}")]
    if isinstance(new, list) and isinstance(old, list):
        if len(new) != len(old):
            return [f"{path}: length {len(new)} != {len(old)}"]
        return [d for i, (a, b) in enumerate(zip(new, old)) for d in same(a, b, f"{path}[{i}]")]
    if isinstance(new, float) or isinstance(old, float):
        if isinstance(new, (int, float)) and isinstance(old, (int, float)) and not isinstance(new, bool) and (
                new == old or math.isclose(new, old, rel_tol=1e-5, abs_tol=1e-5)):
            return []
        return [f"{path}: {new!r} != committed {old!r}"]
    return [] if new == old else [f"{path}: {new!r} != committed {old!r}"]


def test_committed_pictures_are_the_script_output(regenerated):
    out, names = regenerated
    committed = sorted(p.stem for p in IMG.glob("*.json"))
    assert sorted(names) == committed, "docs/img/ and the script disagree on the pictures: regenerate them"
    for name in names:
        assert (IMG / f"{name}.svg").is_file(), f"docs/img/{name}.svg is missing"
        diffs = same(json.loads((out / f"{name}.json").read_text("utf-8")),
                     json.loads((IMG / f"{name}.json").read_text("utf-8")), name)
        assert not diffs, ("the code no longer draws docs/img/" + name + ".svg (run python tools/pictures/"
                           "make_pictures.py and commit docs/img/):\n" + "\n".join(diffs[:10]))


def test_the_sidecar_diff_catches_a_moved_number():
    """The comparison is not vacuous: a score moved by 1e-3 or a renamed token is reported."""
    old = {"steps": [{"text": " not", "score": -6.4123, "kept": True}]}
    assert same(old, old) == []
    assert same({"steps": [{"text": " not", "score": -6.4133, "kept": True}]}, old)
    assert same({"steps": [{"text": " be", "score": -6.4123, "kept": True}]}, old)
    assert same({"steps": [{"text": " not", "score": -6.4123, "kept": False}]}, old)


def test_recorded_beam_runs_match_the_pages(regenerated):
    """Spot checks against numbers the docs state in prose: 0.2 vs 0.36, λ = 2 paid by group 3, [2, 1, 1, 0]."""
    out, _ = regenerated
    toy = json.loads((out / "beam-tree-toy.json").read_text("utf-8"))
    assert toy["greedy"]["text"] == "The nice woman" and toy["returned"] == ["The dog has", "The nice woman"]
    assert [round(math.exp(f["score"]), 2) for f in toy["finished"]] == [0.36, 0.2]
    groups = json.loads((out / "group-beam-search.json").read_text("utf-8"))
    assert [g["paid"] for g in groups["groups"]] == [0.0, 0.0, 0.0, 2.0]
    assert groups["returned"] == ["The dog has", "The nice woman", "The car drives", "The nice house"]
    kv = json.loads((out / "kv-cache-reorder.json").read_text("utf-8"))
    assert kv["after"] == [2.0, 1.0, 1.0, 0.0]
    shakes = json.loads((out / "beam-tree-shakespeare.json").read_text("utf-8"))
    kept = [sum(c["status"] == "kept" for c in step["candidates"]) for step in shakes["steps"]]
    assert kept == [3] * len(shakes["steps"])  # K running beams after every step


def test_concept_pictures_show_what_their_pages_say(regenerated):
    """The concept pictures (tools/pictures/concepts.py), checked from their sidecars against the pages' prose
    and against rules recomputed here: top-k against top-p keep different tokens on a flat and a peaked step;
    prompt lookup needs fewer calls than greedy and ends with greedy's tokens; left padding restarts the
    position ids at 0; the drawn token's segment holds the uniform; contrastive scores are (1 - α)p - α·pen."""
    out, _ = regenerated
    load = lambda name: json.loads((out / f"{name}.json").read_text("utf-8"))  # noqa: E731
    tk = load("top-k-vs-top-p")
    flat, peaked = tk["cases"]
    assert (flat["top_p"]["kept"], peaked["top_p"]["kept"]) == (21, 2)           # docs/top-k.md's prose
    assert flat["top_k"]["kept"] == peaked["top_k"]["kept"] == tk["k"] == 5
    assert round(flat["top_k"]["mass"], 2) == 0.54 and round(peaked["top_p"]["mass"], 2) == 0.85
    assert flat["probs"][0] < 0.2 < 0.7 < peaked["probs"][0]

    spec = load("speculative-decoding")
    assert spec["same_as_greedy"] and spec["model_calls"] < spec["new_tokens"]
    assert sum(r["accepted"] + 1 for r in spec["rounds"]) == spec["new_tokens"]
    for r in spec["rounds"]:   # every accepted draft is what the model appended at that position
        assert r["draft"][:r["accepted"]] == r["appended"][:r["accepted"]]

    kv = load("kv-cache")
    assert kv["all_slots_written"]
    prefill = kv["calls"][0]
    for mask_row, pos in zip(kv["mask"], prefill["positions"]):
        real = [p for m, p in zip(mask_row, pos) if m]
        assert real == list(range(len(real)))                    # each row's first real token at position 0
        assert all(p == 1 for m, p in zip(mask_row, pos) if not m)
    assert [c["cache_length"] for c in kv["calls"]] == [kv["prompt_len"] + i for i in range(len(kv["calls"]))]

    for st in load("sampling-draws")["steps"]:   # inverse CDF in id order: u falls in the chosen segment
        cdf, lo = 0.0, None
        for tid, p in zip(st["ids"], st["probs"]):
            if tid == st["chosen_id"]:
                lo = cdf
            cdf += p
        assert lo is not None and lo - 1e-5 <= st["u"] * cdf <= lo + st["chosen_prob"] + 1e-5

    cs = load("contrastive-search")
    for st in cs["steps"]:
        for p, pen, score in zip(st["probs"], st["penalty"], st["scores"]):
            assert math.isclose(score, (1 - cs["alpha"]) * p - cs["alpha"] * pen, abs_tol=1e-5)
        assert st["chosen"] == max(range(len(st["scores"])), key=lambda j: (st["scores"][j], -j))
    assert any(st["chosen"] != 0 for st in cs["steps"])          # not always the most probable

    cb = load("constrained-beam-search")
    assert 3 in cb["forced"]["sequence"] and 3 not in cb["plain"]["sequence"]
    for cands in cb["steps"]:
        first = next(c for c in cands if c["kept"] == 0)
        assert first["bank"] == max(c["bank"] for c in cands)   # round-robin: the best bank's best first

    ew = load("entropy-warpers")
    flat, peaked = ew["cases"]
    assert flat["entropy"] > peaked["entropy"]
    assert flat["thresholds"]["eta 0.02"] < peaked["thresholds"]["eta 0.02"] <= 0.02   # eta drops when flat
    for case in ew["cases"]:
        for rule in ("epsilon 0.02", "eta 0.02", "min-p 0.1"):
            thr = case["thresholds"][rule]
            assert case["kept"][rule]["shown"] == [p >= thr - 1e-6 for p in case["probs"]] or rule == "epsilon 0.02" \
                and case["kept"][rule]["shown"] == [p > thr for p in case["probs"]]

    strat = {s["name"]: s["runs"] for s in load("strategies")["strategies"]}
    mean = lambda runs, k: sum(r[k] for r in runs) / len(runs)  # noqa: E731
    # the order the page states: beam > greedy > top-p in probability, the reverse in distinct-2
    assert mean(strat["beam, K=4"], "mean_logp") > mean(strat["greedy"], "mean_logp") > mean(strat["top-p 0.9"],
                                                                                            "mean_logp")
    assert mean(strat["top-p 0.9"], "distinct2") > mean(strat["beam, K=4"], "distinct2") > mean(strat["greedy"],
                                                                                               "distinct2")
    assert round(strat["greedy"][0]["mean_logp"], 3) == -1.316      # docs/choosing-a-strategy.md's worked example

    bw = load("bad-words-and-forcing")
    raw, bad, bias, forced = bw["stages"]
    banned, boosted = bw["token_ids"].index(bw["banned"]), bw["token_ids"].index(bw["boosted"])
    assert bad["probs"][banned] == 0 and bad["minus_inf"][banned] and sum(bad["minus_inf"]) == 1
    assert bias["probs"][boosted] > raw["probs"][boosted] and bias["probs"][boosted] == max(bias["probs"])
    assert forced["probs"][bw["token_ids"].index(bw["eos"])] == 1.0 and sum(forced["minus_inf"]) == 5

    gd = load("guidance")
    be = [pn["probs"][0] for pn in gd["panels"]]                       # the guidance page's prose: " be" rises
    assert gd["tokens"][0] == " be" and be[0] < be[1] < be[2] < be[3]
    for j, t in enumerate(gd["tokens"]):
        if t in (",", " to"):                                       # ... and what the prompt makes rarer falls
            assert gd["panels"][0]["probs"][j] > gd["panels"][1]["probs"][j] > gd["panels"][3]["probs"][j]

    stop = load("stopping")
    full, cut = stop["runs"]
    assert all(full["finished"]) and cut["finished"] == [False, True, True]
    for run in stop["runs"]:
        for row in run["sequences"]:
            gen = row[1:]
            if 0 in gen:
                assert all(t == stop["pad"] for t in gen[gen.index(0) + 1:])   # pad after eos, nothing else

    po = load("pipeline-overview")
    assert po["first_draw"]["u"] == po["steps"][0]["u"] and po["first_draw"]["token"] == po["steps"][0]["token"]
    assert [s["cache_length"] for s in po["steps"]] == [len(po["prompt_ids"]) + i for i in range(len(po["steps"]))]
    assert po["text"].startswith(po["prompt"]) and po["text"].endswith("".join(s["token"] for s in po["steps"]))


def test_bar_labels_never_overlap():
    """processor-pipeline drew "0.1300.119". Value labels of neighbouring bars must not touch
    (widths estimated as bar_panel does), and with a cumulative line the first bar's label is not on it."""
    spec = importlib.util.spec_from_file_location("svg", ROOT / "tools" / "pictures" / "svg.py")
    S = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(S)
    values = [0.335448, 0.302007, 0.165763, 0.073473, 0.017012, 0.01294]
    for width in (190, 210, 400):
        svg = S.Svg(width + 20, 300, "t")
        S.bar_panel(svg, 0, 0, width, 280, "t", list("abcdef"), values, [S.BLUE] * 6, 1.0)
        labels = [(float(m.group(1)), float(m.group(2)), m.group(3)) for m in re.finditer(
            r'<text x="([\d.]+)" y="[\d.]+" font-size="([\d.]+)" text-anchor="middle" fill="#444"[^>]*>([^<]+)<',
            "\n".join(svg.items))]
        assert len(labels) == 6
        for (x1, s1, t1), (x2, s2, t2) in zip(labels, labels[1:]):
            assert x2 - x1 >= (S.label_width(t1, s1) + S.label_width(t2, s2)) / 2, (width, t1, t2)
    svg = S.Svg(400, 300, "t")
    S.bar_panel(svg, 0, 0, 330, 300, "t", list("abcdef"), values, [S.BLUE] * 6, 1.0,
                cumulative=list(np.cumsum(values)), threshold=0.8)
    first = next(i for i in svg.items if ">0.335<" in i)
    assert 'fill="#ffffff"' in first and "rotate(-90" in first     # inside its bar, not on the line


@pytest.mark.parametrize("svg", sorted(IMG.glob("*.svg")), ids=lambda p: p.name)
def test_pictures_are_well_formed_svg(svg):
    root = ET.fromstring(svg.read_text("utf-8"))
    assert root.tag.endswith("svg") and float(root.get("width")) > 0
    assert not re.search(r"(?:href|src)=\"(?:https?:)?//", svg.read_text("utf-8")), "a picture loads a remote asset"


@pytest.mark.parametrize("page", ALGORITHM_PAGES)
def test_every_algorithm_page_shows_a_picture(page):
    text = (ROOT / "docs" / page).read_text("utf-8")
    pictures = re.findall(r"!\[[^\]]*\]\(img/([\w.-]+\.svg)\)", text)
    assert pictures, f"docs/{page} shows no picture from docs/img/"
    for name in pictures:
        assert (IMG / name).is_file(), f"docs/{page} shows img/{name}, which does not exist"


TUTORIALS_WITH_PICTURES = ["01_toy_model.py", "02_tokens_and_forward.py", "03_greedy.py", "04_sampling.py",
                           "05_beam_search.py", "06_diverse.py", "07_generate.py"]


@pytest.mark.parametrize("name", TUTORIALS_WITH_PICTURES)
def test_tutorials_show_the_pictures_inline(name):
    """A markdown cell ``![...](../docs/img/x.svg)``: a notebook made with jupytext shows the picture inline."""
    text = (ROOT / "tutorials" / name).read_text("utf-8")
    pictures = re.findall(r"^# !\[[^\]]*\]\(\.\./docs/img/([\w.-]+\.svg)\)$", text, flags=re.M)
    assert pictures, f"tutorials/{name} shows no picture"
    for pic in pictures:
        assert (IMG / pic).is_file(), f"tutorials/{name} shows docs/img/{pic}, which does not exist"


def test_pictures_name_source_documents_by_their_short_names():
    """The pages cite "the sampling note", never its author; a picture labelled "shifted (Clay)" matched no page
   . Every label of every picture uses the short names of docs/references.md."""
    for path in sorted(IMG.glob("*.svg")) + sorted(IMG.glob("*.json")):
        assert "Clay" not in path.read_text("utf-8"), f"{path.name} names the sampling note by its author"


def test_a_figure_is_redrawn_from_the_command_line_on_two_prompts(tmp_path):
    """An instructor redraws the beam tree and the top-p figure for another prompt and settings, from the command
    line only: the two prompts give different pictures, and each sidecar holds what refdecode itself computes for
    that prompt (the returned beams of generate(), the top-p kept set of TopPLogitsWarper on that step)."""
    import subprocess
    import sys

    from refdecode import GPT2, Tokenizer, TopPLogitsWarper, generate

    model_dir = ROOT / "models" / "tiny-shakespeare"
    tok, model = Tokenizer(model_dir), GPT2.from_pretrained(model_dir)
    drawn = {}
    for prompt in ("JULIET:", "KING HENRY:\\nWhat"):
        out = tmp_path / prompt.split(":")[0].replace(" ", "_")
        for args in (["--figure", "beam-tree-shakespeare", "--num-beams", "2", "--max-new-tokens", "4"],
                     ["--figure", "top-p", "--top-p", "0.6", "--max-new-tokens", "3"]):
            run = subprocess.run([sys.executable, str(SCRIPT), *args, "--prompt", prompt, "--model", str(model_dir),
                                  "--out", str(out)], capture_output=True, text=True, cwd=tmp_path)
            assert run.returncode == 0, run.stderr
        assert sorted(p.name for p in out.iterdir()) == ["beam-tree-shakespeare.json", "beam-tree-shakespeare.svg",
                                                         "top-p.json", "top-p.svg"]
        text = prompt.replace("\\n", "\n")
        ids = tok.encode(text)[None, :]
        beams = json.loads((out / "beam-tree-shakespeare.json").read_text("utf-8"))
        want = generate(model, ids, max_new_tokens=4, num_beams=2, num_return_sequences=2)
        assert beams["prompt"] == text and beams["num_beams"] == 2 and len(beams["steps"]) == 4
        assert beams["returned"] == [tok.decode(row[ids.shape[1]:]) for row in want]
        assert beams["settings"] == {"max_new_tokens": 4, "num_beams": 2, "prompt": text}
        svg = (out / "beam-tree-shakespeare.svg").read_text("utf-8")
        assert text.replace("\n", "\\n") in svg and ET.fromstring(svg).tag.endswith("svg")
        top_p = json.loads((out / "top-p.json").read_text("utf-8"))
        context_ids = generate(model, ids, max_new_tokens=3)                   # 3 greedy tokens, then the step
        assert top_p["context"] == tok.decode(context_ids[0])
        logits = model(context_ids).logits[:, -1]
        kept = np.isfinite(TopPLogitsWarper(0.6)(context_ids, logits))[0]
        assert top_p["token_ids"] == np.argsort(-logits[0], kind="stable")[:10].tolist()
        assert [p > 0 for p in top_p["top_p"]["probs"]] == kept[top_p["token_ids"]].tolist()
        assert top_p["top_p"]["p"] == 0.6
        drawn[prompt] = {name: (out / name).read_text("utf-8") for name in ("beam-tree-shakespeare.svg",
                                                                            "beam-tree-shakespeare.json",
                                                                            "top-p.svg", "top-p.json")}
    first, second = drawn.values()
    assert all(first[name] != second[name] for name in first)


@pytest.mark.parametrize("args, message", [
    (["--figure", "strategies", "--top-p", "0.5"], "does not use --top-p"),
    (["--top-p", "0.5"], "needs --figure NAME"),
    (["--figure", "top-p", "--top-p", "1.5"], "--top-p must be a float > 0 and <= 1, got 1.5"),
    (["--figure", "beam-tree-shakespeare", "--num-beams", "1"], "--num-beams must be an int >= 2"),
    (["--figure", "top-k", "--model", "nowhere"], "--model must be a checkpoint folder"),
    (["--figure", "no-such-picture"], "--figure must be one of"),
])
def test_picture_options_are_checked(args, message, tmp_path, capsys):
    """A wrong option is one line naming it and what is allowed (exit 2), before anything is drawn."""
    with pytest.raises(SystemExit) as stop:
        load_script().main([*args, "--out", str(tmp_path)])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------------------------
# The Chinese pictures: docs/img/zh/<name>.svg (make_pictures.py --lang zh), shown on the Chinese pages (the docs
# hook swaps img/<name>.svg for img/zh/<name>.svg in the built zh/ pages). Same runs and layout as the English
# picture; the labels come from tools/pictures/zh.py; the CJK glyphs are embedded in each picture.

ZH = IMG / "zh"
CJK = re.compile("[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
#: English words a Chinese picture may show besides its data: the terms the Chinese pages keep in English too
KEPT_IN_ENGLISH = {"eos", "pad", "softmax", "argmax", "warper", "prefill", "cache", "KV", "key", "value", "beam",
                   "sample", "top-k", "top-p", "min-p", "typical", "epsilon", "eta", "nats", "cos", "log", "bank",
                   "n-gram", "gram", "transformers", "llama", "torch", "multinomial", "distinct", "sample-and-rank",
                   "prompt", "lookup", "mask", "cumsum", "ids", "bool", "StoppingCriteria", "max", "float", "batch",
                   "unfinished",
                   # From GPT-2 to Llama: the names the Chinese pages keep too, and units
                   "RMSNorm", "LayerNorm", "RoPE", "GQA", "SwiGLU", "SiLU", "GELU", "GPT", "KiB", "rad"}


def labels(svg_text: str) -> list[str]:
    """The title and every text element of a picture, as shown."""
    import html
    return [html.unescape(m.group(2)) for m in re.finditer(r"<(title|text)\b[^>]*>(.*?)</\1>", svg_text, re.S)]


def data_words(name: str) -> str:
    """Every string of the picture's sidecar JSON (tokens, generated text, commands): what may stay in English."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            for k, v in value.items():
                found.append(str(k))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            found.append(value)
    walk(json.loads((IMG / f"{name}.json").read_text("utf-8")))
    return "\n".join(found).replace("\n", "\\n")


def english_left(label: str, data: str) -> list[str]:
    """The English words of a label that are neither the picture's data nor code nor a term kept in English."""
    prose = re.sub(r"[\w.]+\([^()]*(?:\([^()]*\)[^()]*)*\)|\b\w+_\w+\b|\w+\.\w+", " ", label)   # calls, names_, a.b
    words = re.findall(r"[A-Za-z][A-Za-z-]*[A-Za-z]", prose)
    return [w for w in words if len(w) > 2 and w not in KEPT_IN_ENGLISH and w.lower() not in KEPT_IN_ENGLISH
            and w not in data]


def test_every_picture_has_a_chinese_edition():
    names = sorted(p.stem for p in IMG.glob("*.json"))
    missing = [n for n in names if not (ZH / f"{n}.svg").is_file()]
    assert not missing, f"no docs/img/zh/<name>.svg for {missing}: run python tools/pictures/make_pictures.py --lang zh"
    assert sorted(p.stem for p in ZH.glob("*.svg")) == names, "docs/img/zh/ holds a picture docs/img/ does not"
    for name in names:
        text = (ZH / f"{name}.svg").read_text("utf-8")
        ET.fromstring(text)
        title = labels(text)[0]
        assert CJK.search(title), f"docs/img/zh/{name}.svg: the title {title!r} is not Chinese"
        assert sum(bool(CJK.search(t)) for t in labels(text)) >= 2, f"docs/img/zh/{name}.svg has no Chinese labels"


@pytest.mark.parametrize("name", sorted(p.stem for p in IMG.glob("*.json")))
def test_a_chinese_picture_shows_no_english_label(name):
    """Every English word left is the picture's data (a token, its text, a command) or a term the Chinese pages also
    keep in English (eos, softmax, top-p, ...): a new English label fails until tools/pictures/zh.py translates it."""
    data = data_words(name)
    left = {t: w for t in labels((ZH / f"{name}.svg").read_text("utf-8")) if (w := english_left(t, data))}
    assert not left, f"docs/img/zh/{name}.svg still shows English labels (add them to tools/pictures/zh.py): {left}"


def test_the_english_label_check_can_fail():
    data = data_words("min-length")
    assert english_left("the kept set, renormalised (top-k 3)", data) == ["the", "kept", "set", "renormalised"]
    assert english_left("保留的集合，重新归一化（Top-k 3）", data) == []
    assert english_left("generate(..., do_sample=True, seed=0)：默认 top-k 50", data) == []


@pytest.mark.parametrize("name", sorted(p.stem for p in IMG.glob("*.json")))
def test_a_chinese_picture_carries_the_glyphs_it_shows(name):
    """An SVG shown as <img> cannot use the page's fonts: each picture embeds a WOFF subset holding its characters."""
    import base64

    spec = importlib.util.spec_from_file_location("test_cjk_font", ROOT / "tests" / "docs" / "test_cjk_font.py")
    font_test = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(font_test)
    text = (ZH / f"{name}.svg").read_text("utf-8")
    face = re.search(r'@font-face \{ font-family: "refdecode CJK"; src: url\("data:font/woff;base64,([A-Za-z0-9+/=]+)"\)',
                     text)
    assert face, f"docs/img/zh/{name}.svg embeds no font"
    covered = font_test.cmap_code_points(font_test.woff_tables(base64.b64decode(face.group(1)))["cmap"])
    shown = set(CJK.findall("".join(labels(text))))
    assert shown and not [c for c in shown if ord(c) not in covered], f"docs/img/zh/{name}.svg: glyphs missing"
    assert 'font-family="refdecode CJK, DejaVu Sans, Helvetica, Arial, sans-serif"' in text


@pytest.fixture(scope="module")
def regenerated_zh(tmp_path_factory):
    out = tmp_path_factory.mktemp("img-zh")
    names = load_script().write(out, lang="zh")        # no font: the labels are compared, not the glyphs
    return out / "zh", names


def test_committed_chinese_pictures_are_the_script_output(regenerated_zh):
    """The labels (numbers masked: they may differ in a last digit between machines) are those the script draws."""
    out, names = regenerated_zh
    assert sorted(names) == sorted(p.stem for p in ZH.glob("*.svg"))
    mask = lambda ts: [re.sub(r"\d", "#", t) for t in ts]  # noqa: E731
    for name in names:
        new, old = labels((out / f"{name}.svg").read_text("utf-8")), labels((ZH / f"{name}.svg").read_text("utf-8"))
        assert mask(new) == mask(old), (f"docs/img/zh/{name}.svg is not what the script draws now (run python "
                                        f"tools/pictures/make_pictures.py --lang zh): "
                                        f"{[(a, b) for a, b in zip(mask(new), mask(old)) if a != b][:3]}")


def test_the_chinese_pages_show_the_chinese_pictures():
    """A Chinese page links the English picture (its shared parts are the English page's); the docs hook shows the
    Chinese one in the built page, so every picture a Chinese page links has its docs/img/zh/ edition."""
    linked = {m for page in DOCS.glob("*.zh.md") for m in re.findall(r"\]\(img/([\w-]+)\.svg\)", page.read_text("utf-8"))}
    assert len(linked) >= 17 and all((ZH / f"{n}.svg").is_file() for n in linked), sorted(linked)
    hooks = (ROOT / "tools" / "docs" / "mkdocs_hooks.py").read_text("utf-8")
    assert 'img/zh/' in hooks and "chinese(page)" in hooks
