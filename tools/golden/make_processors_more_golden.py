"""Golden outputs of typical, epsilon, eta, bad words, forcing and the other later processors
from transformers 4.38.2 (oracle venv only).

Writes

* ``tests/golden/processors_more.npz``: standalone cases. Each is a chain of transformers classes
  applied to one (input_ids, scores) pair: TypicalLogitsWarper, EpsilonLogitsWarper, EtaLogitsWarper,
  NoBadWordsLogitsProcessor, SequenceBiasLogitsProcessor, PrefixConstrainedLogitsProcessor,
  ForcedBOS/ForcedEOSTokenLogitsProcessor, SuppressTokens(AtBegin)LogitsProcessor,
  ExponentialDecayLengthPenalty, InfNanRemoveLogitsProcessor, LogitNormalization,
  EncoderRepetitionPenaltyLogitsProcessor and EncoderNoRepeatNGramLogitsProcessor, on random
  scores (normal, integer ties, ~30% -inf, an all -inf row, log-probabilities), padded-looking id
  rows, several ``min_tokens_to_keep``; plus the top-p tie cases (``[[0, 0, 0, 0]]``).
  Per case ``i``: ``{i}_input_ids`` int64 (B, T), ``{i}_scores`` float32 (B, V), optional
  ``{i}_encoder_input_ids``, and ``{i}_expected`` float32 (B, V).
* ``tests/golden/decode_processors_more.npz``: whole ``model.generate`` cases on the committed tiny
  checkpoints ``tests/golden/models/decode-{a,b,c}`` (made by make_decode_golden.py), one group per
  feature and mode (greedy, sample and beam_sample with the recorded ``torch.multinomial`` draws,
  beam search, group beam search), in the layout of decode_search.npz (sequences, beam indices,
  sequences_scores, a top-8 digest of the per-step scores).

``meta`` (JSON) holds the format version, versions, the regenerate command and each case's
spec. JSON cannot hold tuples as dict keys or functions, so ``sequence_bias`` is stored as
``[[ids, bias], ...]`` and ``prefix_allowed_tokens_fn`` as the parameters of :func:`prefix_rule`
(the tests define the same function).

Cases whose answer is not well defined in torch are redrawn, never stored: a warper result that
changes when its threshold is nudged by 1e-5 (relative: a float32 tie with the threshold), and,
for rows longer than 16, a result that changes when the vocabulary is permuted (torch's CPU sort
is stable only up to 16 entries). Whole-generate cases reject near-ties in greedy/beam candidate
selection, as make_decode_golden.py does.

Regenerate from the repository root::

    PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_processors_more_golden.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import GPT2LMHeadModel, LogitsProcessorList

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _oracle import GOLDEN, ROOT, TIE_GAP, digest, left_pad, require_transformers, save_golden  # noqa: E402
from make_decode_golden import Recorder  # noqa: E402

FORMAT_VERSION = 1
REGENERATE = "PYTHONPATH=$PWD .venv-oracle/bin/python tools/golden/make_processors_more_golden.py"
NUDGED = {"TypicalLogitsWarper": "mass", "EpsilonLogitsWarper": "epsilon", "EtaLogitsWarper": "epsilon",
          "MinPLogitsWarper": "min_p", "TopPLogitsWarper": "top_p"}

EQUIVARIANT = set(NUDGED) | {"TemperatureLogitsWarper", "TopKLogitsWarper", "LogitNormalization",
                             "InfNanRemoveLogitsProcessor"}


# ----------------------------------------------------------------------------------------------
# Shared by make_min_p_golden.py


def prefix_rule(k: int, vocab: int):
    """The ``prefix_allowed_tokens_fn`` of the golden cases: k tokens depending on the batch id and last token."""
    def allowed(batch_id, sent):
        return sorted({(int(sent[-1]) * 7 + int(batch_id) * 3 + j * 11) % vocab for j in range(k)})
    return allowed


def random_scores(rng, batch: int, vocab: int, kind: str) -> np.ndarray:
    """float32 (B, V): normal (scale 3), ties (integers -2..2), neginf (~30% -inf), allneginf (one row
    all -inf), logprobs (log_softmax of normal), flat (scale 0.3: high entropy), peaked (scale 8)."""
    scale = {"flat": 0.3, "peaked": 8.0}.get(kind, 3.0)
    s = (rng.normal(size=(batch, vocab)) * scale).astype(np.float32)
    if kind == "ties":
        s = rng.integers(-2, 3, size=(batch, vocab)).astype(np.float32)
    elif kind in ("neginf", "allneginf"):
        mask = rng.random((batch, vocab)) < 0.3
        mask[np.arange(batch), rng.integers(0, vocab, batch)] = False
        s[mask] = -np.inf
        if kind == "allneginf":
            s[rng.integers(0, batch)] = -np.inf
    elif kind == "logprobs":
        s = torch.log_softmax(torch.from_numpy(s), dim=-1).numpy()
    return s


def build(spec: list, arrays: dict) -> LogitsProcessorList:
    """[[class name, kwargs], ...] -> transformers chain (arrays supply encoder_input_ids, rules)."""
    chain = []
    for name, kw in spec:
        kw = dict(kw)
        if "encoder_input_ids" in kw:
            kw["encoder_input_ids"] = torch.from_numpy(arrays["encoder_input_ids"])
        if "sequence_bias" in kw:
            kw["sequence_bias"] = {tuple(ids): bias for ids, bias in kw["sequence_bias"]}
        if "prefix_rule" in kw:
            kw["prefix_allowed_tokens_fn"] = prefix_rule(**kw.pop("prefix_rule"))
        chain.append(getattr(transformers, name)(**kw))
    return LogitsProcessorList(chain)


def apply(spec: list, arrays: dict, scores: np.ndarray | None = None) -> np.ndarray:
    s = torch.from_numpy((arrays["scores"] if scores is None else scores).copy())
    return build(spec, arrays)(torch.from_numpy(arrays["input_ids"]), s).numpy()


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(np.isneginf(a), np.isneginf(b)) and np.array_equal(np.isnan(a), np.isnan(b)))


def ill_defined(spec: list, arrays: dict, rng) -> bool:
    """True if the transformers answer hangs on a float tie with a threshold or on torch's unstable sort."""
    base = apply(spec, arrays)
    for j, (name, kw) in enumerate(spec):
        if name in NUDGED:
            for factor in (1 - 1e-5, 1 + 1e-5):
                nudged = [list(x) for x in spec]
                value = kw[NUDGED[name]] * factor
                if name == "TopPLogitsWarper" or name == "MinPLogitsWarper":
                    value = min(max(value, 0.0), 1.0)
                elif not 0 < value < 1:
                    continue
                nudged[j] = [name, {**kw, NUDGED[name]: value}]
                if not same(apply(nudged, arrays), base):
                    return True
    vocab = arrays["scores"].shape[1]
    if vocab > 16 and all(name in EQUIVARIANT for name, _ in spec):  # permutation-equivariant chains only
        perm = rng.permutation(vocab)
        permuted = apply(spec, arrays, arrays["scores"][:, perm])
        unpermuted = np.empty_like(permuted)
        unpermuted[:, perm] = permuted
        if not same(unpermuted, base):
            return True
    return False


