"""refdecode.reference.divergence: every stage names the function and docs page behind it; processors outside the table are looked up."""

from __future__ import annotations

import refdecode.decoding.beam.beam_search  # noqa: F401  (the module, for monkeypatching; the package exports the function)
from refdecode.reference.divergence import STAGE_REFERENCE


def _resolve(dotted: str):
    """``refdecode.decoding.beam.beam_scorer.BeamHypotheses.add`` -> the object (import the module, then getattr the rest)."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def test_every_stage_names_a_function_and_a_docs_page_that_exist():
    from conftest import ROOT

    for stage, (function, page) in STAGE_REFERENCE.items():
        assert (ROOT / page).is_file(), (stage, page)
        assert callable(_resolve(function.split(" ")[0])), stage


def test_stages_outside_the_table_are_looked_up_among_refdecodes_processors():
    from refdecode.reference.divergence import Divergence

    typical = Divergence(0, "TypicalLogitsWarper", 0, 1, 2, "algorithmic", "")
    assert typical.function == "refdecode.processors.truncation_warpers.TypicalLogitsWarper"
    custom = Divergence(0, "MyOwnProcessor", 0, 1, 2, "algorithmic", "")
    assert custom.function.startswith("not a refdecode stage") and custom.docs == "docs/processors.md"
