"""Stopping criteria (4.38.2: one bool for the whole batch) and the eos bookkeeping of greedy/sample."""

from __future__ import annotations

import functools
import json
import time

import numpy as np
import pytest
from conftest import GOLDEN, MODELS

from refdecode.generate import generate
from refdecode.model.modeling import GPT2
from refdecode.text.tokenizer import Tokenizer

from refdecode.decoding.greedy import greedy_search
from refdecode.decoding.stopping_criteria import (
    EosTokenCriteria,
    MaxLengthCriteria,
    MaxNewTokensCriteria,
    MaxTimeCriteria,
    StoppingCriteria,
    StoppingCriteriaList,
    StopStringCriteria,
    pad_finished_rows,
    token_strings,
    update_unfinished,
    validate_stopping_criteria,
)
from refdecode.model.stand_ins import TableModel

IDS3 = np.zeros((2, 3), dtype=np.int64)


def test_max_length_counts_the_prompt_and_uses_ge():
    assert MaxLengthCriteria(3)(IDS3, None) is True
    assert MaxLengthCriteria(4)(IDS3, None) is False


def test_max_length_warns_past_max_position_embeddings():
    with pytest.warns(UserWarning, match="maximum length"):
        assert MaxLengthCriteria(10, max_position_embeddings=3)(IDS3, None) is False


def test_max_new_tokens_is_deprecated_and_sets_max_length():
    with pytest.warns(FutureWarning, match="deprecated"):
        c = MaxNewTokensCriteria(start_length=1, max_new_tokens=2)
    assert c.max_length == 3 and c(IDS3, None) is True


def test_max_time_uses_initial_timestamp():
    assert MaxTimeCriteria(max_time=10.0, initial_timestamp=time.time() - 11)(IDS3, None) is True
    assert MaxTimeCriteria(max_time=10.0)(IDS3, None) is False


def test_list_returns_one_bool_for_the_batch_and_finds_max_length():
    """4.38 returns a single bool (4.39 switched to one per row, #29056)."""
    criteria = StoppingCriteriaList([MaxTimeCriteria(100.0), MaxLengthCriteria(3)])
    assert criteria(IDS3, None) is True
    assert criteria.max_length == 3
    assert StoppingCriteriaList([MaxTimeCriteria(1.0)]).max_length is None


def test_base_class_is_abstract():
    with pytest.raises(NotImplementedError):
        StoppingCriteria()(IDS3, None)


def test_validate_adds_max_length_once():
    assert validate_stopping_criteria(StoppingCriteriaList(), 5).max_length == 5
    with pytest.warns(UserWarning, match="different `max_length`"):
        assert validate_stopping_criteria(StoppingCriteriaList([MaxLengthCriteria(4)]), 5).max_length == 4


def test_pad_and_unfinished_helpers():
    assert pad_finished_rows(np.array([3, 4, 5]), np.array([1, 0, 1]), 7).tolist() == [3, 7, 5]
    assert update_unfinished(np.array([1, 1, 1]), np.array([2, 8, 3]), [8, 3]).tolist() == [1, 0, 0]


class Recording(StoppingCriteria):
    def __init__(self):
        self.seen = []

    def __call__(self, input_ids, scores, **kwargs):
        self.seen.append((input_ids.shape[1], None if scores is None else len(scores)))
        return False


def test_criteria_receive_scores_only_with_output_scores():
    """The scores tuple is None unless return_dict_in_generate and output_scores (4.38.2)."""
    model = TableModel(np.eye(3, dtype=np.float32)[[1, 2, 0]])
    rec = Recording()
    greedy_search(model, np.array([[0]]), stopping_criteria=[rec, MaxLengthCriteria(3)])
    assert rec.seen == [(2, None), (3, None)]
    rec = Recording()
    greedy_search(model, np.array([[0]]), stopping_criteria=[rec, MaxLengthCriteria(3)], output_scores=True,
                  return_dict_in_generate=True)
    assert rec.seen == [(2, 1), (3, 2)]


class EveryOtherRow(StoppingCriteria):
    """4.39-style criterion: one bool per row; stops the even rows once they hold ``length`` tokens."""

    def __init__(self, length):
        self.length = length

    def __call__(self, input_ids, scores, **kwargs):
        return (np.arange(input_ids.shape[0]) % 2 == 0) & (input_ids.shape[1] >= self.length)