class Cases:
    """Accumulates standalone cases: ``add(name, spec, make_inputs)`` draws until well defined."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.cases: list[dict] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.redrawn = 0
        self.skipped: list[str] = []

    def add(self, name: str, spec: list, make_inputs, attempts: int = 100, check: bool = True) -> None:
        """``check=False`` only for hand-made inputs whose arithmetic is exact (dyadic probabilities)."""
        for _ in range(attempts):
            arrays = make_inputs()
            if check and ill_defined(spec, arrays, self.rng):
                self.redrawn += 1
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = apply(spec, arrays)
            i = len(self.cases)
            for key, value in arrays.items():
                self.arrays[f"{i}_{key}"] = value
            self.arrays[f"{i}_expected"] = expected.astype(np.float32)
            self.cases.append({"name": name, "chain": spec})
            return
        self.skipped.append(name)

    def inputs(self, batch: int, vocab: int, kind: str, length: int = 5, alphabet: int | None = None, **extra):
        rng = self.rng

        def make():
            out = {"input_ids": rng.integers(0, alphabet or vocab, size=(batch, length)).astype(np.int64),
                   "scores": random_scores(rng, batch, vocab, kind)}
            out.update({k: v() if callable(v) else v for k, v in extra.items()})
            return out
        return make

    def save(self, path: Path, script: str, regenerate: str) -> None:
        meta = dict(format_version=FORMAT_VERSION, transformers=transformers.__version__, torch=torch.__version__,
                    numpy=np.__version__, script=script, regenerate=regenerate,
                    redrawn_ill_defined_inputs=self.redrawn, skipped=self.skipped, cases=self.cases)
        np.savez_compressed(path, meta=np.array(json.dumps(meta)), **self.arrays)
        print(f"wrote {path.relative_to(ROOT)}: {len(self.cases)} cases, {self.redrawn} redrawn, "
              f"{len(self.skipped)} skipped ({path.stat().st_size / 1024:.0f} KiB)")


# ----------------------------------------------------------------------------------------------
# Standalone cases


KINDS = ["normal", "ties", "neginf", "logprobs", "flat", "peaked"]


def warper_cases(c: Cases) -> None:
    r = c.rng
    for mass in [0.05, 0.2, 0.5, 0.9, 0.99]:
        for m in [1, 2, 5]:
            for kind in KINDS:
                vocab = int(r.choice([4, 16, 33]))
                c.add("typical", [["TypicalLogitsWarper", {"mass": mass, "min_tokens_to_keep": m}]],
                      c.inputs(int(r.integers(1, 4)), vocab, kind))
    for cls, name in [("EpsilonLogitsWarper", "epsilon"), ("EtaLogitsWarper", "eta")]:
        for eps in [1e-4, 3e-3, 0.02, 0.1, 0.3, 0.9]:
            for m in [1, 2, 5]:
                for kind in KINDS:
                    vocab = int(r.choice([4, 16, 33]))
                    c.add(name, [[cls, {"epsilon": eps, "min_tokens_to_keep": m}]],
                          c.inputs(int(r.integers(1, 4)), vocab, kind))
    for cls, kw in [("TypicalLogitsWarper", {"mass": 0.7}), ("EpsilonLogitsWarper", {"epsilon": 0.05}),
                    ("EtaLogitsWarper", {"epsilon": 0.05})]:
        if cls != "EtaLogitsWarper":  # torch's Categorical raises ValueError on an all -inf row (so does ours)
            c.add(cls + "/allneginf", [[cls, kw]], c.inputs(3, 8, "allneginf"))
        c.add(cls + "/filter_value", [[cls, {**kw, "filter_value": -100.0}]], c.inputs(2, 12, "normal"))
        c.add(cls + "/gpt2_vocab", [[cls, kw]], c.inputs(1, 50257, "flat", length=1))
    # the sampling chain of generate: temperature -> top-k -> top-p -> typical -> epsilon -> eta -> renormalise
    for t, k, p, typ, eps, eta in [(0.7, 20, 0.95, 0.9, 0.01, 0.01), (1.3, 0, 1.0, 0.5, 0.0, 0.05),
                                   (1.0, 8, 0.8, 0.0, 0.02, 0.0), (0.5, 0, 1.0, 0.0, 0.0, 0.002)]:
        for kind in ["normal", "neginf", "flat"]:
            spec = [["TemperatureLogitsWarper", {"temperature": t}]]
            spec += [["TopKLogitsWarper", {"top_k": k}]] if k else []
            spec += [["TopPLogitsWarper", {"top_p": p}]] if p < 1 else []
            spec += [["TypicalLogitsWarper", {"mass": typ}]] if typ else []
            spec += [["EpsilonLogitsWarper", {"epsilon": eps}]] if eps else []
            spec += [["EtaLogitsWarper", {"epsilon": eta}]] if eta else []
            spec += [["LogitNormalization", {}]]
            c.add("warper_chain", spec, c.inputs(int(r.integers(1, 4)), 24, kind))


def top_p_tie_cases(c: Cases) -> None:
    """TopP on tied scores, where torch's stable (<= 16 entries) ascending sort drops the lower ids."""
    for vocab in [2, 4, 8, 16]:  # uniform rows: probabilities 1/V and their prefix sums are exact in float32
        for top_p in [0.25, 0.3, 0.5, 0.75]:
            for m in [1, 2]:
                c.add("top_p_ties", [["TopPLogitsWarper", {"top_p": top_p, "min_tokens_to_keep": m}]],
                      lambda vocab=vocab: {"input_ids": np.zeros((1, 1), dtype=np.int64),
                                           "scores": np.zeros((1, vocab), dtype=np.float32)}, check=False)
    for _ in range(6):
        c.add("top_p_ties/random", [["TopPLogitsWarper", {"top_p": float(c.rng.choice([0.2, 0.5, 0.8]))}]],
              c.inputs(int(c.rng.integers(1, 4)), int(c.rng.choice([5, 9, 16])), "ties"))


