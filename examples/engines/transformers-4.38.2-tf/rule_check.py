r"""TF's sampling distribution against refdecode's profile of it: the evidence for TF5 (and TF1 on the way).

TF's ``sample`` draws with its own Philox stream (``tf.random.stateless_categorical``, tf_utils.py:1971-1983), so no
case's uniforms can drive it (the adapter answers sampling ``unsupported``). What can be checked is the
distribution it draws from: at every step of every sampling case, the case's logits (refdecode's GPT-2 on the
row so far) go through

* TF's own processors and warpers, as generate() builds them from the case's ``GenerationConfig``
  (``_get_logits_processor`` / ``_get_logits_warper`` of the loaded ``TFGPT2LMHeadModel``), and
* refdecode's profile ``transformers-4.38.2-tf`` (``Prompt.process`` then ``sampling.tf_warpers``), and
  refdecode's transformers 4.38.2 (``Prompt.process`` then 4.38.2's warpers),

and the three float32 rows are compared: same kept set (finite entries) and the same values. The rows follow the
profile's own draws with the case's uniforms (what TF would draw had it those uniforms). ``--variants N`` adds N
seeded variants of each case's sampling settings (temperature, top_k, top_p, repetition_penalty) to reach the
float32 top-p boundary more often.

Run in this engine's env with refdecode on the path (NumPy only):

    PYTHONPATH=. examples/engines/transformers-4.38.2-tf/env/bin/python \
        examples/engines/transformers-4.38.2-tf/rule_check.py SUITE/cases/gpt2_sample.jsonl [--variants 4]

Prints one line per case and a JSON summary line; exit 1 if TF's row and the profile's ever differ.

``--logits``: instead, the numerics (FINDINGS "Numerics"): for every prompt row of the given cases (any decode
type), TF's float32 next-token logits (``TFGPT2LMHeadModel`` on the left-padded batch with its attention mask, as
generate()'s first step) against refdecode's (NumPy, the row's real tokens): the largest difference, and whether
the top two ids agree, with the top-2 margin.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from adapter import generation_config, model_for  # noqa: E402  (TF, one thread, the float32 copy)

import tensorflow as tf  # noqa: E402
from transformers.generation.tf_logits_process import TFLogitsProcessorList  # noqa: E402

from refdecode import GPT2  # noqa: E402
from refdecode.generation_config import GenerationConfig as RefConfig  # noqa: E402
from refdecode.pipeline import logits_warpers  # noqa: E402
from refdecode.reference.engines import NextTokenLogits, decode_as  # noqa: E402
from refdecode.reference.engines.decode import normalized_config  # noqa: E402
from refdecode.reference.engines.rules import PROFILES, EngineRules  # noqa: E402
from refdecode.reference.engines.sampling import tf_warpers  # noqa: E402
from refdecode.reference.engines.steps import Prompt  # noqa: E402

PROFILE = "transformers-4.38.2-tf"
_LOGITS: dict[str, NextTokenLogits] = {}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(np.isfinite(a), np.isfinite(b)) and np.array_equal(a[np.isfinite(a)], b[np.isfinite(b)]))


def check(inp: dict, config: dict) -> dict:
    """Every (row, step) of one sampling decode: TF's warped row vs the profile's and 4.38.2's."""
    path = inp["model"]["path"]
    logits = _LOGITS.setdefault(path, NextTokenLogits(GPT2.from_pretrained(path)))
    tf_model = model_for(inp["model"])
    ids, mask = np.asarray(inp["input_ids"]), np.asarray(inp["attention_mask"])
    T = ids.shape[1]
    gen = generation_config(config)
    gen.max_length = int(config["max_new_tokens"]) + T            # what generate() sets (tf_utils.py:850)
    try:
        processors = tf_model._get_logits_processor(generation_config=gen, input_ids_seq_length=T,
                                                  logits_processor=TFLogitsProcessorList())
    except ValueError as err:                                    # TF4: generate() refuses this config
        return {"steps": 0, "tf_eq_profile": 0, "tf_eq_4382": 0, "draws_depart": 0, "refused": str(err)}
    warpers = tf_model._get_logits_warper(generation_config=gen)
    out = decode_as(PROFILE, logits, ids, mask, config, inp["uniforms"])["sequences"]
    cfg = normalized_config(config, T)
    rules = PROFILES[PROFILE]
    ref_warpers = logits_warpers(RefConfig(do_sample=True, **{k: config[k] for k in ("temperature", "top_k", "top_p")
                                                              if config.get(k) is not None}))
    R = int(cfg["num_return_sequences"])
    n = tf_eq = ref_eq = 0
    for r, row in enumerate(out):
        b = r // R
        prompt = Prompt(ids[b].tolist(), mask[b].tolist(), cfg, rules, len(ids))
        control = Prompt(ids[b].tolist(), mask[b].tolist(), cfg, EngineRules(), len(ids))   # 4.38.2's processors
        for t in range(len(row) - T):
            g = [int(x) for x in row[T:T + t]]
            if any(x in prompt.eos for x in g):
                break
            raw = logits(prompt.model_tokens(g))                                      # (V,) the case's logits
            buf = tf.constant([prompt.row + g], dtype=tf.int32)                       # (1, T+t), TF's `generated`
            tf_row = warpers(buf, processors(buf, tf.constant(raw[None]), T + t), T + t).numpy()[0]
            processed = prompt.process(raw, g, np.float32(-np.inf))
            mine = tf_warpers(processed, float(cfg.get("temperature") or 1.0), int(cfg.get("top_k") or 0),
                              float(cfg.get("top_p") or 1.0))
            ref = np.asarray(ref_warpers(np.array([prompt.row + g]), control.process(raw, g, np.float32(-np.inf))[None]),
                             dtype=np.float32)[0]
            n += 1
            tf_eq += same(tf_row, mine)
            ref_eq += same(tf_row, ref)
    control_out = decode_as(EngineRules(), logits, ids, mask, config, inp["uniforms"])["sequences"]
    return {"steps": n, "tf_eq_profile": tf_eq, "tf_eq_4382": ref_eq,
            "draws_depart": int(out.tolist() != control_out.tolist())}