def test_per_row_criteria_are_or_ed_row_wise():
    crit = StoppingCriteriaList([MaxLengthCriteria(9), EveryOtherRow(3)])
    np.testing.assert_array_equal(crit(np.zeros((3, 3), dtype=np.int64), None), [True, False, True])
    np.testing.assert_array_equal(StoppingCriteriaList([MaxLengthCriteria(3), EveryOtherRow(3)])(
        np.zeros((3, 3), dtype=np.int64), None), [True, True, True])  # a plain True counts for every row
    with pytest.raises(ValueError, match=r"one bool per row: \(N,\) = \(3,\).*returned int64 \(2,\)"):
        StoppingCriteriaList([lambda ids, s: np.array([1, 0])])(np.zeros((3, 3), dtype=np.int64), None)


def test_a_per_row_criterion_finishes_its_rows_in_greedy_and_beam_search():
    """Rows stopped by a 4.39-style criterion get pad afterwards (like eos); the loop ends when all are done.
    (4.38.2 itself fails here: "Boolean value of Tensor with more than one value is ambiguous".)"""
    from refdecode import generate

    model = TableModel(np.log(np.array([[.1, .5, .4], [.1, .1, .8], [.3, .5, .2]], dtype=np.float32)))
    out = greedy_search(model, np.array([[1], [1]]), stopping_criteria=[EveryOtherRow(3)], max_length=6,
                        eos_token_id=0, pad_token_id=0)
    assert out.tolist() == [[1, 2, 1, 0, 0, 0], [1, 2, 1, 2, 1, 2]]
    every_row = StoppingCriteriaList([lambda ids, s: np.full(ids.shape[0], ids.shape[1] >= 3)])
    assert greedy_search(model, np.array([[1], [1]]), stopping_criteria=every_row, max_length=6, eos_token_id=0,
                         pad_token_id=0).shape == (2, 3)
    beams = dict(num_beams=2, max_length=6, pad_token_id=0, eos_token_id=0)
    np.testing.assert_array_equal(generate(model, np.array([[1]]), stopping_criteria=every_row, **beams),
                                  generate(model, np.array([[1]]), stopping_criteria=[lambda ids, s: ids.shape[1] >= 3], **beams))


# ---- StopStringCriteria and EosTokenCriteria (transformers 4.41.0, newer than the pin) -------------------
# Golden file: tools/golden/make_stop_strings_golden.py (run in a transformers 4.41.0 venv).