def constraint_cases(c: Cases) -> None:
    r = c.rng
    for _ in range(24):
        vocab, alphabet = 12, int(r.choice([3, 5]))
        words = [[int(t) for t in r.integers(0, alphabet, size=int(r.integers(1, 4)))]
                 for _ in range(int(r.integers(1, 5)))]
        eos = [int(x) for x in r.choice(vocab, size=int(r.integers(1, 3)), replace=False)]
        if r.random() < 0.3:
            words.append([eos[0]])  # [eos] is dropped by transformers
        if all(w in [[e] for e in eos] for w in words):
            words.append([1, 2])
        kind = str(r.choice(["normal", "logprobs", "neginf"]))
        c.add("bad_words", [["NoBadWordsLogitsProcessor", {"bad_words_ids": words, "eos_token_id": eos}]],
              c.inputs(int(r.integers(1, 4)), vocab, kind, int(r.integers(1, 7)), alphabet))
    for _ in range(24):
        vocab, alphabet = 12, int(r.choice([3, 5]))
        seqs: dict[tuple, float] = {}
        for _ in range(int(r.integers(1, 6))):
            seq = tuple(int(t) for t in r.integers(0, alphabet, size=int(r.integers(1, 4))))
            seqs[seq] = float(r.choice([-3.5, -1.0, 0.5, 2.25, 10.0, -np.inf]))
        c.add("sequence_bias", [["SequenceBiasLogitsProcessor",
                                 {"sequence_bias": [[list(k), v] for k, v in seqs.items()]}]],
              c.inputs(int(r.integers(1, 4)), vocab, str(r.choice(["normal", "logprobs"])), int(r.integers(1, 6)),
                       alphabet))
    for num_beams in [1, 2, 3]:
        for k in [1, 3, 6]:
            batch = num_beams * int(r.integers(1, 3))
            c.add("prefix_constrained", [["PrefixConstrainedLogitsProcessor",
                                          {"prefix_rule": {"k": k, "vocab": 16}, "num_beams": num_beams}]],
                  c.inputs(batch, 16, "normal", int(r.integers(1, 5))))
    for length in [1, 2, 4]:
        for bos in [0, 5, 15]:
            c.add("forced_bos", [["ForcedBOSTokenLogitsProcessor", {"bos_token_id": bos}]],
                  c.inputs(int(r.integers(1, 4)), 16, str(r.choice(["normal", "neginf"])), length))
    for length in [3, 5]:
        for max_length in [length, length + 1, length + 2]:
            for eos in [4, [2, 9], [15]]:
                c.add("forced_eos", [["ForcedEOSTokenLogitsProcessor", {"max_length": max_length,
                                                                        "eos_token_id": eos}]],
                      c.inputs(int(r.integers(1, 4)), 16, "normal", length))
    for tokens in [[0], [3, 7, 7], list(range(8)), []]:
        c.add("suppress", [["SuppressTokensLogitsProcessor", {"suppress_tokens": tokens}]],
              c.inputs(int(r.integers(1, 4)), 16, str(r.choice(["normal", "neginf"]))))
        for begin in [4, 5, 6]:
            c.add("suppress_at_begin", [["SuppressTokensAtBeginLogitsProcessor",
                                         {"begin_suppress_tokens": tokens, "begin_index": begin}]],
                  c.inputs(int(r.integers(1, 4)), 16, "normal", 5))


