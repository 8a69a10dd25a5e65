"""The tutorials' exercises: every checker accepts its solution and rejects a typical wrong answer.

``tutorials/_labs.py`` builds the cases and compares a student's function with refdecode;
``tutorials/solutions/labNN_*.py`` hold one solution per exercise. Each wrong answer below is a
mistake people make when porting the algorithm (the comment says which); the checker must name the
exercise and fail on it. The tutorials themselves must end with their exercises and run with the
stubs unimplemented (``tests/docs/test_tutorials.py`` runs them).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT
from leak_checks import answer_numbers, numbers_in

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


def _rope_complex_pairs(x, position_ids, theta):          # Meta's / llama2.c's form: neighbours as complex numbers
    D = x.shape[-1]
    freqs = 1.0 / theta ** (np.arange(0, D, 2) / D)                                   # (D/2,)
    turn = np.exp(1j * np.asarray(position_ids)[:, None, :, None] * freqs)            # (B, 1, T, D/2)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * turn
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape).astype(np.float32)


def _rope_backwards(x, position_ids, theta):               # x * cos - rotate_half(x) * sin: the inverse rotation
    D = x.shape[-1]
    angles = np.asarray(position_ids, dtype=np.float32)[..., None] / np.float32(theta) ** (np.arange(0, D, 2) / D)
    angles = np.concatenate([angles, angles], axis=-1)[:, None].astype(np.float32)
    half = np.concatenate([-x[..., D // 2:], x[..., : D // 2]], axis=-1)
    return (x * np.cos(angles) - half * np.sin(angles)).astype(np.float32)


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


def _log_probability(table, tokens):                        # returns log P instead of P
    return float(np.sum(np.log(np.array([table[a, b] for a, b in zip(tokens[:-1], tokens[1:])], dtype=np.float64))))


def _argmax_of_column(table, start, steps):                 # reads the column of the last token
    path = [start]
    for _ in range(steps):
        path.append(int(table[:, path[-1]].argmax()))
    return path[1:]


def _positions_from_one(attention_mask):                    # cumsum without the -1
    return np.where(attention_mask == 0, 1, np.cumsum(attention_mask, axis=1))


def _pads_at_zero(attention_mask):                          # pads not set to 1
    return np.maximum(np.cumsum(attention_mask, axis=1) - 1, 0)


def _penalise_each_occurrence(input_ids, scores, penalty):   # a token seen twice is penalised twice
    out = scores.copy()
    for row, ids in enumerate(input_ids):
        for t in ids:
            out[row, t] = out[row, t] * penalty if out[row, t] < 0 else out[row, t] / penalty
    return out


def _ban_in_order_found(row, n):                            # right tokens, unsorted and repeated
    prefix = row[len(row) - n + 1:] if n > 1 else []
    found = [row[i + n - 1] for i in range(len(row) - n + 1) if row[i:i + n - 1] == prefix]
    return found[::-1] + found[:1] if len(set(found)) > 1 else found * 2


def _ignores_temperature(logits, temperature):              # plain softmax
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _usual_argsort(probs, p):                               # np.argsort(p)[:, ::-1]: ties go to the higher id
    order = np.argsort(probs, axis=-1)[:, ::-1]
    sp = np.take_along_axis(probs, order, axis=-1)
    sp = np.where(np.cumsum(sp, axis=-1) - sp > p, 0.0, sp)
    out = np.zeros_like(probs)
    np.put_along_axis(out, order, sp / sp.sum(axis=-1, keepdims=True), axis=-1)
    return out


def _drops_the_crossing_token(probs, p):                     # keeps only tokens whose own cumsum <= p
    order = np.argsort(-probs, axis=-1, kind="stable")
    sp = np.take_along_axis(probs, order, axis=-1)
    sp = np.where(np.cumsum(sp, axis=-1) > p, 0.0, sp)
    out = np.zeros_like(probs)
    total = sp.sum(axis=-1, keepdims=True)
    np.put_along_axis(out, order, sp / np.where(total > 0, total, 1.0), axis=-1)
    return out


def _no_exponent(sum_logprobs, generated_len, length_penalty):   # mean log-prob whatever alpha
    return sum_logprobs / generated_len


def _is_done_strict(worst_score, best_sum_logprobs, cur_len, length_penalty, early_stopping, max_length,
                    decoder_prompt_len):                         # > instead of >=
    if early_stopping is True:
        return True
    length = cur_len - decoder_prompt_len
    if early_stopping == "never" and length_penalty > 0:
        length = max_length - decoder_prompt_len
    return bool(worst_score > best_sum_logprobs / length ** length_penalty)


def _adds_the_penalty(scores, previous_tokens, diversity_penalty):
    counts = np.bincount(np.asarray(previous_tokens, dtype=np.int64), minlength=scores.shape[-1])
    return scores + diversity_penalty * counts


def _short_names(config):                                   # "greedy" instead of "greedy_search"
    full = _mode_ignoring_groups(config)
    return {"greedy_search": "greedy", "beam_search": "beam"}.get(full, full)


class _StopsAtOnce(StoppingCriteria):                       # returns True whatever the tokens
    def __init__(self, token_id):
        self.token_id = token_id

    def __call__(self, input_ids, scores, **kwargs):
        return True


#: exercise -> [(a typical wrong answer, a phrase the checker's diagnosis must contain)]
WRONG = {
    "sequence_probability": [(_sum_not_product, "you added the step probabilities"),
                             (_log_probability, "you returned log P")],
    "greedy_path": [(_path_with_start, "your list starts with `start`"),
                    (_argmax_of_column, "argmax of a column")],
    "beams_miss_the_best": [(_the_tutorial_tree, "already starts with 'car'"),
                            (_the_original_tree, "one that 2 beams drop after step 1")],
    "position_ids": [(_positions_ignoring_mask, "you ignored the mask"), (_positions_from_one, "start at 1"),
                     (_pads_at_zero, "the pad positions are wrong")],
    "reorder_rows": [(_scatter_not_gather, "you scattered")],
    "rope": [(_rope_complex_pairs, "you rotated neighbours (x[2i], x[2i + 1])"),
             (_rope_backwards, "you rotated the wrong way")],
    "repetition_penalty": [(_always_divide, "a negative score was divided"),
                           (_penalise_each_occurrence, "penalised twice")],
    "no_repeat_ngram_banned": [(_bigram_ban, "whatever n is"), (_ban_in_order_found, "sorted, each once")],
    "min_length": [(_min_length_le, "length == min_length")],
    "temperature_softmax": [(_times_temperature, "you multiplied the logits by T"),
                            (_ignores_temperature, "you ignored the temperature")],
    "top_k_filter": [(_exactly_k, "a token tied with the k-th largest score was dropped")],
    "llama_top_p": [(_top_p_ge, "preceding mass equals p exactly"),
                    (_usual_argsort, "a tied token differs: the rule is among equal probabilities the lower token "
                                     "id comes first"),
                    (_drops_the_crossing_token, "you dropped the token that crosses p")],
    "hypothesis_score": [(_penalty_times_length, "raised to the power"), (_no_exponent, "without the exponent")],
    "is_done": [(_is_done_heuristic_only, "\"never\" used the current length"),
                (_is_done_strict, "on equality the rule says done")],
    "hamming_penalty": [(_penalty_once_per_token, "penalised once"), (_adds_the_penalty, "you added the penalty")],
    "top_candidates": [(_n_per_beam, "compete together")],
    "generation_mode": [(_mode_ignoring_groups, "you ignored num_beam_groups"),
                        (_short_names, "use transformers' mode names")],
    "stop_on_token": [(_StopOnFirstToken, "it did not stop at the token"), (_StopsAtOnce, "stopped before the token")],
}


def test_every_exercise_has_a_wrong_answer():
    assert set(WRONG) == set(_labs.EXERCISES)


@pytest.mark.parametrize("name,wrong,why", [(n, w, m) for n, ws in WRONG.items() for w, m in ws],
                         ids=lambda v: v if isinstance(v, str) and len(v) < 30 else getattr(v, "__name__", "msg"))
def test_checker_diagnoses_a_typical_wrong_answer(name, wrong, why):
    """Each wrong answer is rejected, and the report says what it did."""
    ok, report = _labs.run(name, wrong)
    assert not ok and report.startswith(f"[x] {name} ") and ": case " in report, report
    assert why in report, report


def test_every_mimicked_mistake_is_told_apart_from_the_solution():
    """A mimic that equals refdecode on every case would diagnose a right answer: each must fail somewhere."""
    from _lab_guide import GUIDES
    for name, guide in GUIDES.items():
        for mistake in guide.mistakes:
            if mistake.mimic is not None:
                ok, report = _labs.run(name, mistake.mimic)
                assert not ok and mistake.message in report, (name, mistake.message, report)


def test_unattempted_and_crashing_answers_are_reported_not_raised(capsys):
    def stub(**kwargs):
        raise NotImplementedError

    def crash(**kwargs):
        return [][1]

    assert _labs.check("llama_top_p", stub) is False
    assert _labs.check("llama_top_p", crash) is False
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[ ] llama_top_p ★★★: not attempted yet")
    assert out[1].startswith("[x] llama_top_p ★★★: case 1/") and "IndexError" in out[1]
    assert 'hint("llama_top_p")' in out[2]


def test_a_wrong_answer_report_shows_the_input_and_not_the_answer():
    ok, report = _labs.run("min_length", _min_length_le)
    assert not ok
    assert "length 5, min_length 5" in report          # the boundary case is the one that fails
    assert "input" in report and "expected" not in report and "got " not in report


def test_positional_and_keyword_solutions_are_both_accepted():
    """A student's own parameter names work (called positionally in the exercise's order); so do the names."""
    def renamed(x, threshold):
        return SOLUTIONS["llama_top_p"](x, threshold)

    def keywords_only(*, probs, p):
        return SOLUTIONS["llama_top_p"](probs=probs, p=p)

    assert _labs.run("llama_top_p", renamed)[0]
    assert _labs.run("llama_top_p", keywords_only)[0]
    ok, report = _labs.run("llama_top_p", lambda probs: probs)
    assert not ok and "your function takes (probs); the exercise passes (probs, p)" in report


def test_hints_are_staged(capsys, tmp_path, monkeypatch):
    from _lab_guide import GUIDES
    for name, guide in GUIDES.items():
        assert 2 <= len(guide.hints) <= 4 and 1 <= guide.level <= 3, name
    monkeypatch.setattr(_labs, "HINTS_FILE", tmp_path / ".hints.json")
    first, second = _labs.hint("is_done"), _labs.hint("is_done")
    assert first.startswith("hint 1/3 for is_done") and second.startswith("hint 2/3 for is_done")
    assert _labs.hint("is_done", 3).endswith(GUIDES["is_done"].hints[2])
    with pytest.raises(ValueError, match=r"`stage` has to be an int in \[1, 3\]"):
        _labs.hint("is_done", 4)


def test_hint_stages_survive_a_new_run(tmp_path, monkeypatch):
    """hint() used to count in a dict that every script run or kernel restart emptied, so a student saw hint 1
    again and again. The stage is kept per exercise in a file: a fresh interpreter (a second run of the
    tutorial) continues where the first stopped, another exercise starts at 1, and reset_hints() starts over."""
    state = tmp_path / ".hints.json"
    program = ("import sys; sys.path.insert(0, sys.argv[1]); import _labs; from pathlib import Path; "
               "_labs.HINTS_FILE = Path(sys.argv[2]); exec(sys.argv[3])")

    def fresh_run(code: str) -> str:
        return subprocess.run([sys.executable, "-c", program, str(TUTORIALS_DIR), str(state), code],
                              capture_output=True, text=True, check=True, cwd=ROOT).stdout

    assert fresh_run('_labs.hint("is_done")').startswith("hint 1/3 for is_done")
    out = fresh_run('_labs.hint("is_done")')
    assert out.startswith("hint 2/3 for is_done") and "next: hint('is_done') again" in out
    assert fresh_run('_labs.hint("llama_top_p")').startswith("hint 1/")      # per exercise
    assert "that was the last hint" in fresh_run('_labs.hint("is_done")')
    assert fresh_run('_labs.hint("is_done")').startswith("hint 3/3")         # stays at the last one
    assert json.loads(state.read_text("utf-8")) == {"is_done": 3, "llama_top_p": 1}
    fresh_run('_labs.reset_hints("is_done")')
    assert fresh_run('_labs.hint("is_done")').startswith("hint 1/3 for is_done")
    assert json.loads(state.read_text("utf-8"))["llama_top_p"] == 1
    state.write_text("not json", encoding="utf-8")                           # a broken file is a fresh start
    assert fresh_run('_labs.hint("is_done")').startswith("hint 1/3 for is_done")
    monkeypatch.setattr(_labs, "HINTS_FILE", tmp_path / "missing" / "dir" / ".hints.json")   # unwritable
    assert _labs.hint("is_done").startswith("hint 1/3")


def test_the_hint_state_file_is_not_committed():
    ignored = subprocess.run(["git", "check-ignore", "-q", "tutorials/.hints.json"], cwd=ROOT)
    assert ignored.returncode == 0, "tutorials/.hints.json (hint() stages) must be git-ignored"


def _exercise_text(path) -> str:
    """The tutorial's exercise section as plain text: comment markers stripped, whitespace collapsed."""
    text = path.read_text(encoding="utf-8")
    tail = text[text.index("## Exercises"):text.index("# Solutions:")]
    return " ".join(line.removeprefix("#").strip() for line in tail.splitlines())


