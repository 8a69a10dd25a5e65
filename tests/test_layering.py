"""The house rules, read from the source with ``ast``: the layering of the stage folders, and the sizes.

Layering ("one path through the house", "the house by stage"); each rule applies to
modules added later too:

1. **No import cycle** among ``refdecode/**/*.py`` (imports inside functions count: a lazy import is
   still a dependency).
2. **No private names across modules:** no ``from .x import _name`` and no ``x._name`` on an imported
   module, unless ``_name`` is in ``x.__all__`` (a name kept from transformers, e.g. ``_speculative_sampling``). A helper two modules need is public, in a module below both (e.g. ``validation.py``,
   ``decoding/loop.py``).
3. **Decode loops are siblings:** a *loop module* is any module that takes ``loop_defaults``, ``prefill``
   or ``decode_step`` from ``refdecode.decoding.loop`` (the argument defaults and model calls every loop
   shares), except the dispatchers in ``DISPATCHERS``. No loop module imports another loop module,
   directly or through other modules (a helper a loop needs, such as ``candidate_generator.py``, may
   import ``decoding.loop`` for its checks without being a loop).
4. **The model imports neither processors nor decoding:** nothing under ``refdecode.model`` reaches
   ``refdecode.processors``, ``refdecode.decoding``, ``refdecode.reference`` or the request modules
   (``generate``, ``dispatch``, ``pipeline``, ``cli``), directly or through other modules;
   ``model.modeling`` (the ``GPT2`` object) may read ``generation_config`` (``model.generation_config``, as
   transformers has it), which itself reaches only ``generation_rules`` and the ground floor.
5. **Processors never import decoding** (nor the reference tooling, nor the request modules).
6. **Decoding never imports the reference tooling** (nor the request modules): a loop is watched through
   the ground-floor interface ``refdecode.recorder``.
7. **Only the beam loops import the beam bookkeeping:** every importer of
   ``refdecode.decoding.beam.bookkeeping`` is in ``refdecode.decoding.beam``.
8. **The readable forward pass does not reach for the fast one:** nothing in the model outside
   ``model/fast/`` imports ``refdecode.model.fast`` except the model objects that choose which pass runs,
   ``model/modeling.py`` (``GPT2``) and ``model/llama_modeling.py`` (``Llama``).
9. **The tooling stays outside:** only the package's ``__init__`` (``TraceRecorder``) and the CLI import
   ``refdecode.reference`` from outside it.
10. **The ground floor imports nothing of the package but itself:** ``recorder``, ``validation``, the
    numerics wing ``numerics/`` (its modules import each other only), ``text/files`` (the file readers) and
    ``model/stand_ins`` (the stand-in models).
11. **The numerics come from the wing:** ``processors/`` and ``decoding/`` import float kernels (softmax,
    torch's softmax, cumsum and sort order) from ``refdecode.numerics``, never from each other: a name the
    wing exports is imported from the wing only, and no module outside it is named like one of its modules.
12. **One home for later versions' rules:** the 4.38.2 rules in ``refdecode/processors`` and
    ``refdecode/decoding`` hold no branch for transformers 5.x: no module there but
    ``processors/transformers5.py`` names ``semantics`` or ``prompt_ignore_length``. 5.x's processor rules live
    in that module, which ``pipeline.py`` uses for ``semantics="5"`` and the ``transformers-5`` engine profile
    (``reference/engines``) uses for its penalty; the profile's other switches live in ``reference/engines``.

Sizes: at most 12 modules at the top of ``refdecode/``; no module over 450 lines; no function
outside its module's ``__all__`` (a private helper, or a private method) with more than 10 parameters.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "refdecode"

#: Modules that call the loops to dispatch a request; they import the loops by design.
DISPATCHERS = {"refdecode.generate", "refdecode.dispatch", "refdecode.cli"}
#: The request modules at the top, which no stage below may import.
REQUEST = {"refdecode.generate", "refdecode.dispatch", "refdecode.pipeline", "refdecode.cli"}
#: The ground floor: imported by all, importing nothing of the package.
GROUND = {"refdecode.recorder", "refdecode.validation", "refdecode.model.stand_ins",
          "refdecode.text.files"}  # + the wing, below


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_modules() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
            for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = read_modules()
#: The numerics wing, on the ground floor: ``refdecode/numerics/``.
WING = {m for m in MODULES if m == "refdecode.numerics" or m.startswith("refdecode.numerics.")}
GROUND |= WING


def is_package(name: str) -> bool:
    return (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()


def resolve(importer: str, level: int, module: str | None) -> str:
    """The absolute name of ``from {'.' * level}{module} import ...`` written in ``importer``."""
    if level == 0:
        return module or ""
    base = importer.split(".") if is_package(importer) else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imports_of(name: str, tree: ast.Module) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import in the module, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names if alias.name.startswith("refdecode")]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(name, node.level, node.module)
            if not target.startswith("refdecode"):
                continue
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:  # `from . import randomness`: the module itself
                    found.append((f"{target}.{alias.name}", None, node.lineno))
                else:
                    found.append((target, alias.name, node.lineno))
    return found


def graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (a package's __init__ is the package's name)."""
    return {name: {target for target, _, _ in imports_of(name, tree) if target in MODULES and target != name}
            for name, tree in MODULES.items()}


