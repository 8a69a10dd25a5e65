"""The model your decoding functions get, and a check of them on public cases: ``python selfcheck.py``.

``python selfcheck.py [FOLDER]`` imports your ``decoding.py`` and ``processors.py`` from FOLDER (default: this
folder), runs the four processors through the tutorials' checker, then greedy, sample and beam search on a
few public prompts, and compares each answer with refdecode's ``generate`` (transformers 4.38.2's answer)
on the same logits. It prints, per function, how many cases
match and, for the first that does not, where it differs ("token ids differ at step 3 (row 1)"), never the
expected tokens. The grader (not in your copy) runs the same functions on hidden cases, in a process where
refdecode's decoding cannot be imported: see the handout, docs/course/assignment.md.

:class:`NextTokenModel` is ``model(input_ids) -> logits`` (the ``model`` argument of your functions);
:class:`FullPrefixModel` lets refdecode's ``generate`` run on exactly those logits.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL_DIR = HERE.parent.parent / "models" / "tiny-shakespeare"

__all__ = ["NextTokenModel", "FullPrefixModel", "compare", "public_cases", "main"]


class NextTokenModel:
    """The model a submission's decoding functions get: ``model(input_ids) -> logits``.

    ``input_ids`` int (N, T), no padding -> float32 (N, V): the logits of the token after each row. Each row is
    run through the whole GPT-2 forward pass on its own (no cache), so a row's logits do not depend on how many
    rows are asked at once; ``vocab_size``, ``eos_token_id`` and ``n_positions`` are the checkpoint's.
    """

    def __init__(self, gpt2: Any):
        self._gpt2 = gpt2
        self.vocab_size = int(gpt2.config.vocab_size)
        self.n_positions = int(gpt2.config.n_positions)
        self.eos_token_id = gpt2.config.eos_token_id

    @classmethod
    def load(cls, path: str | Path = MODEL_DIR) -> NextTokenModel:
        from refdecode.model.modeling import GPT2   # the model only: nothing of decoding
        return cls(GPT2.from_pretrained(path))

    def __call__(self, input_ids: Any) -> np.ndarray:
        ids = np.asarray(input_ids)
        if ids.ndim != 2 or ids.shape[0] < 1 or ids.shape[1] < 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"`input_ids` must be an integer array of shape (N, T), N, T >= 1, got {ids.dtype} "
                             f"{ids.shape}")
        rows = [self._gpt2(ids[i:i + 1].astype(np.int64), logits_to_keep=1).logits[:, -1] for i in range(len(ids))]
        return np.concatenate(rows, axis=0)                       # N x (1, V) -> (N, V) float32


class FullPrefixModel:
    """refdecode's model interface over :class:`NextTokenModel`: every call recomputes the next-token logits
    from the whole prefix (the "cache" holds token ids), so ``generate`` sees your logits bit for bit."""

    def __init__(self, model: NextTokenModel):
        from refdecode.model.stand_ins import StubConfig
        self.model = model
        self.config = StubConfig(vocab_size=model.vocab_size, n_positions=model.n_positions)

    def new_cache(self, batch_size: int, capacity: int) -> Any:
        from refdecode.model.stand_ins import TokenCache
        return TokenCache(batch_size, capacity)

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray | None = None, position_ids: Any = None,
                 past_key_values: Any = None, logits_to_keep: int = 0) -> Any:
        from refdecode.model.stand_ins import StubOutput
        if attention_mask is not None and not np.all(attention_mask == 1):
            raise ValueError("the assignment's prompts are not padded")
        cache = past_key_values if past_key_values is not None else self.new_cache(len(input_ids), 0)
        cache.tokens = np.concatenate([cache.tokens, input_ids.astype(np.int64)], axis=1)   # (N, S+T)
        return StubOutput(logits=self.model(cache.tokens)[:, None, :], past_key_values=cache)  # (N, 1, V)


def reference(model: FullPrefixModel, function: str, args: list, seed: int | None = None) -> Any:
    """refdecode's ``generate`` for one call of your ``function`` (``args`` without the model); for ``sample``,
    ``seed`` is the seed of ``np.random.default_rng`` that drew the uniforms (generate draws the same ones)."""
    from refdecode import generate
    ids, steps, *rest = args
    eos = rest[-1]
    common = dict(attention_mask=np.ones_like(ids), max_new_tokens=steps, eos_token_id=eos, pad_token_id=eos)
    if function == "greedy":
        return generate(model, ids, **common)
    if function == "sample":
        temperature, top_k, top_p, uniforms, _ = rest
        if not np.array_equal(uniforms, np.random.default_rng(seed).random(uniforms.shape)):
            raise ValueError("`uniforms` must be np.random.default_rng(seed).random((max_new_tokens, B))")
        return generate(model, ids, do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p,
                        rng=np.random.default_rng(seed), **common)
    num_beams, length_penalty, early_stopping, _ = rest
    out = generate(model, ids, num_beams=num_beams, length_penalty=length_penalty, early_stopping=early_stopping,
                   return_dict_in_generate=True, output_scores=True, **common)
    return [out.sequences, out.sequences_scores]


# ---- comparing: a reason without a value (neither this check nor the grader shows an expected answer) --------


def _array(got: Any, kind: str) -> np.ndarray | str:
    try:
        arr = np.asarray(got)
    except (TypeError, ValueError):
        return "not an array"
    if arr.dtype == object:
        return "not a numeric array"
    if kind == "float" and arr.dtype.kind != "f":
        return f"dtype {arr.dtype}, expected a float array"
    if kind == "int" and arr.size and arr.dtype.kind not in "iu":
        return f"dtype {arr.dtype}, expected integers"
    return arr


def _scores(expected: np.ndarray, got: Any) -> str | None:
    arr = _array(got, "float")
    if isinstance(arr, str):
        return arr
    if arr.shape != expected.shape:
        return "the shape differs from the input scores'"
    inf_e, inf_g = np.isinf(expected), np.isinf(arr)
    if not np.array_equal(inf_e, inf_g) or not np.array_equal(expected[inf_e], arr[inf_g]):
        return "the masked (-inf) entries differ"
    if np.isnan(arr).any() or not np.allclose(arr[~inf_g], expected[~inf_e], rtol=1e-5, atol=1e-6):
        return "values differ"
    return None


def _ids(expected: Any, got: Any) -> str | None:
    arr = _array(got, "int")
    if isinstance(arr, str):
        return arr
    expected = np.asarray(expected)
    if arr.shape != expected.shape:
        return "a different number of tokens"
    return None if np.array_equal(arr, expected) else "token ids differ"


def _tokens(expected: np.ndarray, got: Any, prompt_len: int) -> str | None:
    """Generated rows: the first step (0 = the first new token) and row where they differ."""
    arr = _array(got, "int")
    if isinstance(arr, str):
        return arr
    if arr.ndim != 2 or arr.shape[0] != expected.shape[0]:
        return f"shape {arr.shape}: expected one row per prompt (2-D)"
    if arr.shape[1] < prompt_len or not np.array_equal(arr[:, :prompt_len], expected[:, :prompt_len]):
        return "the prompt is not kept at the start of each row"
    width = min(arr.shape[1], expected.shape[1])
    differ = np.argwhere(arr[:, :width] != expected[:, :width])
    if len(differ):
        row, col = differ[np.argmin(differ[:, 1])]
        return f"token ids differ at step {col - prompt_len} (row {row})"
    if arr.shape[1] != expected.shape[1]:
        return (f"the tokens agree up to step {width - prompt_len - 1}, then yours "
                + ("go on: the reference stops there" if arr.shape[1] > width else "stop: the reference goes on"))
    return None


def _beams(expected: tuple[np.ndarray, np.ndarray], got: Any, prompt_len: int) -> str | None:
    if not isinstance(got, (list, tuple)) or len(got) != 2:
        return "return a pair (sequences, sequence_scores)"
    problem = _tokens(expected[0], got[0], prompt_len)
    if problem:
        return f"sequences: {problem}"
    arr = _array(got[1], "float")
    if isinstance(arr, str):
        return f"sequence_scores: {arr}"
    if arr.shape != expected[1].shape:
        return "sequence_scores: one score per prompt expected"
    if not np.allclose(arr, expected[1], rtol=1e-4, atol=1e-5):
        return f"sequence_scores differ (row {int(np.argmax(~np.isclose(arr, expected[1], rtol=1e-4, atol=1e-5)))})"
    return None


def compare(kind: str, expected: Any, got: Any, prompt_len: int = 0) -> str | None:
    """None if ``got`` is the answer ``expected``, else why not, in words without any expected value.

    ``kind``: "scores" (float arrays, -inf where masked), "ids" (a list of token ids), "tokens" (generated rows,
    ``prompt_len`` tokens of prompt first) or "beams" (a pair: such rows, and one float score per row).
    """
    if kind == "scores":
        return _scores(expected, got)
    if kind == "ids":
        return _ids(expected, got)
    if kind == "tokens":
        return _tokens(expected, got, prompt_len)
    return _beams(expected, got, prompt_len)


# ---- the public cases ----------------------------------------------------------------------------------------

KINDS = {"greedy": "tokens", "sample": "tokens", "beam_search": "beams"}
PUBLIC_PROMPTS = ["ROMEO:\nIs the day so young", "First Servant:\nWhere's Potpan"]


def public_cases(model: FullPrefixModel) -> dict[str, list[tuple[str, list, Any]]]:
    """function -> (label, args without the model, refdecode's answer): a few cases per function."""
    from refdecode import Tokenizer
    tok = Tokenizer(MODEL_DIR)
    rows = [tok.encode(p) for p in PUBLIC_PROMPTS]
    one, two = np.array([rows[0]]), np.array([r[:min(map(len, rows))] for r in rows])   # (1, T), (2, T')
    newline = tok.encode("\n")[0]
    calls = {"greedy": [("1 prompt, 10 tokens", [one, 10, None], None),
                        ("2 prompts, 12 tokens, eos = newline", [two, 12, newline], None)],
             "sample": [(f"T={t}, top_k={k}, top_p={p}", [two, 10, t, k, p, np.random.default_rng(s).random((10, 2)),
                                                          newline], s)
                        for t, k, p, s in [(1.0, 0, 1.0, 1), (0.8, 20, 1.0, 2), (1.0, 0, 0.8, 3)]],
             "beam_search": [(f"{b} beams, length_penalty={a}, early_stopping={e!r}", [two, 8, b, a, e, newline], None)
                             for b, a, e in [(2, 1.0, False), (3, 0.0, True), (3, 2.0, "never")]]}
    return {f: [(label, args, reference(model, f, args, seed)) for label, args, seed in found]
            for f, found in calls.items()}


def main(argv: list[str] | None = None) -> int:
    """Check decoding.py's three functions (and processors.py's, through the tutorials' checker)."""
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0]).resolve() if argv else HERE              # python selfcheck.py [FOLDER]
    sys.path[:0] = [str(folder), str(HERE.parent)]
    import decoding
    import processors
    from _labs import check
    for name in ("repetition_penalty", "no_repeat_ngram_banned", "top_k_filter", "llama_top_p"):
        check(name, getattr(processors, name))
    model = NextTokenModel.load()
    ok = True
    for function, cases in public_cases(FullPrefixModel(model)).items():
        problems = []
        for label, args, expected in cases:
            try:
                problem = compare(KINDS[function], expected, getattr(decoding, function)(model, *args),
                                  prompt_len=args[0].shape[1])
            except NotImplementedError:
                problem = "not attempted yet"
            except Exception as err:  # noqa: BLE001 -- your bug is a report line, not a crash
                problem = f"raised {type(err).__name__}: {err}"
            if problem:
                problems.append(f"{label}: {problem}")
        ok, passed = ok and not problems, len(cases) - len(problems)
        if problems and all(p.endswith("not attempted yet") for p in problems):
            problems = ["not attempted yet"]
        print(f"[{'x' if problems else 'v'}] {function}: {passed}/{len(cases)} public cases match"
              + "".join(f"\n      {p}" for p in problems[:2]))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
