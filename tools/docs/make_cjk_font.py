"""Subset a CJK font to the Chinese characters the docs quote: docs/assets/fonts/cjk-subset.woff.

The pages quote the source documents in Chinese (and a few docstrings shown on the API pages do). A reader
without a CJK font installed saw empty boxes. The site now carries its own glyphs: a subset of WenQuanYi
Micro Hei (Apache-2.0, docs/assets/fonts/LICENSE-wqy-microhei.txt) holding exactly the CJK characters that
occur in docs/**/*.md, docs/img/zh/*.svg and refdecode/**/*.py, loaded by docs/assets/extra.css for those code points only
(``unicode-range``), so the Latin text keeps the theme's fonts and nothing is fetched from the network.

Run after adding Chinese text to a page (tests/docs/test_cjk_font.py fails until then)::

    sh tools/docs/setup_cjk_font.sh     # fetches the Debian font package, fontTools, then runs this

or, with fontTools and the font at hand::

    python tools/docs/make_cjk_font.py --source /usr/share/fonts/truetype/wqy/wqy-microhei.ttc
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "assets" / "fonts" / "cjk-subset.woff"
# CJK radicals .. CJK unified ideographs (incl. CJK punctuation, kana, extension A), and fullwidth forms:
# the code points the stylesheet's unicode-range sends to this font.
CJK = re.compile("[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
UNICODE_RANGE = "U+2E80-9FFF, U+F900-FAFF, U+FE30-FE4F, U+FF00-FFEF"


#: The Chinese edition's interface text that comes from the theme, not from this repository: the CJK characters
#: of mkdocs-material 9.8's partials/languages/zh.html ("搜索", "没有找到符合条件的结果", "上一页", ...).
THEME_UI_ZH = ("、。一上下不个主于享仓代以件元入关内再分创初到制前化合同后回在复始定容导少已库建开引归当录往息意找拒择据接搜擎"
               "数新日时显更最有期本条来果查标栏档正此没消清源版献理的目相眉看码示稿空符签管类索结绝继续编缺者脚至航草要言"
               "订论设评该语读贡跳转辑还选部钟链键间阅需面页顶！，．；？")


def sources() -> list[Path]:
    """The files whose text reaches the site: the pages, the Chinese pictures (each also embeds its own subset,
    tools/pictures/make_pictures.py), the docstrings mkdocstrings renders, mkdocs.yml (the Chinese nav labels
    and site description) and the hook that writes a Chinese notice into pages."""
    return (sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "docs" / "img" / "zh").glob("*.svg"))
            + sorted((ROOT / "refdecode").rglob("*.py"))
            + [ROOT / "mkdocs.yml", ROOT / "tools" / "docs" / "zh_notice.py"])


def cjk_characters() -> list[str]:
    found = set(THEME_UI_ZH)
    for path in sources():
        found.update(CJK.findall(path.read_text("utf-8")))
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"),
                        help="WenQuanYi Micro Hei (.ttc or .ttf)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from fontTools import subset  # only this tool needs fontTools; the tests parse the font themselves
    from fontTools.ttLib import TTFont

    chars = cjk_characters()
    font = TTFont(str(args.source), fontNumber=0)
    missing = [c for c in chars if ord(c) not in font.getBestCmap()]
    if missing:
        raise SystemExit(f"the font has no glyph for {''.join(missing)!r}")
    options = subset.Options()
    options.flavor = "woff"          # zlib-compressed; every browser reads it
    options.layout_features = []     # plain glyphs: no shaping is needed for these characters
    options.name_IDs = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(font)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    font.flavor = "woff"
    font.save(str(args.out))
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}: {len(chars)} "
          f"characters, {args.out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
