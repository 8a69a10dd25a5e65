"""Solutions to tutorial 01's exercises (a language model as a table)."""

from __future__ import annotations

import numpy as np

from _run import check_all


def sequence_probability(table, tokens):
    """P(tokens[1:] | tokens[0]): the product of the table entries along the path."""
    p = 1.0
    for prev, nxt in zip(tokens[:-1], tokens[1:]):
        p *= float(table[prev, nxt])
    return p


def greedy_path(table, start, steps):
    """Append the most probable next token `steps` times (argmax: the lowest id among ties)."""
    path = [start]
    for _ in range(steps):
        path.append(int(np.argmax(table[path[-1]])))
    return path[1:]


def beams_miss_the_best():
    """"nice" is the best first word and "car" second, so 2 beams drop "dog", whose "dog has" is best."""
    from _common import TOY_TREE
    return dict(TOY_TREE, The={"dog": 0.2, "nice": 0.45, "car": 0.35},
                dog={"and": 0.005, "runs": 0.005, "has": 0.99}, car={"is": 0.5, "drives": 0.5})


if __name__ == "__main__":
    raise SystemExit(0 if check_all(globals()) else 1)