@pytest.mark.parametrize("path", sorted(TUTORIALS_DIR.glob("[0-9][0-9]_*.py")), ids=lambda p: p.stem)
def test_tutorial_states_every_rule_its_checker_enforces(path):
    """The exercise text is the guide's: signature, stars, task and every rule."""
    from _lab_guide import exercise_markdown
    text = " ".join(_exercise_text(path).split())
    for number, exercise in enumerate(_labs.exercises_of(int(path.name[:2])), start=1):
        wanted = " ".join(exercise_markdown(exercise.name, number).split())
        assert wanted in text, f"{path.name} does not state exercise {exercise.name} as _lab_guide does:\n{wanted}"


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


# ---- the cases say what they are ------------------------------------------------------------------------


def test_llama_top_p_uses_the_top_p_articles_own_example():
    """The case labelled "the top-p article's example" is the article's (section 3.2): [0.1, 0.3, 0.4, 0.15, 0.05],
    p = 0.8 (it used to be [0.05, 0.1, 0.6, 0.15, 0.1], a different row with a tie at the cut)."""
    cases = {label: kwargs for label, kwargs, _ in _labs.EXERCISES["llama_top_p"].cases()}
    article = cases["the top-p article's example"]
    assert article["probs"].tolist() == [[np.float32(x).item() for x in (0.1, 0.3, 0.4, 0.15, 0.05)]]
    assert article["p"] == 0.8


