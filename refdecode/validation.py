r"""Argument checks at the door: one meaning of "integer", "float", "probability", "boolean" for the package.

Contract: every public entry point (``GenerationConfig``, ``generate``, the processors and warpers,
``GPT2Config``, the checkpoint and JSON readers, the beam scorer) checks what it is given with the
functions here, so a value means the same thing everywhere and a refusal reads the same way::

    `<name>` must be <what is allowed>, got <the value> (<its type>)

What each word means (the whole package uses these and nothing else):

==============  ==================================================================================
integer         a Python ``int`` or a NumPy integer (``np.int64(5)`` is 5); **not** ``bool``
                (``True`` is not a count), not ``5.0``. Returned as a Python ``int``.
float           a Python/NumPy integer or float (not ``bool``), **finite** unless the caller allows
                ``inf``; NaN is never accepted. Returned as a Python ``float``.
probability     a float in [0, 1].
boolean         ``True``/``False`` or ``np.True_``/``np.False_``; not ``1``, ``1.0`` or ``"false"``.
                Returned as a Python ``bool`` (so ``x is True`` holds afterwards).
==============  ==================================================================================

A value of the wrong *type* raises :class:`ArgumentTypeError`, which is both a ``TypeError`` (what it
is) and a ``ValueError`` (what the package has always raised for a bad argument, so ``except
ValueError`` keeps working); a value of the right type outside its range raises ``ValueError``.

More doors live here: :func:`check_allocation` (refuse, before allocating, a request larger than the
machine's memory, saying how much) and :func:`warn` (a warning names the caller's line). Files have theirs in
:mod:`refdecode.text.files`; the token-id rules of the generation fields are :mod:`refdecode.generation_rules`'s.

>>> check_integer("max_new_tokens", np.int64(5), minimum=1)
5
>>> check_integer("max_new_tokens", True, minimum=1)
Traceback (most recent call last):
...
refdecode.validation.ArgumentTypeError: `max_new_tokens` must be an integer >= 1, got True (bool)
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["warn", "ArgumentTypeError", "is_integer", "is_number", "is_boolean", "describe", "check_integer",
           "check_float", "check_probability", "check_boolean", "check_choice", "check_token_ids",
           "memory_limit", "check_allocation", "format_bytes",
           "is_float"]


class ArgumentTypeError(TypeError, ValueError):
    """A value of the wrong type (``do_sample="yes"``, ``max_new_tokens=True``): a TypeError that is also
    a ValueError, so callers catching either see it."""


# ----------------------------------------------------------------------------------------------------
# what the words mean
# ----------------------------------------------------------------------------------------------------


def _in_package(frame: Any) -> bool:
    """Is the frame refdecode's code? By its module's name, so that code a dataclass generated for the package
    (``GenerationConfig.__init__``, file ``<string>``) counts as the package's."""
    name = frame.f_globals.get("__name__", "")
    return name == "refdecode" or name.startswith("refdecode.")


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the caller's line: the first frame outside refdecode, however deep the
    package's own calls go (a fixed ``stacklevel`` points at refdecode's line as soon as one more call sits
    between the public function and the warning)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and _in_package(frame):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level + 1)


