"""``parameterized.expand`` for the scenario modules, shared by the NumPy shim and the torch one.

Written here because neither the test venv nor the oracle venv installs ``parameterized``. As there, each
parameter tuple becomes a test method of its own, named ``<test>_<i>_<first parameter>``.
"""

from __future__ import annotations

import sys
from typing import Any, Callable


def expand(params: list, name_func: Any = None, doc_func: Any = None, skip_on_empty: bool = False) -> Callable:
    def decorator(fn: Callable) -> None:
        class_body = sys._getframe(1).f_locals  # the namespace of the class being defined
        for i, param in enumerate(params):
            args = param if isinstance(param, tuple) else (param,)
            suffix = "".join(c if c.isalnum() else "_" for c in str(args[0])) if args else ""
            name = f"{fn.__name__}_{i}" + (f"_{suffix}" if suffix else "")

            def method(self: Any, _args: tuple = args) -> Any:
                return fn(self, *_args)

            method.__name__ = method.__qualname__ = name
            class_body[name] = method
        return None
    return decorator
