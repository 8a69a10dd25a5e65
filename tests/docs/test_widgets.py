"""The notebooks' interactive cells (tutorials/_widgets.py).

The sliders chart what generate(do_sample=True, temperature=, top_k=, top_p=) samples from: checked against
the warpers generate() builds (refdecode.pipeline.logits_warpers). The beam stepper redraws the recorded
tree up to each step. When ipywidgets is installed (the notebooks extra), the widgets themselves are built
and moved; without it those tests skip and the script fallback is checked instead.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from conftest import ROOT

from refdecode import GenerationConfig, GPT2, Tokenizer, softmax
from refdecode.pipeline import logits_warpers

MODEL = ROOT / "models" / "tiny-shakespeare"


@pytest.fixture(scope="module")
def widgets_module():
    sys.path.insert(0, str(ROOT / "tutorials"))
    try:
        spec = importlib.util.spec_from_file_location("_widgets", ROOT / "tutorials" / "_widgets.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "tutorials"))


@pytest.fixture(scope="module")
def step():
    tok, model = Tokenizer(MODEL), GPT2.from_pretrained(MODEL)
    return tok, model(tok.encode("ROMEO:\nI")[None, :]).logits[:, -1]


@pytest.mark.parametrize("t, k, p", [(1.0, 0, 1.0), (1.0, 50, 1.0), (0.5, 50, 0.9), (2.0, 5, 0.5), (1.3, 0, 0.3)])
def test_the_chart_is_what_generate_samples_from(widgets_module, step, t, k, p):
    _, logits = step
    r = widgets_module.warped(logits, t, k, p, n=12)
    scores = logits_warpers(GenerationConfig(do_sample=True, temperature=t, top_k=k, top_p=p))(None, logits)
    want = softmax(scores)[0]
    assert np.allclose(r["probs"], want[r["ids"]], atol=1e-7)
    assert r["nucleus"] == int(np.isfinite(scores[0]).sum())
    assert r["kept"] == np.isfinite(scores[0, r["ids"]]).tolist()
    assert r["ids"] == np.argsort(-logits[0], kind="stable")[:12].tolist()   # bars stay put while sliders move


def test_the_nucleus_grows_with_temperature_under_the_same_top_p(widgets_module, step):
    _, logits = step
    sizes = [widgets_module.warped(logits, t, 50, 0.9)["nucleus"] for t in (0.3, 1.0, 3.0)]
    assert sizes[0] < sizes[1] < sizes[2] <= 50


def test_the_beam_tree_grows_step_by_step(widgets_module):
    data = widgets_module.beam_steps("toy")
    n = len(data["steps"])
    first, last = widgets_module.tree_svg(data, 1), widgets_module.tree_svg(data, n)
    assert "has" not in first and "has" in last                   # step 2's candidates appear at step 2
    assert "nice" in first and "dog" in first and "car" in first
    assert "0.36" not in first and "-1.022" in last               # the pool: only once the search ended
    with pytest.raises(ValueError, match="upto"):
        widgets_module.tree_svg(data, n + 1)


def test_without_ipywidgets_the_cells_print_the_default_position(widgets_module, step, monkeypatch, capsys):
    tok, logits = step
    monkeypatch.setattr(widgets_module, "_ipywidgets", lambda: None)
    assert widgets_module.warper_explorer(logits, tok) is None
    out = capsys.readouterr().out
    assert "top_k 50 (on)" in out and "50 tokens can be drawn" in out and "'ll" in out
    assert widgets_module.beam_stepper("toy") is None
    assert "step 2: 'has' kept" in capsys.readouterr().out


def test_the_sliders_redraw_the_chart(widgets_module, step, monkeypatch):
    ipywidgets = pytest.importorskip("ipywidgets")
    tok, logits = step
    monkeypatch.setattr(widgets_module, "_ipywidgets", lambda: (ipywidgets, lambda box: None))
    box = widgets_module.warper_explorer(logits, tok)
    t_slider, k_slider, p_slider, chart = box.children
    before = chart.value
    assert "50 tokens can be drawn" in before and before.count("#b0b0b0") == 0
    k_slider.value = 3
    assert "3 tokens can be drawn" in chart.value and chart.value.count('fill="#b0b0b0"') == 12 - 3
    p_slider.value = 0.05
    assert "1 tokens can be drawn" in chart.value


def test_the_stepper_redraws_the_tree(widgets_module, monkeypatch):
    ipywidgets = pytest.importorskip("ipywidgets")
    monkeypatch.setattr(widgets_module, "_ipywidgets", lambda: (ipywidgets, lambda box: None))
    box = widgets_module.beam_stepper("toy")
    (play, slider), picture = box.children[0].children, box.children[1]
    assert "has" not in picture.value
    slider.value = 2
    assert "has" in picture.value and "finished" in picture.value


def test_a_widget_that_is_not_live_falls_back_to_a_picture(widgets_module, step, monkeypatch):
    """Executed or static notebook output showed the widget's repr, "VBox(children=(FloatSlider(...". The output
    of each cell keeps the widget view for a live notebook and carries a picture (text/html, inline SVG) and a
    text table (text/plain) for everything that cannot run widgets; both follow the sliders' position."""
    ipywidgets = pytest.importorskip("ipywidgets")
    tok, logits = step
    monkeypatch.setattr(widgets_module, "_ipywidgets", lambda: (ipywidgets, lambda box: None))
    box = widgets_module.warper_explorer(logits, tok)
    bundle = box._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle                     # live: still the widget
    assert "<svg" in bundle["text/html"] and "50 tokens can be drawn" in bundle["text/html"]
    assert not bundle["text/plain"].startswith(("VBox(", "StaticFallbackVBox(")) and "'ll" in bundle["text/plain"]
    box.children[1].value = 3                                                       # top_k slider
    assert "3 tokens can be drawn" in box._repr_mimebundle_()["text/plain"]
    stepper = widgets_module.beam_stepper("toy")
    bundle = stepper._repr_mimebundle_()
    assert "<svg" in bundle["text/html"] and "has" in bundle["text/html"]          # the whole tree
    assert "step 2: 'has' kept" in bundle["text/plain"] and "VBox" not in bundle["text/plain"]


def test_an_executed_notebook_shows_pictures_not_vbox_text(tmp_path):
    """The same in a real kernel: a notebook cell calling the widgets, executed headless (nbclient, as
    ``jupyter nbconvert --execute`` does), saves outputs whose static forms are the chart and the tree."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("ipywidgets")
    code = ("import sys; sys.path.insert(0, {tutorials!r})\n"
            "from refdecode import GPT2, Tokenizer\n"
            "from _widgets import warper_explorer, beam_stepper\n"
            "tok, model = Tokenizer({model!r}), GPT2.from_pretrained({model!r})\n"
            "logits = model(tok.encode('ROMEO:\\nI')[None, :]).logits[:, -1]\n"
            "warper_explorer(logits, tok)\n"
            "beam_stepper('toy');").format(tutorials=str(ROOT / "tutorials"), model=str(MODEL))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                            ).execute()
    outputs = [o for o in nb.cells[0].outputs if o["output_type"] == "display_data"]
    assert len(outputs) == 2, nb.cells[0].outputs
    for out in outputs:
        assert "application/vnd.jupyter.widget-view+json" in out["data"]
        assert out["data"]["text/html"].count("<svg") == 1
        assert "VBox" not in out["data"]["text/plain"]
    assert "tokens can be drawn" in outputs[0]["data"]["text/plain"]
    assert "step 1:" in outputs[1]["data"]["text/plain"]