def is_integer(x: Any) -> bool:
    """A Python or NumPy integer, not a bool. ``is_integer(np.int64(3))`` is True, ``is_integer(True)`` False."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_number(x: Any) -> bool:
    """A Python/NumPy integer or float, not a bool (NaN and inf are numbers; ranges are checked apart)."""
    return is_integer(x) or isinstance(x, (float, np.floating))


def is_float(x: Any) -> bool:
    """A Python or NumPy float. transformers checks ``isinstance(x, float)``, so ``2`` is refused."""
    return isinstance(x, (float, np.floating))


def is_boolean(x: Any) -> bool:
    """``True``/``False`` or a NumPy bool; ``1``, ``1.0`` and ``"false"`` are not booleans."""
    return isinstance(x, (bool, np.bool_))


def describe(value: Any) -> str:
    """``value`` for an error message: its repr (cut at 60 characters) and its type, e.g. ``5.0 (float)``."""
    text = repr(value) if not isinstance(value, np.generic) else repr(value.item())
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _range_text(minimum: float | None, maximum: float | None, min_open: bool, max_open: bool) -> str:
    parts = []
    if minimum is not None:
        parts.append(f"{'>' if min_open else '>='} {minimum}")
    if maximum is not None:
        parts.append(f"{'<' if max_open else '<='} {maximum}")
    return " and ".join(parts)


def _in_range(x: float, minimum: float | None, maximum: float | None, min_open: bool, max_open: bool) -> bool:
    if minimum is not None and (x <= minimum if min_open else x < minimum):
        return False
    return not (maximum is not None and (x >= maximum if max_open else x > maximum))


# ----------------------------------------------------------------------------------------------------
# scalars
# ----------------------------------------------------------------------------------------------------


def check_integer(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
                  allow_none: bool = False) -> int | None:
    """``value`` as a Python int if it is an integer in [minimum, maximum], else ArgumentTypeError/ValueError.

    >>> check_integer("top_k", 0, minimum=0), check_integer("pad_token_id", None, allow_none=True)
    (0, None)
    >>> check_integer("num_beams", 0, minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: `num_beams` must be an integer >= 1, got 0 (int)
    """
    if value is None and allow_none:
        return None
    allowed = "an integer" + (f" {_range_text(minimum, maximum, False, False)}" if (minimum, maximum) != (None, None)
                              else "") + (" or None" if allow_none else "")
    if not is_integer(value):
        raise ArgumentTypeError(f"`{name}` must be {allowed}, got {describe(value)}")
    if not _in_range(int(value), minimum, maximum, False, False):
        raise ValueError(f"`{name}` must be {allowed}, got {describe(value)}")
    return int(value)


def check_float(name: str, value: Any, *, minimum: float | None = None, maximum: float | None = None,
                min_open: bool = False, max_open: bool = False, allow_inf: bool = False,
                allow_none: bool = False, integers: bool = True) -> float | None:
    """``value`` as a Python float if it is a number in the range, else ArgumentTypeError/ValueError.

    NaN is always refused; ``inf`` only with ``allow_inf``. ``integers=False`` refuses ``2`` where
    transformers checks ``isinstance(x, float)`` (the temperature).

    >>> check_float("temperature", 0.7, minimum=0.0, min_open=True)
    0.7
    >>> check_float("temperature", 0.0, minimum=0.0, min_open=True)
    Traceback (most recent call last):
    ...
    ValueError: `temperature` must be a finite number > 0.0, got 0.0 (float)
    """
    if value is None and allow_none:
        return None
    rng = _range_text(minimum, maximum, min_open, max_open)
    allowed = ("a number" if allow_inf else "a finite number") if integers else \
        ("a float" if allow_inf else "a finite float")
    allowed += (f" {rng}" if rng else "") + (" or None" if allow_none else "")
    ok_type = is_number(value) if integers else isinstance(value, (float, np.floating))
    if not ok_type:
        raise ArgumentTypeError(f"`{name}` must be {allowed}, got {describe(value)}")
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not allow_inf) or not _in_range(x, minimum, maximum, min_open, max_open):
        raise ValueError(f"`{name}` must be {allowed}, got {describe(value)}")
    return x


def check_probability(name: str, value: Any, *, allow_none: bool = False) -> float | None:
    """A number in [0, 1] as a Python float.

    >>> check_probability("top_p", True)
    Traceback (most recent call last):
    ...
    refdecode.validation.ArgumentTypeError: `top_p` must be a finite number >= 0.0 and <= 1.0, got True (bool)
    """
    return check_float(name, value, minimum=0.0, maximum=1.0, allow_none=allow_none)


def check_boolean(name: str, value: Any, *, allow_none: bool = False) -> bool | None:
    """A Python or NumPy bool, returned as a Python bool.

    >>> check_boolean("do_sample", np.True_) is True
    True
    >>> check_boolean("do_sample", "yes")
    Traceback (most recent call last):
    ...
    refdecode.validation.ArgumentTypeError: `do_sample` must be True or False, got 'yes' (str)
    """
    if value is None and allow_none:
        return None
    if not is_boolean(value):
        raise ArgumentTypeError(f"`{name}` must be True or False{' or None' if allow_none else ''}, "
                                f"got {describe(value)}")
    return bool(value)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices`` **by type and value** (``1.0`` is not ``True``), else ValueError.

    Booleans among the choices accept NumPy bools and return the Python bool.

    >>> check_choice("early_stopping", np.False_, (True, False, "never")) is False
    True
    >>> check_choice("early_stopping", 1.0, (True, False, "never"))
    Traceback (most recent call last):
    ...
    ValueError: `early_stopping` must be one of True, False, 'never', got 1.0 (float)
    """
    choices = tuple(choices)
    for choice in choices:
        if is_boolean(choice) and is_boolean(value) and bool(value) == choice:
            return choice
        if not is_boolean(choice) and type(value) is type(choice) and value == choice:
            return choice
    raise ValueError(f"`{name}` must be one of {', '.join(repr(c) for c in choices)}, got {describe(value)}")


def check_token_ids(name: str, value: Any, *, allow_list: bool = True, allow_none: bool = True,
                    vocab_size: int | None = None, no_token: bool = False) -> int | list[int] | None:
    """A token id (integer >= 0, below ``vocab_size`` if given) or, with ``allow_list``, a non-empty list of them.

    Returns a Python int or a list of Python ints (a tuple becomes a list). ``no_token`` (eos, pad) also accepts
    a negative id and ``[]``: no token matches them (transformers' tests set ``eos_token_id=-1``: never stop).

    >>> check_token_ids("eos_token_id", [np.int64(2), 3])
    [2, 3]
    >>> check_token_ids("pad_token_id", 7.9, allow_list=False)
    Traceback (most recent call last):
    ...
    refdecode.validation.ArgumentTypeError: `pad_token_id` must be a token id (an integer >= 0) or None, got 7.9 (float)
    """
    if value is None and allow_none:
        return None
    top = f" < {vocab_size}" if vocab_size is not None else ""
    allowed = f"a token id (an integer >= 0{top})" + (" or a non-empty list of them" if allow_list else "") + \
        (" or None" if allow_none else "")
    if no_token:
        allowed = allowed.replace("an integer >= 0", "an integer; negative: no token") + (", or []" if allow_list else "")
    items = list(value) if allow_list and isinstance(value, (list, tuple)) else [value]
    if (not items and not no_token) or not all(is_integer(i) for i in items):
        raise ArgumentTypeError(f"`{name}` must be {allowed}, got {describe(value)}")
    if not all((0 <= i or no_token) and (vocab_size is None or i < vocab_size) for i in items):
        raise ValueError(f"`{name}` must be {allowed}, got {describe(value)}")
    ids = [int(i) for i in items]
    return ids if allow_list and isinstance(value, (list, tuple)) else ids[0]


# ----------------------------------------------------------------------------------------------------
# resources
# ----------------------------------------------------------------------------------------------------


def memory_limit() -> int:
    """Bytes the package may ask for in one request: the machine's physical memory.

    Anything larger cannot succeed (it would swap for minutes or end in a MemoryError), so it is
    refused before allocation. Tests replace this function to check the refusal on small numbers.
    """
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): assume 16 GiB
        return 16 * 2**30


def format_bytes(n: float) -> str:
    """``1.5e9`` -> ``'1.4 GiB'``.

    >>> format_bytes(512), format_bytes(3 * 2**30)
    ('512 B', '3.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_allocation(what: str, nbytes: int, because: str) -> None:
    """ValueError if ``nbytes`` exceeds :func:`memory_limit`, saying what would need how much and why.

    >>> check_allocation("the KV cache", 2**70, "n_layer=10**8")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the KV cache would need 1048576.0 PiB (n_layer=10**8), more than this machine's memory (...)
    """
    limit = memory_limit()
    if nbytes > limit:
        raise ValueError(f"{what} would need {format_bytes(nbytes)} ({because}), more than this machine's memory "
                         f"({format_bytes(limit)})")
