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

Then refdecode's profile warpers (``warpers="flax"``, ``refdecode.reference.engines.sampling.flax_chain``, imported
from this checkout) against Flax's own on the same rows, and on ``--synthetic N`` rows with many ties (logits
rounded to a few values, random temperature / top_k / top_p): the warped scores must be equal, -inf where Flax's
are.

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
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from convert import float32_folder  # noqa: E402
from transformers.generation.flax_logits_process import (  # noqa: E402
    FlaxTemperatureLogitsWarper, FlaxTopKLogitsWarper, FlaxTopPLogitsWarper)

from refdecode.reference.engines.sampling import flax_chain  # noqa: E402

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
    found = {"warpers": [0, 0, 0.0], "all": [0, 0, 0.0],         # steps, steps with another support, max |dp|
             "refdecode": [0, 0, 0.0]}                              # steps, steps refdecode's chain differs, -
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
            c = {k: config.get(k) for k in ("temperature", "top_k", "top_p")}
            same = same_as_refdecode(logits[0].numpy(), float(c["temperature"] if c["temperature"] is not None else 1.0),
                                     int(c["top_k"] or 0), float(c["top_p"] if c["top_p"] is not None else 1.0))
            found["refdecode"][0] += 1
            found["refdecode"][1] += int(not same)
            if row[t] in eos:
                break
    return found


def flax_warpers(temperature: float, top_k: int, top_p: float) -> FlaxLogitsProcessorList:
    """The list Flax's ``_get_logits_warper`` builds (flax_utils.py:482-487)."""
    out = FlaxLogitsProcessorList()
    if temperature != 1.0:
        out.append(FlaxTemperatureLogitsWarper(temperature))
    if top_k != 0:
        out.append(FlaxTopKLogitsWarper(top_k=top_k, min_tokens_to_keep=1))
    if top_p < 1.0:
        out.append(FlaxTopPLogitsWarper(top_p=top_p, min_tokens_to_keep=1))
    return out


def same_as_refdecode(row: np.ndarray, temperature: float, top_k: int, top_p: float) -> bool:
    """Flax's warped row (1, V) equals refdecode's ``flax_chain``: the same -inf, the same values."""
    flax = np.asarray(jax.device_get(flax_warpers(temperature, top_k, top_p)(
        None, jnp.asarray(row[None], dtype=jnp.float32), 0)))[0]
    ours = flax_chain(row.astype(np.float32), temperature, top_k, top_p)
    return bool(np.array_equal(np.isinf(flax), np.isinf(ours)) and np.array_equal(flax[np.isfinite(flax)],
                                                                                    ours[np.isfinite(ours)]))


def torch_support(row: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """The tokens 4.38.2's PyTorch warpers keep (utils.py ``_get_logits_warper``: temperature, top-k, top-p)."""
    from transformers.generation.logits_process import (TemperatureLogitsWarper, TopKLogitsWarper,
                                                        TopPLogitsWarper)
    scores = torch.from_numpy(row.astype(np.float32)[None])
    if temperature != 1.0:
        scores = TemperatureLogitsWarper(temperature)(None, scores)
    if top_k != 0:
        scores = TopKLogitsWarper(top_k=top_k, min_tokens_to_keep=1)(None, scores)
    if top_p < 1.0:
        scores = TopPLogitsWarper(top_p=top_p, min_tokens_to_keep=1)(None, scores)
    return np.isfinite(scores[0].numpy())


def synthetic(n: int, seed: int = 0) -> tuple[int, int, int]:
    """n rows with ties (logits rounded to steps of 0.5, V in {8, 50, 128}), random warpers: (rows, refdecode's
    chain equal to Flax's, 4.38.2's kept set different from Flax's)."""
    rng = np.random.default_rng(seed)
    equal = other = 0
    for _ in range(n):
        row = np.round(rng.normal(0, 2, int(rng.choice([8, 50, 128]))) * 2) / 2
        temperature = float(rng.choice([1.0, 0.7, 1.5]))
        top_k = int(rng.choice([0, 1, 2, 5, 20]))
        top_p = float(rng.choice([1.0, 0.5, 0.8, 0.95]))
        equal += same_as_refdecode(row, temperature, top_k, top_p)
        flax = np.isfinite(np.asarray(flax_warpers(temperature, top_k, top_p)(None, jnp.asarray(row[None], dtype=jnp.float32), 0))[0])
        other += int(not np.array_equal(flax, torch_support(row, temperature, top_k, top_p)))
    return n, equal, other


def summary_line(kind: str, steps: int, differ: int, most: float) -> str:
    if kind == "refdecode":
        return f"refdecode's flax_chain: {steps} steps, differs from Flax's warpers at {differ}"
    return f"{kind}: {steps} steps, support differs at {differ}, max |p_flax - p_torch| {most:.2e}"


def main() -> int:
    total = {"warpers": [0, 0, 0], "all": [0, 0, 0], "refdecode": [0, 0, 0]}
    args = sys.argv[1:]
    if args[:1] == ["--synthetic"]:
        rows, equal, other = synthetic(int(args[1]))
        print(f"synthetic: refdecode's flax_chain = Flax's warpers on {equal} of {rows} tie-heavy rows; "
              f"4.38.2's warpers keep another set of tokens than Flax's on {other}")
        args = args[2:]
    for path in map(Path, args):
        root = path.resolve().parent.parent
        for line in path.read_text().splitlines():
            case = json.loads(line)
            if not case["input"]["config"].get("do_sample"):
                continue
            found = check(case, root)
            cfg = case["input"]["config"]
            opts = {k: cfg[k] for k in ("temperature", "top_k", "top_p", "repetition_penalty", "no_repeat_ngram_size",
                                        "min_length", "min_new_tokens", "num_return_sequences", "eos_token_id")}
            print(f"{case['id']}: " + "; ".join(summary_line(k, *v) for k, v in found.items() if v[0]) + f"  ({opts})")
            for k, (s, d, m) in found.items():
                total[k][0] += s
                total[k][1] += d
                total[k][2] = max(total[k][2], m)
    for k, v in total.items():
        print(summary_line(k, *v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
