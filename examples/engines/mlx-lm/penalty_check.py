r"""mlx-lm's presence penalty, frequency penalty and logit bias against the rule docs/processors.md names for it.

    OPENBLAS_NUM_THREADS=1 examples/engines/mlx-lm/env/bin/python examples/engines/mlx-lm/penalty_check.py

mlx-lm runs ``generate_step`` greedily (``make_sampler(temp=0.0)``) on each prompt alone, with
``make_logits_processors(logit_bias=..., presence_penalty=..., frequency_penalty=...)`` at their default context
sizes (20; a setting's ``window`` sets both), on the cached conversion of ``models/tiny-shakespeare-llama``
(``cache/``, written by adapter.py's ``converted_llama`` on first use). Its new tokens are compared token for token with
``refdecode.reference.engines.penalties.mlx_lm_rule`` replayed greedily on refdecode's logits (the last 20
tokens of prompt + generated; bias, then presence once per distinct token, then frequency per occurrence).
Writes penalty_check.json beside this script.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
sys.path.insert(0, str(HERE))

import mlx.core as mx  # noqa: E402
from importlib.metadata import version  # noqa: E402
from mlx_lm.generate import generate_step  # noqa: E402
from mlx_lm.sample_utils import make_logits_processors, make_sampler  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402

from adapter import converted_llama  # noqa: E402
from penalty_common import MODEL, check  # noqa: E402

_model = load_model(converted_llama(MODEL))[0]


def run(prompt: list[int], new: int, setting: dict) -> list[int]:
    options = {k: v for k, v in setting.items() if k != "window"}
    if "window" in setting:
        options.update(presence_context_size=setting["window"], frequency_context_size=setting["window"])
    processors = make_logits_processors(**options)
    return [int(t) for t, _ in generate_step(mx.array(prompt), _model, max_tokens=new,
                                             sampler=make_sampler(temp=0.0), logits_processors=processors)]


if __name__ == "__main__":
    sys.exit(check("mlx-lm", version("mlx-lm"), run, "mlx-lm", HERE / "penalty_check.json"))
