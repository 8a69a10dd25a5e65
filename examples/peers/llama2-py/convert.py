r"""A Hugging Face Llama folder -> the llama2.c legacy files llama2-py 0.0.6 reads (``model.bin``, ``tokenizer.bin``).

    env/bin/python convert.py models/tiny-shakespeare-llama OUT_DIR

Writes with the project's exporter (``tools/llama2c/export.py``, llama2.c's ``legacy_export`` without torch) and
``--repeat-kv``: llama2-py 0.0.6 has no grouped-query attention (it reads wk and wv as dim x dim,
``llama2_py.py:53-54``, and reads head h's keys at offset h * head_size, :211, :228; FINDINGS P1), so the
key/value heads are written once per query head, as transformers' ``repeat_kv`` uses them: the same model. Then
reads both files back with llama2-py's own readers (``checkpoint_init_weights``, ``tokenizer_init``) and checks
that every float was consumed. (llama2-py has no exporter of its own.)
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tools" / "llama2c"))
import export  # noqa: E402


def load(out: Path):
    """(Config, TransformerWeights, vocab) read by llama2-py's own code (llama2_py.py:387-414's steps)."""
    import llama2_py as l2

    with open(out / "model.bin", "rb") as f:
        conf = l2.Config(*struct.unpack("7i", f.read(struct.calcsize("7i"))))
        shared = 1 if conf.vocab_size > 0 else 0
        conf.vocab_size = abs(conf.vocab_size)
        weights = l2.TransformerWeights()
        l2.checkpoint_init_weights(weights, conf, f, shared, os.path.getsize(out / "model.bin"))
        left = len(f.read())
    if left:
        raise ValueError(f"{out / 'model.bin'}: {left} bytes left after llama2-py's reader")
    with open(out / "tokenizer.bin", "rb") as f:
        vocab, _, _ = l2.tokenizer_init(conf, f)
    return conf, weights, vocab


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: convert.py HF_LLAMA_FOLDER OUT_DIR")
    export.export(Path(sys.argv[1]), Path(sys.argv[2]), repeat_kv=True)
    conf, _, vocab = load(Path(sys.argv[2]))
    print(f"wrote {sys.argv[2]}: dim {conf.dim}, {conf.n_layers} layers, {conf.n_heads} heads, vocab {len(vocab)}")
