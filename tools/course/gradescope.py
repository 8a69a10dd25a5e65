"""Build the Gradescope autograder bundle: ``setup.sh``, ``run_autograder`` and the grader with its cases.

    python tools/course/gradescope.py OUT.zip [--cases tools/course/hidden/cases.json]

Gradescope unzips the bundle into ``/autograder/source``, runs ``setup.sh`` once when it builds the image, then
``run_autograder`` for each submission, with the student's files in ``/autograder/submission`` (at its top, or
in one folder when they uploaded a folder), and reads ``/autograder/results/results.json`` (grade.py writes
Gradescope's format). The bundle holds what the grader reads: ``pyproject.toml``, ``refdecode/``, the
tiny-shakespeare model, ``tools/course/`` (the hidden cases given by ``--cases``: make them with a secret seed
first, make_hidden.py) and ``tutorials/`` (the harness, and the helpers the copy check compares against).
``setup.sh`` installs Debian's bubblewrap and a venv with ``.[grader]``. ``run_autograder`` takes two
environment variables, for trying it outside Gradescope (tests/tools/course/test_gradescope.py):
``AUTOGRADER`` (default ``/autograder``) and ``PYTHON`` (default the venv's).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INCLUDED = ("pyproject.toml", "README.md", "refdecode", "models/tiny-shakespeare", "tools/course", "tutorials")
SKIPPED = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache")

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
apt-get update -qq
apt-get install -y -qq python3 python3-venv python3-pip bubblewrap >/dev/null
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q -e "/autograder/source[grader]"
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission; it writes $AUTOGRADER/results/results.json.
set -uo pipefail
AUTOGRADER="${AUTOGRADER:-/autograder}"
PYTHON="${PYTHON:-$AUTOGRADER/venv/bin/python}"
export OPENBLAS_NUM_THREADS=1
submission="$AUTOGRADER/submission"
if [ ! -f "$submission/decoding.py" ] && [ ! -f "$submission/processors.py" ]; then
    found="$(find "$submission" -mindepth 2 -maxdepth 2 \\( -name decoding.py -o -name processors.py \\) | head -n 1)"
    [ -n "$found" ] && submission="$(dirname "$found")"
fi
mkdir -p "$AUTOGRADER/results"
cd "$AUTOGRADER/source"
out="$AUTOGRADER/results"
if ! "$PYTHON" tools/course/grade.py "$submission" --out "$out/results.json" 2>"$out/error.txt"; then
    "$PYTHON" - "$AUTOGRADER/results" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
error = (out / "error.txt").read_text()[-2000:]
(out / "results.json").write_text(json.dumps({"score": 0, "output": "The grader could not run: " + error,
                                              "visibility": "visible", "tests": []}))
PY
fi
"""


def _tracked() -> set[str] | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.decode().split("\0")) - {""}


def build(out: Path, cases: Path) -> int:
    """Write the bundle to ``out`` (a .zip); the number of files in it."""
    if out.suffix != ".zip":
        raise ValueError(f"`OUT` must end in .zip, got {out}")
    if not cases.is_file():
        raise ValueError(f"`--cases` must be a cases.json from make_hidden.py, got {cases}")
    tracked, count = _tracked(), 0
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            bundle.writestr(info, text)
            count += 1
        for top in INCLUDED:
            for path in sorted([ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*")):
                rel = path.relative_to(ROOT).as_posix()
                if not path.is_file() or path.is_symlink() or any(part in SKIPPED for part in path.parts) or \
                        (tracked is not None and rel not in tracked) or rel == "tools/course/hidden/cases.json":
                    continue
                bundle.write(path, rel)
                count += 1
        bundle.write(cases, "tools/course/hidden/cases.json")
    return count + 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the bundle to write (autograder.zip)")
    parser.add_argument("--cases", type=Path, default=ROOT / "tools" / "course" / "hidden" / "cases.json",
                        help="the hidden cases to grade with (make them with a secret seed)")
    args = parser.parse_args(argv)
    try:
        count = build(args.out, args.cases)
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {count} files; upload it as the autograder (Gradescope: Configure Autograder, zip)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
