r"""Unit cases for stop strings: (token strings, token id rows, stop strings) -> one bool per row.

Contract: registers ``eos_token`` (``EosTokenCriteria``: a row is done when its last token is one of
``eos_token_id``) and ``stop_strings``: ``StopStringCriteria`` of transformers 4.41 (newer than the
pin; refdecode's class is golden-checked against 4.41.0 by tests/golden/stop_strings.npz). The
vocabulary ships in the case as the text of each token (``token_strings[id]``, its own decode), so
no tokenizer is needed. The rule: a row is done when some stop string ends **inside its last
token**: the concatenated text of the row's tokens, cut at some character of the last token, ends
with the stop string (the last token may carry more characters after it). A stop string that ended
one token earlier does not count; one spanning several tokens does.
"""

from __future__ import annotations

import numpy as np

import refdecode as rd

from .kinds import BOOL, I64, INT, STR, ListOf, obj
from .registry import Case, CaseType, register

VOCAB = ["a", "b", "c", "\n", "\n\n", "ab", "b\nc", " the", ".", "!\n", "ca", "abc", " ", "the"]


def _build_stop_strings() -> list[Case]:
    rng, cases = np.random.default_rng(161), []
    for i in range(40):
        vocab = VOCAB[: int(rng.integers(6, len(VOCAB) + 1))]
        rows = rng.integers(0, len(vocab), (int(rng.integers(2, 7)), int(rng.integers(1, 7)))).astype(np.int64)
        stops = []
        for _ in range(int(rng.integers(1, 4))):  # substrings of the rows' texts, so that some rows stop
            text = "".join(vocab[t] for t in rows[int(rng.integers(0, rows.shape[0]))])
            start = int(rng.integers(0, len(text)))
            stops.append(text[start : start + int(rng.integers(1, 5))])
        if i % 5 == 0:
            stops.append("\n\n")
        stops = list(dict.fromkeys(stops))
        cases.append(Case(f"{rows.shape[0]} rows of {rows.shape[1]} tokens, {len(stops)} stop string(s)",
                          {"token_strings": vocab, "input_ids": rows, "stop_strings": stops}))
    return cases


register(CaseType(
    name="stop_strings", groups=("stopping",),
    summary="StopStringCriteria (transformers 4.41 semantics): a row is done when one of stop_strings ends inside "
            "the row's last token (the text of the row's tokens, token_strings[id] each, cut after some character "
            "of the last token, ends with it); a stop string that ended in an earlier token does not count.",
    inputs=obj(token_strings=ListOf(STR), input_ids=I64(2), stop_strings=ListOf(STR)), outputs=obj(done=ListOf(BOOL)),
    build=_build_stop_strings,
    run=lambda inp: {"done": [bool(d) for d in rd.StopStringCriteria(list(inp["token_strings"]), list(
        inp["stop_strings"]))(inp["input_ids"], None)]}))


def _build_eos_token() -> list[Case]:
    rng, cases = np.random.default_rng(162), []
    for _ in range(20):
        vocab = int(rng.integers(2, 8))
        rows = rng.integers(0, vocab, (int(rng.integers(1, 6)), int(rng.integers(1, 5)))).astype(np.int64)
        eos = [int(e) for e in rng.choice(vocab, int(rng.integers(1, 3)), replace=False)]
        cases.append(Case(f"{rows.shape[0]} rows, eos {eos} (earlier eos tokens do not count)",
                          {"input_ids": rows, "eos_token_id": eos}))
    return cases


register(CaseType(
    name="eos_token", groups=("stopping",),
    summary="EosTokenCriteria (transformers 4.40+; 4.38.2's loops do the same check themselves): a row is done when "
            "its last token is one of eos_token_id.",
    inputs=obj(input_ids=I64(2), eos_token_id=ListOf(INT)), outputs=obj(done=ListOf(BOOL)), build=_build_eos_token,
    run=lambda inp: {"done": [bool(d) for d in rd.EosTokenCriteria(list(inp["eos_token_id"]))(inp["input_ids"],
                                                                                              None)]}))
