"""Golden outputs of ``MinPLogitsWarper`` (``min_p``) -> tests/golden/min_p.npz.

min-p sampling is newer than the pinned transformers 4.38.2: the first release that has it is
**4.41.0** (4.39.0 and 4.40.0 do not), so this script runs in a separate venv with
transformers==4.41.0 and the same torch 2.13.0 CPU::

    python3 -m venv .venv-tf441 && .venv-tf441/bin/pip install torch==2.13.0 transformers==4.41.0
    PYTHONPATH=$PWD .venv-tf441/bin/python tools/golden/make_min_p_golden.py

It writes standalone cases (random scores of every kind, ``min_tokens_to_keep`` 1..5, chains with
temperature / top-k / top-p as 4.41's ``_get_logits_warper`` orders them) and whole ``generate``
cases (sample and beam_sample with the recorded multinomial draws) on the committed tiny
checkpoints, in the formats of tools/golden/make_processors_more_golden.py (whose helpers it uses).
"""

from __future__ import annotations

import sys
from pathlib import Path

import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_processors_more_golden import GOLDEN, KINDS, Cases, decode_cases, load_models  # noqa: E402

REGENERATE = "PYTHONPATH=$PWD .venv-tf441/bin/python tools/golden/make_min_p_golden.py"
SCRIPT = "tools/golden/make_min_p_golden.py"


def min_p_cases(c: Cases) -> None:
    r = c.rng
    for min_p in [0.0, 0.01, 0.05, 0.1, 0.3, 0.7, 1.0]:
        for m in [1, 2, 5]:
            for kind in KINDS + ["allneginf"]:
                c.add("min_p", [["MinPLogitsWarper", {"min_p": min_p, "min_tokens_to_keep": m}]],
                      c.inputs(int(r.integers(1, 4)), int(r.choice([4, 16, 33])), kind))
    c.add("min_p/filter_value", [["MinPLogitsWarper", {"min_p": 0.2, "filter_value": -100.0}]],
          c.inputs(2, 12, "normal"))
    c.add("min_p/gpt2_vocab", [["MinPLogitsWarper", {"min_p": 0.05}]], c.inputs(1, 50257, "flat", length=1))
    for t, k, p, min_p in [(0.7, 20, 0.95, 0.1), (1.5, 0, 1.0, 0.05), (1.0, 8, 0.8, 0.2)]:
        for kind in ["normal", "neginf", "flat"]:
            spec = [["TemperatureLogitsWarper", {"temperature": t}]]
            spec += [["TopKLogitsWarper", {"top_k": k}]] if k else []
            spec += [["TopPLogitsWarper", {"top_p": p}]] if p < 1 else []
            spec += [["MinPLogitsWarper", {"min_p": min_p}]]
            c.add("min_p_chain", spec, c.inputs(int(r.integers(1, 4)), 24, kind))


def main() -> None:
    assert transformers.__version__ == "4.41.0", transformers.__version__
    import transformers.utils.logging as hf_logging
    hf_logging.set_verbosity_error()
    c = Cases(seed=41)
    min_p_cases(c)
    c.save(GOLDEN / "min_p.npz", SCRIPT, REGENERATE)
    decode_cases(GOLDEN / "decode_min_p.npz", ["min_p"], lambda feature: ["sample", "beam_sample"], 6, 4141,
                 load_models(), SCRIPT, REGENERATE)


if __name__ == "__main__":
    sys.exit(main())
