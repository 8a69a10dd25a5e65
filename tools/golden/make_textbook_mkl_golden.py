"""torch's own ``sqrt(epsilon)`` and ``exp(-H)`` on the textbook eta rows: the two MKL values that decide eta's boundary rows.

transformers 4.38.2's ``EtaLogitsWarper`` computes ``eta = min(epsilon, sqrt(epsilon) * exp(-entropy))`` with
torch's elementwise ``sqrt`` and ``exp``, which on the CPU are MKL's ``vmsSqrt`` / ``vmsExp`` (``vmsSqrt`` is not
correctly rounded on about one float32 input in six on this project's reference CPU). refdecode computes both
bit for bit (refdecode/numerics/mkl_vml.py, ``torch_sqrt`` / ``torch_exp``). This file
records, for every eta row of tests/golden/textbook.npz (test and held-out sets), torch's value of both, so
tests/reference/conformance/test_cases_textbook.py can check refdecode's on every row.

Regenerate (needs tests/golden/textbook.npz first; torch 2.13.0 in the oracle venv)::

    .venv-oracle/bin/python tools/golden/make_textbook_mkl_golden.py
"""

from __future__ import annotations

import numpy as np
import torch
from torch.distributions import Categorical

from _oracle import GOLDEN, require_transformers, save_golden

FORMAT_VERSION = 1


def main() -> None:
    require_transformers("4.38.2")
    source = np.load(GOLDEN / "textbook.npz")
    arrays = {}
    for set_name in ("test", "heldout"):
        scores = source[f"{set_name}/eta/round/scores"]     # (N, V_max) float32 rows, padded past each row's vocab
        params = source[f"{set_name}/eta/round/param"]      # (N,) epsilon per row
        sqrt_eps, exp_neg_h = [], []
        for row, vocab, epsilon in zip(scores, source[f"{set_name}/eta/round/vocab"], params):
            s = torch.from_numpy(np.ascontiguousarray(row[:vocab][None]))   # (1, V), as the warper saw it
            eps = torch.tensor(float(epsilon))                 # as EtaLogitsWarper.__init__ stores it (float32)
            entropy = Categorical(logits=s).entropy()
            sqrt_eps.append(torch.sqrt(eps).item())
            exp_neg_h.append(torch.exp(-entropy).item())
        arrays[f"{set_name}/sqrt_epsilon"] = np.array(sqrt_eps, np.float32)
        arrays[f"{set_name}/exp_neg_entropy"] = np.array(exp_neg_h, np.float32)
    save_golden(GOLDEN / "textbook_eta_mkl.npz", arrays, FORMAT_VERSION, "tools/golden/make_textbook_mkl_golden.py",
                ".venv-oracle/bin/python tools/golden/make_textbook_mkl_golden.py")


if __name__ == "__main__":
    main()
