"""Golden constrained beam search outputs of transformers 4.38.2 ``generate`` (oracle venv only).

Writes ``tests/golden/decode_constrained.npz``: constrained beam search cases on the three tiny
random GPT-2 checkpoints of ``tests/golden/models/decode-{a,b,c}`` (made by make_decode_golden.py):
``force_words_ids`` as phrases (one or several tokens, one or two phrases) and as disjunctive
lists of phrases, and ``constraints=[PhrasalConstraint, DisjunctiveConstraint]`` objects; forced
tokens drawn at random, taken from the prompt (already satisfied), or taken from what plain beam
search would emit; left-padded batches of 1-3 prompts, 2-5 beams, num_return_sequences 1..K, every
early_stopping mode, length_penalty < 0, = 0, > 0, sometimes a repetition penalty or a no-repeat
n-gram size, max_length or max_new_tokens. Every case stores ``sequences``, ``sequences_scores``,
``beam_indices`` and a digest of the per-step ``scores`` (top-8 values and ids, -inf count, finite
sum), as decode_search.npz does.

Cases are rejected and redrawn when torch's unspecified tie order could matter: a near-tie (gap <
1e-5) among the top k+1 values of ``torch.topk``, or an exact tie among the values sorted by the
scorer's bank sort (``Tensor.sort``). ``meta`` (JSON) holds the format version, versions, the
regenerate command and the cases (model, generate kwargs, constraint objects as
``{"phrasal": ids}`` / ``{"disjunctive": [[ids], ...]}``).

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_constrained_golden.py
"""

from __future__ import annotations


import numpy as np
import torch
from _oracle import GOLDEN, TIE_GAP, digest, left_pad, save_golden, smallest_gap  # run from the repository root
from transformers import DisjunctiveConstraint, GPT2LMHeadModel, PhrasalConstraint

FORMAT_VERSION = 1
REGENERATE = ".venv-oracle/bin/python tools/golden/make_constrained_golden.py"
N_CASES = 60


class TieRecorder:
    """Wrap torch.topk and Tensor.sort: the smallest gap among topk's k+1 values; any exact tie in a sort."""

    def __init__(self) -> None:
        self.min_gap = np.inf
        self.sort_tie = False
        self._topk, self._sort = torch.topk, torch.Tensor.sort

    def topk(self, x, k, *args, **kwargs):
        v = self._topk(x, min(k + 1, x.shape[-1]), dim=-1).values.double().numpy()
        self.min_gap = min(self.min_gap, smallest_gap(v))
        return self._topk(x, k, *args, **kwargs)

    def sort(self, x, *args, **kwargs):
        values = x.detach().numpy().ravel()
        self.sort_tie = self.sort_tie or len(np.unique(values)) != len(values)
        return self._sort(x, *args, **kwargs)

    def __enter__(self):
        recorder = self

        def sort(tensor, *args, **kwargs):   # a plain function, so that it binds to the tensor as a method
            return recorder.sort(tensor, *args, **kwargs)
        torch.topk, torch.Tensor.sort = self.topk, sort
        return self

    def __exit__(self, *exc):
        torch.topk, torch.Tensor.sort = self._topk, self._sort
def draw_tokens(rng: np.random.Generator, n: int, vocab: int, eos: int, pool: list[int]) -> list[int]:
    """n token ids (not eos), from ``pool`` when given, else uniform."""
    source = [t for t in pool if t != eos] or list(range(1, vocab))
    return [int(t) for t in rng.choice([t for t in source if t != eos], size=n)]


