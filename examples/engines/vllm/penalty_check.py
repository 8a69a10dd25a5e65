r"""vLLM's presence penalty, frequency penalty and logit bias against the rule docs/processors.md names for it.

    OPENBLAS_NUM_THREADS=1 examples/engines/vllm/env/bin/python examples/engines/vllm/penalty_check.py

vLLM (in-process, one thread, the adapter's ``LLM`` on the cached float32 folder of ``models/tiny-shakespeare-llama``
in ``cache/``: adapter.py's ``engine``; starting it takes minutes) decodes each prompt alone with
``SamplingParams(temperature=0, ignore_eos=True, frequency_penalty=..., presence_penalty=..., logit_bias=...)``.
Its new tokens are compared token for token with ``refdecode.reference.engines.penalties.openai_rule`` (vLLM's
``apply_penalties``: the generated tokens only, the sign ignored) replayed greedily on refdecode's logits.
Writes penalty_check.json beside this script.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from adapter import engine  # noqa: E402  (sets vLLM's environment: in-process, one thread)
from penalty_common import MODEL, check  # noqa: E402

import vllm  # noqa: E402
from vllm import SamplingParams, TokensPrompt  # noqa: E402

_llm = engine({"kind": "llama", "path": str(MODEL)})[0]


def run(prompt: list[int], new: int, setting: dict) -> list[int]:
    params = SamplingParams(temperature=0.0, max_tokens=new, ignore_eos=True, **setting)
    out = _llm.generate([TokensPrompt(prompt_token_ids=prompt)], params, use_tqdm=False)
    return list(out[0].outputs[0].token_ids)


if __name__ == "__main__":
    sys.exit(check("vllm", vllm.__version__, run, "vllm", HERE / "penalty_check.json", window=False))
