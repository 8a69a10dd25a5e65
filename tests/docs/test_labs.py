"""The tutorials' exercises: every checker accepts its solution and rejects a typical wrong answer.

``tutorials/_labs.py`` builds the cases and compares a student's function with refdecode;
``tutorials/solutions/labNN_*.py`` hold one solution per exercise. Each wrong answer below is a
mistake people make when porting the algorithm (the comment says which); the checker must name the
exercise and fail on it. The tutorials themselves must end with their exercises and run with the
stubs unimplemented (``tests/test_tutorials.py`` runs them).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

TUTORIALS_DIR = ROOT / "tutorials"
SOLUTIONS_DIR = TUTORIALS_DIR / "solutions"
sys.path.insert(0, str(TUTORIALS_DIR))
sys.path.insert(0, str(SOLUTIONS_DIR))

import _labs  # noqa: E402

from refdecode import StoppingCriteria  # noqa: E402


def _solutions() -> dict[str, object]:
    """Every exercise's solution function, from tutorials/solutions/labNN_*.py."""
    found: dict[str, object] = {}
    for path in sorted(SOLUTIONS_DIR.glob("lab[0-9][0-9]_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found.update({name: getattr(module, name) for name in _labs.EXERCISES if hasattr(module, name)})
    return found


SOLUTIONS = _solutions()


def test_every_exercise_has_a_solution_and_every_tutorial_two_or_three_exercises():
    assert set(SOLUTIONS) == set(_labs.EXERCISES)
    tutorials = sorted(TUTORIALS_DIR.glob("[0-9][0-9]_*.py"))
    for number, path in enumerate(tutorials, start=1):
        assert 2 <= len(_labs.exercises_of(number)) <= 3, path.name


@pytest.mark.parametrize("name", sorted(_labs.EXERCISES))
def test_checker_accepts_the_solution(name):
    ok, report = _labs.run(name, SOLUTIONS[name])
    assert ok, report


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(SOLUTIONS_DIR.glob("lab[0-9][0-9]_*.py")), ids=lambda p: p.stem)
def test_solution_files_run_as_scripts(path, tmp_path):
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("[v]") == sum(1 for e in _labs.EXERCISES.values() if e.tutorial == int(path.stem[3:5]))


# ---- typical wrong answers ---------------------------------------------------------------------------


def _sum_not_product(table, tokens):                       # adds probabilities instead of multiplying
    return float(sum(table[a, b] for a, b in zip(tokens[:-1], tokens[1:])))


def _path_with_start(table, start, steps):                 # returns the prompt token too
    path = [start]
    for _ in range(steps):
        path.append(int(np.argmax(table[path[-1]])))
    return path


def _the_tutorial_tree():                                   # copies the tutorial's own example (starts with "car")
    from _common import TOY_TREE
    return dict(TOY_TREE, The={"dog": 0.35, "nice": 0.45, "car": 0.2},
                dog={"and": 0.3, "runs": 0.2, "has": 0.5}, car={"is": 0.05, "drives": 0.95})


def _the_original_tree():                                   # 2 beams already find "The dog has"
    from _common import TOY_TREE
    return dict(TOY_TREE)


def _positions_ignoring_mask(attention_mask):              # arange: the padded row starts at its pad count
    return np.broadcast_to(np.arange(attention_mask.shape[1]), attention_mask.shape).copy()


def _scatter_not_gather(keys, beam_idx):                   # new[beam_idx[i]] = old[i]: the inverse permutation
    out = np.zeros_like(keys)
    out[np.asarray(beam_idx)] = keys
    return out


def _always_divide(input_ids, scores, penalty):            # the sign bug: dividing a negative score rewards it
    out = scores.copy()
    for row, ids in enumerate(input_ids):
        out[row, np.unique(ids)] /= penalty
    return out


def _bigram_ban(row, n):                                   # ignores n: bans what followed the last token
    return sorted({row[i + 1] for i in range(len(row) - 1) if row[i] == row[-1]})


def _min_length_le(input_ids, scores, min_length, eos_token_id):   # <= instead of <
    out = scores.copy()
    if input_ids.shape[-1] <= min_length:
        out[:, eos_token_id] = -np.inf
    return out


def _times_temperature(logits, temperature):               # multiplies by T instead of dividing
    z = logits * temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _exactly_k(scores, top_k):                             # keeps exactly k: drops tokens tied with the k-th
    out = np.full_like(scores, -np.inf)
    idx = np.argsort(-scores, axis=-1, kind="stable")[:, :top_k]
    np.put_along_axis(out, idx, np.take_along_axis(scores, idx, axis=-1), axis=-1)
    return out


def _top_p_ge(probs, p):                                   # >= instead of >: drops the token that reaches p exactly
    order = np.argsort(-probs, axis=-1, kind="stable")
    sp = np.take_along_axis(probs, order, axis=-1)
    sp = np.where(np.cumsum(sp, axis=-1) - sp >= p, 0.0, sp)
    out = np.zeros_like(probs)
    np.put_along_axis(out, order, sp / sp.sum(axis=-1, keepdims=True), axis=-1)
    return out


def _penalty_times_length(sum_logprobs, generated_len, length_penalty):   # multiplies by alpha
    return sum_logprobs / (generated_len * length_penalty) if length_penalty else sum_logprobs


def _is_done_heuristic_only(worst_score, best_sum_logprobs, cur_len, length_penalty, early_stopping, max_length,
                            decoder_prompt_len):                  # treats "never" like False
    if early_stopping is True:
        return True
    return bool(worst_score >= best_sum_logprobs / (cur_len - decoder_prompt_len) ** length_penalty)


def _penalty_once_per_token(scores, previous_tokens, diversity_penalty):   # a set: repeated choices counted once
    out = scores.copy()
    out[:, sorted(set(np.asarray(previous_tokens).tolist()))] -= diversity_penalty
    return out


def _n_per_beam(total, n):                                 # n // K best per beam: the misreading of "each beam picks two"
    batch, beams, vocab = total.shape
    per = n // beams
    order = np.argsort(-total, axis=-1, kind="stable")[:, :, :per]                  # (B, K, per)
    scores = np.take_along_axis(total, order, axis=-1).reshape(batch, -1)
    beam = np.repeat(np.arange(beams), per)[None].repeat(batch, 0)
    return scores, beam, order.reshape(batch, -1)


def _mode_ignoring_groups(config):                         # forgets num_beam_groups
    if config.get("num_beams", 1) == 1:
        return "sample" if config.get("do_sample") else "greedy_search"
    return "beam_sample" if config.get("do_sample") else "beam_search"


class _StopOnFirstToken(StoppingCriteria):                 # looks at the first token instead of the last
    def __init__(self, token_id):
        self.token_id = token_id

    def __call__(self, input_ids, scores, **kwargs):
        return bool((input_ids[:, 0] == self.token_id).all())


WRONG = {
    "sequence_probability": [_sum_not_product],
    "greedy_path": [_path_with_start],
    "beams_miss_the_best": [_the_tutorial_tree, _the_original_tree],
    "position_ids": [_positions_ignoring_mask],
    "reorder_rows": [_scatter_not_gather],
    "repetition_penalty": [_always_divide],
    "no_repeat_ngram_banned": [_bigram_ban],
    "min_length": [_min_length_le],
    "temperature_softmax": [_times_temperature],
    "top_k_filter": [_exactly_k],
    "llama_top_p": [_top_p_ge],
    "hypothesis_score": [_penalty_times_length],
    "is_done": [_is_done_heuristic_only],
    "hamming_penalty": [_penalty_once_per_token],
    "top_candidates": [_n_per_beam],
    "generation_mode": [_mode_ignoring_groups],
    "stop_on_token": [_StopOnFirstToken],
}


def test_every_exercise_has_a_wrong_answer():
    assert set(WRONG) == set(_labs.EXERCISES)


@pytest.mark.parametrize("name,wrong", [(n, w) for n, ws in WRONG.items() for w in ws],
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_checker_rejects_a_typical_wrong_answer(name, wrong):
    ok, report = _labs.run(name, wrong)
    assert not ok and report.startswith(f"[x] {name}: case "), report


def test_unattempted_and_crashing_answers_are_reported_not_raised(capsys):
    def stub(**kwargs):
        raise NotImplementedError

    def crash(**kwargs):
        return [][1]

    assert _labs.check("llama_top_p", stub) is False
    assert _labs.check("llama_top_p", crash) is False
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[ ] llama_top_p: not attempted yet")
    assert out[1].startswith("[x] llama_top_p: case 1/") and "IndexError" in out[1]


def test_a_wrong_answer_report_shows_input_expected_and_got():
    ok, report = _labs.run("min_length", _min_length_le)
    assert not ok
    assert "length 5, min_length 5" in report          # the boundary case is the one that fails
    assert "expected" in report and "got" in report and "input" in report


@pytest.mark.parametrize("path", sorted(TUTORIALS_DIR.glob("[0-9][0-9]_*.py")), ids=lambda p: p.stem)
def test_tutorial_ends_with_its_exercises(path):
    """Each tutorial's last section is "Exercises" and checks each of its exercises by name."""
    text = path.read_text(encoding="utf-8")
    number = int(path.name[:2])
    assert "## Exercises" in text, path.name
    tail = text[text.index("## Exercises"):]
    for exercise in _labs.exercises_of(number):
        assert re.search(rf'check\("{exercise.name}", ', tail), f"{path.name} does not check {exercise.name}"
    assert "solutions/" in tail, "point to the solutions"


# ---- issue 25: the cases say what they are ---------------------------------------------------------------


def test_llama_top_p_uses_the_top_p_articles_own_example():
    """The case labelled "the top-p article's example" is the article's (section 3.2): [0.1, 0.3, 0.4, 0.15, 0.05],
    p = 0.8 (it used to be [0.05, 0.1, 0.6, 0.15, 0.1], a different row with a tie at the cut)."""
    cases = {label: kwargs for label, kwargs, _ in _labs.EXERCISES["llama_top_p"].cases()}
    article = cases["the top-p article's example"]
    assert article["probs"].tolist() == [[np.float32(x).item() for x in (0.1, 0.3, 0.4, 0.15, 0.05)]]
    assert article["p"] == 0.8
