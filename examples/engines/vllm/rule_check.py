r"""vLLM's sampling distribution against refdecode's warped distribution, and the draws made from it.

vLLM cannot be given the case's draws (a seed drives its own Gumbel noise, FINDINGS.md V4), but with
``logprobs_mode="processed_logprobs"`` and ``logprobs=-1`` it returns the whole distribution it draws from: the
log_softmax of the logits after its processors (repetition penalty, min_tokens) and warpers (temperature, top-k,
top-p). This script checks, on the shipped model and the engines prompts (unpadded, as the adapter sends them):

1. **the distribution**: for every prompt and setting, the set of tokens vLLM leaves (finite log-prob) equals the
   set refdecode's 4.38.2 warpers leave (``pipeline.logits_warpers``: temperature, top-k, top-p, after the
   repetition penalty over the unpadded prompt: the profile's ``rp_ctx="unpadded"``), and the probabilities agree
   (the largest difference is printed);
2. **the draws**: sampling requests (several prompts in a left-padded batch, num_return_sequences 1-2, the case's
   uniforms) answered by the adapter (``adapter.answer``: one token per call, drawn from vLLM's distribution with
   the uniform) equal refdecode's profile ``vllm`` (``decode_as`` with the same uniforms).

Runs in vLLM's env, with this checkout's refdecode on the path (numpy, safetensors and tokenizers are there):

    examples/engines/vllm/env/bin/python examples/engines/vllm/rule_check.py [--cases 24] [--seed 0]

Exit status 1 when a support set or a draw differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
import adapter  # noqa: E402  (sets vLLM's environment before vLLM is imported)

from refdecode import GPT2  # noqa: E402
from refdecode.generation_config import GenerationConfig  # noqa: E402
from refdecode.numerics import softmax  # noqa: E402
from refdecode.pipeline import logits_warpers  # noqa: E402
from refdecode.processors import transformers5  # noqa: E402
from refdecode.reference.conformance.cases_engines import PROMPTS, SHIPPED  # noqa: E402
from refdecode.reference.engines import NextTokenLogits, decode_as  # noqa: E402

#: (temperature, top_k, top_p, repetition_penalty): each warper alone, then together
SETTINGS = [(1.0, 0, 1.0, 1.0), (0.7, 0, 1.0, 1.0), (1.5, 0, 1.0, 1.0), (1.0, 5, 1.0, 1.0), (1.0, 50, 1.0, 1.0),
            (1.0, 0, 0.8, 1.0), (1.0, 0, 0.95, 1.0), (0.7, 50, 0.95, 1.0), (1.5, 5, 0.8, 1.3),
            (1.0, 0, 0.9, 1.3), (0.7, 0, 0.8, 0.8)]


def reference_probs(logits: NextTokenLogits, prompt: list[int], setting: tuple, banned: tuple = ()) -> np.ndarray:
    """float32 (V,): softmax(4.38.2 warpers(repetition penalty over the unpadded prompt(logits))); ``banned``: ids
    set to -inf first (min_new_tokens' eos)."""
    temperature, top_k, top_p, penalty = setting
    scores = np.array(logits(prompt)[None], dtype=np.float32, copy=True)               # (1, V)
    scores[0, list(banned)] = -np.inf
    if penalty != 1.0:
        scores = transformers5.repetition_penalty_process(np.array([prompt]), scores, penalty, 0)
    warp = logits_warpers(GenerationConfig(do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p))
    return softmax(np.asarray(warp(np.array([prompt]), scores), dtype=np.float32))[0]


def vllm_probs(llm, prompt: list[int], setting: tuple, vocab: int, banned: tuple = ()) -> np.ndarray:
    """float64 (V,): exp of vLLM's processed log-probs for the next token (0 where vLLM masked the token);
    ``banned``: stop ids under ``min_tokens=1``."""
    from vllm import SamplingParams, TokensPrompt

    temperature, top_k, top_p, penalty = setting
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, repetition_penalty=penalty,
                            max_tokens=1, logprobs=-1, detokenize=False, seed=0, min_tokens=1 if banned else 0,
                            stop_token_ids=list(banned))
    [out] = llm.generate([TokensPrompt(prompt_token_ids=prompt)], params, use_tqdm=False)
    p = np.zeros(vocab)
    for tok, lp in out.outputs[0].logprobs[0].items():
        p[tok] = np.exp(lp.logprob)
    return p


