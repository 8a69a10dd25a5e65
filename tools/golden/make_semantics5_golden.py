"""Golden outputs of transformers **5.x** (not the 4.38.2 pin) for ``GenerationConfig(semantics="5")``.

Writes ``tests/golden/decode_semantics5.npz``: greedy and beam search cases with a repetition
penalty over left-padded batches (pad = eos, as GPT-2 pads), on the tiny checkpoints
``tests/golden/models/decode-{a,b,c}`` that ``make_decode_golden.py`` made. This is the one
place where 5.x changed an algorithm refdecode implements in a way these loops see: 5.x's
``_get_logits_processor`` builds ``RepetitionPenaltyLogitsProcessor(penalty,
prompt_ignore_length=padding_lengths)``, so the padding (= eos) is no longer penalised
(docs/parity.md, "transformers 5.x semantics").

Every case stores ``input_ids``, ``attention_mask``, ``sequences``, the per-step ``scores`` (full,
float32: the models are tiny), and for beam search ``sequences_scores`` and ``beam_indices``
(5.x's own layout: not padded with -1 to the sequence length, see the test for what is compared).
Cases with a near-tie in the top-k / argmax selection (gap < 1e-5) are redrawn, as in
``make_decode_golden.py``. ``meta`` (JSON) holds versions, the regenerate command and the cases.

Run from the repository root, in a venv with ``torch==2.13.0`` and ``transformers>=5`` (not the
4.38.2 oracle venv)::

    python3 -m venv .venv-tf5 && .venv-tf5/bin/pip install torch==2.13.0 && .venv-tf5/bin/pip install "transformers>=5"
    .venv-tf5/bin/python tools/golden/make_semantics5_golden.py
"""

from __future__ import annotations


import numpy as np
import torch
from _oracle import GOLDEN, TIE_GAP, left_pad, save_golden  # run from the repository root
from transformers import GPT2LMHeadModel

FORMAT_VERSION = 1
REGENERATE = ".venv-tf5/bin/python tools/golden/make_semantics5_golden.py"
CASES = {"greedy_search": 20, "beam_search": 20}


class TieRecorder:
    """Smallest gap between the values torch.topk / torch.argmax choose among while generate runs."""

    def __init__(self) -> None:
        self.min_gap = np.inf
        self._topk, self._argmax = torch.topk, torch.argmax

    def _gap(self, values: torch.Tensor) -> None:
        v = values.double().numpy()
        if v.shape[-1] >= 2:
            d = v[..., :-1] - v[..., 1:]
            # ties among -inf or 5.x's -1e9 placeholders (beams not yet started / finished) do not matter
            d = np.where((v[..., :-1] <= -1e8) & (v[..., 1:] <= -1e8), np.inf, d)
            self.min_gap = min(self.min_gap, float(np.nanmin(d)))

    def topk(self, x, k, *args, **kwargs):
        self._gap(self._topk(x, min(k + 1, x.shape[-1]), dim=-1).values)
        return self._topk(x, k, *args, **kwargs)

    def argmax(self, x, *args, **kwargs):
        if x.dim() >= 1 and x.shape[-1] >= 2 and x.is_floating_point():
            self._gap(self._topk(x, 2, dim=-1).values)
        return self._argmax(x, *args, **kwargs)

    def __enter__(self):
        torch.topk, torch.argmax = self.topk, self.argmax
        return self

    def __exit__(self, *exc):
        torch.topk, torch.argmax = self._topk, self._argmax

def draw_case(mode: str, rng: np.random.Generator, vocab: int, eos: int) -> tuple[list, dict]:
    """2-3 prompts of different lengths (so at least one row is left-padded), a repetition penalty."""
    n = int(rng.integers(2, 4))
    lengths = rng.choice(np.arange(1, 8), size=n, replace=False)
    prompts = [[int(t) for t in rng.integers(1, vocab, size=int(k)) if t != eos] or [1] for k in lengths]
    kw: dict = dict(max_new_tokens=int(rng.integers(4, 12)), repetition_penalty=float(rng.choice([1.3, 2.0, 0.8])),
                    do_sample=False, pad_token_id=eos, eos_token_id=eos,
                    output_scores=True, return_dict_in_generate=True)
    if mode == "beam_search":
        kw["num_beams"] = int(rng.choice([2, 3, 4]))
        kw["num_return_sequences"] = int(rng.integers(1, kw["num_beams"] + 1))
        kw["early_stopping"] = [True, False, "never"][int(rng.integers(0, 3))]
        kw["length_penalty"] = float(rng.choice([0.0, 1.0, 2.0]))
    return prompts, kw


@torch.no_grad()
def run_case(model, prompts: list, kw: dict, eos: int) -> tuple[dict, float]:
    ids, mask = left_pad(prompts, eos)
    with TieRecorder() as rec:
        out = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), **kw)
    arrays = {"input_ids": ids.astype(np.int16), "attention_mask": mask.astype(np.int8),
              "sequences": out.sequences.numpy().astype(np.int16),
              "scores": torch.stack(out.scores).numpy().astype(np.float32)}
    if getattr(out, "sequences_scores", None) is not None:
        arrays["sequences_scores"] = out.sequences_scores.numpy().astype(np.float32)
    if getattr(out, "beam_indices", None) is not None:
        arrays["beam_indices"] = out.beam_indices.numpy().astype(np.int16)
    return arrays, rec.min_gap


def main() -> None:
    models = {name: GPT2LMHeadModel.from_pretrained(GOLDEN / "models" / name).eval()
              for name in ("decode-a", "decode-b", "decode-c")}
    rng = np.random.default_rng(55)
    arrays: dict[str, np.ndarray] = {}
    cases: list[dict] = []
    names = list(models)
    for mode, count in CASES.items():
        made, tries = 0, 0
        while made < count:
            tries += 1
            name = names[(made + tries) % len(names)]
            model = models[name]
            eos = int(model.config.eos_token_id)
            prompts, kw = draw_case(mode, rng, model.config.vocab_size, eos)
            out, gap = run_case(model, prompts, kw, eos)
            if gap < TIE_GAP:
                continue
            cid = f"c{len(cases):03d}"
            arrays.update({f"{cid}/{k}": v for k, v in out.items()})
            cases.append(dict(id=cid, mode=mode, model=name, kwargs=kw, min_gap=gap))
            made += 1
        print(f"{mode}: {made} cases ({tries - made} redrawn for near-ties)", flush=True)
    path = GOLDEN / "decode_semantics5.npz"
    save_golden(path, arrays, FORMAT_VERSION, "tools/golden/make_semantics5_golden.py", REGENERATE, cases=cases)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
