"""The package's layering, read from the source with ``ast``: each stage imports only what is below it.

The rules (issue 12, "one path through the house"); each applies to modules added later too:

1. **No import cycle** among ``refdecode/**/*.py`` (imports inside functions count: a lazy import is
   still a dependency).
2. **No private names across modules:** no ``from .x import _name`` and no ``x._name`` on an imported
   module. A helper two modules need is public, in a module below both (e.g. ``checks.py``,
   ``decode_loop.py``).
3. **Decode loops are siblings:** a *loop module* is any module that takes ``loop_defaults``, ``prefill``
   or ``decode_step`` from ``refdecode.decoding.loop`` (the argument defaults and model calls every loop
   shares), except the dispatchers in ``DISPATCHERS`` (``generate.py``, ``cli.py``). No loop module
   imports another loop module, directly or through other modules (a helper a loop needs, such as
   ``candidate_generator.py``, may import ``decode_loop`` for its checks without being a loop). A new loop
   (speculative, contrastive, constrained ...) is covered without editing this file.
4. **The model knows nothing of generation:** the forward passes and what they load (``MODEL``:
   ``gpt2.py``, ``fast/``, ``kv_cache.py``, ``checkpoint.py``, ``config.py``) import no generation module
   (``GENERATION``, plus every loop module and every module that imports one), directly or through other
   modules. ``model.py``, the ``GPT2`` object, may import one generation module: ``generation_config.py``
   (``model.generation_config``, as transformers has it), and nothing that imports the loops.
5. **The readable forward pass does not reach for the fast one:** nothing in ``MODEL`` outside
   ``fast/`` imports ``refdecode.model.fast``; only ``model.py`` chooses between them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "refdecode"

#: Modules that call the loops to dispatch a request; they import decode_loop's siblings by design.
DISPATCHERS = {"refdecode.generate", "refdecode.cli"}
#: The model side: the forward passes and what they load.
MODEL = {"refdecode.model.gpt2", "refdecode.model.kv_cache", "refdecode.model.checkpoint", "refdecode.model.config"}
MODEL_PACKAGES = {"refdecode.model.fast"}  # every module under these counts as MODEL too
#: Generation code (the loops, and every module importing a loop, are added to it by rule 4).
GENERATION = {"refdecode.generation_config", "refdecode.generation_output", "refdecode.processors.logits_process",
              "refdecode.processors.logits_warp", "refdecode.decoding.stopping_criteria", "refdecode.decoding.beam.beam_scorer",
              "refdecode.decoding.loop", "refdecode.decoding.randomness", "refdecode.generate", "refdecode.cli"}
#: The model object may use these generation modules (its default generation settings), nothing else.
MODEL_OBJECT = {"refdecode.model.modeling": {"refdecode.generation_config"}}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_modules() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
            for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = read_modules()


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
                if f"{target}.{alias.name}" in MODULES:  # `from . import sampling_draw`: the module itself
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


def in_model(m: str) -> bool:
    return m in MODEL or any(m == p or m.startswith(p + ".") for p in MODEL_PACKAGES)


def test_the_parser_sees_the_known_edges():
    """Guards the rules below against passing because the import parser found nothing."""
    assert "refdecode.decoding.loop" in G["refdecode.decoding.greedy"]
    assert "refdecode.model.gpt2" in G["refdecode.model.fast.forward"]
    assert "refdecode.model.fast" in G["refdecode.model.modeling"]
    assert {"refdecode.decoding.greedy", "refdecode.decoding.sampling", "refdecode.decoding.beam.beam_search", "refdecode.decoding.beam.group_beam_search",
            "refdecode.decoding.beam.constrained_beam_search", "refdecode.decoding.assisted_decoding"} <= LOOPS


def test_no_import_cycle():
    levels(G)  # raises naming the cycle


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


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
                    elif target in MODULES and private(alias.name):
                        bad.append(f"{name}:{node.lineno} imports {target}.{alias.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                    and private(node.attr):
                bad.append(f"{name}:{node.lineno} uses {bound[node.value.id]}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_decode_loops_are_siblings():
    bad = [f"{m} imports loop {other}" for m in LOOPS for other in closure(G, m) & LOOPS]
    assert not bad, "\n".join(bad)


def test_the_model_imports_no_generation_code():
    generation = GENERATION | LOOPS | {m for m in G if closure(G, m) & LOOPS}
    bad = [f"{m} reaches {sorted(closure(G, m) & generation)}" for m in G if in_model(m) and closure(G, m) & generation]
    for m, allowed in MODEL_OBJECT.items():
        reached = closure(G, m) & generation
        if not reached <= allowed:
            bad.append(f"{m} reaches {sorted(reached - allowed)} (may only use {sorted(allowed)})")
    assert not bad, "\n".join(bad)


def test_only_the_model_object_chooses_the_fast_forward_pass():
    bad = [m for m in G if in_model(m) and not m.startswith("refdecode.model.fast")
           and any(d == "refdecode.model.fast" or d.startswith("refdecode.model.fast.") for d in G[m])]
    assert not bad, bad


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