def check_distributions(llm, logits: NextTokenLogits, vocab: int) -> int:
    bad = 0
    for setting in SETTINGS:
        worst, kept = 0.0, []
        for prompt in PROMPTS.values():
            ours, theirs = reference_probs(logits, prompt, setting), vllm_probs(llm, prompt, setting, vocab)
            same_support = np.array_equal(ours > 0, theirs > 0)
            bad += not same_support
            worst = max(worst, float(np.abs(ours - theirs).max()))
            kept.append(f"{int((theirs > 0).sum())}{'' if same_support else '!'}")
        print(f"T={setting[0]} top_k={setting[1]} top_p={setting[2]} rp={setting[3]}: tokens kept per prompt "
              f"{' '.join(kept)} (! = support differs), max |p_vllm - p_refdecode| = {worst:.2e}")
    return bad


def sampling_cases(n: int, seed: int) -> list[dict]:
    """Left-padded batches of 1-3 engines prompts, a setting, num_return_sequences 1-2, eos 198, uniforms."""
    rng = np.random.default_rng(seed)
    prompts, cases = list(PROMPTS.values()), []
    for i in range(n):
        rows = [prompts[j] for j in rng.choice(len(prompts), int(rng.integers(1, 4)), replace=False)]
        width = max(map(len, rows))
        temperature, top_k, top_p, penalty = SETTINGS[i % len(SETTINGS)]
        R, new = int(rng.integers(1, 3)), int(rng.integers(3, 10))
        config = {"do_sample": True, "max_new_tokens": new, "eos_token_id": [198], "pad_token_id": 198,
                  "temperature": temperature, "top_k": top_k, "top_p": top_p, "repetition_penalty": penalty,
                  "num_return_sequences": R, "min_new_tokens": int(rng.integers(0, 3))}
        cases.append({"input_ids": [[198] * (width - len(r)) + r for r in rows],
                      "attention_mask": [[0] * (width - len(r)) + [1] * len(r) for r in rows],
                      "config": config, "uniforms": rng.random(new * len(rows) * R).tolist()})
    return cases


def boundary_gap(llm, logits: NextTokenLogits, case: dict, got: list, want: list, vocab: int) -> str:
    """At the first draw where the two answers part: how far the uniform's target lies from the nearest token
    boundary of refdecode's cumulative distribution, against the largest gap between the two cumulative
    distributions (vocabulary order, normalised): a target closer to a boundary than that is a numerical draw."""
    cfg, width = case["config"], len(case["input_ids"][0])
    R, N = cfg["num_return_sequences"], len(got)
    r, t = next((r, i - width) for r, (a, b) in enumerate(zip(got, want)) for i in range(width, len(a))
                if a[i] != b[i])
    b = r // R
    prompt = [x for x, m in zip(case["input_ids"][b], case["attention_mask"][b]) if m] + got[r][width:width + t]
    setting = (cfg["temperature"], cfg["top_k"], cfg["top_p"], cfg["repetition_penalty"])
    banned = tuple(cfg["eos_token_id"]) if t < cfg["min_new_tokens"] else ()
    ours = np.cumsum(reference_probs(logits, prompt, setting, banned).astype(np.float64))
    theirs = np.cumsum(vllm_probs(llm, prompt, setting, vocab, banned))
    ours, theirs = ours / ours[-1], theirs / theirs[-1]
    u = case["uniforms"][t * N + r]
    return (f"row {r} step {t}: u = {u:.6f}, nearest boundary of refdecode's distribution {np.abs(ours - u).min():.1e} "
            f"away; the two cumulative distributions differ by up to {np.abs(ours - theirs).max():.1e}")


def check_draws(llm, logits: NextTokenLogits, n: int, seed: int, vocab: int) -> int:
    bad = 0
    for i, case in enumerate(sampling_cases(n, seed)):
        request = {"id": str(i), "type": "engines_greedy",
                   "input": {"model": {"kind": "gpt2", "path": str(SHIPPED)}, **case}}
        got = adapter.answer(request)["sequences"]
        want = decode_as("vllm", logits, case["input_ids"], case["attention_mask"], case["config"],
                         case["uniforms"])["sequences"].tolist()
        bad += got != want
        if got != want:
            print(f"draws case {i} ({case['config']}): {boundary_gap(llm, logits, case, got, want, vocab)}")
    print(f"draws: profile vllm = vLLM on {n - bad} of {n} sampling requests")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=24, help="sampling requests for the draws check")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--draws-only", action="store_true", help="skip the distribution check")
    args = ap.parse_args()
    model = GPT2.from_pretrained(SHIPPED)
    logits = NextTokenLogits(model)
    llm, _ = adapter.engine({"kind": "gpt2", "path": str(SHIPPED)})
    bad = 0 if args.draws_only else check_distributions(llm, logits, int(model.config.vocab_size))
    bad += check_draws(llm, logits, args.cases, args.seed, int(model.config.vocab_size))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
