r"""The conformance suite: refdecode as a golden reference for implementations in any language.

Contract: ``export`` writes language-neutral cases (JSON Lines + .npy + model checkpoints, with a
versioned manifest and a JSON Schema per case type), ``serve`` answers the suite's requests with
refdecode itself, ``check`` runs any implementation through the protocol (one JSON request per
line on its stdin, one JSON response per line on its stdout) and judges it with stated
tolerances. The command line is ``refdecode conformance export|check|serve``; the protocol, the
schemas and the tolerances are written down in docs/conformance.md.

Modules: ``kinds.py`` (field kinds -> JSON Schema, JSON, NumPy), ``registry.py`` (case types; how
to add one), ``toy_model.py`` (the model any language can implement), ``cases_*.py`` (the case
builders), ``export.py``, ``serve.py``, ``check.py``, ``compare.py`` (the verdicts),
``plants.py`` (deliberately broken refdecodes that ``check`` must catch), ``cli.py``.
"""

from . import cases_processors, cases_processors_more, cases_beam, cases_decode  # noqa: F401  (they register the case types)
from . import cases_stopping, cases_constrained, cases_contrastive, cases_speculative, cases_forward, cases_ties  # noqa: F401
from . import cases_engines, cases_textbook, cases_llama  # noqa: F401
from .registry import REGISTRY, CaseType, register

__all__ = ["REGISTRY", "CaseType", "register"]
