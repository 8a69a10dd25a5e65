"""Golden logits and ``generate`` outputs of transformers 4.38.2 on tiny random Llama-family checkpoints (oracle venv).

Writes

* ``tests/golden/models/<name>/``: six tiny random checkpoints, saved by transformers' own ``save_pretrained``
  (config.json, generation_config.json, model.safetensors; ``qwen2-bias`` sharded, with
  ``model.safetensors.index.json``), weights scaled up so that the next-token distributions are peaked:

  - ``llama-gqa-tied``: 4 query heads over 2 key/value heads, LM head tied to the embedding;
  - ``llama-bias``: untied LM head, ``attention_bias`` (q, k, v and o biases);
  - ``llama-rope-linear``: one key/value head (multi-query), ``rope_scaling`` linear x2, rope_theta 500;
  - ``llama-rope-dynamic``: ``rope_scaling`` dynamic x2 with max_position_embeddings 12, prompts longer than that
    (4.38.2 can only go past max_position_embeddings from a prefill longer than it: its causal-mask buffer is
    max_position_embeddings wide and only a prefill widens it, to twice), so the prefill and every cached step
    run with the enlarged base;
  - ``mistral-window``: ``sliding_window`` 24 (sequences up to the window: refdecode refuses longer ones);
  - ``qwen2-bias``: q/k/v biases, no o bias, sharded.

* ``tests/golden/llama.npz``: for each model

  - ``<name>/forward``: a left-padded batch of 2 prompts (mask and the position ids ``prepare_inputs_for_generation``
    derives), the prefill logits, then 6 cached steps feeding the greedy tokens, logits of each;
  - ``<name>/greedy``, ``/beam`` (num_beams 3, 2 returned sequences, ``sequences_scores``), ``/group`` (4 beams in 2
    groups, diversity_penalty 1.0), ``/sample`` (top_k 20, temperature 0.8, with the tokens ``torch.multinomial``
    returned at every step, so the tests replay them through refdecode's ``draw=`` hook): ``generate`` on the same
    batch, output_scores (digested as tools/golden/make_decode_golden.py does);
  - on ``llama-gqa-tied`` and ``qwen2-bias``, the other modes on prompts of their own (stored with the case):
    ``/contrastive`` (penalty_alpha 0.6, top_k 4), ``/beam_sample`` (draws recorded), ``/constrained``
    (``force_words_ids``), ``/assisted`` (greedy, one prompt, the assistant ``mistral-window``: a Mistral drafting
    for a Llama) and ``/prompt_lookup`` (one prompt that repeats itself).

  Each model is re-loaded from disk for every recording: 4.38.2's dynamic RoPE keeps the enlarged frequencies of its
  last long call in the module, so a model object that has run once is not the one ``from_pretrained`` gives.
  Cases whose greedy or beam selection comes within 1e-5 of a tie are re-drawn with other prompts.
  ``meta`` also records ``mistral_window_evidence``: the largest logit difference between 4.38.2's sdpa (default)
  and eager attention on a sequence 8 tokens past the window (why refdecode refuses there, docs/parity.md).

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_llama_golden.py
"""

from __future__ import annotations

import shutil

import numpy as np
import torch
import transformers.utils.logging as hf_logging
from _oracle import GOLDEN, TIE_GAP, digest, left_pad, require_transformers, save_golden
from make_decode_golden import Recorder
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)

FORMAT_VERSION = 1
SCRIPT = "tools/golden/make_llama_golden.py"
REGENERATE = ".venv-oracle/bin/python tools/golden/make_llama_golden.py"
N_STEPS = 6

BASE = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2)
MODELS = {
    "llama-gqa-tied": dict(cls=(LlamaConfig, LlamaForCausalLM), config=dict(tie_word_embeddings=True), seed=11,
                           lengths=(9, 6), max_new_tokens=10),
    "llama-bias": dict(cls=(LlamaConfig, LlamaForCausalLM), seed=12, lengths=(8, 5), max_new_tokens=10,
                       config=dict(vocab_size=160, num_key_value_heads=4, attention_bias=True, rms_norm_eps=1e-5)),
    "llama-rope-linear": dict(cls=(LlamaConfig, LlamaForCausalLM), seed=13, lengths=(9, 7), max_new_tokens=10,
                              config=dict(num_key_value_heads=1, max_position_embeddings=32, rope_theta=500.0,
                                          rope_scaling={"type": "linear", "factor": 2.0})),
    "llama-rope-dynamic": dict(cls=(LlamaConfig, LlamaForCausalLM), seed=14, lengths=(15, 13), max_new_tokens=8,
                               config=dict(max_position_embeddings=12, tie_word_embeddings=True,
                                           rope_scaling={"type": "dynamic", "factor": 2.0})),
    "mistral-window": dict(cls=(MistralConfig, MistralForCausalLM), seed=15, lengths=(9, 6), max_new_tokens=10,
                           config=dict(sliding_window=24)),
    "qwen2-bias": dict(cls=(Qwen2Config, Qwen2ForCausalLM), seed=16, lengths=(8, 6), max_new_tokens=10,
                       config=dict(sliding_window=64, vocab_size=112), shard="40KB"),
}
#: The other decoding modes, on two of the models (batch of one where 4.38.2 asks for it: assisted, prompt lookup).
MORE_MODELS = {"llama-gqa-tied": "mistral-window", "qwen2-bias": None}  # model -> its assistant (same vocabulary)
MORE = {
    "contrastive": dict(penalty_alpha=0.6, top_k=4),
    "beam_sample": dict(num_beams=3, do_sample=True, top_k=20, num_return_sequences=2),
    "constrained": dict(num_beams=3, num_return_sequences=2),  # + force_words_ids drawn from the vocabulary
    "assisted": dict(do_sample=False),                            # + assistant_model, one prompt
    "prompt_lookup": dict(prompt_lookup_num_tokens=3),            # one prompt that repeats itself
}
GENERATE = {
    "greedy": dict(do_sample=False),
    "beam": dict(num_beams=3, num_return_sequences=2, length_penalty=1.0, early_stopping=False),
    "group": dict(num_beams=4, num_beam_groups=2, diversity_penalty=1.0, num_return_sequences=2),
    "sample": dict(do_sample=True, top_k=20, temperature=0.8),
}


