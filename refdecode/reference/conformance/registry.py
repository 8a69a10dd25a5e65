r"""The registry of case types: what a case type is, and how to add one.

Contract: a :class:`CaseType` names one request type of the protocol and carries everything the
suite needs about it: its ``input`` and ``output`` fields (as kinds of ``kinds.py``, which give the
JSON Schema), ``build()`` -> the inputs of its cases (deterministic: seeded generators only),
``run(input)`` -> refdecode's answer (used by ``export`` for the expected values and by ``serve``
to answer requests), optionally ``margins(input, output)`` (how far each decision of the case is
from flipping, for the near-tie verdict), the tie rule the cases state, and ``count()`` (how many
cases ``build`` yields, computed without building them, for a type whose build runs long decodes:
:func:`case_count` then needs no decode). ``check`` compares with the generic rules of ``compare.py``
driven by the output kinds.

**Adding a case type** (a new processor, a new decoding algorithm) takes a few lines in a module
``cases_<family>.py`` of ``refdecode/reference/conformance/``; ``refdecode/reference/conformance/__init__.py``
imports every such module (a new one gets its import there), which registers its types::

    from .registry import Case, CaseType, register
    from .kinds import F32, FLOAT, INT, obj

    def _run_min_p(inp):                                       # refdecode's answer, public API only
        warper = refdecode.MinPLogitsWarper(inp["min_p"], min_tokens_to_keep=inp["min_tokens_to_keep"])
        return {"scores": warper(None, inp["scores"])}

    def _build_min_p():                                        # inputs of the cases, seeded
        rng = np.random.default_rng(0)
        return [Case("random row", {"scores": ..., "min_p": 0.1, "min_tokens_to_keep": 1}) for _ in range(40)]

    register(CaseType(name="min_p", groups=("warpers",), summary="MinPLogitsWarper ...",
                      inputs=obj(scores=F32(2), min_p=FLOAT, min_tokens_to_keep=INT), outputs=obj(scores=F32(2)),
                      build=_build_min_p, run=_run_min_p))

(the real ``min_p`` type is registered in ``cases_processors_more.py``, with the other truncation warpers).
Then ``refdecode conformance export`` writes ``cases/min_p.jsonl`` and its schema into the
manifest, ``serve`` answers ``min_p`` requests, and the docs page's table of request types should
gain a row (``tests/reference/conformance/test_registry.py`` checks that every registered type is documented).
The suite's case count changes: README.md and docs/conformance.md state it, and tests/docs/test_numbers.py
checks them against :func:`case_count`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .kinds import Obj

__all__ = ["Case", "CaseType", "register", "REGISTRY", "select", "case_count", "OPT_IN_GROUPS"]


@dataclass
class Case:
    """One case before export: a short note saying what it exercises, and its decoded input values.

    ``expected``: the answer, when it is not refdecode's ``run`` (the textbook group's come from transformers'
    golden file); ``last_bit``: per row, what the verdict needs to tell a last-bit departure from a rule one.
    """
    note: str
    input: dict[str, Any]
    expected: dict[str, Any] | None = None
    last_bit: list | None = None


@dataclass(frozen=True)
class CaseType:
    """One request type; see the module docstring."""
    name: str
    groups: tuple[str, ...]
    summary: str
    inputs: Obj
    outputs: Obj
    build: Callable[[], Iterable[Case]]  # a list, or a generator (an export of the first n builds only those)
    run: Callable[[dict], dict]
    margins: Callable[[dict, dict], Any] | None = None
    tie_rule: str | None = None
    compare: Callable[..., list[str]] | None = field(default=None)
    count: Callable[[], int] | None = None  # len(list(build())) without building (its tests check it)


#: groups left out when nothing is selected (named by --only): engines_124m's checkpoint is not committed; textbook
#: asks for torch's last bit, which a port may choose not to follow (docs/conformance.md, "Textbook rows")
OPT_IN_GROUPS = ("engines_124m", "textbook")

#: name -> CaseType, in registration order (the order of the manifest and of ``check``).
REGISTRY: dict[str, CaseType] = {}


def register(case_type: CaseType) -> CaseType:
    """Add a case type; a second type with the same name is refused."""
    if case_type.name in REGISTRY:
        raise ValueError(f"case type {case_type.name!r} is already registered")
    REGISTRY[case_type.name] = case_type
    return case_type


def select(only: str | None) -> list[str]:
    """``--only`` value -> the case type names it selects: comma-separated type names or group names.

    >>> import refdecode.reference.conformance
    >>> select("top_p,min_length")
    ['top_p', 'min_length']
    """
    names = list(REGISTRY)
    if not only:
        return [n for n in names if not set(REGISTRY[n].groups) & set(OPT_IN_GROUPS)]
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    groups = {g for t in REGISTRY.values() for g in t.groups}
    unknown = [w for w in wanted if w not in REGISTRY and w not in groups]
    if unknown:
        raise ValueError(f"`--only` has to name case types or groups; unknown: {', '.join(unknown)}. Types: "
                         f"{', '.join(names)}; groups: {', '.join(sorted(groups))}")
    return [n for n in names if n in wanted or set(REGISTRY[n].groups) & set(wanted)]


def case_count(names: Iterable[str]) -> int:
    """How many cases the case types ``names`` hold: ``count()`` where a type has it, else its cases built and
    counted (no answer is computed, nothing is written: cheaper than an export).

    >>> import refdecode.reference.conformance
    >>> case_count(["top_k"]) == len(list(REGISTRY["top_k"].build()))
    True
    """
    return sum(REGISTRY[n].count() if REGISTRY[n].count else sum(1 for _ in REGISTRY[n].build()) for n in names)
