r"""OpenVINO GenAI's presence and frequency penalties against the rule docs/processors.md names for it.

    OPENBLAS_NUM_THREADS=1 examples/engines/openvino-genai/env/bin/python examples/engines/openvino-genai/penalty_check.py

GenAI runs greedily (``GenerationConfig``: ``max_new_tokens``, ``ignore_eos``, ``presence_penalty``,
``frequency_penalty``; it has no logit bias) on each prompt alone, with the adapter's ``LLMPipeline`` properties
(float32 KV cache and inference, one thread), on the cached export of ``models/tiny-shakespeare-llama``
(``cache/``, written by the adapter's ``convert.py`` on first use). Its new tokens are compared token for token
with ``refdecode.reference.engines.penalties.openvino_genai_rule`` replayed greedily on refdecode's logits (the
generated tokens only; a logit >= 0 loses the penalty, a negative one gains it; presence, then frequency).
Writes penalty_check.json beside this script.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
sys.path.insert(0, str(HERE.parent / "onnx-export"))

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import openvino_genai as og  # noqa: E402
from export import weights_key  # noqa: E402

from penalty_common import MODEL, check  # noqa: E402

PROPERTIES = {"KV_CACHE_PRECISION": "f32", "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1,
              "NUM_STREAMS": 1}    # adapter.py's
FOLDER = HERE / "cache" / weights_key(MODEL)
if not (FOLDER / "openvino_model.xml").is_file():
    sys.exit(f"no export in {FOLDER}: run the adapter once on {MODEL} (examples/engines/openvino-genai/run)")
_pipe = og.LLMPipeline(str(FOLDER), "CPU", **PROPERTIES)


def run(prompt: list[int], new: int, setting: dict) -> list[int]:
    gc = og.GenerationConfig()
    gc.max_new_tokens = new
    gc.eos_token_id = 50256
    gc.ignore_eos = True
    gc.presence_penalty = float(setting.get("presence_penalty", 0.0))
    gc.frequency_penalty = float(setting.get("frequency_penalty", 0.0))
    ids = np.asarray([prompt], dtype=np.int64)
    result = _pipe.generate(og.TokenizedInputs(ov.Tensor(ids), ov.Tensor(np.ones_like(ids))), gc)
    return [int(t) for t in result.tokens[0]]


if __name__ == "__main__":
    sys.exit(check("openvino-genai", og.__version__, run, "openvino-genai", HERE / "penalty_check.json", bias=False,
                   window=False))
