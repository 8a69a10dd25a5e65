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

import pytest
from conftest import ROOT

IMG = ROOT / "docs" / "img"
SCRIPT = ROOT / "tools" / "pictures" / "make_pictures.py"
ALGORITHM_PAGES = ["greedy.md", "beam-search.md", "beam-sample.md", "group-beam-search.md", "temperature.md",
                   "top-k.md", "top-p.md", "repetition-penalty.md", "no-repeat-ngram.md", "min-length.md", "gpt2.md"]


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
                           "05_beam_search.py", "06_diverse.py"]


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
    (issue 25 item 6). Every label of every picture uses the short names of docs/references.md."""
    for path in sorted(IMG.glob("*.svg")) + sorted(IMG.glob("*.json")):
        assert "Clay" not in path.read_text("utf-8"), f"{path.name} names the sampling note by its author"
