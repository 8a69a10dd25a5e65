"""Run tests/transformers_api/ on transformers 4.38.2 itself: the proof that each scenario is 4.38.2's behaviour.

    .venv-oracle/bin/python tools/transformers_api/run_against_4382.py [-v] [--json FILE]

(any venv with torch 2.13.0 and transformers 4.38.2; never the package's test venv). The scenario files are
loaded unchanged; two imports are pointed elsewhere before they load:

- ``refdecode``: a module whose names are transformers 4.38.2's (``refdecode.TopPLogitsWarper`` is
  ``transformers.generation.TopPLogitsWarper``, ``refdecode._speculative_sampling`` is
  ``transformers.generation.utils._speculative_sampling``, ...); a name 4.38.2 does not have is an error;
- ``transformers_api.shim``: tools/transformers_api/torch_shim.py (real torch).

Prints one line per scenario module (run, passed, failed, skipped) and each skip's reason; exit status 1 if
any scenario fails or errs on 4.38.2, 0 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import io
import importlib.util
import json
import sys
import types
import unittest
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "transformers_api"
MODULES = ["test_logits_process", "test_beam_search", "test_beam_constraints", "test_stopping_criteria",
           "test_streamers", "test_configuration_utils", "test_utils"]
# where transformers 4.38.2 keeps each name the scenarios import from refdecode (first hit wins)
SOURCES = ["transformers.generation", "transformers.generation.logits_process", "transformers.generation.utils",
           "transformers.generation.beam_search", "transformers.generation.beam_constraints",
           "transformers.generation.stopping_criteria", "transformers.generation.streamers", "transformers"]


def transformers_as_refdecode() -> types.ModuleType:
    """A stand-in ``refdecode`` module that answers every name with transformers 4.38.2's object."""
    import transformers

    assert transformers.__version__ == "4.38.2", f"needs transformers 4.38.2, found {transformers.__version__}"
    proxy = types.ModuleType("refdecode")

    def lookup(name: str):
        for source in SOURCES:
            module = importlib.import_module(source)
            if name in vars(module) or hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"transformers 4.38.2 has no {name!r} (a scenario imports it from refdecode)")

    proxy.__getattr__ = lookup
    return proxy


def install_imports() -> None:
    sys.path.insert(0, str(SCENARIOS.parent))  # tests/: transformers_api.params
    sys.modules["refdecode"] = transformers_as_refdecode()
    spec = importlib.util.spec_from_file_location("transformers_api.shim", ROOT / "tools" / "transformers_api" / "torch_shim.py")
    shim = importlib.util.module_from_spec(spec)
    sys.modules["transformers_api.shim"] = shim
    spec.loader.exec_module(shim)


def load(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"scenarios_{name}", SCENARIOS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # every class and function the scenarios got from "refdecode" must be transformers' own
    for attr, value in vars(module).items():
        origin = getattr(value, "__module__", "") or ""
        if origin.split(".")[0] == "refdecode":
            raise RuntimeError(f"{name}.{attr} comes from refdecode ({origin}), not from transformers 4.38.2")
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per scenario")
    parser.add_argument("--json", type=Path, help="also write the counts to this file")
    args = parser.parse_args(argv)
    install_imports()

    totals, report, failed = {"run": 0, "passed": 0, "failed": 0, "skipped": 0}, {}, False
    for name in [m for m in MODULES if (SCENARIOS / f"{m}.py").exists()]:
        suite = unittest.defaultTestLoader.loadTestsFromModule(load(name))
        stream = sys.stderr if args.verbose else io.StringIO()
        result = unittest.TextTestRunner(verbosity=2 if args.verbose else 1, stream=stream).run(suite)
        if not args.verbose and (result.failures or result.errors):
            print(stream.getvalue(), file=sys.stderr)
        bad = len(result.failures) + len(result.errors)
        counts = {"run": result.testsRun, "passed": result.testsRun - bad - len(result.skipped), "failed": bad,
                  "skipped": len(result.skipped)}
        report[name] = {**counts, "skips": sorted({str(reason) for _, reason in result.skipped}),
                        "failures": [str(test) for test, _ in result.failures + result.errors]}
        for key in totals:
            totals[key] += counts[key]
        failed |= bad > 0
    print(f"{'module':28} {'run':>4} {'passed':>6} {'failed':>6} {'skipped':>7}")
    for name, r in report.items():
        print(f"{name:28} {r['run']:4} {r['passed']:6} {r['failed']:6} {r['skipped']:7}")
        for reason in r["skips"]:
            print(f"    skipped: {reason}")
        for test in r["failures"]:
            print(f"    FAILED on 4.38.2: {test}")
    print(f"{'total':28} {totals['run']:4} {totals['passed']:6} {totals['failed']:6} {totals['skipped']:7}")
    if args.json:
        args.json.write_text(json.dumps({"transformers": "4.38.2", "totals": totals, "modules": report}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
