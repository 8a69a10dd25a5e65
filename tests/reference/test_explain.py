"""refdecode.reference.explain: the step-by-step tables, checked against the numbers the docs print.

The toy tree of the 4.26 walkthrough (docs/references.md: greedy "The nice woman" 0.2, beam "The dog has" 0.36) is the
end-to-end example of docs/beam-search.md; ``explain`` on the same run must show the page's numbers.
"""

from __future__ import annotations

import ast
import json
import math
import re

import numpy as np
import pytest
from conftest import MODELS, ROOT

from refdecode import generate
from refdecode.reference.explain import main, render
from refdecode.model.stand_ins import TOY_WORDS as WORDS, TableModel, toy_tree_model
from refdecode.reference.trace import TraceRecorder

def _toy_tree_trace() -> dict:
    """The run of docs/beam-search.md's end-to-end example, traced."""
    recorder = TraceRecorder()
    generate(toy_tree_model(), np.array([[0]]), max_length=3, num_beams=2, num_return_sequences=2,
             length_penalty=0.0, trace=recorder)
    return recorder.to_dict()


def _page_results() -> tuple[list[str], list[float]]:
    """The sequences and probabilities docs/beam-search.md prints for the toy tree (its doctest output)."""
    page = (ROOT / "docs" / "beam-search.md").read_text(encoding="utf-8")
    texts = ast.literal_eval(re.search(r"^(\['The dog has'.*\])$", page, flags=re.M).group(1))
    probs = ast.literal_eval(re.search(r"^\((\[0\.36.*?\]),", page, flags=re.M).group(1))
    return texts, probs


def test_explain_on_the_toy_tree_shows_the_numbers_of_the_beam_search_page():
    texts, probs = _page_results()
    assert texts == ["The dog has", "The nice woman"] and probs == [0.36, 0.2]
    out = render(_toy_tree_trace(), WORDS.__getitem__, top=3)
    for i, (text, p) in enumerate(zip(texts, probs)):
        assert f'result {i}: "{text}"  score {math.log(p):.4f} (p = {p:.4f})' in out
    step0, step1 = out.split("step 1 (cur_len 3)")
    # step 0: only beam 0 is live; nice (.5) and dog (.4) become the two beams, car (.1) is not needed
    assert re.search(r"0\s+0\s+nice\s+-0\.6931\s+-> beam 0", step0)
    assert re.search(r"1\s+0\s+dog\s+-0\.9163\s+-> beam 1", step0)
    assert re.search(r"2\s+0\s+car\s+-2\.3026\s+not needed", step0)
    # step 1: "dog has" (.4 * .9 = .36) outranks "nice woman" (.5 * .4 = .2), coming from beam 1
    assert re.search(r"0\s+1\s+has\s+-1\.0217\s+-> beam 0", step1)
    assert re.search(r"1\s+0\s+woman\s+-1\.6094\s+-> beam 1", step1)
    assert 'row 1 "The dog"  running score -0.9163' in step1


def test_explain_says_what_happened_to_eos_candidates():
    """K = 2, eos = 0: an eos ranked 1 is a finished hypothesis, one ranked 2 is ignored (the 2K rule)."""
    p = np.array([[.1, .3, .3, .2, .1], [.3, .001, .001, .5, .198], [.4, .3, .001, .001, .298],
                  [.4, .3, .2, .05, .05], [.3, .3, .2, .1, .1]], dtype=np.float32)
    recorder = TraceRecorder()
    generate(TableModel(np.log(p), eos_token_id=0), np.array([[3]]), max_new_tokens=3, num_beams=2, pad_token_id=0,
             trace=recorder)
    step1 = render(recorder.to_dict(), top=3).split("step 1 ")[1].split("step 2 ")[0]
    assert re.search(r"0\s+0\s+3\s+-1\.8971\s+-> beam 0", step1)
    assert re.search(r"1\s+0\s+0\s+-2\.4079\s+finished: -2\.4079 / 2\^1\.0 = -1\.2040, kept", step1)
    assert re.search(r"2\s+1\s+0\s+-2\.5257\s+eos ranked >= 2: ignored", step1)
    assert re.search(r"3\s+1\s+1\s+-2\.8134\s+-> beam 1", step1)
    assert "not done: worst finished score -1.2040 < best attainable -0.9486" in step1


def test_explain_shows_one_column_per_processor_and_warper():
    model = TableModel(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32))
    recorder = TraceRecorder()
    generate(model, np.array([[1, 2]]), max_new_tokens=2, do_sample=True, repetition_penalty=1.2, temperature=0.5,
             top_k=3, seed=0, trace=recorder)
    out = render(recorder.to_dict(), top=4)
    # sampling shows each stage's probabilities (a filtered token has p = 0)
    assert re.search(r"token\s+p logits\s+p RepetitionPenalty\s+p Temperature\s+p TopK$", out, flags=re.M)
    assert re.search(r"\s0\.0000$", out, flags=re.M) and "chosen: row 0:" in out and "stopped after step 1: MaxLengthCriteria" in out


