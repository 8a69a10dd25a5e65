"""Golden contrastive search outputs and hidden states / attentions of transformers 4.38.2 (oracle venv only).

Writes ``tests/golden/decode_contrastive.npz``:

* contrastive search (``penalty_alpha > 0``, ``top_k > 1``) on the tiny random GPT-2s of
  ``tests/golden/models/decode-{a,b,c}``: left-padded batches of 1-3 prompts, top_k 2-6,
  penalty_alpha 0.1-0.9, sometimes a repetition penalty / no-repeat n-gram / min_new_tokens, one or
  two eos ids; sequences and a digest of the per-step ``scores`` (processed logits);
* ``output_hidden_states`` / ``output_attentions`` of greedy, sample (replayed draws), beam search and
  contrastive search: every step's tuple (one array per layer, hidden states ``n_layer + 1`` of them),
  stored in full (the models are tiny).

Cases are rejected and redrawn where torch's tie order or float32 rounding could decide: a gap
below 1e-5 among the top k+1 probabilities of ``torch.topk`` (and of beam search's candidates), or
between the two best contrastive scores of a step (``_ranking_fast``, recorded by wrapping it).

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_contrastive_golden.py
"""

from __future__ import annotations


import numpy as np
import torch
import transformers.generation.utils as gen_utils
from _oracle import GOLDEN, TIE_GAP, digest, left_pad, save_golden, smallest_gap  # run from the repository root
from transformers import GPT2LMHeadModel

FORMAT_VERSION = 1
REGENERATE = ".venv-oracle/bin/python tools/golden/make_contrastive_golden.py"
N_CONTRASTIVE = 40


class Recorder:
    """Smallest gap among topk's k+1 values and between the two best contrastive scores; multinomial draws."""

    def __init__(self) -> None:
        self.min_gap = np.inf
        self.draws: list[np.ndarray] = []
        self._topk, self._multinomial, self._ranking = torch.topk, torch.multinomial, gen_utils._ranking_fast

    def _gap(self, values: np.ndarray) -> None:
        self.min_gap = min(self.min_gap, smallest_gap(values, ignore_zero_pairs=True))  # zero-probability tails

    def topk(self, x, k, *args, **kwargs):
        self._gap(self._topk(x, min(k + 1, x.shape[-1]), dim=-1).values.double().numpy())
        return self._topk(x, k, *args, **kwargs)

    def multinomial(self, probs, num_samples, *args, **kwargs):
        out = self._multinomial(probs, num_samples, *args, **kwargs)
        self.draws.append(out.numpy().astype(np.int32))
        return out

    def ranking(self, context_hidden, next_hidden, next_top_k_probs, alpha, beam_width):
        norm_c = context_hidden / context_hidden.norm(dim=2, keepdim=True)
        norm_n = next_hidden / next_hidden.norm(dim=2, keepdim=True)
        penalty = torch.matmul(norm_c, norm_n.transpose(1, 2)).squeeze(-1).max(dim=-1).values
        score = ((1.0 - alpha) * next_top_k_probs.view(-1) - alpha * penalty).view(-1, beam_width)
        top2 = torch.sort(score, dim=-1, descending=True).values[:, :2].double().numpy()
        self.min_gap = min(self.min_gap, float((top2[:, 0] - top2[:, 1]).min()))
        return self._ranking(context_hidden, next_hidden, next_top_k_probs, alpha, beam_width)

    def __enter__(self):
        torch.topk, torch.multinomial, gen_utils._ranking_fast = self.topk, self.multinomial, self.ranking
        return self

    def __exit__(self, *exc):
        torch.topk, torch.multinomial, gen_utils._ranking_fast = self._topk, self._multinomial, self._ranking
def store_steps(name: str, steps: tuple, prefix: str, arrays: dict) -> int:
    """A tuple (steps) of tuples (layers) of arrays -> prefix/name/{step}/{layer}; returns the step count."""
    for i, layers in enumerate(steps):
        for j, a in enumerate(layers):
            arrays[f"{prefix}{name}/{i:02d}/{j:02d}"] = a.numpy().astype(np.float32)
    return len(steps)


