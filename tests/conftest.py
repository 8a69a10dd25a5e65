"""Shared test set-up: Hypothesis profiles, paths, and the ``heavy`` marker (left out unless ``--heavy``).

Profiles: ``ci`` (default; 25 examples, derandomized so CI is repeatable) and ``thorough``
(1000 examples, random) for local runs: ``REFDECODE_HYPOTHESIS=thorough pytest``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=25, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("REFDECODE_HYPOTHESIS", "ci"))

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
MODELS = ROOT / "models"

#: One small checkpoint of each model family (tests/golden/models): a test that runs a decoding mode on a real model
#: takes the ``family_model`` fixture and runs on each, so every mode is exercised on GPT-2 and on a Llama (GQA, RoPE).
FAMILY_MODELS = {"gpt2": GOLDEN / "models" / "decode-a", "llama": GOLDEN / "models" / "llama-gqa-tied"}


@pytest.fixture(params=sorted(FAMILY_MODELS))
def family_model(request):
    """A fresh model of each family (fresh: some tests set its generation_config)."""
    from refdecode import from_pretrained
    return from_pretrained(FAMILY_MODELS[request.param])


# ---- heavy tests: left out of a plain `pytest` (the README's test command), run by CI with `--heavy`
#
# A test marked ``heavy`` takes 10 s of CPU or more (engine replays, the 124M-shaped model, the speculative plants,
# suite-wide counts; about 3 min together). It is deselected unless `pytest --heavy` or REFDECODE_HEAVY=1 asks for
# it, or its file is named on the command line. Not through
# `addopts = -m "not heavy"`: a user's own `-m "not slow"` would replace that expression and bring them back.


HEAVY_LEFT_OUT = pytest.StashKey[int]()


def pytest_addoption(parser):
    parser.addoption("--heavy", action="store_true", default=False,
                     help="also run the tests marked heavy (minutes of CPU each; CI runs them, see .ci/run)")


def _named_on_the_command_line(item, config) -> bool:
    named = {(Path(config.invocation_params.dir) / arg.split("::", 1)[0]).resolve() for arg in config.args}
    return Path(item.path).resolve() in named


def pytest_collection_modifyitems(config, items):
    if config.getoption("--heavy") or os.environ.get("REFDECODE_HEAVY") == "1":
        return
    left_out = [i for i in items if i.get_closest_marker("heavy") and not _named_on_the_command_line(i, config)]
    if left_out:
        items[:] = [i for i in items if i not in left_out]
        config.hook.pytest_deselected(items=left_out)
        config.stash[HEAVY_LEFT_OUT] = len(left_out)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    n = config.stash.get(HEAVY_LEFT_OUT, 0)
    if n:
        terminalreporter.write_line(f"{n} tests marked heavy were left out (about 3 min of CPU): `pytest --heavy` runs "
                                    "them too, as CI does")