def logits_gap(inp: dict) -> list[dict]:
    """Per prompt row: max |TF - refdecode| of the first step's logits, and the top-2 of each with its margin."""
    path = inp["model"]["path"]
    logits = _LOGITS.setdefault(path, NextTokenLogits(GPT2.from_pretrained(path)))
    ids, mask = np.asarray(inp["input_ids"]), np.asarray(inp["attention_mask"])
    tf_model = model_for(inp["model"])
    position_ids = np.cumsum(mask, axis=1) - mask          # TFGPT2 prepare_inputs_for_generation: exclusive cumsum
    out = tf_model(tf.constant(ids, dtype=tf.int32), attention_mask=tf.constant(mask, dtype=tf.int32),
                   position_ids=tf.constant(position_ids, dtype=tf.int32)).logits.numpy()[:, -1]   # (B, V)
    rows = []
    for b in range(len(ids)):
        ref = logits([int(t) for t, m in zip(ids[b], mask[b]) if m])
        top_tf, top_ref = np.argsort(-out[b], kind="stable")[:2], np.argsort(-ref, kind="stable")[:2]
        rows.append({"max_abs": float(np.max(np.abs(out[b] - ref))), "same_top2": top_tf.tolist() == top_ref.tolist(),
                     "margin": float(ref[top_ref[0]] - ref[top_ref[1]])})
    return rows


def variants(config: dict, n: int, rng: np.random.Generator) -> list[dict]:
    out = []
    for _ in range(n):
        out.append({**config, "temperature": float(rng.choice([0.7, 1.0, 1.3])),
                    "top_k": int(rng.choice([0, 0, 8, 40])), "top_p": float(np.round(rng.uniform(0.3, 0.99), 3)),
                    "repetition_penalty": float(rng.choice([1.0, 1.0, 1.3]))})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", type=Path)
    ap.add_argument("--variants", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--logits", action="store_true", help="compare the first step's logits instead")
    args = ap.parse_args()
    if args.logits:
        return logits_main(args.cases)
    rng = np.random.default_rng(args.seed)
    total = {"cases": 0, "refused": 0, "steps": 0, "tf_eq_profile": 0, "tf_eq_4382": 0, "draws_depart": 0}
    for path in args.cases:
        suite = path.resolve().parent.parent
        for line in path.read_text().splitlines():
            case = json.loads(line)
            inp = dict(case["input"])
            if not inp.get("config", {}).get("do_sample"):
                continue
            p = Path(inp["model"]["path"])
            inp["model"] = {**inp["model"], "path": str(p if p.is_absolute() else suite / p)}
            for k, config in enumerate([inp["config"]] + variants(inp["config"], args.variants, rng)):
                res = check(inp, config)
                total["cases"] += 1
                for key in ("steps", "tf_eq_profile", "tf_eq_4382", "draws_depart"):
                    total[key] += res[key]
                total["refused"] += "refused" in res
                print(f"{case['id']}{'' if k == 0 else f' variant {k}'}: {res['steps']} steps, TF = profile "
                      f"{res['tf_eq_profile']}, TF = 4.38.2 {res['tf_eq_4382']}{' ' + res.get('refused', '')}",
                      flush=True)
    print(json.dumps(total))
    return 0 if total["tf_eq_profile"] == total["steps"] else 1


def logits_main(paths: list[Path]) -> int:
    rows = []
    for path in paths:
        suite = path.resolve().parent.parent
        for line in path.read_text().splitlines():
            inp = dict(json.loads(line)["input"])
            p = Path(inp["model"]["path"])
            inp["model"] = {**inp["model"], "path": str(p if p.is_absolute() else suite / p)}
            rows += logits_gap(inp)
    flips = [r for r in rows if not r["same_top2"]]
    print(json.dumps({"rows": len(rows), "max_abs": max(r["max_abs"] for r in rows),
                      "median_max_abs": float(np.median([r["max_abs"] for r in rows])),
                      "top2_differs": len(flips), "their_margins": sorted(r["margin"] for r in flips),
                      "smallest_margin": min(r["margin"] for r in rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
