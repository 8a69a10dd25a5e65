"""Golden StopStringCriteria / EosTokenCriteria answers of transformers 4.41.0 (the first release with both).

StopStringCriteria and EosTokenCriteria are newer than the pinned 4.38.2, so this script runs in a
venv of its own with transformers 4.41.0 (torch pinned to the CPU wheel on disk)::

    python3 -m venv .venv-tf441 && .venv-tf441/bin/pip install torch==2.13.0 transformers==4.41.0
    .venv-tf441/bin/python tools/golden/make_stop_strings_golden.py

Writes ``tests/golden/stop_strings.npz``: for the GPT-2 tokenizer of ``models/tiny-shakespeare``,
(1) texts (Shakespeare lines, newlines, unicode split across byte-level tokens, emoji) encoded to
ids, and random id sequences, each with a set of stop strings, and the criteria's answer on **every
prefix** of each sequence (a (T,) bool row per case); (2) EosTokenCriteria on random rows;
(3) greedy ``generate(stop_strings=..., tokenizer=...)`` on the shipped tiny-shakespeare model, a
batch of two prompts, with the output sequences (rows stopped early are padded, 4.41's per-row
stopping). ``meta`` (JSON) holds the format version, versions, the regenerate command and cases.
"""

from __future__ import annotations

import json

import numpy as np
import torch
from _oracle import GOLDEN, ROOT, save_golden  # run from the repository root
from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast
from transformers.generation.stopping_criteria import EosTokenCriteria, StopStringCriteria

MODEL = ROOT / "models" / "tiny-shakespeare"
FORMAT_VERSION = 1
REGENERATE = ".venv-tf441/bin/python tools/golden/make_stop_strings_golden.py"

TEXTS = [
    "ROMEO:\nBut soft! what light through yonder window breaks?\n\nJULIET:\nO Romeo, Romeo!",
    "To be, or not to be: that is the question.\n\nEnter HAMLET.",
    "Caf\u00e9 cr\u00e8me, na\u00efve fa\u00e7ade; \u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3002 \U0001F600 end.",
    "The end.<|endoftext|>The beginning of another text.",
    "a b c d e f g h\n\n\n  spaced   out \t tabs",
    "What's done is done. What, will these hands ne'er be clean?",
]
STOPS = [["\n\n"], ["."], ["Romeo"], ["JULIET:"], ["o, R"], ["\u672c\u8a9e"], ["\U0001F600"], ["<|endoftext|>"],
         ["done", "clean?"], ["e"], [" "], ["ne'er be"], ["\n\nEnter"], ["na\u00efve"], ["s?\n"]]


def answers_on_prefixes(tokenizer, ids: list[int], stops: list[str]) -> list[bool] | None:
    """The criteria's answer after each token, or None where 4.41.0 cannot build the criteria (every stop
    string one character long: ``max()`` of an empty sequence in ``_stop_string_create_embedding_vec``)."""
    try:
        criteria = StopStringCriteria(tokenizer=tokenizer, stop_strings=stops)
    except ValueError:
        return None
    return [bool(criteria(torch.tensor([ids[: t + 1]]), None)[0]) for t in range(len(ids))]


def main() -> None:
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(MODEL / "tokenizer.json"))
    rng = np.random.default_rng(41)
    arrays: dict[str, np.ndarray] = {}
    cases, refused = [], []
    sequences = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in TEXTS]
    sequences += [rng.integers(0, len(tokenizer), size=int(rng.integers(3, 12))).tolist() for _ in range(30)]
    for i, ids in enumerate(sequences):
        for stops in ([STOPS[j] for j in rng.choice(len(STOPS), size=4, replace=False)] if i >= len(TEXTS) else STOPS):
            answers = answers_on_prefixes(tokenizer, ids, stops)
            if answers is None:
                refused.append(stops)
                continue
            cid = f"s{len(cases):04d}"
            arrays[f"{cid}/ids"] = np.array(ids, dtype=np.int32)
            arrays[f"{cid}/done"] = np.array(answers, dtype=bool)
            cases.append(dict(id=cid, kind="stop_strings", stop_strings=stops))
    # random tokens that end in a stop string's own tokens, so that many answers are True
    for _ in range(40):
        stop = STOPS[int(rng.integers(len(STOPS)))][0]
        ids = rng.integers(0, len(tokenizer), size=int(rng.integers(0, 4))).tolist()
        ids += tokenizer(stop, add_special_tokens=False)["input_ids"] + [int(rng.integers(0, len(tokenizer)))]
        answers = answers_on_prefixes(tokenizer, ids, [stop])
        if answers is None:
            refused.append([stop])
            continue
        cid = f"s{len(cases):04d}"
        arrays[f"{cid}/ids"] = np.array(ids, dtype=np.int32)
        arrays[f"{cid}/done"] = np.array(answers, dtype=bool)
        cases.append(dict(id=cid, kind="stop_strings", stop_strings=[stop]))
    rows = rng.integers(0, 8, size=(6, 4))
    for eos in (3, [3, 5]):
        cid = f"e{len(cases):04d}"
        arrays[f"{cid}/ids"] = rows.astype(np.int32)
        arrays[f"{cid}/done"] = EosTokenCriteria(eos_token_id=eos)(torch.tensor(rows), None).numpy()
        cases.append(dict(id=cid, kind="eos", eos_token_id=eos))
    model = GPT2LMHeadModel.from_pretrained(MODEL).eval()
    tokenizer.eos_token = tokenizer.pad_token = "<|endoftext|>"
    tokenizer.padding_side = "left"
    for stops, prompts in [(["\n\n"], ["ROMEO:\n", "JULIET:\nO"]), ([".\n"], ["KING HENRY:\nI", "First Citizen:\n"]),
                           (["the", "my"], ["HAMLET:\n", "ROMEO:\nI"])]:
        enc = tokenizer(prompts, return_tensors="pt", padding=True)   # (its token_type_ids are not passed: GPT-2
        #                                                              would add wte[0] to every position)
        with torch.no_grad():
            out = model.generate(enc["input_ids"], attention_mask=enc["attention_mask"], max_new_tokens=24, do_sample=False, stop_strings=stops, tokenizer=tokenizer,
                                 pad_token_id=tokenizer.eos_token_id)
        cid = f"g{len(cases):04d}"
        arrays[f"{cid}/input_ids"] = enc["input_ids"].numpy().astype(np.int32)
        arrays[f"{cid}/attention_mask"] = enc["attention_mask"].numpy().astype(np.int8)
        arrays[f"{cid}/sequences"] = out.numpy().astype(np.int32)
        cases.append(dict(id=cid, kind="generate", stop_strings=stops, max_new_tokens=24))
    path = GOLDEN / "stop_strings.npz"
    save_golden(path, arrays, FORMAT_VERSION, "tools/golden/make_stop_strings_golden.py", REGENERATE, cases=cases,
                refused_by_transformers=sorted({json.dumps(r) for r in refused}))
    n_true = sum(int(arrays[f"{c['id']}/done"].sum()) for c in cases if c["kind"] == "stop_strings")
    print(f"wrote {path}: {len(cases)} cases, {n_true} prefixes that stop ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