def closure(g: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), list(g[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += g[m]
    return seen


def levels(g: dict[str, set[str]]) -> dict[str, int]:
    """Level 0: imports no package module; level n: imports something of level n - 1 (longest path)."""
    memo: dict[str, int] = {}

    def level(m: str, stack: tuple = ()) -> int:
        if m in stack:
            raise AssertionError(f"import cycle: {' -> '.join(stack[stack.index(m):] + (m,))}")
        if m not in memo:
            memo[m] = 1 + max((level(d, stack + (m,)) for d in g[m]), default=-1)
        return memo[m]

    for m in g:
        level(m)
    return memo


#: What makes a module a decode loop: it runs the model step by step and fills its arguments like every loop.
LOOP_MARKERS = {"loop_defaults", "prefill", "decode_step"}


def is_loop(name: str) -> bool:
    return name not in DISPATCHERS and name != "refdecode" and any(
        target == "refdecode.decoding.loop" and imported in LOOP_MARKERS for target, imported, _ in
        imports_of(name, MODULES[name]))


G = graph()
LOOPS = {m for m in MODULES if is_loop(m)}


def under(m: str, package: str) -> bool:
    return m == package or m.startswith(package + ".")


def reaching(stage: str, forbidden: list[str], allowed: tuple[str, ...] = ()) -> list[str]:
    """Modules of ``stage`` whose import closure holds a module under one of ``forbidden`` (or in REQUEST)."""
    bad = []
    for m in G:
        if not under(m, stage) or m in allowed:
            continue
        hit = sorted(d for d in closure(G, m) if d in REQUEST or any(under(d, f) for f in forbidden))
        if hit:
            bad.append(f"{m} reaches {hit}")
    return bad


def test_the_parser_sees_the_known_edges():
    """Guards the rules below against passing because the import parser found nothing."""
    assert "refdecode.decoding.loop" in G["refdecode.decoding.greedy"]
    assert "refdecode.model.gpt2" in G["refdecode.model.fast.forward"]
    assert "refdecode.model.fast" in G["refdecode.model.modeling"]
    assert "refdecode.decoding.beam.bookkeeping" in G["refdecode.decoding.beam.beam_search"]
    assert "refdecode.recorder" in G["refdecode.decoding.greedy"]
    assert {"refdecode.decoding.greedy", "refdecode.decoding.sampling", "refdecode.decoding.beam.beam_search",
            "refdecode.decoding.beam.group_beam_search", "refdecode.decoding.beam.constrained_beam_search",
            "refdecode.decoding.assisted_decoding", "refdecode.decoding.contrastive_search"} <= LOOPS


def test_no_import_cycle():
    levels(G)  # raises naming the cycle


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def exported(module: str) -> set[str]:
    """The names of a module's ``__all__``: public by declaration, even with a leading underscore (a name kept
    from transformers, such as ``_speculative_sampling``)."""
    for node in MODULES[module].body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return set()


def test_no_private_name_imported_from_another_module():
    bad = []
    for name, tree in MODULES.items():
        bound = {}  # local name -> the package module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bound.update({alias.asname: alias.name for alias in node.names
                              if alias.name in MODULES and alias.asname})
            elif isinstance(node, ast.ImportFrom):
                target = resolve(name, node.level, node.module)
                for alias in node.names:
                    if f"{target}.{alias.name}" in MODULES:
                        bound[alias.asname or alias.name] = f"{target}.{alias.name}"
                    elif target in MODULES and private(alias.name) and alias.name not in exported(target):
                        bad.append(f"{name}:{node.lineno} imports {target}.{alias.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                    and private(node.attr):
                bad.append(f"{name}:{node.lineno} uses {bound[node.value.id]}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_decode_loops_are_siblings():
    bad = [f"{m} imports loop {other}" for m in LOOPS for other in closure(G, m) & LOOPS]
    assert not bad, "\n".join(bad)


def test_the_model_imports_neither_processors_nor_decoding():
    forbidden = ["refdecode.processors", "refdecode.decoding", "refdecode.reference"]
    bad = reaching("refdecode.model", forbidden)
    config_reach = closure(G, "refdecode.generation_config") - GROUND - {"refdecode.generation_rules"}
    bad += [f"refdecode.generation_config reaches {sorted(config_reach)}"] if config_reach else []
    assert not bad, "\n".join(bad)


def test_processors_never_import_decoding():
    bad = reaching("refdecode.processors", ["refdecode.decoding", "refdecode.reference"])
    assert not bad, "\n".join(bad)


def test_decoding_never_imports_the_reference_tooling():
    bad = reaching("refdecode.decoding", ["refdecode.reference"])
    assert not bad, "\n".join(bad)


def test_only_beam_loops_import_the_beam_bookkeeping():
    importers = {m for m in G if "refdecode.decoding.beam.bookkeeping" in G[m]}
    assert importers and all(under(m, "refdecode.decoding.beam") for m in importers), sorted(importers)
    greedy_reach = closure(G, "refdecode.decoding.greedy") | closure(G, "refdecode.decoding.sampling")
    assert not {m for m in greedy_reach if under(m, "refdecode.decoding.beam")}, "greedy/sample reach beam code"


def test_only_the_model_object_chooses_the_fast_forward_pass():
    bad = [m for m in G if under(m, "refdecode.model") and not under(m, "refdecode.model.fast")
           and m not in ("refdecode.model.modeling", "refdecode.model.llama_modeling") and any(under(d, "refdecode.model.fast") for d in G[m])]
    assert not bad, bad


def test_only_the_root_and_the_cli_import_the_reference_tooling():
    bad = [m for m in G if not under(m, "refdecode.reference") and m not in ("refdecode", "refdecode.cli")
           and any(under(d, "refdecode.reference") for d in G[m])]
    assert not bad, bad


def test_the_ground_floor_imports_nothing_of_the_package():
    bad = {m: sorted(G[m]) for m in GROUND if G[m] - GROUND}
    assert not bad, bad


def test_the_numerics_come_from_the_wing():
    wing_names = set().union(*(exported(m) for m in WING))
    assert {"softmax", "torch_softmax", "torch_cumsum", "torch_cpu_sort_order"} <= wing_names  # the rule can fail
    bad = []
    for name, tree in MODULES.items():
        if not (under(name, "refdecode.processors") or under(name, "refdecode.decoding")):
            continue  # (the engine profiles of refdecode.reference model other engines' softmax on purpose)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = resolve(name, node.level, node.module)
                bad += [f"{name}:{node.lineno} imports {alias.name} from {target}" for alias in node.names
                        if target.startswith("refdecode") and target not in WING and alias.name in wing_names]
    wing_files = {m.rsplit(".", 1)[-1] for m in WING}
    bad += [f"{m} is named like a module of the wing" for m in MODULES
            if m not in WING and m.rsplit(".", 1)[-1] in wing_files]
    assert not bad, "\n".join(bad)


def test_processors_and_decoding_use_the_wing():
    """The rule above is not vacuous: the warpers and the beam step do import the wing."""
    assert "refdecode.numerics" in G["refdecode.processors.logits_warp"]
    assert "refdecode.numerics" in G["refdecode.decoding.beam.beam_search"]


FIVE_HOME = PACKAGE / "processors" / "transformers5.py"


def later_version_branches(path: Path) -> list[str]:
    """The lines of a module that name 5.x's switches (``semantics``, ``prompt_ignore_length``) in its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {"semantics", "prompt_ignore_length"}
    return [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
            if (isinstance(n, ast.Name) and n.id in names) or (isinstance(n, ast.Attribute) and n.attr in names)
            or (isinstance(n, ast.arg) and n.arg in names)
            or (isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names)]


def test_the_4_38_rules_hold_no_5x_branch():
    paths = [p for folder in ("processors", "decoding") for p in sorted((PACKAGE / folder).rglob("*.py"))]
    bad = [line for p in paths if p != FIVE_HOME for line in later_version_branches(p)]
    assert not bad, bad
    assert later_version_branches(FIVE_HOME), "the 5.x home holds the 5.x rules"


def test_the_5x_branch_check_can_fail(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f(ids, scores, penalty, prompt_ignore_length=None):\n    return config.semantics\n")
    assert later_version_branches(module) == ["m.py:1", "m.py:2"]


# ---- sizes


def test_at_most_twelve_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_over_450_lines(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= 450, f"{path.relative_to(PACKAGE.parent)} has {n} lines: split it by job"


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + [x.arg for x in (a.vararg, a.kwarg) if x]
    return len([n for n in names if n not in ("self", "cls")])


def long_private_functions(tree: ast.Module) -> list[str]:
    """Functions with more than 10 parameters that are not public: not in ``__all__``, or private methods."""
    exported = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exported = {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in exported:
            found += [node.name] if parameter_count(node) > 10 else []
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(item) > 10 and (
                        node.name not in exported or private(item.name)):
                    found.append(f"{node.name}.{item.name}")
    return found


def test_no_private_function_over_ten_parameters():
    bad = [f"{name}: {fn}" for name, tree in MODULES.items() for fn in long_private_functions(tree)]
    assert not bad, "\n".join(bad)


def test_the_size_checks_can_fail():
    tree = ast.parse("__all__ = ['f']\ndef f(a, b, c, d, e, f, g, h, i, j, k): pass\n"
                     "def _g(a, b, c, d, e, f, g, h, i, j, k): pass\nclass C:\n    def _m(self, a, b, c, d, e, f, g, h, i, j, k): pass\n")
    assert long_private_functions(tree) == ["_g", "C._m"]


def test_the_cycle_check_can_fail():
    with pytest.raises(AssertionError, match="import cycle: a -> b -> a"):
        levels({"a": {"b"}, "b": {"a"}})


def print_levels() -> None:  # pragma: no cover - for the notes: python tests/test_layering.py
    by_level: dict[int, list[str]] = {}
    for m, lv in levels(G).items():
        by_level.setdefault(lv, []).append(m.removeprefix("refdecode."))
    for lv in sorted(by_level):
        print(lv, " ".join(sorted(by_level[lv])))


if __name__ == "__main__":
    print_levels()


# ---- the tests mirror the package


TESTS = PACKAGE.parent / "tests"


def test_every_module_has_a_test_file_where_the_tree_says():
    """refdecode/<folders>/<m>.py is tested by tests/<folders>/test_<m>.py (``__init__`` / ``__main__`` excepted)."""
    missing = [str(Path("tests") / p.relative_to(PACKAGE).parent / f"test_{p.stem}.py")
               for p in sorted(PACKAGE.rglob("*.py")) if p.stem not in ("__init__", "__main__")
               and not (TESTS / p.relative_to(PACKAGE).parent / f"test_{p.stem}.py").is_file()]
    assert not missing, "\n".join(missing)
