"""Write the fingerprints of transformers' generation code that the grader's copy check compares against.

    python tools/course/make_fingerprints.py --transformers PATH/site-packages/transformers
        # -> tools/course/hidden/transformers.json

transformers is not a dependency of the grader (nor of the tests), and its text does not belong in this
repository: only copydetect's winnowed hashes of each function are kept (similarity.fingerprints: names
normalised, docstrings dropped), which no one can turn back into code. The committed file was made from
transformers 4.38.2 (the oracle venv's, the version refdecode follows) with PyTorch's generation modules:
``generation/utils.py``, ``logits_process.py``, ``beam_search.py``, ``beam_constraints.py``,
``stopping_criteria.py`` and ``candidate_generator.py``. The script reads those files as text and never
imports transformers, so it runs in the grader's venv.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from similarity import MIN_FINGERPRINTS, TRANSFORMERS, fingerprints, functions  # noqa: E402

FILES = ("utils.py", "logits_process.py", "beam_search.py", "beam_constraints.py", "stopping_criteria.py",
         "candidate_generator.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transformers", type=Path, required=True, help="the installed transformers package folder")
    parser.add_argument("--out", type=Path, default=TRANSFORMERS)
    args = parser.parse_args(argv)
    generation = args.transformers / "generation"
    if not all((generation / name).is_file() for name in FILES):
        print(f"error: `--transformers` must be the transformers package folder (with generation/{FILES[0]})",
              file=sys.stderr)
        return 2
    found = {}
    for name in FILES:
        for function, code in functions(generation / name).items():
            hashes = fingerprints(code)
            if len(hashes) >= MIN_FINGERPRINTS:
                found[f"transformers/generation/{name}:{function}"] = sorted(hashes)
    args.out.write_text(json.dumps(found, separators=(",", ":")) + "\n")
    print(f"wrote {args.out}: {len(found)} functions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
