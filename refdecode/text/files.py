r"""Reading the package's input files at the door: regular files only, UTF-8, JSON, bounded; every failure names the file.

Contract: :func:`open_regular_file` (a descriptor, refusing a FIFO, a device or a directory without blocking),
:func:`read_text_file` (the UTF-8 text of such a file, at most ``max_bytes``) and :func:`read_json_file` (its JSON
value, of the expected type). The configuration readers (``config.json``, ``generation_config.json``), the
tokenizer, traces and the conformance suite read through them. Nothing here knows what the files mean.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..validation import format_bytes

__all__ = ["MAX_JSON_BYTES", "open_regular_file", "read_text_file", "read_json_file"]


#: Largest configuration file read (GPT-2's tokenizer.json is 2 MB; a config.json is under 2 kB).
MAX_JSON_BYTES = 64 * 2**20


def open_regular_file(path: str | Path, what: str) -> int:
    """Open ``path`` read-only and return the file descriptor, refusing anything but a regular file.

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO
    or a device is refused instead of blocking, and no check-then-open race exists. A symlink whose
    target is missing is reported as such (``FileNotFoundError`` naming both).
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if path.is_symlink():
            raise FileNotFoundError(f"{what} {path} is a symbolic link to {os.readlink(path)!r}, which does not "
                                    "exist") from None
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {path} is a directory, not a file") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else \
            "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
            "not a regular file"
        raise ValueError(f"{what} {path} is {kind}; only a regular file can be read")
    return fd


def read_text_file(path: str | Path, what: str, max_bytes: int = MAX_JSON_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``max_bytes``); errors as :func:`read_json_file`."""
    path = Path(path)
    fd = open_regular_file(path, what)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"{what} {path} is {format_bytes(size)}, more than the {format_bytes(max_bytes)} "
                             "allowed")
        raw = f.read(max_bytes + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} {path} is not UTF-8 text (byte {e.start}: {raw[e.start:e.start + 1]!r})") from None


def read_json_file(path: str | Path, what: str, expect: type = dict, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON value in the regular file ``path`` (of type ``expect``); every failure names the file.

    FileNotFoundError for a missing file (or a dangling symlink, said so); ValueError for a FIFO, a
    device or a directory, a file over ``max_bytes``, bytes that are not UTF-8, text that is not JSON,
    or a top-level value that is not an ``expect`` (a dict: a JSON object).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "generation_config.json"; _ = p.write_text("[]")
    >>> read_json_file(p, "generation config")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: generation config .../generation_config.json must hold a JSON object, got a JSON array
    """
    path = Path(path)
    text = read_text_file(path, what, max_bytes)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise ValueError(f"{what} {path} is not valid JSON: nested too deeply") from None
    if not isinstance(value, expect):
        names = {dict: "a JSON object", list: "a JSON array", str: "a JSON string", int: "a JSON number",
                 float: "a JSON number", bool: "a JSON boolean", type(None): "null"}
        raise ValueError(f"{what} {path} must hold {names.get(expect, expect.__name__)}, got "
                         f"{names.get(type(value), type(value).__name__)}")
    return value
