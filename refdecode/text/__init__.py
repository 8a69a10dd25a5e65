"""Stage 1 and the end: text <-> token ids (prompt -> ``input_ids`` (B, T) int64; tokens -> text as they come).

- ``tokenizer.py``: :class:`~refdecode.text.tokenizer.Tokenizer`, GPT-2's byte-level BPE through ``tokenizers``
  (left-padded batches, decode);
- ``streamers.py``: :class:`~refdecode.text.streamers.TextStreamer` and friends, the text while it is generated;
- ``files.py``: the package's file readers (regular UTF-8 / JSON files, bounded; every error names the file), on
  the ground floor: the configuration readers use them too.

Nothing here knows about models or decoding.
"""