def other_cases(c: Cases) -> None:
    r = c.rng
    for start, factor in [(0, 1.5), (2, 1.01), (3, 0.8), (1, 3.0)]:
        for prompt_len in [2, 4]:
            for length in [prompt_len + 1, prompt_len + 3, prompt_len + 6]:
                eos = [int(x) for x in r.choice(16, size=int(r.integers(1, 3)), replace=False)]
                c.add("exponential_decay", [["ExponentialDecayLengthPenalty",
                                             {"exponential_decay_length_penalty": [start, factor],
                                              "eos_token_id": eos, "input_ids_seq_length": prompt_len}]],
                      c.inputs(int(r.integers(1, 4)), 16, str(r.choice(["normal", "logprobs"])), length))

    def invalid():
        s = random_scores(r, 3, 10, "neginf")
        s[r.random((3, 10)) < 0.2] = np.nan
        s[r.random((3, 10)) < 0.1] = np.inf
        return s
    for _ in range(4):
        c.add("inf_nan_remove", [["InfNanRemoveLogitsProcessor", {}]], c.inputs(3, 10, "normal", scores=invalid))
    for kind in ["normal", "neginf", "logprobs", "peaked", "allneginf"]:
        c.add("logit_normalization", [["LogitNormalization", {}]], c.inputs(int(r.integers(1, 4)), 16, kind))
    for penalty in [0.5, 1.0, 1.3, 2.0]:
        for rows_per_prompt in [1, 2, 3]:
            b = int(r.integers(1, 3))
            c.add("encoder_repetition", [["EncoderRepetitionPenaltyLogitsProcessor",
                                          {"penalty": penalty, "encoder_input_ids": True}]],
                  c.inputs(b * rows_per_prompt, 16, str(r.choice(KINDS[:4])), 6, 8,
                           encoder_input_ids=lambda b=b: r.integers(0, 8, size=(b, 4)).astype(np.int64)))
    for n in [1, 2, 3, 4]:
        for rows_per_prompt in [1, 2]:
            for length in [1, 3, 7]:
                b = int(r.integers(1, 3))
                c.add("encoder_no_repeat_ngram", [["EncoderNoRepeatNGramLogitsProcessor",
                                                   {"encoder_ngram_size": n, "encoder_input_ids": True}]],
                      c.inputs(b * rows_per_prompt, 16, "normal", length, 3,
                               encoder_input_ids=lambda b=b: r.integers(0, 3, size=(b, 6)).astype(np.int64)))
    # the processor order of generate (a subset that can run together)
    for kind in ["normal", "logprobs"]:
        spec = [["SequenceBiasLogitsProcessor", {"sequence_bias": [[[1], 2.0], [[0, 2], -4.0]]}],
                ["EncoderRepetitionPenaltyLogitsProcessor", {"penalty": 1.5, "encoder_input_ids": True}],
                ["RepetitionPenaltyLogitsProcessor", {"penalty": 1.2}],
                ["NoRepeatNGramLogitsProcessor", {"ngram_size": 2}],
                ["EncoderNoRepeatNGramLogitsProcessor", {"encoder_ngram_size": 2, "encoder_input_ids": True}],
                ["NoBadWordsLogitsProcessor", {"bad_words_ids": [[3], [0, 4]], "eos_token_id": 0}],
                ["MinLengthLogitsProcessor", {"min_length": 9, "eos_token_id": 0}],
                ["ExponentialDecayLengthPenalty", {"exponential_decay_length_penalty": [1, 1.2], "eos_token_id": 0,
                                                   "input_ids_seq_length": 3}],
                ["SuppressTokensLogitsProcessor", {"suppress_tokens": [5]}],
                ["LogitNormalization", {}]]
        c.add("processor_chain", spec, c.inputs(2, 12, kind, 6, 5,
                                                encoder_input_ids=lambda: r.integers(0, 5, size=(2, 3)).astype(np.int64)))


