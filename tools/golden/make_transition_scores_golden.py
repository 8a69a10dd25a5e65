"""Golden ``compute_transition_scores`` of transformers 4.38.2 (oracle venv only).

Writes ``tests/golden/transition_scores.npz``: for each case, transformers' own ``generate`` output on
``tests/golden/models/decode-a`` (a tiny random GPT-2 whose eos greedy search emits; see
make_decode_golden.py) -- ``sequences``, the per-step ``scores`` stacked to (S, rows, V), ``beam_indices``
(beam modes) -- and what ``model.compute_transition_scores(sequences, scores, beam_indices,
normalize_logits)`` returns. The test feeds transformers' inputs to refdecode's
``compute_transition_scores`` and compares with transformers' result. Cases: greedy, sample (3 return
sequences), beam search (early stopping, 2 prompts left-padded, so beams end at different steps), beam
sample, group beam search; each with ``normalize_logits`` False and True. ``meta`` (JSON string) holds
format_version, versions, the regenerate command and the cases.

Run from the repository root::

    PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_transition_scores_golden.py
"""

from __future__ import annotations

import json

import numpy as np
import torch
import transformers
from _oracle import GOLDEN  # run from the repository root
from transformers import GPT2LMHeadModel

FORMAT_VERSION = 1
REGENERATE = "PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_transition_scores_golden.py"

CASES = [
    ("greedy", dict(max_new_tokens=12)),
    ("sample", dict(max_new_tokens=10, do_sample=True, top_k=20, num_return_sequences=3)),
    ("beam_search", dict(max_new_tokens=12, num_beams=4, num_return_sequences=2, early_stopping=True)),
    ("beam_search_lp", dict(max_new_tokens=10, num_beams=3, length_penalty=0.5)),
    ("beam_sample", dict(max_new_tokens=10, num_beams=3, do_sample=True, top_k=30)),
    ("group_beam_search", dict(max_new_tokens=10, num_beams=4, num_beam_groups=2, diversity_penalty=1.0,
                               num_return_sequences=2)),
]


def main() -> None:
    model = GPT2LMHeadModel.from_pretrained(GOLDEN / "models" / "decode-a").eval()
    input_ids = torch.tensor([[5, 17, 33, 8], [0, 0, 41, 2]])         # second prompt left-padded
    attention_mask = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])
    arrays, meta_cases = {}, []
    for name, kwargs in CASES:
        torch.manual_seed(0)
        out = model.generate(input_ids, attention_mask=attention_mask, pad_token_id=0, return_dict_in_generate=True,
                             output_scores=True, **kwargs)
        beam_indices = getattr(out, "beam_indices", None)
        arrays[f"{name}/sequences"] = out.sequences.numpy()
        arrays[f"{name}/scores"] = torch.stack(out.scores).numpy()
        if beam_indices is not None:
            arrays[f"{name}/beam_indices"] = beam_indices.numpy()
        for normalize in (False, True):
            t = model.compute_transition_scores(out.sequences, out.scores, beam_indices, normalize_logits=normalize)
            arrays[f"{name}/transition_{int(normalize)}"] = t.numpy()
        meta_cases.append(dict(name=name, kwargs=kwargs, beam=beam_indices is not None))
    meta = dict(format_version=FORMAT_VERSION, transformers=transformers.__version__, torch=torch.__version__,
                regenerate=REGENERATE, model="tests/golden/models/decode-a", cases=meta_cases)
    np.savez_compressed(GOLDEN / "transition_scores.npz", meta=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {GOLDEN / 'transition_scores.npz'}: {len(CASES)} cases x 2")


if __name__ == "__main__":
    main()
