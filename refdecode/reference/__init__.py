"""Checking other implementations against refdecode: step traces, their comparison, and the conformance suite.

- ``trace.py``: :class:`~refdecode.reference.trace.TraceRecorder`, what every step computed, as JSON
  (``trace_schema.json``);
- ``diff.py`` + ``divergence.py``: ``refdecode diff``, the first step, row and stage where two decoders part,
  with a verdict;
- ``explain.py``: ``refdecode explain``, a decode's steps as tables;
- ``conformance/``: ``refdecode conformance export / check / serve``, language-neutral cases.

Tooling: it imports the library; no stage of the library imports it (the package's ``__init__`` re-exports
``TraceRecorder``; the CLI runs the subcommands).
"""