# ----------------------------------------------------------------------------------------------
# Whole-generate cases


def load_models() -> dict:
    """The committed decode-{a,b,c} checkpoints and their eos ids (from decode_search.npz's meta)."""
    with np.load(GOLDEN / "decode_search.npz") as z:
        meta = json.loads(str(z["meta"]))
    return {name: (GPT2LMHeadModel.from_pretrained(GOLDEN / "models" / name).eval(), eos, meta["second_eos"][name])
            for name, eos in meta["eos"].items()}


def to_torch_kwargs(kw: dict, vocab: int) -> dict:
    """JSON-able generate kwargs -> transformers kwargs (sequence_bias dict, prefix rule, tensors)."""
    kw = dict(kw)
    if "sequence_bias" in kw:
        kw["sequence_bias"] = {tuple(ids): bias for ids, bias in kw["sequence_bias"]}
    if "prefix_rule" in kw:
        kw["prefix_allowed_tokens_fn"] = prefix_rule(**kw.pop("prefix_rule"))
    for key in ("negative_prompt_ids", "negative_prompt_attention_mask"):
        if key in kw:
            kw[key] = torch.tensor(kw[key])
    if "exponential_decay_length_penalty" in kw:
        kw["exponential_decay_length_penalty"] = tuple(kw["exponential_decay_length_penalty"])
    return kw


