"""Golden outputs of transformers 4.38.2 for the conformance suite's ``engines`` group (cases_engines.py).

Writes ``tests/golden/engines.npz``: for every setting of ``engine_settings`` (greedy and beam search) and every
prompt of ``PROMPTS``, the sequences and (beam search) sequences_scores of
``GPT2LMHeadModel.generate(prompt, **setting)`` on the shipped model ``models/tiny-shakespeare``: the cases
the suite draws from them then expect what transformers returned (tests/reference/conformance/
test_cases_engines.py). Keys ``g{setting:02d}p{prompt}/sequences`` (greedy), ``b{setting:02d}p{prompt}/...``
(beam search); ``meta`` (JSON) holds versions, the regenerate command and the settings.

Run from the repository root in the oracle venv (torch==2.13.0, transformers==4.38.2)::

    .venv-oracle/bin/python tools/golden/make_engines_golden.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import torch
from _oracle import ROOT, save_golden  # run from the repository root
from transformers import GPT2LMHeadModel

sys.path.insert(0, str(ROOT))  # the settings and prompts are the suite's own (numpy-only module)
from refdecode.reference.conformance.cases_engines import PROMPTS, SHIPPED, engine_settings  # noqa: E402

FORMAT_VERSION = 1
REGENERATE = ".venv-oracle/bin/python tools/golden/make_engines_golden.py"
MAX_NEW_TOKENS = {"g": 24, "b": 12}  # as cases_engines registers them


def main() -> None:
    model = GPT2LMHeadModel.from_pretrained(SHIPPED).eval()
    arrays: dict[str, np.ndarray] = {}
    settings_meta = {}
    for key, beams in (("g", False), ("b", True)):
        settings = [s for s, _ in engine_settings(beams, [198], MAX_NEW_TOKENS[key])]
        settings_meta[key] = settings
        for i, setting in enumerate(settings):
            for p, ids in enumerate(PROMPTS.values()):
                prompt = torch.tensor([ids])
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                         return_dict_in_generate=True, output_scores=True, **setting)
                arrays[f"{key}{i:02d}p{p}/sequences"] = out.sequences.numpy().astype(np.int32)
                if beams:
                    arrays[f"{key}{i:02d}p{p}/sequences_scores"] = out.sequences_scores.numpy()
            print(key, i, setting, flush=True)
    save_golden(ROOT / "tests" / "golden" / "engines.npz", arrays, FORMAT_VERSION, "tools/golden/make_engines_golden.py",
                REGENERATE, model="models/tiny-shakespeare", prompts=list(PROMPTS), settings=settings_meta)


if __name__ == "__main__":
    main()
