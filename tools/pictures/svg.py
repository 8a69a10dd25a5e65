"""A few plain-SVG drawing helpers for tools/pictures/make_pictures.py (no plotting dependency).

Everything is drawn in user units (1 unit = 1 CSS pixel at 100 % zoom) with a white background, so
the pictures read the same in the light and dark docs themes. Only what the pictures need: bars,
a tree of labelled boxes, line plots, rows that move. Text is XML-escaped here, once.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
#: The Chinese pictures (make_pictures.py --lang zh): every title and label goes through ``TRANSLATE``
#: (tools/pictures/zh.py), and the CJK characters are drawn with a font embedded in the picture itself
#: (a subset of WenQuanYi Micro Hei named "refdecode CJK", make_pictures.embed_cjk_font; an SVG shown as <img>
#: cannot use the page's fonts), listed first: it holds the CJK glyphs only, so Latin text falls through to the
#: next family, and Chromium's fallback cannot pick a system font without CJK glyphs for a mixed run ("Top-p：...").
TRANSLATE = None
CJK_FAMILY = "refdecode CJK"


def _t(s: str) -> str:
    return TRANSLATE(s) if TRANSLATE is not None else s


def _family(mono: bool) -> str:
    names = "DejaVu Sans Mono, Menlo, Consolas" if mono else "DejaVu Sans, Helvetica, Arial"
    cjk = f"{CJK_FAMILY}, " if TRANSLATE is not None else ""   # first: it holds CJK glyphs only, Latin falls through
    return f'font-family="{cjk}{names}, {"monospace" if mono else "sans-serif"}"'


BLUE, ORANGE, GREY, RED, GREEN, INK = "#1f77b4", "#ff7f0e", "#b0b0b0", "#d62728", "#2ca02c", "#222222"
PALETTE = [BLUE, ORANGE, GREEN, RED, "#9467bd", "#8c564b"]


def fmt(x: float, digits: int = 3) -> str:
    """A number for a label: fixed decimals, no negative zero."""
    s = f"{x:.{digits}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


class Svg:
    """An SVG document built element by element; ``str(svg)`` is the file."""

    def __init__(self, width: float, height: float, title: str):
        self.width, self.height, self.items = width, height, []
        self.items.append(f"<title>{escape(_t(title))}</title>")
        self.items.append(f'<rect x="0" y="0" width="{width:g}" height="{height:g}" fill="#ffffff"/>')

    def rect(self, x, y, w, h, fill, stroke="none", opacity=1.0, dash=False, rx=0):
        extra = ' stroke-dasharray="4 3"' if dash else ""
        self.items.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
                          f'rx="{rx}" fill="{fill}" stroke="{stroke}" opacity="{opacity:g}"{extra}/>')

    def line(self, x1, y1, x2, y2, stroke=INK, width=1.0, opacity=1.0, dash=False, arrow=False):
        extra = (' stroke-dasharray="5 4"' if dash else "") + (' marker-end="url(#arrow)"' if arrow else "")
        self.items.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
                          f'stroke-width="{width:g}" opacity="{opacity:g}"{extra}/>')

    def polyline(self, points, stroke=INK, width=1.5, opacity=1.0, dash=False):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        extra = ' stroke-dasharray="5 4"' if dash else ""
        self.items.append(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{width:g}" '
                          f'opacity="{opacity:g}"{extra}/>')

    def circle(self, x, y, r, fill, stroke="none"):
        self.items.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{fill}" stroke="{stroke}"/>')

    def text(self, x, y, s, size=12, anchor="start", fill=INK, weight="normal", opacity=1.0, rotate=None,
             mono=False):
        family = _family(mono)
        s = _t(s)
        rot = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        self.items.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                          f'fill="{fill}" font-weight="{weight}" opacity="{opacity:g}" {family}{rot} '
                          f'xml:space="preserve">{escape(s)}</text>')

    def __str__(self) -> str:
        defs = ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
                f'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{INK}"/></marker></defs>')
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:g}" height="{self.height:g}" '
                f'viewBox="0 0 {self.width:g} {self.height:g}" role="img">')
        return "\n".join([head, defs, *self.items, "</svg>"]) + "\n"


def label_width(s: str, size: float) -> float:
    """Rough width of a label in DejaVu Sans (digits and punctuation ~0.64 em): enough to avoid overlaps."""
    return 0.6 * size * len(s)


def bar_panel(svg: Svg, x0, y0, w, h, title, labels, values, colors, ymax, notes=None, value_digits=3,
              threshold=None, cumulative=None, label_size=11, values_shown=True):
    """Vertical bars in the box (x0, y0, w, h): one bar per label, value labels on top.

    ``colors`` per bar (a faded bar is drawn with ``GREY``); ``notes`` per bar (a short string under
    the value, e.g. "x" for banned); ``cumulative`` an optional line (0..1 on the same axis when ymax=1)
    with ``threshold`` a dashed horizontal line at that value. Value labels never overlap: they drop
    to fewer decimals when the bars are narrow, and with a cumulative line (whose first point sits on
    the first bar's top) they go inside tall bars, written upwards.
    """
    svg.text(x0 + w / 2, y0 + 14, title, size=13, anchor="middle", weight="bold")
    top, bottom = y0 + 34, y0 + h - 58
    svg.line(x0 + 30, bottom, x0 + w - 6, bottom, stroke="#888")
    for frac in (0.0, 0.5, 1.0):
        y = bottom - frac * (bottom - top)
        svg.line(x0 + 27, y, x0 + 30, y, stroke="#888")
        svg.text(x0 + 25, y + 4, fmt(frac * ymax, 2), size=9, anchor="end", fill="#666")
    n = len(values)
    step = (w - 40) / max(n, 1)
    bw = step * 0.7
    digits, vsize = value_digits, 9      # narrow bars: a smaller font, then fewer decimals (at least 2)
    widest = lambda dg, sz: max((label_width(fmt(v, dg), sz) for v in values if math.isfinite(v)), default=0)  # noqa
    if widest(digits, vsize) > step - 3:
        vsize = 8
    while digits > 2 and widest(digits, vsize) > step - 3:
        digits -= 1
    centers = []
    for i, (label, v, c) in enumerate(zip(labels, values, colors)):
        cx = x0 + 34 + step * i + step / 2
        centers.append(cx)
        bh = 0.0 if not math.isfinite(v) else (bottom - top) * min(v, ymax) / ymax
        svg.rect(cx - bw / 2, bottom - bh, bw, bh, fill=c)
        shown = "0" if not math.isfinite(v) or v == 0 else fmt(v, digits)
        if values_shown and (shown == "0" or v >= 10 ** -value_digits * 5):  # no label for a sliver (< 0.005)
            if cumulative is not None and bh >= label_width(shown, vsize) + 8:  # the line starts on this bar's top
                svg.text(cx + 3, bottom - bh + 5, shown, size=vsize, anchor="end", fill="#ffffff", weight="bold",
                         rotate=-90)
            else:
                svg.text(cx, bottom - bh - 3, shown, size=vsize, anchor="middle", fill="#444")
        if notes and notes[i]:
            svg.text(cx, bottom - bh - 13, notes[i], size=9, anchor="middle", fill=RED, weight="bold")
        svg.text(cx + 3, bottom + 10, label, size=label_size, anchor="end", rotate=-45, mono=True)
    if cumulative is not None:
        pts = [(cx + step / 2 - (step - bw) / 2, bottom - (bottom - top) * min(c, ymax) / ymax)
               for cx, c in zip(centers, cumulative)]
        svg.polyline(pts, stroke=INK, width=1.5)
        for x, y in pts:
            svg.circle(x, y, 2.5, INK)
    if threshold is not None:
        y = bottom - (bottom - top) * threshold / ymax
        svg.line(x0 + 30, y, x0 + w - 6, y, stroke=RED, dash=True, width=1.2)
    return centers
