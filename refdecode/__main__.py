"""``python -m refdecode ...``: the same as the ``refdecode`` command (see :mod:`refdecode.cli`)."""

import sys

from .cli import main

sys.exit(main())
