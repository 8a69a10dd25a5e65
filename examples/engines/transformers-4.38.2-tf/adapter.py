r"""transformers 4.38.2's TensorFlow generate (``TFGPT2LMHeadModel.generate``) answering ``refdecode conformance
check`` decode requests.

The same library as the control (examples/engines/transformers-4.38.2/adapter.py), the other framework: the
request's ``config`` becomes a ``GenerationConfig`` the control's way (every field passed as it is, none dropped),
and the call is the control's call, ``model.generate(input_ids, attention_mask=..., generation_config=...,
output_scores=True, return_dict_in_generate=True)``, run eagerly (as ``model.generate`` runs unless wrapped in
``tf.function``). So the only difference from the control is tf_utils.py / tf_logits_process.py and TF's kernels.

Model: on first use of a folder, convert.py writes a float32 copy to ``cache/<folder>-<sha256[:12]>/`` (the
shipped weights are float16); ``TFGPT2LMHeadModel.from_pretrained(copy, from_pt=True)`` loads it once per folder
and keeps it for every later case (TF's start-up and model build are slow). TF runs one intra-op and one
inter-op thread.

What it answers, untouched: ``sequences`` (int), ``scores`` (the per-step scores generate() records; left out for
the ``engines_*`` types unless REFDECODE_ENGINE_SCORES=1, and above ``MAX_SCORE_VALUES`` floats), and for
num_beams > 1 ``sequences_scores`` and ``beam_indices`` (TF's are as wide as the generated steps: right-padded
with -1 to the sequences' width, as the control does for transformers 5.x; no value is made up).

Two conversions of the request, both in the engine's own meaning:
  * a one-element ``eos_token_id`` list is passed as the int: TF's ``TFMinLengthLogitsProcessor`` takes only an
    int (tf_logits_process.py:213-217, a ValueError for a list), and a TF user with one eos passes an int;
  * with two or more eos ids and min_length > 0, or with min_length > max_length, generate() itself raises a
    ValueError where the PyTorch generate runs: the case is ``Unsupported`` with TF's message (FINDINGS TF4).

Unsupported: sampling (TF's ``sample`` draws with ``tf.random.stateless_categorical`` / ``tf.random.categorical``,
its own Philox stream: the case's uniforms cannot be given; rule_check.py checks TF's warped distribution
instead, FINDINGS TF7) and the speculative / contrastive types (not plain decodes). num_beam_groups > 1 is
answered: TF's generate has no group mode and runs plain beam search (FINDINGS TF6).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
from protocol import Unsupported, decode_request, serve  # noqa: E402

sys.path.insert(0, str(HERE.parent / "onnx-export"))
from export import weights_key  # noqa: E402  (the cache's key: <name>-<sha256(model.safetensors)[:12]>)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import transformers  # noqa: E402
from transformers import GenerationConfig, TFGPT2LMHeadModel  # noqa: E402

transformers.logging.set_verbosity_error()

MAX_SCORE_VALUES = int(os.environ.get("REFDECODE_ENGINE_MAX_SCORES", 2_000_000))
CACHE = Path(os.environ.get("TF_ENGINE_CACHE", HERE / "cache"))
_MODELS: dict[str, TFGPT2LMHeadModel] = {}
#: generate()'s own refusals of a config 4.38.2's PyTorch generate runs (FINDINGS TF4): the case is Unsupported
REFUSALS = ("`eos_token_id` has to be a positive integer",   # TFMinLengthLogitsProcessor: one int eos only
            "Unfeasable length constraints")                 # min_length > max_length: torch only warns


def float32_folder(src: Path) -> Path:
    """The cached float32 copy of a HF folder (convert.py), made on first use."""
    out = CACHE / weights_key(src)
    if not (out / "model.safetensors").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(HERE / "convert.py"), str(src), str(out)], check=True,
                       stdout=sys.stderr)
        print(f"transformers-4.38.2-tf: float32 copy {src} -> {out} in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
    return out


def model_for(spec: dict) -> TFGPT2LMHeadModel:
    if spec.get("kind") != "gpt2":
        raise Unsupported(f"model kind {spec.get('kind')!r}: this engine runs Hugging Face GPT-2 folders only")
    path = str(spec["path"])
    if path not in _MODELS:
        _MODELS[path] = TFGPT2LMHeadModel.from_pretrained(str(float32_folder(Path(path))), from_pt=True)
    return _MODELS[path]


def generation_config(config: dict) -> GenerationConfig:
    """The case's config as a GenerationConfig (the control's way), a one-element eos list given as its int."""
    config = dict(config)
    eos = config.get("eos_token_id")
    if isinstance(eos, list) and len(eos) == 1:
        config["eos_token_id"] = int(eos[0])
    return GenerationConfig(**config)


def answer(request: dict) -> dict:
    kind, inp, config = decode_request(request)
    if config.get("do_sample") or "uniforms" in inp:
        raise Unsupported("sampling: TF's sample() draws with tf.random.stateless_categorical / tf.random.categorical "
                          "(its own Philox stream, seed=); the case's uniforms cannot be given (the warped "
                          "distribution is checked by rule_check.py)")
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: not a plain decode (this adapter answers greedy and beam decodes)")
    model = model_for(inp["model"])
    ids = tf.constant(np.asarray(inp["input_ids"], dtype=np.int32))
    mask = tf.constant(np.asarray(inp["attention_mask"], dtype=np.int32))
    gen = generation_config(config)
    try:
        out = model.generate(ids, attention_mask=mask, generation_config=gen, output_scores=True,
                             return_dict_in_generate=True)
    except ValueError as err:
        if any(m in str(err) for m in REFUSALS):
            raise Unsupported(f"TF's generate raises for this config: ValueError: {err}") from None
        raise
    sequences = out.sequences.numpy()
    result: dict = {"sequences": sequences.tolist()}
    want_scores = not kind.startswith("engines_") or os.environ.get("REFDECODE_ENGINE_SCORES") == "1"
    if want_scores and out.scores is not None and sum(int(np.prod(s.shape)) for s in out.scores) <= MAX_SCORE_VALUES:
        result["scores"] = [s.numpy().astype(np.float32).tolist() for s in out.scores]
    if gen.num_beams > 1:
        result["sequences_scores"] = out.sequences_scores.numpy().astype(np.float32).tolist()
        width = sequences.shape[1]
        result["beam_indices"] = [row + [-1] * (width - len(row)) for row in out.beam_indices.numpy().tolist()]
    return result


if __name__ == "__main__":
    sys.exit(serve(answer))
