"""Golden decoding outputs of transformers 4.38.2 ``generate`` on tiny random GPT-2 checkpoints (oracle venv only).

Writes

* ``tests/golden/models/decode-{a,b,c}/``: three tiny random GPT-2 checkpoints (``save_pretrained``
  layout, float32, V = 96..128, E = 24..32), weights scaled up so that the next-token
  distributions are peaked (top-1 probability ~0.1-0.5) and each model's eos id is a token that
  greedy search actually emits a few steps into a generation (its embedding row is then scaled up
  a little so that eos stays likely and many beams finish before max_length);
* ``tests/golden/decode_search.npz``: greedy, beam search and group beam search cases (>= 100),
  sampled from a grid of repetition penalty, no-repeat-ngram, min_length, min_new_tokens, left-padded
  batches of 1-3 prompts, every early_stopping mode, length_penalty < 0, = 0, > 0,
  num_return_sequences 1..num_beams, max_length or max_new_tokens, one or two eos ids;
* ``tests/golden/decode_seed_programs.npz``: the five quick-start programs of the 4.26 walkthrough (docs/references.md)
  (greedy, beam search, sample, beam sample, group beam search; T5 replaced by GPT-2 and a
  ``max_length=20`` added where the T5 programs relied on eos) run by transformers on
  ``models/gpt2-tiny``, with their multinomial draws;
* ``tests/golden/decode_sampling.npz``: sample and beam_sample cases with the tokens
  ``torch.multinomial`` returned at every step (recorded by wrapping it), so the tests can replay
  the draws through refdecode's ``draw=`` hook.

Every case stores its prompt (``input_ids``, ``attention_mask``), and outputs: ``sequences``,
``beam_indices`` and ``sequences_scores`` (beam modes), and a compact digest of the per-step
``scores`` (what the tests compare, to keep the files small): for every step and row the 8 best
values and their token ids, the number of ``-inf`` entries and the sum of the finite ones; a few
cases keep the full scores. Cases whose top-k candidate selection has a near-tie (gap < 1e-5
between consecutive values among the top k+1, or between the two best in greedy) are rejected and
re-drawn, because refdecode's tie rule (lower flat index first) and torch.topk's unspecified one
may differ there. ``meta`` (JSON string) holds format_version, versions, the regenerate command,
and the list of cases (mode, model, generate kwargs).

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_decode_golden.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from _oracle import GOLDEN, ROOT, TIE_GAP, digest, left_pad, require_transformers, save_golden, smallest_gap
from transformers import GPT2Config, GPT2LMHeadModel

FORMAT_VERSION = 1
REGENERATE = ".venv-oracle/bin/python tools/golden/make_decode_golden.py"

MODELS = {
    "decode-a": dict(config=dict(vocab_size=96, n_positions=48, n_embd=32, n_layer=2, n_head=2),
                     init=0.3, seed=1, eos_boost=1.5),
    "decode-b": dict(config=dict(vocab_size=128, n_positions=40, n_embd=32, n_layer=1, n_head=4),
                     init=0.35, seed=2, eos_boost=1.3),
    "decode-c": dict(config=dict(vocab_size=112, n_positions=64, n_embd=24, n_layer=2, n_head=3,
                                 activation_function="gelu"), init=0.35, seed=3, eos_boost=1.6),
}


# ---- checkpoints


def make_model(name: str, spec: dict) -> tuple[GPT2LMHeadModel, int, int]:
    """A random GPT-2 whose eos is the token greedy emits at step 3 of a fixed prompt; saved to tests/golden/models."""
    torch.manual_seed(spec["seed"])
    cfg = GPT2Config(**spec["config"], initializer_range=spec["init"], bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "bias" in pname:
                p.normal_(0.0, 0.05)
    vocab = cfg.vocab_size
    prompt = torch.randint(1, vocab, (1, 5), generator=torch.Generator().manual_seed(spec["seed"]))
    out = model.generate(prompt, max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0)[0, 5:]
    gen = out.tolist()
    eos = next(t for i, t in enumerate(gen) if i >= 3 and t not in gen[:i])
    second = next(t for i, t in enumerate(gen) if i >= 1 and t != eos and t not in gen[:i])
    with torch.no_grad():  # make eos likelier everywhere (its logit is h . wte[eos]), so beams finish often
        model.transformer.wte.weight[eos] *= spec["eos_boost"]
    model.config.eos_token_id = model.config.bos_token_id = eos
    model.generation_config.eos_token_id = model.generation_config.bos_token_id = eos
    target = GOLDEN / "models" / name
    shutil.rmtree(target, ignore_errors=True)
    model.save_pretrained(target, safe_serialization=True)
    return model, eos, second


# ---- recording hooks (ties, multinomial draws)


class Recorder:
    """Wraps torch.topk / torch.argmax / torch.multinomial while generate runs."""

    def __init__(self) -> None:
        self.min_gap = np.inf
        self.draws: list[np.ndarray] = []
        self._topk, self._argmax, self._multinomial = torch.topk, torch.argmax, torch.multinomial

    def _gap(self, values: torch.Tensor) -> None:
        self.min_gap = min(self.min_gap, smallest_gap(values.double().numpy()))

    def topk(self, x, k, *args, **kwargs):
        self._gap(self._topk(x, min(k + 1, x.shape[-1]), dim=-1).values)
        return self._topk(x, k, *args, **kwargs)

    def argmax(self, x, *args, **kwargs):
        self._gap(self._topk(x, 2, dim=-1).values)
        return self._argmax(x, *args, **kwargs)

    def multinomial(self, probs, num_samples, *args, **kwargs):
        out = self._multinomial(probs, num_samples, *args, **kwargs)
        self.draws.append(out.numpy().astype(np.int32))
        return out

    def __enter__(self):
        torch.topk, torch.argmax, torch.multinomial = self.topk, self.argmax, self.multinomial
        return self

    def __exit__(self, *exc):
        torch.topk, torch.argmax, torch.multinomial = self._topk, self._argmax, self._multinomial


# ---- cases


def draw_prompts(rng: np.random.Generator, vocab: int, eos: int) -> list[list[int]]:
    n = int(rng.integers(1, 4))
    lengths = rng.choice(np.arange(2, 8), size=n, replace=n > 6)
    return [[int(t) for t in rng.integers(1, vocab, size=int(length)) if t != eos] or [1] for length in lengths]


def common_kwargs(rng: np.random.Generator, eos: int, second: int, prompt_len: int) -> dict:
    kw: dict = {}
    if rng.random() < 0.5:
        kw["max_new_tokens"] = int(rng.integers(4, 14))
    else:
        kw["max_length"] = prompt_len + int(rng.integers(4, 14))
    kw["repetition_penalty"] = float(rng.choice([1.0, 1.0, 1.3, 0.8]))
    kw["no_repeat_ngram_size"] = int(rng.choice([0, 0, 2, 3]))
    if rng.random() < 0.25:
        kw["min_length"] = prompt_len + int(rng.integers(2, 6))
    if rng.random() < 0.25:
        kw["min_new_tokens"] = int(rng.integers(1, 5))
    eos_choice = rng.random()
    if eos_choice < 0.3:
        kw["eos_token_id"] = [eos, second]
    elif eos_choice < 0.35:
        kw["eos_token_id"] = [second, eos]
    kw["output_scores"] = bool(rng.random() < 0.9)
    kw["return_dict_in_generate"] = True
    return {k: v for k, v in kw.items() if not (k == "repetition_penalty" and v == 1.0)
            and not (k == "no_repeat_ngram_size" and v == 0)}


def draw_case(mode: str, rng: np.random.Generator, vocab: int, eos: int, second: int) -> tuple[list, dict, bool]:
    prompts = draw_prompts(rng, vocab, eos)
    prompt_len = max(len(p) for p in prompts)
    kw = common_kwargs(rng, eos, second, prompt_len)
    use_mask = len(prompts) > 1 or rng.random() < 0.7
    if mode in ("beam_search", "beam_sample"):
        kw["num_beams"] = int(rng.choice([2, 3, 4]))
    if mode == "group_beam_search":
        kw["num_beams"], kw["num_beam_groups"] = [(4, 2), (6, 3), (6, 2), (4, 4), (2, 2)][int(rng.integers(0, 5))]
        kw["diversity_penalty"] = float(rng.choice([0.5, 1.5, 3.0]))
    if mode in ("beam_search", "beam_sample", "group_beam_search"):
        kw["num_return_sequences"] = int(rng.integers(1, kw["num_beams"] + 1))
        kw["early_stopping"] = [True, False, "never"][int(rng.integers(0, 3))]
        kw["length_penalty"] = float(rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0]))
    if mode in ("sample", "beam_sample"):
        kw["do_sample"] = True
        kw["temperature"] = float(rng.choice([1.0, 0.7, 1.5]))
        kw["top_k"] = int(rng.choice([50, 0, 5, 12]))
        kw["top_p"] = float(rng.choice([1.0, 0.8, 0.95]))
        kw["output_scores"] = True
        if mode == "sample":
            kw["num_return_sequences"] = int(rng.integers(1, 4))
    return prompts, kw, use_mask





def run_case(model, prompts, kw, use_mask, eos, torch_seed) -> tuple[dict | None, float]:
    ids, mask = left_pad(prompts, eos)
    torch.manual_seed(torch_seed)
    with Recorder() as rec:
        out = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask) if use_mask else None, **kw)
    arrays = {"input_ids": ids.astype(np.int16), "sequences": out.sequences.numpy().astype(np.int16)}
    if use_mask:
        arrays["attention_mask"] = mask.astype(np.int8)
    if getattr(out, "sequences_scores", None) is not None:
        arrays["sequences_scores"] = out.sequences_scores.numpy().astype(np.float32)
    if getattr(out, "beam_indices", None) is not None:
        arrays["beam_indices"] = out.beam_indices.numpy().astype(np.int16)
    if out.scores is not None:
        arrays["_scores"] = out.scores
    if rec.draws:
        arrays["draws"] = rec.draws
    return arrays, rec.min_gap


def build(path: Path, modes: dict[str, int], models: dict, seed: int, n_full: int) -> None:
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    cases = []
    names = list(models)
    for mode, count in modes.items():
        made, tries = 0, 0
        while made < count:
            tries += 1
            name = names[(made + tries) % len(names)]
            model, eos, second = models[name]
            prompts, kw, use_mask = draw_case(mode, rng, model.config.vocab_size, eos, second)
            torch_seed = int(rng.integers(0, 2**31))
            out, gap = run_case(model, prompts, kw, use_mask, eos, torch_seed)
            if mode != "sample" and mode != "beam_sample" and gap < TIE_GAP:
                continue  # near-tie in the candidate selection: redraw
            cid = f"c{len(cases):03d}"
            full = made < n_full
            for key, value in out.items():
                if key == "_scores":
                    digest(value, f"{cid}/", arrays, full)
                elif key == "draws":
                    for step, d in enumerate(value):
                        arrays[f"{cid}/draw{step:02d}"] = d
                else:
                    arrays[f"{cid}/{key}"] = value
            cases.append(dict(id=cid, mode=mode, model=name, kwargs=kw, attention_mask=use_mask,
                              torch_seed=torch_seed, min_gap=gap, n_draws=len(out.get("draws", []))))
            made += 1
        print(f"{path.name}: {mode}: {made} cases ({tries - made} redrawn for near-ties)")
    save_golden(path, arrays, FORMAT_VERSION, "tools/golden/make_decode_golden.py", REGENERATE,
                eos={name: models[name][1] for name in names}, second_eos={name: models[name][2] for name in names},
                cases=cases)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


# ---- the quick-start programs of the 4.26 walkthrough (T5 replaced by GPT-2), on models/gpt2-tiny


@torch.no_grad()
def seed_programs(path: Path) -> None:
    """Run the five programs as transformers code; record output ids (and the multinomial draws)."""
    from transformers import (
        BeamSearchScorer,
        HammingDiversityLogitsProcessor,
        LogitsProcessorList,
        MaxLengthCriteria,
        MinLengthLogitsProcessor,
        NoRepeatNGramLogitsProcessor,
        PreTrainedTokenizerFast,
        RepetitionPenaltyLogitsProcessor,
        StoppingCriteriaList,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )
    tiny = ROOT / "models" / "gpt2-tiny"
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(tiny / "tokenizer.json"))
    arrays: dict[str, np.ndarray] = {}

    # 2.2 greedy search with MinLength + RepetitionPenalty
    model = GPT2LMHeadModel.from_pretrained(tiny)
    model.generation_config.pad_token_id = model.generation_config.eos_token_id
    input_ids = tokenizer("It might be possible to", return_tensors="pt").input_ids
    logits_processor = LogitsProcessorList([
        MinLengthLogitsProcessor(10, eos_token_id=model.generation_config.eos_token_id),
        RepetitionPenaltyLogitsProcessor(1.2),
    ])
    stopping_criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=20)])
    arrays["greedy"] = model.greedy_search(input_ids, logits_processor=logits_processor,
                                           stopping_criteria=stopping_criteria).numpy()

    # 3.2 beam search with NoRepeatNGram, 3 beams, 2 returned (max_length added: GPT-2 has no T5 eos habit)
    model = GPT2LMHeadModel.from_pretrained(tiny)
    num_beams = 3
    input_ids = tokenizer("translate English to Chinese: How old are you?", return_tensors="pt").input_ids
    input_ids = input_ids.repeat_interleave(num_beams, dim=0)
    beam_scorer = BeamSearchScorer(batch_size=1, num_beams=num_beams, num_beam_hyps_to_keep=2, device=model.device)
    logits_processor = LogitsProcessorList([NoRepeatNGramLogitsProcessor(2)])
    arrays["beam_search"] = model.beam_search(input_ids, beam_scorer, logits_processor=logits_processor,
                                              max_length=20).numpy()

    # 4.2 sample with MinLength, TopK, TopP
    model = GPT2LMHeadModel.from_pretrained(tiny)
    model.config.pad_token_id = model.config.eos_token_id
    model.generation_config.pad_token_id = model.config.eos_token_id
    input_ids = tokenizer("Today is a beautiful day, and", return_tensors="pt").input_ids
    logits_processor = LogitsProcessorList([
        MinLengthLogitsProcessor(15, eos_token_id=model.generation_config.eos_token_id),
    ])
    logits_warper = LogitsProcessorList([TopKLogitsWarper(50), TopPLogitsWarper(0.9)])
    stopping_criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=20)])
    torch.manual_seed(0)
    with Recorder() as rec:
        arrays["sample"] = model.sample(input_ids, logits_processor=logits_processor, logits_warper=logits_warper,
                                        stopping_criteria=stopping_criteria).numpy()
    for i, d in enumerate(rec.draws):
        arrays[f"sample/draw{i:02d}"] = d

    # 5.2 beam sample with TopK, TopP
    model = GPT2LMHeadModel.from_pretrained(tiny)
    input_ids = tokenizer("translate English to German: How old are you?", return_tensors="pt").input_ids
    input_ids = input_ids.repeat_interleave(num_beams, dim=0)
    beam_scorer = BeamSearchScorer(batch_size=1, max_length=model.generation_config.max_length, num_beams=num_beams,
                                   device=model.device)
    logits_warper = LogitsProcessorList([TopKLogitsWarper(50), TopPLogitsWarper(0.9)])
    torch.manual_seed(0)
    with Recorder() as rec:
        arrays["beam_sample"] = model.beam_sample(input_ids, beam_scorer, logits_warper=logits_warper,
                                                  max_length=20).numpy()
    for i, d in enumerate(rec.draws):
        arrays[f"beam_sample/draw{i:02d}"] = d

    # 6.2 group beam search with HammingDiversity, 6 beams in 3 groups, 2 returned
    model = GPT2LMHeadModel.from_pretrained(tiny)
    num_beams = 6
    input_ids = tokenizer("translate English to German: How old are you?", return_tensors="pt").input_ids
    input_ids = input_ids.repeat_interleave(num_beams, dim=0)
    beam_scorer = BeamSearchScorer(batch_size=1, max_length=model.generation_config.max_length, num_beams=num_beams,
                                   device=model.device, num_beam_groups=3, num_beam_hyps_to_keep=2)
    logits_processor = LogitsProcessorList([HammingDiversityLogitsProcessor(5.5, num_beams=6, num_beam_groups=3)])
    arrays["group_beam_search"] = model.group_beam_search(input_ids, beam_scorer, logits_processor=logits_processor,
                                                          max_length=20).numpy()
    save_golden(path, arrays, FORMAT_VERSION, "tools/golden/make_decode_golden.py", REGENERATE,
                text={k: tokenizer.batch_decode(v, skip_special_tokens=True) for k, v in arrays.items()
                      if "/" not in k})
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


def main() -> None:
    require_transformers("4.38.2")
    import warnings

    import transformers.utils.logging as hf_logging
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    models = {name: make_model(name, spec) for name, spec in MODELS.items()}
    for name, (_, eos, second) in models.items():
        print(f"{name}: eos={eos} second eos={second}")
    build(GOLDEN / "decode_search.npz", {"greedy_search": 40, "beam_search": 45, "group_beam_search": 30},
          models, seed=0, n_full=4)
    build(GOLDEN / "decode_sampling.npz", {"sample": 12, "beam_sample": 10}, models, seed=1, n_full=2)
    seed_programs(GOLDEN / "decode_seed_programs.npz")


if __name__ == "__main__":
    sys.exit(main())
