"""The Chinese quotes render without a CJK font installed: the site ships the glyphs.

docs/assets/fonts/cjk-subset.woff (tools/docs/make_cjk_font.py) must hold every CJK character that
reaches the site (the pages and the docstrings on the API pages), and docs/assets/extra.css must load it
for those code points. The font's character map is read here with the standard library (WOFF tables are
zlib-compressed sfnt tables; cmap formats 4 and 12), so the test needs no font library.
"""

from __future__ import annotations

import importlib.util
import re
import struct
import zlib

from conftest import ROOT

FONT = ROOT / "docs" / "assets" / "fonts" / "cjk-subset.woff"
CSS = ROOT / "docs" / "assets" / "extra.css"


def load_tool():
    spec = importlib.util.spec_from_file_location("make_cjk_font", ROOT / "tools" / "docs" / "make_cjk_font.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def woff_tables(data: bytes) -> dict[str, bytes]:
    signature, _flavor, _length, num_tables = struct.unpack(">4sIIH", data[:14])
    assert signature == b"wOFF", "not a WOFF file"
    tables = {}
    for i in range(num_tables):
        tag, offset, comp_len, orig_len, _checksum = struct.unpack(">4sIIII", data[44 + 20 * i: 64 + 20 * i])
        raw = data[offset: offset + comp_len]
        tables[tag.decode("ascii")] = zlib.decompress(raw) if comp_len < orig_len else raw
    return tables


def cmap_code_points(cmap: bytes) -> set[int]:
    """Every code point mapped to a glyph other than .notdef, from the Unicode subtables (format 4 or 12)."""
    _version, n = struct.unpack(">HH", cmap[:4])
    points: set[int] = set()
    for i in range(n):
        platform, encoding, offset = struct.unpack(">HHI", cmap[4 + 8 * i: 12 + 8 * i])
        if (platform, encoding) not in ((3, 1), (3, 10), (0, 3), (0, 4)):
            continue
        fmt = struct.unpack(">H", cmap[offset: offset + 2])[0]
        if fmt == 4:
            seg2 = struct.unpack(">H", cmap[offset + 6: offset + 8])[0]
            base = offset + 14
            ends = struct.unpack(f">{seg2 // 2}H", cmap[base: base + seg2])
            starts = struct.unpack(f">{seg2 // 2}H", cmap[base + seg2 + 2: base + 2 * seg2 + 2])
            deltas = struct.unpack(f">{seg2 // 2}h", cmap[base + 2 * seg2 + 2: base + 3 * seg2 + 2])
            ro_base = base + 3 * seg2 + 2
            range_offsets = struct.unpack(f">{seg2 // 2}H", cmap[ro_base: ro_base + seg2])
            for s, (start, end, delta, ro) in enumerate(zip(starts, ends, deltas, range_offsets)):
                for c in range(start, end + 1):
                    if c == 0xFFFF:
                        continue
                    if ro == 0:
                        glyph = (c + delta) & 0xFFFF
                    else:
                        at = ro_base + 2 * s + ro + 2 * (c - start)
                        glyph = struct.unpack(">H", cmap[at: at + 2])[0]
                        glyph = (glyph + delta) & 0xFFFF if glyph else 0
                    if glyph:
                        points.add(c)
        elif fmt == 12:
            n_groups = struct.unpack(">I", cmap[offset + 12: offset + 16])[0]
            for g in range(n_groups):
                start, end, glyph = struct.unpack(">III", cmap[offset + 16 + 12 * g: offset + 28 + 12 * g])
                points.update(c for c in range(start, end + 1) if glyph + c - start)
    return points


def test_every_cjk_character_of_the_site_is_in_the_shipped_font():
    tool = load_tool()
    chars = tool.cjk_characters()
    assert len(chars) > 50, "the pages quote the source documents in Chinese: the scan found too little"
    assert "选" in chars and "温" in chars          # docs/top-p.md's quote and docs/references.md's title
    covered = cmap_code_points(woff_tables(FONT.read_bytes())["cmap"])
    missing = [c for c in chars if ord(c) not in covered]
    assert not missing, (f"docs/assets/fonts/cjk-subset.woff has no glyph for {''.join(missing)!r}: run "
                         "sh tools/docs/setup_cjk_font.sh")


def test_the_cmap_reader_is_not_vacuous():
    """A character the docs never quote is not in the subset (the reader does not report every code point)."""
    covered = cmap_code_points(woff_tables(FONT.read_bytes())["cmap"])
    assert ord("龘") not in covered and ord("A") not in covered


def test_the_stylesheet_loads_the_font_for_cjk_code_points_only():
    css = CSS.read_text("utf-8")
    face = re.search(r"@font-face\s*{([^}]*)}", css)
    assert face, "docs/assets/extra.css has no @font-face"
    assert 'url("fonts/cjk-subset.woff")' in face.group(1)
    assert f"unicode-range: {load_tool().UNICODE_RANGE};" in face.group(1)
    assert '--md-text-font: "refdecode CJK"' in css          # Material puts --md-text-font first in its stack
    assert (ROOT / "docs" / "assets" / "fonts" / "LICENSE-wqy-microhei.txt").is_file()
    assert not re.search(r"url\((?:\"|')?(?:https?:)?//", css), "the stylesheet loads a remote asset"


def test_the_tool_scans_what_reaches_the_site():
    """The pages, the package's docstrings (mkdocstrings renders them), mkdocs.yml's Chinese nav and the theme's
    Chinese interface; the scan finds a character in each."""
    tool = load_tool()
    scanned = {p.relative_to(ROOT).parts[0] for p in tool.sources()}
    assert scanned == {"docs", "refdecode", "mkdocs.yml", "tools"}  # mkdocs.yml: the Chinese nav labels
    assert "擎" in tool.cjk_characters()                             # 推理引擎, a nav label only
    assert "暂" in tool.cjk_characters()                             # 本页暂无中文版: the notice hook only
    assert set("没有找到符合条件的结果") <= set(tool.cjk_characters())  # the theme's Chinese search message
    text = (ROOT / "refdecode" / "model" / "kv_cache.py").read_text("utf-8")
    assert set(tool.CJK.findall(text)) <= set(tool.cjk_characters()) and tool.CJK.findall(text)