@functools.cache
def _stop_golden() -> tuple[dict, dict]:
    with np.load(GOLDEN / "stop_strings.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(str(arrays.pop("meta"))), arrays


@functools.cache
def _shakespeare() -> tuple[Tokenizer, list[str]]:
    tok = Tokenizer(MODELS / "tiny-shakespeare")
    return tok, token_strings(tok)


def _stop_cases(kind: str) -> list[dict]:
    return [c for c in _stop_golden()[0]["cases"] if c["kind"] == kind]


def test_stop_strings_golden_meta():
    meta, arrays = _stop_golden()
    assert meta["transformers"] == "4.41.0" and meta["format_version"] == 1
    cases = _stop_cases("stop_strings")
    stopped = sum(int(arrays[f"{c['id']}/done"].sum()) for c in cases)
    assert len(cases) >= 100 and stopped >= 30          # prefixes that stop, and many more that do not


@pytest.mark.parametrize("case", _stop_cases("stop_strings"), ids=lambda c: c["id"])
def test_stop_strings_golden_on_every_prefix(case):
    _, arrays = _stop_golden()
    _, strings = _shakespeare()
    ids = arrays[f"{case['id']}/ids"].astype(np.int64)
    criteria = StopStringCriteria(strings, case["stop_strings"])
    ours = [bool(criteria(ids[None, : t + 1], None)[0]) for t in range(len(ids))]
    assert ours == arrays[f"{case['id']}/done"].tolist(), (case["stop_strings"], ids.tolist())


@pytest.mark.parametrize("case", _stop_cases("eos"), ids=lambda c: c["id"])
def test_eos_token_criteria_golden(case):
    _, arrays = _stop_golden()
    done = EosTokenCriteria(case["eos_token_id"])(arrays[f"{case['id']}/ids"].astype(np.int64), None)
    assert done.dtype == bool and done.tolist() == arrays[f"{case['id']}/done"].tolist()


@pytest.mark.parametrize("case", _stop_cases("generate"), ids=lambda c: c["id"])
def test_generate_with_stop_strings_golden(case):
    """Greedy on the shipped model, two prompts: a row that reaches a stop string is padded from then on (4.41)."""
    _, arrays = _stop_golden()
    tok, _ = _shakespeare()
    model = GPT2.from_pretrained(MODELS / "tiny-shakespeare")
    cid = case["id"]
    out = generate(model, arrays[f"{cid}/input_ids"].astype(np.int64),
                   attention_mask=arrays[f"{cid}/attention_mask"].astype(np.int64), tokenizer=tok,
                   stop_strings=case["stop_strings"], max_new_tokens=case["max_new_tokens"], pad_token_id=tok.eos_token_id)
    assert out.tolist() == arrays[f"{cid}/sequences"].tolist()


def test_stop_string_through_the_tokenizer_object_and_its_definition():
    tok, _ = _shakespeare()
    ids = tok.encode("ROMEO:\nBut soft!\n\nJULIET")
    criteria = StopStringCriteria(tok, ["soft!\n\n"])
    answers = [bool(criteria(ids[None, : t + 1], None)[0]) for t in range(len(ids))]
    texts = [tok.decode(ids[: t + 1]) for t in range(len(ids))]
    # True exactly after the token that completes "soft!\n\n", False before and after it
    assert answers.count(True) == 1 and texts[answers.index(True)].endswith("soft!\n\n")


def test_single_character_stop_strings_work():
    """transformers 4.41.0 cannot build the criteria when every stop string is one character (max() of an
    empty sequence); refdecode answers by the same definition (docs/stopping.md)."""
    _, strings = _shakespeare()
    assert _stop_golden()[0]["refused_by_transformers"]            # the golden script saw 4.41.0 refuse them
    tok, _ = _shakespeare()
    ids = tok.encode("Hail. Hail")
    answers = StopStringCriteria(strings, ".")
    got = [bool(answers(ids[None, : t + 1], None)[0]) for t in range(len(ids))]
    assert got == [tok.decode(ids[t:t + 1]).find(".") >= 0 for t in range(len(ids))]


@pytest.mark.parametrize("bad", ["", [], [""], [3], None])
def test_stop_strings_validated(bad):
    with pytest.raises(ValueError, match="stop_strings"):
        StopStringCriteria(["a"], bad)


def test_generate_stop_strings_needs_the_tokenizer():
    model = TableModel(np.zeros((3, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="tokenizer"):
        generate(model, np.array([[1]]), max_new_tokens=2, stop_strings="a")
    with pytest.raises(TypeError, match="stop_strings"):
        generate(model, np.array([[1]]), max_new_tokens=2, stop_strings=3, tokenizer=["a", "b", "c"])

def test_a_per_row_criterion_in_constrained_beam_search():
    """Constrained beam search (force_words_ids) accepts a criterion answering per row too: all rows say stop = stop."""
    from refdecode import generate

    model = TableModel(np.log(np.array([[.1, .5, .4], [.1, .1, .8], [.3, .5, .2]], dtype=np.float32)), noise=0.3)
    kw = dict(num_beams=2, max_length=6, pad_token_id=0, eos_token_id=0, force_words_ids=[[2]])
    rows_at_3 = [lambda ids, s: np.full(ids.shape[0], ids.shape[1] >= 3)]
    per_row = generate(model, np.array([[1]]), stopping_criteria=rows_at_3, **kw)
    np.testing.assert_array_equal(per_row, generate(model, np.array([[1]]),
                                                    stopping_criteria=[lambda ids, s: ids.shape[1] >= 3], **kw))


def test_eos_token_criteria_takes_any_sequence_of_ids_as_transformers_does():
    """4.38.2 builds ``torch.tensor(eos_token_id)``: a list, a tuple or an array of ids are all accepted."""
    from refdecode.decoding.stopping_criteria import EosTokenCriteria
    ids = np.array([[1, 5], [2, 3]])
    for eos in (5, [5], (5,), np.array([5]), np.int64(5)):
        assert EosTokenCriteria(eos)(ids, None).tolist() == [True, False], eos
    for bad in ([], [-1], "x", None):
        with pytest.raises(ValueError, match="`eos_token_id` has to be"):
            EosTokenCriteria(bad)


@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-tiny"])
def test_stop_strings_stop_right_after_the_token_that_completes_them_on_each_family(name):
    """On a GPT-2 and a Llama checkpoint with their tokenizer: the output is greedy's, cut after the first token whose
    text completes the stop string (4.41's rule, tests above), and only then."""
    from refdecode import from_pretrained

    model, tok = from_pretrained(MODELS / name), Tokenizer(MODELS / name)
    ids = tok.encode("Hello world, this is")[None, :]
    plain = generate(model, ids, max_new_tokens=10, eos_token_id=-1)
    new = plain[0, ids.shape[1]:]
    stop = tok.decode(new[2:4])
    out = generate(model, ids, max_new_tokens=10, eos_token_id=-1, stop_strings=[stop], tokenizer=tok)[0]
    cut = out[ids.shape[1]:]
    assert np.array_equal(cut, new[: len(cut)]) and len(cut) < len(new)
    assert stop in tok.decode(cut) and stop not in tok.decode(cut[:-1])
