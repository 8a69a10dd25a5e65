"""Flag submitted functions that are copies of refdecode's decoding, the tutorials' helpers or transformers'
generation code, renamed or not: copydetect's winnowing (MOSS's algorithm) over normalised tokens.

Contract: :func:`similar` lists, for a submission folder, each function whose code (docstrings and comments
removed) shares at least ``threshold`` of its fingerprints with one function of the corpus:
``"decoding.py:my_top_p ~ refdecode/processors/logits_warp.py:top_p_warp (0.97)"``. copydetect (Stanford's
MOSS algorithm, Schleimer, Wilkerson and Aiken 2003: "Winnowing: local algorithms for document fingerprinting")
replaces every name by one token before hashing k-grams, so renaming variables changes nothing. The corpus:
refdecode's ``decoding/`` and ``processors/``, the tutorials' helpers and labs (``tutorials/*.py``, solutions
included), and transformers 4.38.2's generation code as fingerprints only (``hidden/transformers.json``, made
by ``make_fingerprints.py`` in the oracle venv: transformers is not a dependency). Copying is a plagiarism
question, so the grader flags and a person decides; nothing is zeroed.
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import cache
from pathlib import Path

import numpy as np
from copydetect.utils import filter_code, winnow

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMERS = Path(__file__).resolve().parent / "hidden" / "transformers.json"
NOISE, GUARANTEE = 15, 20     # k-gram length (shorter matches are noise) and the length always caught, in tokens
THRESHOLD = 0.8               # the share of a function's fingerprints found in one corpus function
MIN_FINGERPRINTS = 12         # a function with fewer says what any hand would write


def functions(path: Path) -> dict[str, str]:
    """name -> code (docstrings dropped, comments and layout normalised by ast.unparse) of each function."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = code_only(ast.get_source_segment(text, node) or "")
    return found


def code_only(source: str) -> str:
    """A function's text without docstrings, comments and blank lines (what copying keeps)."""
    try:
        tree = ast.parse(source.strip())
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def fingerprints(code: str) -> frozenset[int]:
    """The winnowed fingerprints of ``code``: copydetect's token filter (every name one letter, every string
    one letter), k-grams of NOISE characters hashed with blake2b (stable across processes, unlike ``hash``,
    which copydetect uses), copydetect's robust winnowing over windows of GUARANTEE - NOISE + 1 hashes."""
    filtered, _ = filter_code(code, "f.py", "python")
    if len(filtered) < GUARANTEE:
        return frozenset()
    grams = np.array([int.from_bytes(hashlib.blake2b(filtered[i:i + NOISE].encode(), digest_size=6).digest(), "big")
                      for i in range(len(filtered) - NOISE + 1)], dtype=np.int64)
    hashes, _ = winnow(grams, GUARANTEE - NOISE + 1)
    return frozenset(int(h) for h in hashes)


@cache
def corpus() -> dict[str, frozenset[int]]:
    """"path:function" -> fingerprints, for every function of the corpus (module doc)."""
    paths = [*sorted((ROOT / "refdecode" / "decoding").rglob("*.py")),
             *sorted((ROOT / "refdecode" / "processors").rglob("*.py")),
             *sorted((ROOT / "tutorials").glob("*.py")), *sorted((ROOT / "tutorials" / "solutions").glob("lab*.py"))]
    found = {f"{path.relative_to(ROOT).as_posix()}:{name}": fingerprints(code)
             for path in paths for name, code in functions(path).items()}
    if TRANSFORMERS.is_file():
        found.update({where: frozenset(hashes) for where, hashes in json.loads(TRANSFORMERS.read_text()).items()})
    return {where: hashes for where, hashes in found.items() if len(hashes) >= MIN_FINGERPRINTS}


def similar(submission: Path, threshold: float = THRESHOLD) -> list[str]:
    """Functions of the submission whose fingerprints are at least ``threshold`` one corpus function's (best
    match each)."""
    flags = []
    for path in sorted(submission.rglob("*.py")):
        for name, code in functions(path).items():
            mine = fingerprints(code)
            if len(mine) < MIN_FINGERPRINTS:
                continue
            share, where = max((len(mine & theirs) / len(mine), where) for where, theirs in corpus().items())
            if share >= threshold:
                flags.append(f"{path.relative_to(submission).as_posix()}:{name} ~ {where} ({share:.2f})")
    return flags