def make_checkpoint(name: str, spec: dict) -> None:
    """A random model of the spec, weights scaled so attention and the MLP matter; saved by save_pretrained."""
    config_cls, model_cls = spec["cls"]
    torch.manual_seed(spec["seed"])
    model = model_cls(config_cls(**{**BASE, **spec["config"]})).eval()
    gen = torch.Generator().manual_seed(spec["seed"])
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif pname.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in pname or "lm_head" in pname:
                p.copy_(0.6 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(1.2 * torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
    target = GOLDEN / "models" / name
    shutil.rmtree(target, ignore_errors=True)
    kwargs = {"max_shard_size": spec["shard"]} if "shard" in spec else {}
    model.save_pretrained(target, safe_serialization=True, **kwargs)


def load(name: str, spec: dict, **kwargs):
    """A fresh model object from the directory (see the module docstring: dynamic RoPE keeps state)."""
    return spec["cls"][1].from_pretrained(GOLDEN / "models" / name, **kwargs).eval()


def positions(mask: torch.Tensor) -> torch.Tensor:
    """4.38.2's prepare_inputs_for_generation: cumsum(mask) - 1, padding set to 1."""
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)


@torch.no_grad()
def forward_case(model, ids: np.ndarray, mask: np.ndarray, arrays: dict, prefix: str) -> float:
    """Prefill then N_STEPS cached greedy steps; returns the smallest top-2 gap of the greedy choices."""
    ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
    out = model(ids_t, attention_mask=mask_t, position_ids=positions(mask_t), use_cache=True)
    arrays[prefix + "input_ids"], arrays[prefix + "attention_mask"] = ids.astype(np.int16), mask.astype(np.int8)
    arrays[prefix + "prefill_logits"] = out.logits.numpy().astype(np.float32)
    gap, past, logits, tokens = np.inf, out.past_key_values, out.logits[:, -1], []
    for step in range(N_STEPS):
        top2 = torch.topk(logits, 2, dim=-1).values
        gap = min(gap, float((top2[:, 0] - top2[:, 1]).min()))
        nxt = logits.argmax(-1, keepdim=True)
        tokens.append(nxt.numpy())
        mask_t = torch.cat([mask_t, torch.ones_like(nxt)], dim=1)
        out = model(nxt, attention_mask=mask_t, position_ids=positions(mask_t)[:, -1:], past_key_values=past,
                    use_cache=True)
        past, logits = out.past_key_values, out.logits[:, -1]
        arrays[prefix + f"step{step}_logits"] = out.logits.numpy().astype(np.float32)
    arrays[prefix + "step_tokens"] = np.concatenate(tokens, axis=1).astype(np.int16)
    return gap


@torch.no_grad()
def generate_case(model, ids, mask, kw: dict, seed: int, arrays: dict, prefix: str) -> tuple[float, int]:
    """One generate call; returns (smallest gap of its greedy/beam selections, number of multinomial draws)."""
    torch.manual_seed(seed)
    with Recorder() as rec:
        out = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), output_scores=True,
                             return_dict_in_generate=True, pad_token_id=0, **kw)
    arrays[prefix + "sequences"] = out.sequences.numpy().astype(np.int16)
    if getattr(out, "sequences_scores", None) is not None:
        arrays[prefix + "sequences_scores"] = out.sequences_scores.numpy().astype(np.float32)
    if getattr(out, "beam_indices", None) is not None:
        arrays[prefix + "beam_indices"] = out.beam_indices.numpy().astype(np.int16)
    digest(out.scores, prefix, arrays, full=False)
    for step, d in enumerate(rec.draws):
        arrays[prefix + f"draw{step:02d}"] = d
    return rec.min_gap, len(rec.draws)


