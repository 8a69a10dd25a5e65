r"""Flax's sampling distribution against transformers 4.38.2's (PyTorch) on the suite's sampling cases (FINDINGS FX8).

    examples/engines/transformers-4.38.2-flax/env/bin/python examples/engines/transformers-4.38.2-flax/rule_check.py \
        SUITE/cases/gpt2_sample.jsonl [...]

Flax's ``_sample`` draws with ``jax.random.categorical(prng_key, logits)`` (flax_utils.py:716): no option takes the
case's uniforms, so the adapter answers sampling ``unsupported``. What can be checked is the distribution it draws
from: here both libraries' own lists, built as their generate() builds them from the case's GenerationConfig
(Flax ``_get_logits_processor`` + ``_get_logits_warper``, flax_utils.py:475-539; PyTorch the same-named methods
of generation/utils.py), are applied to the SAME float32 logits (the PyTorch model's, so only the rules differ), at
every step of every row of the case's expected answer (transformers 4.38.2's draw), and the two softmaxes
compared: the tokens kept (finite) and the largest difference of a probability.

Two comparisons per case: ``warpers`` (temperature / top-k / top-p alone, the sampling rule) and ``all`` (the
processors too: Flax has no repetition penalty, no-repeat n-gram, min_new_tokens, FX3, and its min_length is
inclusive, FX4). A case with two eos ids is compared on the warpers only (Flax's min-length processor takes one
int, FX2). Prints one line per case and a summary; runs in this engine's env (torch + jax + transformers 4.38.2).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import FlaxGPT2LMHeadModel, GenerationConfig, GPT2LMHeadModel  # noqa: E402
from transformers.generation.flax_logits_process import FlaxLogitsProcessorList  # noqa: E402
from transformers.generation.logits_process import LogitsProcessorList  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert import float32_folder  # noqa: E402

transformers.logging.set_verbosity_error()
torch.set_num_threads(1)


def pipelines(folder: Path, config: dict, width: int):
    """(flax processors, flax warpers, torch processors, torch warpers) as each generate() builds them."""
    pt = GPT2LMHeadModel.from_pretrained(str(folder), torch_dtype=torch.float32)
    fx = FlaxGPT2LMHeadModel.from_pretrained(str(folder), from_pt=True)
    gen = GenerationConfig(**config)
    eos = config["eos_token_id"]
    one = eos if isinstance(eos, int) else (eos[0] if len(eos) == 1 else None)
    fgen = GenerationConfig(**{**config, "eos_token_id": one, "min_length": config["min_length"] if one is not None
                               else None, "max_length": width + config["max_new_tokens"]})
    fproc = fx._get_logits_processor(fgen, width, FlaxLogitsProcessorList()) if one is not None else None
    pproc = pt._get_logits_processor(gen, width, None, None, LogitsProcessorList())
    return pt, fproc, fx._get_logits_warper(fgen), pproc, pt._get_logits_warper(gen)


def softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


def check(case: dict, root: Path) -> dict:
    inp, rows = case["input"], case["expected"]["sequences"]
    config = dict(inp["config"])
    width = len(inp["input_ids"][0])
    folder = float32_folder((root / inp["model"]["path"]).resolve())
    pt, fproc, fwarp, pproc, pwarp = pipelines(folder, config, width)
    reps = int(config.get("num_return_sequences") or 1)
    masks = [m for m in inp["attention_mask"] for _ in range(reps)]
    eos = config["eos_token_id"] if isinstance(config["eos_token_id"], list) else [config["eos_token_id"]]
    found = {"warpers": [0, 0, 0.0], "all": [0, 0, 0.0]}        # steps, steps with another support, max |dp|
    for row, mask in zip(rows, masks):
        for t in range(width, len(row)):
            prefix = row[:t]
            ids = torch.tensor([prefix])
            full = np.array(mask + [1] * (t - width))
            positions = np.where(full == 1, np.cumsum(full) - 1, 1)      # as 4.38.2's generate() sets them
            with torch.no_grad():
                logits = pt(ids, attention_mask=torch.from_numpy(full[None]),
                            position_ids=torch.from_numpy(positions[None])).logits[:, -1].float()
            for kind in ("warpers", "all"):
                if kind == "all" and fproc is None:
                    continue
                p_scores = pwarp(ids, pproc(ids, logits.clone()) if kind == "all" else logits.clone())
                f_scores = jnp.asarray(logits.numpy())
                if kind == "all":
                    f_scores = fproc(jnp.asarray(ids.numpy()), f_scores, t)
                f_scores = fwarp(f_scores, f_scores, t)
                p, f = softmax(p_scores[0].numpy()), softmax(np.asarray(jax.device_get(f_scores))[0])
                rec = found[kind]
                rec[0] += 1
                rec[1] += int(not np.array_equal(p > 0, f > 0))
                rec[2] = max(rec[2], float(np.abs(p - f).max()))
            if row[t] in eos:
                break
    return found


def main() -> int:
    total = {"warpers": [0, 0, 0], "all": [0, 0, 0]}
    for path in map(Path, sys.argv[1:]):
        root = path.resolve().parent.parent
        for line in path.read_text().splitlines():
            case = json.loads(line)
            if not case["input"]["config"].get("do_sample"):
                continue
            found = check(case, root)
            cfg = case["input"]["config"]
            opts = {k: cfg[k] for k in ("temperature", "top_k", "top_p", "repetition_penalty", "no_repeat_ngram_size",
                                        "min_length", "min_new_tokens", "num_return_sequences", "eos_token_id")}
            print(f"{case['id']}: " + "; ".join(
                f"{k}: {s} steps, support differs at {d}, max |p_flax - p_torch| {m:.2e}"
                for k, (s, d, m) in found.items() if s) + f"  ({opts})")
            for k, (s, d, m) in found.items():
                total[k][0] += s
                total[k][1] += d
                total[k][2] = max(total[k][2], m)
    for k, (s, d, m) in total.items():
        print(f"{k}: {s} steps, support differs at {d}, max |p_flax - p_torch| {m:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
