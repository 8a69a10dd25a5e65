"""What every tutorial shares: where the model is, the toy language model of tutorial 01, text bar charts.

The tutorials import this module (``from _common import ...``); it works when a tutorial is run as
``python tutorials/0N_x.py`` from any directory, and in Jupyter when the notebook sits in ``tutorials/``.
Paths are resolved from this file, never from the current directory.

**The model used by every tutorial is chosen here, in one line** (``MODEL_NAME``). The tutorials
assert only facts that hold for any GPT-2 checkpoint (shapes, equalities between two ways of computing
the same thing, numbers worked out by hand), so switching models never breaks them.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from refdecode import GPT2, Tokenizer
from refdecode.model.stand_ins import TableModel

ROOT = Path(__file__).resolve().parent.parent   # the repository

# ---- the model ----------------------------------------------------------------------------------

#: The shipped model the tutorials run on: a 4-layer GPT-2 trained on Shakespeare (writes readable
#: text). Switch to "gpt2-tiny" (random weights, gibberish) or to "gpt2" once you have placed the real
#: GPT-2 there (see models/README.md). The environment variable REFDECODE_TUTORIAL_MODEL (a directory)
#: overrides it.
MODEL_NAME = "tiny-shakespeare"


@functools.lru_cache(maxsize=None)
def model_dir() -> Path:
    """The model directory: $REFDECODE_TUTORIAL_MODEL if set, else models/MODEL_NAME."""
    if os.environ.get("REFDECODE_TUTORIAL_MODEL"):
        return Path(os.environ["REFDECODE_TUTORIAL_MODEL"]).resolve()
    return ROOT / "models" / MODEL_NAME


def load() -> tuple[GPT2, Tokenizer]:
    """The tutorial model and its tokenizer."""
    path = model_dir()
    print(f"model: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return GPT2.from_pretrained(path), Tokenizer(path)


# ---- the toy language model of tutorial 01 -------------------------------------------------------

#: The next-word probabilities of the figure in the 4.26 walkthrough, section 2.1 (the figure of
#: Hugging Face's blog post "How to generate text"). It stops after two words; we add an end: after
#: the second word, "." (our end-of-sequence token) with 0.9 or "!" with 0.1; after "!", "." or "!"
#: with 0.5 each. Tutorials 01 and 05 run on it.
TOY_TREE: dict[str, dict[str, float]] = {
    "The": {"dog": 0.4, "nice": 0.5, "car": 0.1},
    "dog": {"and": 0.05, "runs": 0.05, "has": 0.9},
    "nice": {"woman": 0.4, "house": 0.3, "guy": 0.3},
    "car": {"is": 0.3, "drives": 0.5, "turns": 0.2},
    **{leaf: {".": 0.9, "!": 0.1} for leaf in
       ("and", "runs", "has", "woman", "house", "guy", "is", "drives", "turns")},
    "!": {".": 0.5, "!": 0.5},
    ".": {".": 1.0},
}
TOY_VOCAB: list[str] = ["The", "dog", "nice", "car", "and", "runs", "has", "woman", "house", "guy",
                        "is", "drives", "turns", ".", "!"]
TOY_EOS = TOY_VOCAB.index(".")


def toy_probs(tree: dict[str, dict[str, float]] = TOY_TREE) -> np.ndarray:
    """The tree as a float32 (V, V) table: row a = P(next token | last token a)."""
    table = np.zeros((len(TOY_VOCAB), len(TOY_VOCAB)), dtype=np.float32)
    for word, nexts in tree.items():
        for nxt, p in nexts.items():
            table[TOY_VOCAB.index(word), TOY_VOCAB.index(nxt)] = p
    assert np.allclose(table.sum(axis=1), 1.0), "every row of the toy model must be a distribution"
    return table


def toy_model(tree: dict[str, dict[str, float]] = TOY_TREE, eos: bool = False) -> TableModel:
    """A refdecode.model.stand_ins.TableModel whose logits are log(probabilities) (-inf where p = 0).

    Every word occurs once in the tree, so "the next word depends on the last word" (a bigram table)
    is the whole tree. ``eos=True`` declares "." the end-of-sequence token.
    """
    probs = toy_probs(tree)
    with np.errstate(divide="ignore"):
        logits = np.log(probs)   # log 0 = -inf: softmax gives it probability 0 again
    return TableModel(logits, eos_token_id=TOY_EOS if eos else None)


def toy_ids(words: str) -> np.ndarray:
    """"The dog" -> int64 (1, T) toy token ids."""
    return np.array([[TOY_VOCAB.index(w) for w in words.split()]], dtype=np.int64)


def toy_text(ids) -> str:
    """Toy token ids (T,) -> "The dog has"."""
    return " ".join(TOY_VOCAB[int(i)] for i in ids)


# ---- printing ------------------------------------------------------------------------------------


def bars(labels: list[str], values, width: int = 40, fmt: str = "{:.3f}") -> str:
    """A text bar chart, one line per label, bar length proportional to value (max value = width)."""
    values = [float(v) for v in values]
    top = max(values) if values and max(values) > 0 else 1.0
    pad = max(len(label) for label in labels)
    return "\n".join(f"{label:>{pad}} {fmt.format(v)} {'#' * round(width * v / top)}"
                     for label, v in zip(labels, values))


def show(tokenizer: Tokenizer, ids) -> str:
    """Decode token ids to text, showing newlines as '\\n' so each sequence prints on one line."""
    return repr(tokenizer.decode(np.asarray(ids)))