def draw_case(rng: np.random.Generator, model, eos: int, mode: str) -> tuple[list, dict]:
    vocab = model.config.vocab_size
    tokens = np.array([t for t in range(1, vocab) if t != eos])
    prompts = [rng.choice(tokens, size=int(rng.integers(2, 7))).tolist() for _ in range(int(rng.integers(1, 4)))]
    kw = dict(max_new_tokens=int(rng.integers(3, 9)), eos_token_id=eos, pad_token_id=eos,
              return_dict_in_generate=True, output_scores=True)
    if mode == "contrastive":
        kw.update(top_k=int(rng.integers(2, 7)), penalty_alpha=float(np.round(rng.uniform(0.1, 0.9), 2)))
        if rng.random() < 0.3:
            kw["repetition_penalty"] = float(rng.choice([0.9, 1.4]))
        if rng.random() < 0.2:
            kw["no_repeat_ngram_size"] = int(rng.integers(2, 4))
        if rng.random() < 0.2:
            kw["min_new_tokens"] = int(rng.integers(1, 4))
    elif mode == "sample":
        kw.update(do_sample=True, top_k=int(rng.integers(3, 20)))
    elif mode == "beam_search":
        kw.update(num_beams=int(rng.integers(2, 4)))
    if rng.random() < 0.2:
        kw["eos_token_id"] = [eos, int(rng.choice(tokens))]
    return prompts, kw


@torch.no_grad()
def main() -> None:
    models = {}
    for name in ("decode-a", "decode-b", "decode-c"):
        model = GPT2LMHeadModel.from_pretrained(GOLDEN / "models" / name).eval()
        models[name] = (model, int(model.generation_config.eos_token_id))
    rng = np.random.default_rng(438)
    arrays: dict[str, np.ndarray] = {}
    cases, tries = [], 0
    plan = ["contrastive"] * N_CONTRASTIVE + ["greedy", "sample", "beam_search", "contrastive"] * 3
    for k, mode in enumerate(plan):
        outputs = k >= N_CONTRASTIVE          # the last 12 cases record hidden states and attentions
        while True:
            tries += 1
            name = list(models)[tries % len(models)]
            model, eos = models[name]
            prompts, kw = draw_case(rng, model, eos, mode)
            if outputs:
                kw.update(output_hidden_states=True, output_attentions=True)
            ids, mask = left_pad(prompts, eos)
            torch_seed = int(rng.integers(0, 2**31))
            torch.manual_seed(torch_seed)
            with Recorder() as rec:
                out = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), **kw)
            if rec.min_gap >= TIE_GAP or mode == "sample":
                break
        cid = f"c{len(cases):03d}"
        arrays[f"{cid}/input_ids"] = ids.astype(np.int16)
        arrays[f"{cid}/attention_mask"] = mask.astype(np.int8)
        arrays[f"{cid}/sequences"] = out.sequences.numpy().astype(np.int16)
        if getattr(out, "beam_indices", None) is not None:
            arrays[f"{cid}/beam_indices"] = out.beam_indices.numpy().astype(np.int16)
            arrays[f"{cid}/sequences_scores"] = out.sequences_scores.numpy().astype(np.float32)
        digest(out.scores, f"{cid}/", arrays, False)
        for step, d in enumerate(rec.draws):
            arrays[f"{cid}/draw{step:02d}"] = d
        case = dict(id=cid, mode=mode, model=name, kwargs=kw, torch_seed=torch_seed, min_gap=rec.min_gap,
                    n_draws=len(rec.draws))
        if outputs:
            case["hidden_steps"] = store_steps("hidden_states", out.hidden_states, f"{cid}/", arrays)
            case["attention_steps"] = store_steps("attentions", out.attentions, f"{cid}/", arrays)
        cases.append(case)
    print(f"{len(cases)} cases ({tries - len(cases)} redrawn for near-ties)")
    path = GOLDEN / "decode_contrastive.npz"
    save_golden(path, arrays, FORMAT_VERSION, "tools/golden/make_contrastive_golden.py", REGENERATE, cases=cases)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
