r"""Progress of long conformance work on a terminal: cases done of total, rate, time left; nothing when piped.

Contract: :class:`Progress` draws a bar with `tqdm <https://tqdm.github.io>`_ (the ``scale`` extra:
``pip install "refdecode[scale]"``) on standard error **when standard error is a terminal**, and is silent
otherwise: ``check ... > verdicts.txt 2> log.txt``, ``check ... 2>&1 | tee``, CI and the tests see only the verdict
lines. :meth:`Progress.say` prints a verdict line (to standard output) without tearing the bar when both share the
terminal. Without tqdm a terminal gets one line saying how to have the bar, then the plain output. ``check``,
``export``, ``fresh`` and ``examples/engines/run_all.sh`` use it; nothing here knows what a case is.

tqdm's bar reads ``check: 37%|###7      | 890/2411 [01:02<01:47, 14.2case/s]``: done of total, elapsed, time left
(from the rate, smoothed), rate.
"""

from __future__ import annotations

import sys
from typing import IO, Any

__all__ = ["Progress", "shown"]

INSTALL_HINT = 'progress bars need tqdm: pip install "refdecode[scale]"'


def shown(stream: IO[str]) -> bool:
    """Is ``stream`` a terminal (and so may carry a bar)?"""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or an unusual stream
        return False


class Progress:
    """A bar of ``total`` units (None: unknown, no time left) named ``what``, or nothing; a context manager."""

    def __init__(self, total: int | None, what: str, unit: str = "case", stream: IO[str] | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.bar: Any = None
        if not shown(self.stream):
            return
        try:
            from tqdm import tqdm
        except ImportError:
            print(INSTALL_HINT, file=self.stream, flush=True)
            return
        self.bar = tqdm(total=total, desc=what, unit=unit, file=self.stream, dynamic_ncols=True, smoothing=0.05)

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def describe(self, text: str) -> None:
        """Name what is being done now (the bar's label)."""
        if self.bar is not None:
            self.bar.set_description(text, refresh=False)

    def say(self, line: str, out: IO[str]) -> None:
        """Print ``line`` to ``out``; when the bar shares the terminal, it is cleared and drawn again below."""
        if self.bar is not None and shown(out):
            self.bar.write(line, file=out)
            out.flush()
        else:
            print(line, file=out, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
