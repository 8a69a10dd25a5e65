r"""Time transformers 4.38.2's Flax generate on the GPT-2-124M-shaped checkpoint: greedy and beam-4, batch 1, the
fixed 8-token prompt, 64 new tokens, 1 warm-up + 5 timed runs each; prints one JSON line with the medians in new
tokens per second. JAX on the CPU, float32, XLA single-threaded (the adapter's settings).

    examples/engines/transformers-4.38.2-flax/env/bin/python examples/engines/transformers-4.38.2-flax/bench.py [--model DIR]

Two figures per mode:
  * ``greedy_tok_s`` / ``beam4_tok_s``: ``jax.jit(generate)`` (the documented way to run Flax generate fast: the
    whole decode one XLA program, compiled at the warm-up call, then reused);
  * ``greedy_call_tok_s`` / ``beam4_call_tok_s``: a plain ``model.generate(...)`` call as the adapter makes it;
    Flax traces and compiles its ``lax.while_loop`` again at every call, so this includes XLA's compile time.
Flax has no min_new_tokens (FINDINGS FX3): ``min_length = T + 64 = max_length`` keeps eos out of every step
(FX4: eos masked while cur_len <= min_length), so every decode is 64 tokens long.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
sys.path.insert(0, str(HERE))
from bench_common import NEW, PROMPT, bench_args, default_model, tok_per_s  # noqa: E402

import flax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import transformers  # noqa: E402
from transformers import FlaxGPT2LMHeadModel, GenerationConfig  # noqa: E402

from convert import float32_folder  # noqa: E402


def main() -> None:
    args = bench_args(__doc__)
    transformers.logging.set_verbosity_error()
    folder = float32_folder(args.model or default_model())
    model = FlaxGPT2LMHeadModel.from_pretrained(str(folder), from_pt=True, dtype=jnp.float32)
    ids = jnp.array([PROMPT], dtype=jnp.int32)
    mask = jnp.ones_like(ids)
    out = {"engine": "transformers-flax", "version": transformers.__version__, "jax": jax.__version__,
           "flax": flax.__version__, "threads": 1}
    for name, beams in (("greedy", 1), ("beam4", 4)):
        gen = GenerationConfig(max_new_tokens=NEW, min_length=len(PROMPT) + NEW, num_beams=beams, do_sample=False,
                               eos_token_id=50256, pad_token_id=50256)

        def call(ids, mask, gen=gen):
            return model.generate(ids, generation_config=gen, attention_mask=mask).sequences

        jitted = jax.jit(call)
        for label, fn in ((name, jitted), (f"{name}_call", call)):
            def once(fn=fn) -> None:
                seq = jax.device_get(fn(ids, mask))
                assert seq.shape == (1, len(PROMPT) + NEW) and 50256 not in seq[0, len(PROMPT):].tolist(), seq

            out[f"{label}_tok_s"] = tok_per_s(label, once, args.runs if label == name else 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