def draw_case(rng: np.random.Generator, model, eos: int) -> tuple[list, dict, list]:
    vocab = model.config.vocab_size
    tokens = np.array([t for t in range(1, vocab) if t != eos])      # prompts never hold eos (= pad)
    prompts = [rng.choice(tokens, size=int(rng.integers(2, 7))).tolist() for _ in range(int(rng.integers(1, 4)))]
    k = int(rng.integers(2, 6))
    kw = dict(num_beams=k, num_return_sequences=int(rng.integers(1, k + 1)), do_sample=False,
              early_stopping=[True, False, "never"][int(rng.integers(3))],
              length_penalty=float(rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0])),
              eos_token_id=eos, pad_token_id=eos, return_dict_in_generate=True, output_scores=True)
    if rng.random() < 0.5:
        kw["max_new_tokens"] = int(rng.integers(3, 10))
    else:
        kw["max_length"] = max(len(p) for p in prompts) + int(rng.integers(3, 10))
    if rng.random() < 0.25:
        kw["repetition_penalty"] = float(rng.choice([0.8, 1.3]))
    if rng.random() < 0.2:
        kw["no_repeat_ngram_size"] = int(rng.integers(2, 4))
    # where the forced tokens come from: anywhere, the prompt, or plain beam search's own output
    source = rng.choice(["random", "prompt", "beam"], p=[0.5, 0.15, 0.35])
    pool: list[int] = []
    if source == "prompt":
        pool = prompts[0]
    elif source == "beam":
        ids, mask = left_pad(prompts, eos)
        plain = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                               **{key: v for key, v in kw.items() if key not in ("return_dict_in_generate", "output_scores")})
        pool = plain[0, ids.shape[1]:].tolist()
    kind = rng.choice(["phrase1", "phrase", "two_phrases", "disjunctive", "objects"])
    described: list = []
    if kind == "phrase1":
        kw["force_words_ids"] = [draw_tokens(rng, 1, vocab, eos, pool)]
    elif kind == "phrase":
        kw["force_words_ids"] = [draw_tokens(rng, int(rng.integers(2, 4)), vocab, eos, pool)]
    elif kind == "two_phrases":
        kw["force_words_ids"] = [draw_tokens(rng, int(rng.integers(1, 3)), vocab, eos, pool) for _ in range(2)]
    elif kind == "disjunctive":
        first = draw_tokens(rng, 2, vocab, eos, pool)
        second = [first[0]] + draw_tokens(rng, 1, vocab, eos, [])      # a shared first token: a real trie
        if second == first:
            second = second + draw_tokens(rng, 1, vocab, eos, [])
        third = draw_tokens(rng, 1, vocab, eos, [])
        alternatives = [first, second] if third[0] == first[0] else [first, second, third]
        if any(a[: len(b)] == b or b[: len(a)] == a for i, a in enumerate(alternatives) for b in alternatives[i + 1:]):
            alternatives = [first]
        kw["force_words_ids"] = [alternatives]
    else:
        phrase = draw_tokens(rng, int(rng.integers(1, 3)), vocab, eos, pool)
        options = [draw_tokens(rng, 1, vocab, eos, []), draw_tokens(rng, 2, vocab, eos, [])]
        if options[1][0] == options[0][0]:
            options = [options[1]]
        described = [{"phrasal": phrase}, {"disjunctive": options}]
    return prompts, kw, described


def constraint_objects(described: list) -> list:
    return [PhrasalConstraint(d["phrasal"]) if "phrasal" in d else DisjunctiveConstraint(d["disjunctive"])
            for d in described]


@torch.no_grad()
def main() -> None:
    models = {}
    for name in ("decode-a", "decode-b", "decode-c"):
        model = GPT2LMHeadModel.from_pretrained(GOLDEN / "models" / name).eval()
        models[name] = (model, int(model.generation_config.eos_token_id))
    rng = np.random.default_rng(2024)
    arrays: dict[str, np.ndarray] = {}
    cases, tries = [], 0
    while len(cases) < N_CASES:
        tries += 1
        name = list(models)[tries % len(models)]
        model, eos = models[name]
        prompts, kw, described = draw_case(rng, model, eos)
        ids, mask = left_pad(prompts, eos)
        extra = {"constraints": constraint_objects(described)} if described else {}
        with TieRecorder() as rec:
            try:
                out = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), **kw, **extra)
            except ValueError as err:   # e.g. too many eos among the candidates: not a parity case
                print(f"skip ({type(err).__name__}: {str(err)[:80]})")
                continue
            except (TypeError, RuntimeError) as err:    # finalize's torch.tensor(None) on a fallback hypothesis (docs/parity.md)
                print(f"transformers crashes ({err})")
                continue
        if rec.min_gap < TIE_GAP or rec.sort_tie:
            continue
        cid = f"c{len(cases):03d}"
        arrays[f"{cid}/input_ids"] = ids.astype(np.int16)
        arrays[f"{cid}/attention_mask"] = mask.astype(np.int8)
        arrays[f"{cid}/sequences"] = out.sequences.numpy().astype(np.int16)
        arrays[f"{cid}/sequences_scores"] = out.sequences_scores.numpy().astype(np.float32)
        if out.beam_indices is not None:   # None when the best hypothesis is a fallback (no constraint met)
            arrays[f"{cid}/beam_indices"] = out.beam_indices.numpy().astype(np.int16)
        digest(out.scores, f"{cid}/", arrays, False)
        cases.append(dict(id=cid, model=name, kwargs=kw, constraints=described, min_gap=rec.min_gap))
    print(f"{len(cases)} cases ({tries - len(cases)} redrawn or skipped)")
    path = GOLDEN / "decode_constrained.npz"
    save_golden(path, arrays, FORMAT_VERSION, "tools/golden/make_constrained_golden.py", REGENERATE, cases=cases)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
