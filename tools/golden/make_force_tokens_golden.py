"""Golden ForceTokensLogitsProcessor (``forced_decoder_ids``) outputs of transformers 4.38.2 (oracle venv only).

Writes ``tests/golden/force_tokens.npz``: (1) the processor on random float32 scores for sequence lengths
1-8 and maps of one to three [index, token] pairs; (2) greedy and beam ``generate`` on the tiny random
GPT-2s of ``tests/golden/models/decode-*`` with ``forced_decoder_ids`` (indices inside and beyond the
generated span), with and without ``begin_suppress_tokens`` (whose begin index 4.38.2 moves past the
last forced position). ``meta`` (JSON) holds versions, the regenerate command and the cases.

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_force_tokens_golden.py
"""

from __future__ import annotations

import numpy as np
import torch
from _oracle import GOLDEN, save_golden  # run from the repository root
from transformers import GPT2LMHeadModel
from transformers.generation.logits_process import ForceTokensLogitsProcessor

REGENERATE = ".venv-oracle/bin/python tools/golden/make_force_tokens_golden.py"


@torch.no_grad()
def main() -> None:
    rng = np.random.default_rng(1738)
    arrays: dict[str, np.ndarray] = {}
    cases = []
    for i in range(40):
        length, vocab = int(rng.integers(1, 9)), int(rng.integers(4, 12))
        pairs = sorted({int(rng.integers(1, 10)): int(rng.integers(0, vocab)) for _ in range(int(rng.integers(1, 4)))}
                       .items())
        ids = rng.integers(0, vocab, size=(2, length))
        scores = rng.normal(size=(2, vocab)).astype(np.float32)
        out = ForceTokensLogitsProcessor([list(p) for p in pairs])(torch.from_numpy(ids), torch.from_numpy(scores.copy()))
        cid = f"p{i:03d}"
        arrays[f"{cid}/input_ids"], arrays[f"{cid}/scores"], arrays[f"{cid}/out"] = ids, scores, out.numpy()
        cases.append(dict(id=cid, kind="processor", forced_decoder_ids=[list(p) for p in pairs]))
    for i in range(12):
        name = ["decode-a", "decode-b", "decode-c"][i % 3]
        model = GPT2LMHeadModel.from_pretrained(GOLDEN / "models" / name).eval()
        eos, vocab = int(model.generation_config.eos_token_id), model.config.vocab_size
        ids = torch.from_numpy(rng.integers(1, vocab, size=(1, int(rng.integers(2, 6)))))
        T = ids.shape[1]
        forced = [[T + int(rng.integers(0, 4)), int(rng.integers(1, vocab))] for _ in range(int(rng.integers(1, 3)))]
        forced = sorted({k: v for k, v in forced}.items())
        kw = dict(max_new_tokens=6, forced_decoder_ids=[list(p) for p in forced], eos_token_id=eos, pad_token_id=eos,
                  num_beams=1 if i % 2 == 0 else 3, return_dict_in_generate=True, output_scores=True)
        if i % 4 >= 2:
            kw["begin_suppress_tokens"] = [int(t) for t in rng.integers(1, vocab, size=3)]
        out = model.generate(ids, **kw)
        cid = f"g{i:03d}"
        arrays[f"{cid}/input_ids"], arrays[f"{cid}/sequences"] = ids.numpy(), out.sequences.numpy()
        cases.append(dict(id=cid, kind="generate", model=name, kwargs=kw))
    path = GOLDEN / "force_tokens.npz"
    save_golden(path, arrays, 1, "tools/golden/make_force_tokens_golden.py", REGENERATE, cases=cases)
    print(f"wrote {path}: {len(cases)} cases ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