def feature_kwargs(feature: str, rng, vocab: int, eos: int, prompt_len: int, n_rows: int, b: int) -> dict:
    """One feature's generate kwargs, drawn. ``n_rows`` = rows the loop runs (for a negative prompt)."""
    pick = lambda options: options[int(rng.integers(0, len(options)))]  # noqa: E731
    others = np.array([t for t in range(1, vocab) if t != eos])
    toks = lambda k: [int(t) for t in rng.choice(others, size=k, replace=False)]  # noqa: E731
    if feature == "min_p":
        return {"min_p": pick([0.05, 0.1, 0.3])}
    if feature == "typical_p":
        return {"typical_p": pick([0.2, 0.5, 0.9])}
    if feature == "epsilon_cutoff":
        return {"epsilon_cutoff": pick([3e-3, 0.02, 0.08])}
    if feature == "eta_cutoff":
        return {"eta_cutoff": pick([3e-3, 0.02, 0.08])}
    if feature == "bad_words_ids":
        words = [[t] for t in toks(int(rng.integers(3, 12)))] + [toks(2), toks(3), [eos]]
        return {"bad_words_ids": words}
    if feature == "sequence_bias":
        return {"sequence_bias": [[[t], pick([-2.0, 3.0, -np.inf])] for t in toks(4)] +
                [[toks(2), pick([4.0, -5.0])] for _ in range(3)]}
    if feature == "prefix_allowed_tokens_fn":
        return {"prefix_rule": {"k": pick([2, 5, 20]), "vocab": vocab}}
    if feature == "forced_bos_token_id":
        return {"forced_bos_token_id": toks(1)[0]}
    if feature == "forced_eos_token_id":
        return {"forced_eos_token_id": pick([eos, toks(1) + [eos]])}
    if feature == "suppress_tokens":
        return {"suppress_tokens": toks(int(rng.integers(5, 30)))}
    if feature == "begin_suppress_tokens":
        return {"begin_suppress_tokens": toks(int(rng.integers(5, 30))) + [eos]}
    if feature == "exponential_decay_length_penalty":
        return {"exponential_decay_length_penalty": [int(rng.integers(0, 4)), pick([1.2, 2.0, 0.9])]}
    if feature == "remove_invalid_values":
        return {"remove_invalid_values": True, "bad_words_ids": [[t] for t in toks(3)]}
    if feature == "renormalize_logits":
        return {"renormalize_logits": True, "sequence_bias": [[[t], 3.0] for t in toks(3)]}
    if feature == "guidance_scale":
        return {"guidance_scale": pick([1.5, 3.0, 0.5])}
    if feature == "guidance_scale+negative_prompt":
        width = int(rng.integers(1, 5))
        neg = [[int(t) for t in rng.integers(1, vocab, size=width)] for _ in range(n_rows)]
        mask = [[1] * width for _ in range(n_rows)]
        if width > 1:
            for row in mask[::2]:
                row[0] = 0  # left padding in every other row
        return {"guidance_scale": pick([1.5, 3.0]), "negative_prompt_ids": neg, "negative_prompt_attention_mask": mask}
    if feature == "encoder_repetition_penalty":
        return {"encoder_repetition_penalty": pick([1.5, 0.7, 3.0])}
    if feature == "encoder_no_repeat_ngram_size":
        return {"encoder_no_repeat_ngram_size": pick([1, 2, 3])}
    raise KeyError(feature)


