r"""Time transformers 4.38.2's TensorFlow generate on the GPT-2-124M-shaped checkpoint: greedy and beam-4, batch 1,
the fixed 8-token prompt, 64 new tokens, 1 warm-up + 5 timed runs each; prints one JSON line with the medians in
new tokens per second. TF runs one intra-op and one inter-op thread, eagerly (``model.generate`` as called).

    examples/engines/transformers-4.38.2-tf/env/bin/python examples/engines/transformers-4.38.2-tf/bench.py [--model DIR]

TF's generate has no min_new_tokens (FINDINGS TF2), so eos is kept out by ``min_length = 8 + 64`` (the same
thing for one unpadded prompt). The float32 folder is the adapter's (convert.py, cache/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
sys.path.insert(0, str(HERE))
from adapter import float32_folder  # noqa: E402  (sets TF's threads to 1)
from bench_common import NEW, PROMPT, bench_args, bench_modes, default_model  # noqa: E402

import tensorflow as tf  # noqa: E402
import transformers  # noqa: E402
from transformers import GenerationConfig, TFGPT2LMHeadModel  # noqa: E402


def main() -> None:
    args = bench_args(__doc__)
    model = TFGPT2LMHeadModel.from_pretrained(str(float32_folder(args.model or default_model())), from_pt=True)
    ids = tf.constant([PROMPT], dtype=tf.int32)
    mask = tf.ones_like(ids)
    out = {"engine": "transformers-tf", "version": transformers.__version__, "tensorflow": tf.__version__,
           "threads": 1, "note": "eager generate (no tf.function / XLA); eos held off by min_length (no min_new_tokens)"}

    def decode(beams: int) -> int:
        gen = GenerationConfig(max_new_tokens=NEW, min_length=len(PROMPT) + NEW, num_beams=beams, do_sample=False,
                               eos_token_id=50256, pad_token_id=50256)
        return int(model.generate(ids, attention_mask=mask, generation_config=gen).shape[1])

    out.update(bench_modes(decode, args.runs))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
