"""Golden logits and greedy ``generate`` of transformers **4.43.0** on a tiny Llama with ``rope_type: llama3``.

Llama 3.1's RoPE frequency scaling (``rope_scaling = {"rope_type": "llama3", ...}``) is newer than the pinned
transformers 4.38.2: the first release that has it is 4.43.0, so this script runs in a separate venv with
transformers==4.43.0 and the same torch 2.13.0 CPU, made by ``tools/golden/make_venv_443.sh``::

    sh tools/golden/make_venv_443.sh            # .venv-oracle-443/ (torch first, then transformers)
    PYTHONPATH=$PWD .venv-oracle-443/bin/python tools/golden/make_llama3_golden.py

It writes ``tests/golden/models/llama3-rope/`` (save_pretrained; head_dim 16, rope_theta 10000, factor 8,
low/high frequency factors 1 and 4, original_max_position_embeddings 256: of the 8 frequencies, 3 are kept,
1 is blended and 4 are divided by the factor) and ``tests/golden/llama3.npz``: a left-padded prefill, 6 cached
steps and a greedy ``generate``, in the formats of tools/golden/make_llama_golden.py (whose helpers it uses).
"""

from __future__ import annotations

import shutil

import numpy as np
import torch
import transformers.utils.logging as hf_logging
from _oracle import GOLDEN, TIE_GAP, left_pad, require_transformers, save_golden
from make_llama_golden import BASE, N_STEPS, forward_case, generate_case
from transformers import LlamaConfig, LlamaForCausalLM

FORMAT_VERSION = 1
SCRIPT = "tools/golden/make_llama3_golden.py"
REGENERATE = "PYTHONPATH=$PWD .venv-oracle-443/bin/python tools/golden/make_llama3_golden.py"
NAME = "llama3-rope"
# 4.43.0 reads rope_scaling["type"] even when "rope_type" is given (a default evaluated eagerly): both keys
CONFIG = dict(BASE, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
              rope_scaling={"rope_type": "llama3", "type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 256})


def main() -> None:
    require_transformers("4.43.0")
    hf_logging.set_verbosity_error()
    torch.manual_seed(43)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
    gen = torch.Generator().manual_seed(43)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            scale = 0.6 if ("embed" in pname or "lm_head" in pname) else 1.2 / p.shape[-1] ** 0.5
            p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen) if "norm" in pname
                    else scale * torch.randn(p.shape, generator=gen))
    target = GOLDEN / "models" / NAME
    shutil.rmtree(target, ignore_errors=True)
    model.save_pretrained(target, safe_serialization=True)
    rng = np.random.default_rng(43)
    for attempt in range(20):
        # long prompts: positions up to ~300 reach the rotations of the blended and divided frequencies
        prompts = [[int(t) for t in rng.integers(3, 128, size=n)] for n in (300, 296)]
        ids, mask = left_pad(prompts, 0)
        arrays: dict = {}
        fresh = LlamaForCausalLM.from_pretrained(target).eval()
        gap = forward_case(fresh, ids, mask, arrays, f"{NAME}/forward/")
        kw = dict(do_sample=False, max_new_tokens=8)
        gap = min(gap, generate_case(fresh, ids, mask, kw, 0, arrays, f"{NAME}/greedy/")[0])
        if gap >= TIE_GAP:
            break
    else:
        raise RuntimeError("no prompts without a near-tie in 20 attempts")
    cases = [dict(id=f"{NAME}/forward", model=NAME, mode="forward", steps=N_STEPS),
             dict(id=f"{NAME}/greedy", model=NAME, mode="greedy", kwargs=kw, torch_seed=0, n_draws=0)]
    path = GOLDEN / "llama3.npz"
    save_golden(path, arrays, FORMAT_VERSION, SCRIPT, REGENERATE, cases=cases, n_steps=N_STEPS)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB), smallest gap {gap:.2e}")


if __name__ == "__main__":
    main()