WARPER_FEATURES = ["typical_p", "epsilon_cutoff", "eta_cutoff"]
PROCESSOR_FEATURES = ["bad_words_ids", "sequence_bias", "prefix_allowed_tokens_fn", "forced_bos_token_id",
                      "forced_eos_token_id", "suppress_tokens", "begin_suppress_tokens",
                      "exponential_decay_length_penalty", "remove_invalid_values", "renormalize_logits",
                      "guidance_scale", "guidance_scale+negative_prompt", "encoder_repetition_penalty",
                      "encoder_no_repeat_ngram_size"]


def mode_kwargs(mode: str, rng) -> dict:
    kw: dict = {"max_new_tokens": int(rng.integers(4, 10)), "return_dict_in_generate": True, "output_scores": True}
    if mode in ("sample", "beam_sample"):
        kw.update(do_sample=True, top_k=int(rng.choice([0, 50, 12])), temperature=float(rng.choice([1.0, 0.8])))
    if mode == "sample" and rng.random() < 0.4:
        kw["num_return_sequences"] = 2
    if mode in ("beam_search", "beam_sample"):
        kw["num_beams"] = int(rng.choice([2, 3]))
    if mode == "group_beam_search":
        kw.update(num_beams=4, num_beam_groups=2, diversity_penalty=1.0)
    if mode in ("beam_search", "beam_sample", "group_beam_search"):
        kw["num_return_sequences"] = int(rng.integers(1, kw["num_beams"] + 1))
        kw["length_penalty"] = float(rng.choice([0.0, 1.0]))
    return kw


class DrawRecorder(Recorder):
    """Also notes (``rejected``) two things that make a sampling case ill-defined for a replay:

    - torch.multinomial returned a zero-probability index: it does so without replacement when a
      row has fewer non-zero entries than samples (beam_sample draws 2K), in an order refdecode
      does not reproduce (its multinomial refuses);
    - beam_sample's descending sort of the drawn candidates met two scores closer than 1e-5 but not
      equal: their order then hangs on the last bits of the model's arithmetic (refdecode computes
      identical beams once, torch per row)."""

    rejected = False

    def multinomial(self, probs, num_samples, *args, **kwargs):
        out = super().multinomial(probs, num_samples, *args, **kwargs)
        self.rejected |= bool((probs.gather(1, out) == 0).any())
        return out

    def sort(self, x, *args, descending=False, **kwargs):
        out = self._sort(x, *args, descending=descending, **kwargs)
        if descending and x.dim() == 2:
            d = (out.values[:, :-1] - out.values[:, 1:]).double()
            self.rejected |= bool(((d > 0) & (d < 1e-5)).any())
        return out

    def __enter__(self):
        self._sort = torch.sort
        torch.sort = self.sort
        return super().__enter__()

    def __exit__(self, *exc):
        torch.sort = self._sort
        return super().__exit__(*exc)


def run_generate(model, prompts, kw, eos, seed) -> tuple[dict, float]:
    ids, mask = left_pad(prompts, eos)
    torch.manual_seed(seed)
    with DrawRecorder() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                             **to_torch_kwargs(kw, model.config.vocab_size))
    arrays = {"input_ids": ids.astype(np.int16), "attention_mask": mask.astype(np.int8),
              "sequences": out.sequences.numpy().astype(np.int16)}
    if getattr(out, "sequences_scores", None) is not None:
        arrays["sequences_scores"] = out.sequences_scores.numpy().astype(np.float32)
    if getattr(out, "beam_indices", None) is not None:
        arrays["beam_indices"] = out.beam_indices.numpy().astype(np.int16)
    arrays["_scores"] = out.scores
    arrays["_draws"] = rec.draws
    return arrays, (-1.0 if rec.rejected else rec.min_gap)


