"""Interactive cells of the notebooks: sliders over one bar chart, a step-through beam tree.

Run as notebooks (``pip install -e ".[notebooks]"``, which brings ipywidgets), tutorials 04 and 05 show:

- :func:`warper_explorer`: three sliders, temperature, top-k and top-p, over one bar chart of the next-token
  distribution. Every redraw runs refdecode's own warpers in generate()'s order (temperature -> top-k ->
  top-p), so what moves is what ``generate(do_sample=True, ...)`` would sample from;
- :func:`beam_stepper`: a slider over the steps of a recorded beam search; each position redraws the tree
  of docs/img (tools/pictures/make_pictures.py's ``draw_tree``) up to that step, then the finished pool.

Everything is drawn as inline HTML/SVG by this file: no plotting library, nothing fetched, so the widgets
work offline. Run as a plain script (the tests do, without ipywidgets), each function prints the same
content for its default position instead and returns ``None``. In a notebook that is not live (executed by
nbconvert and opened later, or shown on GitHub), a widget's output falls back to a static picture (the
chart or the whole tree, as inline SVG) and a text table, never the bare text ``VBox(children=...)``: see
:func:`_box`. :func:`warped` and :func:`beam_steps`, the numbers behind the widgets, are plain functions
the tests check.
"""

from __future__ import annotations

import html
import importlib.util
from pathlib import Path

import numpy as np

from refdecode import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, softmax

ROOT = Path(__file__).resolve().parent.parent


def _ipywidgets():
    """ipywidgets and IPython.display when running in a notebook with the notebooks extra, else None."""
    try:
        import ipywidgets
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    if get_ipython() is None or not hasattr(get_ipython(), "kernel"):
        return None
    return ipywidgets, display


def _box(widgets, children: list, static) -> object:
    """A ``VBox`` of ``children`` whose static forms are a picture and a table, not the text "VBox(children=...)".

    A live notebook renders the widget view; anything that cannot run widgets (a notebook executed by
    nbconvert / nbclient and opened later, GitHub, an HTML export without widget state) falls back to the
    next mime type of the same output: ``text/html`` (the chart or tree at the sliders' position when the
    cell ran) or ``text/plain`` (the same as text). ``static() -> (html, text)``. (``jupyter nbconvert --to
    html`` is the exception: it always renders the widget view, with a script from a CDN.)
    """

    class StaticFallbackVBox(widgets.VBox):
        def _repr_mimebundle_(self, **kwargs):
            bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
            html_form, text_form = static()
            bundle["text/html"], bundle["text/plain"] = html_form, text_form
            return bundle

    return StaticFallbackVBox(children)


# ---- sliders: temperature, top-k, top-p over one bar chart ---------------------------------------


def warped(logits: np.ndarray, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, n: int = 12) -> dict:
    """The distribution ``generate(do_sample=True, temperature=, top_k=, top_p=)`` samples from, for one row.

    logits float32 (1, V) -> the n most probable tokens of the *raw* distribution (fixed order, so the bars
    do not jump while a slider moves), their probabilities after the warpers, which survive, and the nucleus
    size. ``top_k=0`` and ``top_p=1.0`` are off, as in GenerationConfig; warpers as generate() builds them.
    """
    warpers = []
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(float(temperature)))
    if top_k:
        warpers.append(TopKLogitsWarper(int(top_k)))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(float(top_p)))
    scores = LogitsProcessorList(warpers)(None, logits)
    order = np.argsort(-logits[0], kind="stable")[:n]
    probs = softmax(scores)[0]
    return {"ids": order.tolist(), "probs": probs[order].tolist(), "kept": np.isfinite(scores[0, order]).tolist(),
            "nucleus": int(np.isfinite(scores[0]).sum()), "mass_shown": float(probs[order].sum())}


def _bars_html(labels: list[str], result: dict, title: str) -> str:
    """A bar chart as HTML (inline SVG), bars in the docs' colours: blue kept, grey cut."""
    w, bar_h, label_w = 420, 18, 110
    top = max(result["probs"]) or 1.0
    rows = []
    for i, (label, p, kept) in enumerate(zip(labels, result["probs"], result["kept"])):
        y = 8 + i * (bar_h + 4)
        length = (w - label_w - 60) * p / top
        rows.append(f'<text x="{label_w - 6}" y="{y + 13}" font-size="12" text-anchor="end" '
                    f'font-family="DejaVu Sans Mono, monospace">{html.escape(label)}</text>'
                    f'<rect x="{label_w}" y="{y}" width="{length:.1f}" height="{bar_h}" '
                    f'fill="{"#1f77b4" if kept else "#b0b0b0"}"/>'
                    f'<text x="{label_w + length + 4:.1f}" y="{y + 13}" font-size="11">{p:.3f}</text>')
    height = 16 + len(labels) * (bar_h + 4)
    return (f"<div><b>{html.escape(title)}</b><br>"
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" '
            f'font-family="DejaVu Sans, sans-serif">{"".join(rows)}</svg></div>')