@pytest.mark.parametrize("model", ["tiny-shakespeare", "llama-tiny"])
def test_the_explain_command_runs_on_the_shipped_model(tmp_path, capsys, model):
    path = tmp_path / "t.json"
    assert main(["ROMEO:", "--model", str(MODELS / model), "--num-beams", "3", "--max-new-tokens", "2",
                 "--top", "3", "--trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("beam_search: max_length=") and "step 1 (cur_len" in out and "candidates of prompt 0" in out
    assert json.loads(path.read_text())["mode"] == "beam_search"
    with pytest.raises(SystemExit) as stop:
        main(["ROMEO:", "--top", "0"])
    assert stop.value.code == 2 and "--top has to be >= 1, but is 0" in capsys.readouterr().err
    assert main(["", "--model", str(MODELS / "tiny-shakespeare")]) == 2
    assert "refdecode explain: error: the prompt is empty" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["tiny-shakespeare", "llama-tiny"])
def test_the_generation_command_writes_a_trace_that_diff_accepts(tmp_path, capsys, model):
    from refdecode import cli

    path = tmp_path / "trace.json"
    assert cli.main(["ROMEO:", "--model", str(MODELS / model), "--max-new-tokens", "3",
                     "--trace", str(path)]) == 0
    assert capsys.readouterr().out.startswith("ROMEO:")
    assert cli.main(["diff", str(path), str(path)]) == 0
    assert capsys.readouterr().out.strip() == "no divergence in 3 steps"


# ---- explain for sampling and the beams' scores ------------------------------------------------------------


def _explain(capsys, *flags) -> str:
    assert main(["ROMEO:", "--model", str(MODELS / "tiny-shakespeare"), *flags]) == 0
    return capsys.readouterr().out


def test_explain_sampling_shows_probabilities_nucleus_draw_and_rank(capsys):
    """On the shipped model: per step the probabilities after each warper, the nucleus size, the uniform drawn and
    the chosen token's rank. Each number is recomputed here from the model, the warpers and the generator."""
    from refdecode import GPT2, GenerationConfig, Tokenizer, softmax
    from refdecode.pipeline import logits_warpers

    out = _explain(capsys, "--do-sample", "--top-p", "0.9", "--temperature", "0.8", "--max-new-tokens", "2",
                   "--seed", "0", "--top", "3")
    assert re.search(r"token\s+p logits\s+p Temperature\s+p TopK\s+p TopP", out), out
    model, tok = GPT2.from_pretrained(str(MODELS / "tiny-shakespeare")), Tokenizer(str(MODELS / "tiny-shakespeare"))
    ids = tok.encode_batch(["ROMEO:"])[0]
    scores = model(ids).logits[:, -1]
    probs_raw = softmax(scores)
    for warper in logits_warpers(GenerationConfig(do_sample=True, top_p=0.9, temperature=0.8)):
        scores = warper(ids, scores)
    probs = softmax(scores)[0]
    nucleus = int(np.count_nonzero(probs))
    step0 = out.split("step 1 (")[0]
    assert f"nucleus: {nucleus} of {probs.size} tokens can be drawn" in step0
    best = int(np.argmax(probs_raw[0]))
    row = next(line for line in step0.splitlines() if line.strip().startswith(tok.decode([best]).replace("\n", "\\n")))
    assert row.split()[1] == f"{probs_raw[0, best]:.4f}"                    # the model's own probability
    u = np.random.default_rng(0).random(1)[0]                               # the first uniform of seed 0
    drawn = re.search(r"draw: u = (\d\.\d{4}) \(inverse CDF over token ids\) -> (\S+), rank (\d+) of (\d+) by "
                      r"probability, p = (\d\.\d{4})", step0)
    assert drawn and drawn.group(1) == f"{u:.4f}" and int(drawn.group(4)) == nucleus
    token = int(np.searchsorted(np.cumsum(probs.astype(np.float64)), u * probs.astype(np.float64).sum(), side="right"))
    rank = int(np.sum(probs > probs[token])) + 1
    assert (int(drawn.group(3)), drawn.group(5)) == (rank, f"{probs[token]:.4f}")
    assert f"chosen: row 0: {tok.decode([token]).replace(chr(10), chr(92) + 'n').replace(' ', '␣')}" in step0


def test_explain_beams_shows_the_minus_1e9_rows_and_how_each_score_was_computed(capsys):
    out = _explain(capsys, "--num-beams", "3", "--num-return-sequences", "3", "--max-new-tokens", "3",
                   "--length-penalty", "0.5")
    assert "rows 1, 2: copies of the prompt at running score -1e9" in out.split("step 1 (")[0]
    results = re.findall(r'result \d: ".*"  score (-?\d+\.\d{4})\n  = Σ log p / ℓ\^α = (-?\d+\.\d{4}) / (\d+)\^0\.5',
                         out)
    assert len(results) == 3, out[-800:]
    for score, total, length in results:
        assert math.isclose(float(total) / int(length) ** 0.5, float(score), abs_tol=2e-4)


def test_the_recording_draw_draws_what_multinomial_draws():
    """explain's draw= records the uniforms without changing the tokens: generate gives the same sequences."""
    from refdecode.reference.explain import recording_draw
    model = TableModel(np.log(np.array([[.2, .5, .3], [.3, .3, .4], [.6, .2, .2]], dtype=np.float32)))
    plain = generate(model, np.array([[0], [1]]), max_new_tokens=6, do_sample=True, top_k=0, seed=3)
    trace = TraceRecorder()
    recorded = generate(model, np.array([[0], [1]]), max_new_tokens=6, do_sample=True, top_k=0, seed=3, trace=trace,
                        draw=recording_draw(trace))
    assert np.array_equal(plain, recorded)
    uniforms = [u for step in trace.steps for d in step["draws"] for row in (0, 1) for u, *_ in d["rows"][row]]
    rng = np.random.default_rng(3)
    assert np.allclose(uniforms, np.concatenate([rng.random(2)[[0, 1]] for _ in range(6)]))