def decode_cases(path: Path, features: list[str], modes_of, per_mode, seed: int, models: dict,
                 script: str, regenerate: str) -> None:
    """``per_mode``: cases per (feature, mode), an int or a function of the feature."""
    count = per_mode if callable(per_mode) else (lambda feature: per_mode)
    rng = np.random.default_rng(seed)
    names = list(models)
    arrays: dict[str, np.ndarray] = {}
    cases: list[dict] = []
    for feature in features:
        for mode in modes_of(feature):
            made = tries = 0
            while made < count(feature) and tries < 40:
                tries += 1
                name = names[int(rng.integers(0, len(names)))]
                model, eos, _ = models[name]
                vocab = model.config.vocab_size
                n_prompts = 1 if feature == "forced_bos_token_id" else int(rng.integers(1, 4))
                lengths = [1] * n_prompts if feature == "forced_bos_token_id" else rng.integers(2, 7, size=n_prompts)
                prompts = [[int(t) for t in rng.integers(1, vocab, size=int(n)) if t != eos] or [1] for n in lengths]
                kw = mode_kwargs(mode, rng)
                rows = len(prompts) * kw.get("num_beams", kw.get("num_return_sequences", 1))
                kw.update(feature_kwargs(feature, rng, vocab, eos, max(map(len, prompts)), rows, len(prompts)))
                torch_seed = int(rng.integers(0, 2**31))
                try:
                    out, gap = run_generate(model, prompts, kw, eos, torch_seed)
                except Exception as err:  # noqa: BLE001 - e.g. a negative prompt with num_return_sequences
                    print(f"  {feature}/{mode}: transformers raised {type(err).__name__}: {err}; redrawn")
                    continue
                # forced BOS in beam modes: every beam's only finite candidate is the forced token, the
                # remaining candidates tie at -inf but are never selected (K finite candidates fill K beams)
                forced_bos_beams = feature == "forced_bos_token_id" and "beam" in mode
                if mode not in ("sample", "beam_sample") and gap < TIE_GAP and not forced_bos_beams or gap < 0:
                    continue
                cid = f"c{len(cases):03d}"
                digest(out.pop("_scores"), f"{cid}/", arrays, full=made == 0)
                draws = out.pop("_draws")
                for step, d in enumerate(draws):
                    arrays[f"{cid}/draw{step:02d}"] = d
                for key, value in out.items():
                    arrays[f"{cid}/{key}"] = value
                cases.append(dict(id=cid, feature=feature, mode=mode, model=name, kwargs=kw, torch_seed=torch_seed,
                                  min_gap=gap, n_draws=len(draws)))
                made += 1
            print(f"  {feature}/{mode}: {made} cases ({tries - made} redrawn)")
    save_golden(path, arrays, FORMAT_VERSION, script, regenerate, cases=cases)
    print(f"wrote {path.relative_to(ROOT)}: {len(cases)} cases ({path.stat().st_size / 1e3:.0f} kB)")


def modes_of(feature: str) -> list[str]:
    if feature in WARPER_FEATURES:
        return ["sample", "beam_sample"]
    if feature == "guidance_scale+negative_prompt":  # with beams transformers 4.38.2 crashes (see docs/guidance.md)
        return ["greedy_search", "sample"]
    if feature == "forced_bos_token_id":  # beam_sample: K candidates for 2K draws (see DrawRecorder)
        return ["greedy_search", "sample", "beam_search", "group_beam_search"]
    return ["greedy_search", "sample", "beam_search", "beam_sample", "group_beam_search"]


def main() -> None:
    require_transformers("4.38.2")
    import transformers.utils.logging as hf_logging
    hf_logging.set_verbosity_error()
    c = Cases(seed=13)
    warper_cases(c)
    top_p_tie_cases(c)
    constraint_cases(c)
    other_cases(c)
    c.save(GOLDEN / "processors_more.npz", "tools/golden/make_processors_more_golden.py", REGENERATE)
    models = load_models()
    decode_cases(GOLDEN / "decode_processors_more.npz", WARPER_FEATURES + PROCESSOR_FEATURES, modes_of,
                 lambda feature: 6 if feature in WARPER_FEATURES else 3, 1313,
                 models, "tools/golden/make_processors_more_golden.py", REGENERATE)


if __name__ == "__main__":
    sys.exit(main())