# ---- the checker gives no answer away and refuses refdecode's own -----------------------------------------------


@pytest.mark.parametrize("name,wrong", [(n, w) for n, ws in WRONG.items() for w, _ in ws],
                         ids=lambda v: v if isinstance(v, str) else getattr(v, "__name__", "fn"))
def test_a_report_never_shows_the_expected_answer(name, wrong):
    """The checker used to print "expected <refdecode's answer>": a student could copy it. Now the report holds the
    input (the student's to see) and what differs; no number of the failing case's answer that the input does
    not already contain."""
    ok, report = _labs.run(name, wrong)
    assert not ok
    match = re.search(r": case (\d+)/", report)
    label, kwargs, expected = list(_labs.EXERCISES[name].cases())[int(match.group(1)) - 1]
    inputs = numbers_in(" ".join(_labs._short(v) for v in kwargs.values()) + " " + label, decimals=4)
    leaked = (numbers_in(report, decimals=4) & answer_numbers(expected, decimals=4)) - inputs
    assert not leaked, (leaked, report)


def test_refdecodes_own_function_is_refused():
    """``check("llama_top_p", llama_top_p_probs)`` passed all 9 cases: the answer was refdecode's own function."""
    import functools

    from refdecode import llama_top_p_probs
    for fn in (llama_top_p_probs, functools.partial(llama_top_p_probs)):
        ok, report = _labs.run("llama_top_p", fn)
        assert not ok and "refused: that is refdecode's own" in report, report


