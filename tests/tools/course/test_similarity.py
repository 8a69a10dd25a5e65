"""tools/course/similarity.py: a copy of refdecode's, the tutorials' or transformers' code is flagged, renamed or
not; the reference submission and the starters, written independently, are not.

The corpus takes a while to fingerprint (every function of refdecode's decoding and processors): slow.
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import ROOT

COURSE = ROOT / "tools" / "course"
sys.path.insert(0, str(COURSE))
import similarity  # noqa: E402

REFERENCE = ROOT / "tutorials" / "solutions" / "submission"
pytestmark = pytest.mark.slow


def _renamed(source: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        source = re.sub(rf"\b{old}\b", new, source)
    return source


def _with(tmp_path: Path, code: str) -> Path:
    sub = tmp_path / "submission"
    sub.mkdir()
    shutil.copy(REFERENCE / "processors.py", sub / "processors.py")
    (sub / "decoding.py").write_text((REFERENCE / "decoding.py").read_text() + "\n\n" + code)
    return sub


def test_the_reference_and_the_starters_are_not_flagged():
    assert similarity.similar(REFERENCE) == []
    assert similarity.similar(ROOT / "tutorials" / "assignment") == []


def test_a_copy_of_refdecode_with_every_name_changed_is_flagged(tmp_path):
    from refdecode.processors.logits_warp import top_p_warp
    source = _renamed(inspect.getsource(top_p_warp), {
        "top_p_warp": "my_nucleus", "scores": "logits_in", "top_p": "nucleus", "filter_value": "fill",
        "min_tokens_to_keep": "keep_at_least", "sorted_logits": "srt", "sorted_indices": "order",
        "cumulative_probs": "mass", "sorted_indices_to_remove": "cut", "indices_to_remove": "removed"})
    assert "top_p_warp" not in source and "sorted_logits" not in source and "def my_nucleus(" in source
    flags = similarity.similar(_with(tmp_path, source))
    assert len(flags) == 1 and flags[0].startswith("decoding.py:my_nucleus ~ refdecode/processors/logits_warp.py:"
                                                   "top_p_warp ("), flags
    assert float(flags[0].rsplit("(", 1)[1].rstrip(")")) >= 0.9


def test_a_renamed_copy_of_a_tutorial_helper_is_flagged(tmp_path):
    """The tutorials' helpers that are near-solutions (tutorials/_graded_guide.py) are in the corpus."""
    sys.path.insert(0, str(ROOT / "tutorials"))
    import _graded_guide
    source = _renamed(inspect.getsource(_graded_guide._gather_top_p),
                      {"_gather_top_p": "nucleus_filter", "probs": "p_in", "order": "perm", "sp": "sorted_p",
                       "out": "result", "drop": "rule"})
    flags = similarity.similar(_with(tmp_path, source))
    assert flags and flags[0].startswith("decoding.py:nucleus_filter ~ tutorials/_graded_guide.py:_gather_top_p ("), \
        flags


def test_transformers_generation_code_is_in_the_corpus_as_fingerprints_only():
    """hidden/transformers.json holds hashes (make_fingerprints.py, transformers 4.38.2), no text."""
    data = json.loads(similarity.TRANSFORMERS.read_text())
    assert len(data) >= 50
    assert any(k.startswith("transformers/generation/utils.py:") for k in data)
    assert all(isinstance(h, int) for hashes in data.values() for h in hashes)
    assert all(k in similarity.corpus() for k in data)
    text = similarity.TRANSFORMERS.read_text()
    assert "def " not in text and "return" not in text


def test_fingerprints_are_the_same_in_every_process():
    """The stored transformers fingerprints compare with ones made now: blake2b, not Python's salted hash."""
    code = "def f(a, b):\n    return [x * a + b for x in range(a) if x % b == 0 and x > a - b]\n"
    import subprocess
    other = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(COURSE)!r}); "
                            f"import similarity; print(sorted(similarity.fingerprints({code!r})))"],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout) == sorted(similarity.fingerprints(code)) != []