def _bars_text(labels: list[str], result: dict, width: int = 30) -> str:
    top = max(result["probs"]) or 1.0
    return "\n".join(f"{label:>12} {p:.5f} {'#' * round(width * p / top) if kept else '(cut)'}"
                     for label, p, kept in zip(labels, result["probs"], result["kept"]))


def warper_explorer(logits: np.ndarray, tokenizer, n: int = 12, temperature: float = 1.0, top_k: int = 50,
                    top_p: float = 1.0):
    """Sliders for temperature, top-k and top-p over one bar chart of ``logits`` (1, V) (see :func:`warped`).

    The defaults are generate()'s when ``do_sample=True``: T = 1, top-k 50, top-p off.
    """
    labels = [repr(tokenizer.decode([i])) for i in np.argsort(-logits[0], kind="stable")[:n]]

    def title(r, t, k, p):
        return (f"temperature {t:.2f}, top_k {k} ({'off' if k == 0 else 'on'}), top_p {p:.2f} "
                f"({'off' if p >= 1 else 'on'}): {r['nucleus']} tokens can be drawn")

    ui = _ipywidgets()
    if ui is None:  # a script, or no ipywidgets: the chart at the given values
        r = warped(logits, temperature, top_k, top_p, n)
        print(title(r, temperature, top_k, top_p))
        print(_bars_text(labels, r))
        return None
    widgets, display = ui
    t_slider = widgets.FloatSlider(value=temperature, min=0.1, max=3.0, step=0.05, description="temperature")
    k_slider = widgets.IntSlider(value=top_k, min=0, max=50, step=1, description="top_k")
    p_slider = widgets.FloatSlider(value=top_p, min=0.05, max=1.0, step=0.01, description="top_p")
    chart = widgets.HTML()

    def redraw(_=None):
        r = warped(logits, t_slider.value, k_slider.value, p_slider.value, n)
        chart.value = _bars_html(labels, r, title(r, t_slider.value, k_slider.value, p_slider.value))

    for s in (t_slider, k_slider, p_slider):
        s.observe(redraw, names="value")
    redraw()

    def static():
        t, k, p = t_slider.value, k_slider.value, p_slider.value
        r = warped(logits, t, k, p, n)
        return chart.value, title(r, t, k, p) + "\n" + _bars_text(labels, r)

    box = _box(widgets, [t_slider, k_slider, p_slider, chart], static)
    display(box)
    return box


# ---- a step-through beam tree --------------------------------------------------------------------


def _pictures():
    """tools/pictures/make_pictures.py (the docs' tree drawing and its recording scorer), loaded by path."""
    spec = importlib.util.spec_from_file_location("make_pictures", ROOT / "tools" / "pictures" / "make_pictures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def beam_steps(which: str = "toy") -> dict:
    """A recorded beam search, as the docs' pictures record it: "toy" (the toy tree, K = 2, checked against
    generate()) or "shakespeare" (the shipped model, "ROMEO:\\n", K = 3, 5 new tokens)."""
    pics = _pictures()
    if which == "toy":
        return pics.run_toy_beams()
    tok, model = pics.shakespeare()
    return pics.run_shakespeare_beams(tok, model)


def tree_svg(data: dict, upto: int) -> str:
    """The beam tree of ``data`` after ``upto`` steps (1..len(steps)); the finished pool only at the end."""
    pics = _pictures()
    n = len(data["steps"])
    if not 1 <= upto <= n:
        raise ValueError(f"`upto` has to be in [1, {n}], but is {upto!r}")
    part = dict(data, steps=data["steps"][:upto])
    if upto < n:   # the pool and the best sequence are known only once the search has ended
        part.update(finished=[], returned=[data["prompt"] + " "])   # matches no path: nothing highlighted
        part.pop("greedy", None)
    title = f"{data['kind']}, step {upto} of {n}" + (": finished" if upto == n else "")
    return str(pics.draw_tree(part, title, show_prob="prob" in data["steps"][0]["candidates"][0]))


def _steps_text(data: dict) -> str:
    """Each step's candidates and their fate, one line per step (the stepper's text form)."""
    return "\n".join(f"step {t}: " + ", ".join(f"{c['text']!r} {c['status']}" for c in step["candidates"])
                     for t, step in enumerate(data["steps"], start=1))


def beam_stepper(which: str = "toy"):
    """A slider over the steps of a recorded beam search (see :func:`beam_steps`), redrawing the tree."""
    data = beam_steps(which)
    n = len(data["steps"])
    ui = _ipywidgets()
    if ui is None:
        print(_steps_text(data))
        return None
    widgets, display = ui
    slider = widgets.IntSlider(value=1, min=1, max=n, step=1, description="step")
    play = widgets.Play(value=1, min=1, max=n, step=1, interval=1500, description="play")
    widgets.jslink((play, "value"), (slider, "value"))
    picture = widgets.HTML()

    def redraw(_=None):
        picture.value = tree_svg(data, slider.value)

    slider.observe(redraw, names="value")
    redraw()
    # the static form is the whole search (the tree after the last step), whatever the slider shows
    static = lambda: (tree_svg(data, n), _steps_text(data))  # noqa: E731
    box = _box(widgets, [widgets.HBox([play, slider]), picture], static)
    display(box)
    return box
