"""Follow one request of the ``refdecode`` command through the package, with ``sys.setprofile``.

Counts, for one run of the command line (loading, generating and printing):

- ``merges``: how often the model's generation config is read to be merged with the request's options
  (calls of ``refdecode.generation_config.model_generation_config``), and ``updates``: how often options
  are merged into a config (calls of ``GenerationConfig.update``);
- ``modes``: how often the decoding mode is worked out (calls of ``generation_mode``);
- ``files``: the package files that run code for the request (a Python function of theirs is called;
  the package is imported first, so importing does not count);
- ``edges``: which request-layer module calls which (``cli.py -> generate.py``): a request goes one way,
  cli -> generate -> dispatch -> the loop, with the pipeline and the rules called by ``generate``.

Usage::

    python tools/profile_request.py                      # the two requests below, one line each
    python tools/profile_request.py --files -- "ROMEO:" --num-beams 4   # one request, and its files
    python tools/profile_request.py --root OTHER_CHECKOUT   # the same requests on another checkout's package

The defaults are ``refdecode "ROMEO:" --do-sample --top-p 0.9`` and ``refdecode "ROMEO:" --num-beams 4``
(with ``--max-new-tokens 8``, which changes no count: it only shortens the loop). ``tests/test_generate.py``
asserts that a request merges the config once and works out the mode once, with :func:`profile`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUESTS = {"sampling": ["ROMEO:", "--do-sample", "--top-p", "0.9", "--max-new-tokens", "8"],
            "beam search": ["ROMEO:", "--num-beams", "4", "--max-new-tokens", "8"]}
#: the request layer: the top-level modules a request passes through
REQUEST_LAYER = {"cli.py", "generate.py", "dispatch.py", "pipeline.py", "generation_config.py", "generation_rules.py"}
#: what is counted: (file of the package, function name) -> counter
COUNTED = {("generation_config.py", "model_generation_config"): "merges",
           ("generation_config.py", "update"): "updates"}


@dataclass
class Profile:
    """What one request ran: the counts and the package files (paths relative to the package's parent)."""

    merges: int = 0
    updates: int = 0
    modes: int = 0
    files: set[str] = field(default_factory=set)
    edges: set[tuple[str, str]] = field(default_factory=set)


def profile(argv: list[str], root: Path = ROOT) -> Profile:
    """Run ``refdecode ARGV`` (stdout and stderr captured) under a profiler; return what it counted.

    ``root``: the checkout whose package runs (it must be the first ``refdecode`` imported in this process).
    """
    sys.path.insert(0, str(root))
    import refdecode
    from refdecode import cli

    for name in ("refdecode.generate", "refdecode.reference.trace", "refdecode.model.modeling",
                 "refdecode.text.tokenizer"):
        importlib.import_module(name)  # what cli imports lazily: imports are not the request's work
    package = Path(refdecode.__file__).resolve().parent
    found = Profile()

    def watch(frame, event, arg):  # noqa: ANN001 -- sys.setprofile's signature
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if not path.is_relative_to(package):
            return
        found.files.add(str(path.relative_to(package.parent)))
        caller = Path(frame.f_back.f_code.co_filename) if frame.f_back is not None else path
        if caller != path and caller.parent == package and path.parent == package and \
                {caller.name, path.name} <= REQUEST_LAYER:
            found.edges.add((caller.name, path.name))
        name = frame.f_code.co_name
        if name == "generation_mode":
            found.modes += 1
        counter = COUNTED.get((path.name, name))
        if counter:
            setattr(found, counter, getattr(found, counter) + 1)

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.setprofile(watch)
        try:
            status = cli.main(list(argv))
        except SystemExit as e:  # a usage error
            status = e.code
        finally:
            sys.setprofile(None)
    if status != 0:
        raise RuntimeError(f"refdecode {' '.join(argv)} exited with {status}: {err.getvalue()}")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", action="store_true", help="also list the package files touched")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose package runs (default: this one)")
    ap.add_argument("argv", nargs="*", help="one request's arguments (after --); default: the two requests above")
    args = ap.parse_args()
    requests = {" ".join(args.argv): args.argv} if args.argv else REQUESTS
    for label, argv in requests.items():
        p = profile(argv, args.root)
        print(f"{label}: config merged {p.merges} (options merged by update {p.updates}), mode worked out "
              f"{p.modes}, {len(p.files)} package files; request layer: "
              + ", ".join(f"{a} -> {b}" for a, b in sorted(p.edges)))
        if args.files:
            print("  " + "\n  ".join(sorted(p.files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
