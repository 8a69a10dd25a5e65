#!/bin/sh
# Rebuild docs/assets/fonts/cjk-subset.woff (see tools/docs/make_cjk_font.py). Needs apt (Debian's
# fonts-wqy-microhei package is downloaded and unpacked here, not installed) and PyPI (fontTools, in a
# venv here). Both folders are git-ignored.
set -e
cd "$(dirname "$0")"
mkdir -p _font_src
if [ ! -f _font_src/usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; then
    (cd _font_src && apt-get download fonts-wqy-microhei && dpkg-deb -x fonts-wqy-microhei_*.deb .)
fi
[ -x .venv-fonts/bin/python ] || (python3 -m venv .venv-fonts && .venv-fonts/bin/pip install -q fonttools)
.venv-fonts/bin/python make_cjk_font.py --source _font_src/usr/share/fonts/truetype/wqy/wqy-microhei.ttc
