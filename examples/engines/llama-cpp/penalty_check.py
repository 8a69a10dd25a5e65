r"""llama.cpp's presence penalty, frequency penalty and logit bias against the rule docs/processors.md names for it.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python examples/engines/llama-cpp/penalty_check.py

llama.cpp runs through node-llama-cpp (this folder's node_modules, made by setup.sh): ``penalty_check.mjs`` decodes
each prompt alone, greedily, with llama.cpp's penalties sampler over the prompt and the generated tokens (a window
of 64, llama.cpp's default ``penalty_last_n``, as llama-server feeds it) and its logit-bias sampler, on the cached
GGUF of ``models/tiny-shakespeare-llama`` (``cache/``, written by engine.mjs on first use). Its new tokens are
compared token for token with ``refdecode.reference.engines.penalties.llama_cpp_rule`` replayed greedily on
refdecode's logits. Runs with any Python that has NumPy and the checkout (the repository's .venv); writes
penalty_check.json beside this script.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))

from penalty_common import MODEL, NEW_TOKENS, PROMPT_IDS, SETTINGS, check  # noqa: E402

VERSION = "node-llama-cpp " + json.loads((HERE / "node_modules/node-llama-cpp/package.json").read_text())["version"]


def engine_tokens() -> dict:
    """Every (prompt, setting) decoded in one node process: {(tuple(prompt), repr(setting)): ids}."""
    jobs = [dict(prompt=p, maxNewTokens=NEW_TOKENS, frequencyPenalty=s.get("frequency_penalty", 0.0),
                 presencePenalty=s.get("presence_penalty", 0.0), window=s.get("window", 64),
                 logitBias={str(t): b for t, b in s.get("logit_bias", {}).items()} or None)
            for s in SETTINGS for p in PROMPT_IDS]
    done = subprocess.run(["node", str(HERE / "penalty_check.mjs"), str(MODEL)], input=json.dumps(jobs),
                          capture_output=True, text=True, check=True, cwd=HERE)
    ids = json.loads(done.stdout.strip().splitlines()[-1])
    return {(tuple(p), repr(s)): row for (s, p), row in zip(((s, p) for s in SETTINGS for p in PROMPT_IDS), ids)}


_TOKENS = engine_tokens()


def run(prompt: list[int], new: int, setting: dict) -> list[int]:
    return _TOKENS[(tuple(prompt), repr(setting))]


if __name__ == "__main__":
    sys.exit(check("llama.cpp", VERSION, run, "llama.cpp", HERE / "penalty_check.json"))