def test_a_wrapper_that_calls_refdecode_is_refused():
    """A wrapper, an importlib alias, an is_done built on BeamHypotheses (it passed all 48 cases): each calls into
    refdecode while it runs, which the checker watches (sys.setprofile)."""
    import importlib

    from refdecode import BeamHypotheses

    def wrapped(probs, p):
        return importlib.import_module("refdecode.processors.logits_warp").llama_top_p_probs(probs, p)

    def is_done(worst_score, best_sum_logprobs, cur_len, length_penalty, early_stopping, max_length,
                decoder_prompt_len):
        hyps = BeamHypotheses(1, length_penalty, early_stopping, max_length)
        hyps.add(np.zeros(4, dtype=np.int64), worst_score, generated_len=1)
        return hyps.is_done(best_sum_logprobs, cur_len, decoder_prompt_len)

    ok, report = _labs.run("llama_top_p", wrapped)
    assert not ok and "refused: your function calls refdecode's llama_top_p_probs" in report, report
    ok, report = _labs.run("is_done", is_done)
    assert not ok and "refused: your function calls refdecode's" in report and "beam_scorer.py" in report, report
    assert _labs.run("is_done", SOLUTIONS["is_done"])[0]           # the solution itself still passes
    assert sys.getprofile() is None                                 # the watch is removed after each call