def record_model(name: str, spec: dict, arrays: dict, cases: list) -> None:
    """Draw prompts until the forward pass and every generate call are clear of near-ties, then record them."""
    rng = np.random.default_rng(spec["seed"])
    vocab = spec["config"].get("vocab_size", BASE["vocab_size"])
    for attempt in range(20):
        prompts = [[int(t) for t in rng.integers(3, vocab, size=n)] for n in spec["lengths"]]
        ids, mask = left_pad(prompts, 0)
        trial: dict = {}
        gaps = [forward_case(load(name, spec), ids, mask, trial, f"{name}/forward/")]
        found = []
        for mode, kw in GENERATE.items():
            kw = {**kw, "max_new_tokens": spec["max_new_tokens"]}
            seed = int(rng.integers(0, 2**31))
            gap, n_draws = generate_case(load(name, spec), ids, mask, kw, seed, trial, f"{name}/{mode}/")
            gaps.append(gap if mode != "sample" else np.inf)
            found.append(dict(id=f"{name}/{mode}", model=name, mode=mode, kwargs=kw, torch_seed=seed, n_draws=n_draws))
        if min(gaps) >= TIE_GAP:
            arrays.update(trial)
            cases.append(dict(id=f"{name}/forward", model=name, mode="forward", steps=N_STEPS))
            cases.extend(found)
            print(f"{name}: recorded (attempt {attempt + 1}, smallest gap {min(gaps):.2e})")
            return
    raise RuntimeError(f"{name}: no prompts without a near-tie in 20 attempts")


def record_more(name: str, spec: dict, arrays: dict, cases: list) -> None:
    """The MORE modes on model ``name``, each on its own prompts, re-drawn until clear of near-ties."""
    rng = np.random.default_rng(spec["seed"] + 1000)
    vocab = spec["config"].get("vocab_size", BASE["vocab_size"])
    for mode, base_kw in MORE.items():
        if mode == "assisted" and MORE_MODELS[name] is None:
            continue
        for attempt in range(20):
            if mode in ("assisted", "prompt_lookup"):
                head = [int(t) for t in rng.integers(3, vocab, size=4)]
                prompts = [head + [int(rng.integers(3, vocab))] + head[:3]]     # repeats: prompt lookup finds it
            else:
                prompts = [[int(t) for t in rng.integers(3, vocab, size=n)] for n in spec["lengths"]]
            ids, mask = left_pad(prompts, 0)
            kw = {**base_kw, "max_new_tokens": spec["max_new_tokens"]}
            if mode == "constrained":
                kw["force_words_ids"] = [[int(rng.integers(3, vocab))], [int(t) for t in rng.integers(3, vocab, 2)]]
            extra = {"assistant_model": load(MORE_MODELS[name], MODELS[MORE_MODELS[name]])} if mode == "assisted" else {}
            trial: dict = {}
            seed = int(rng.integers(0, 2**31))
            prefix = f"{name}/{mode}/"
            trial[prefix + "input_ids"], trial[prefix + "attention_mask"] = ids.astype(np.int16), mask.astype(np.int8)
            try:
                gap, n_draws = generate_case(load(name, spec), ids, mask, {**kw, **extra}, seed, trial, prefix)
            except RuntimeError:  # 4.38.2's constrained finalize crashes on some draws (a None beam index): redraw
                continue
            if mode == "beam_sample" or gap >= TIE_GAP:
                arrays.update(trial)
                cases.append(dict(id=f"{name}/{mode}", model=name, mode=mode, kwargs=kw, torch_seed=seed,
                                  n_draws=n_draws, assistant=MORE_MODELS[name] if extra else None))
                print(f"{name}/{mode}: recorded (attempt {attempt + 1}, smallest gap {gap:.2e})")
                break
        else:
            raise RuntimeError(f"{name}/{mode}: no prompts without a near-tie in 20 attempts")


@torch.no_grad()
def mistral_window_evidence() -> float:
    """Max |logit| difference between sdpa and eager attention 8 tokens past mistral-window's sliding window."""
    window = MODELS["mistral-window"]["config"]["sliding_window"]
    ids = torch.from_numpy(np.random.default_rng(0).integers(3, 128, size=(1, window + 8)))
    sdpa = load("mistral-window", MODELS["mistral-window"])(ids).logits
    eager = load("mistral-window", MODELS["mistral-window"], attn_implementation="eager")(ids).logits
    return float((sdpa - eager).abs().max())


def main() -> None:
    require_transformers("4.38.2")
    hf_logging.set_verbosity_error()
    arrays: dict = {}
    cases: list = []
    for name, spec in MODELS.items():
        make_checkpoint(name, spec)
        record_model(name, spec, arrays, cases)
    for name in MORE_MODELS:
        record_more(name, MODELS[name], arrays, cases)
    evidence = mistral_window_evidence()
    print(f"mistral-window: sdpa vs eager past the window: max |logit diff| {evidence:.3g}")
    path = GOLDEN / "llama.npz"
    save_golden(path, arrays, FORMAT_VERSION, SCRIPT, REGENERATE, cases=cases, n_steps=N_STEPS,
                mistral_window_evidence=evidence)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
