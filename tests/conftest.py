"""Shared test set-up: Hypothesis profiles and paths.

Profiles: ``ci`` (default; 25 examples, derandomized so CI is repeatable) and ``thorough``
(1000 examples, random) for local runs: ``REFDECODE_HYPOTHESIS=thorough pytest``.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=25, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("REFDECODE_HYPOTHESIS", "ci"))

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
MODELS = ROOT / "models"
