"""Golden outputs of transformers 4.38.2 assisted and prompt-lookup decoding (oracle venv only).

Writes

* ``tests/golden/models/assist-{a,b,c}/``: assistant checkpoints for the main models ``decode-{a,b,c}``
  (made by ``make_decode_golden.py``), with the same vocabulary: ``assist-a`` and ``assist-b`` are the main
  model with Gaussian noise added to every weight (so they agree with it often, not always: both the
  accepting and the rejecting paths run), ``assist-c`` is an unrelated 1-layer random GPT-2 (rejections);
* ``tests/golden/decode_assisted.npz``: ``model.generate(input_ids, assistant_model=...)`` and
  ``model.generate(input_ids, prompt_lookup_num_tokens=...)`` cases, greedy and sampling, on those models
  and on ``models/tiny-shakespeare`` with ``models/gpt2-tiny`` (random weights, the same GPT-2 vocabulary)
  as the assistant. Kwargs are drawn from a grid (repetition penalty, no-repeat-ngram, min_length,
  min_new_tokens, one or two eos ids, max_length or max_new_tokens, output_scores / output_logits,
  a prompt mask with left padding); assistants get ``num_assistant_tokens`` in 1..8 and every schedule;
  prompt-lookup prompts repeat a random phrase so the lookup finds matches.

Sampling cases record what torch drew, in order: the outputs of ``torch.multinomial`` (the assistant's
draws, the model's draw after the acceptance test, prompt lookup's one draw per position) and of
``torch.rand_like`` (the acceptance uniforms r_i of ``_speculative_sampling``), so the tests replay them
through refdecode's ``draw=`` and ``uniform=`` hooks. Some cases call ``generate`` twice with the same
assistant (``calls: 2``): with the "heuristic" schedule 4.38.2 keeps the learnt ``num_assistant_tokens``
in ``assistant_model.generation_config`` for the next call; the outputs are those of the last call and
``num_assistant_tokens_after`` is the value left in the assistant's config.

Outputs per case as in ``make_decode_golden.py`` (sequences, the per-step scores digest: top-8 values and
ids, number of -inf, finite sum; full scores for V <= 128; raw ``logits`` of each round when asked).
Greedy cases whose argmax (the model's or the assistant's) has a near-tie (gap < 1e-5) are redrawn.

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_assisted_golden.py
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from _oracle import GOLDEN, ROOT, TIE_GAP, digest, require_transformers, save_golden  # run from the repository root
from make_decode_golden import common_kwargs
from transformers import GPT2Config, GPT2LMHeadModel

FORMAT_VERSION = 1
REGENERATE = ".venv-oracle/bin/python tools/golden/make_assisted_golden.py"
SCHEDULES = ["heuristic", "heuristic", "constant", "heuristic_transient"]


# ---- checkpoints


def load(path: Path) -> GPT2LMHeadModel:
    return GPT2LMHeadModel.from_pretrained(path).eval()


def noisy_copy(model: GPT2LMHeadModel, scale: float, seed: int, name: str) -> GPT2LMHeadModel:
    """The model with N(0, (scale * std(param))^2) noise added to every parameter; saved as tests/golden/models/name."""
    torch.manual_seed(seed)
    assistant = load(GOLDEN / "models" / name.replace("assist", "decode"))
    with torch.no_grad():
        for p in assistant.parameters():
            p.add_(torch.randn_like(p) * (scale * float(p.std())))
    return save(assistant, name)


def unrelated(vocab: int, eos: int, seed: int, name: str) -> GPT2LMHeadModel:
    """A 1-layer random GPT-2 with the vocabulary size and eos of the main model."""
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab, n_positions=64, n_embd=16, n_layer=1, n_head=2, initializer_range=0.4,
                     bos_token_id=eos, eos_token_id=eos)
    return save(GPT2LMHeadModel(cfg).eval(), name)


def save(model: GPT2LMHeadModel, name: str) -> GPT2LMHeadModel:
    target = GOLDEN / "models" / name
    shutil.rmtree(target, ignore_errors=True)
    model.config._name_or_path = ""  # else config.json records where this machine loaded it from
    model.save_pretrained(target, safe_serialization=True)
    return model


# ---- recording hooks


class Recorder:
    """Records torch.multinomial / torch.rand_like outputs and the smallest argmax gap while generate runs."""

    def __init__(self) -> None:
        self.min_gap = np.inf
        self.draws: list[np.ndarray] = []
        self.uniforms: list[np.ndarray] = []
        self._multinomial, self._rand_like = torch.multinomial, torch.rand_like
        self._argmax, self._tensor_argmax = torch.argmax, torch.Tensor.argmax

    def _gap(self, x: torch.Tensor) -> None:
        v = torch.topk(x, 2, dim=-1).values.double().numpy()
        if np.isfinite(v).all():
            self.min_gap = min(self.min_gap, float((v[..., 0] - v[..., 1]).min()))

    def argmax(self, x, *args, **kwargs):
        self._gap(x)
        return self._argmax(x, *args, **kwargs)

    def multinomial(self, probs, num_samples, *args, **kwargs):
        out = self._multinomial(probs, num_samples, *args, **kwargs)
        self.draws.append(out.numpy().astype(np.int32))
        return out

    def rand_like(self, x, *args, **kwargs):
        out = self._rand_like(x, *args, **kwargs)
        self.uniforms.append(out.numpy().astype(np.float32))
        return out

    def __enter__(self):
        torch.multinomial, torch.rand_like, torch.argmax = self.multinomial, self.rand_like, self.argmax
        recorder = self

        def tensor_argmax(x, *args, **kwargs):  # a plain function, so that Tensor binds it as a method
            recorder._gap(x)
            return recorder._tensor_argmax(x, *args, **kwargs)
        torch.Tensor.argmax = tensor_argmax
        return self

    def __exit__(self, *exc):
        torch.multinomial, torch.rand_like, torch.argmax = self._multinomial, self._rand_like, self._argmax
        torch.Tensor.argmax = self._tensor_argmax


# ---- cases


@torch.no_grad()
def repeated_prompt(model, rng: np.random.Generator, vocab: int, eos: int) -> list[int]:
    """A random phrase and the model's own greedy continuation of it, some filler, then the phrase again (cut
    short): prompt lookup proposes the old continuation, which the model often produces again."""
    phrase = [int(t) for t in rng.integers(1, vocab, size=int(rng.integers(2, 5))) if t != eos] or [1, 2]
    out = model.generate(torch.tensor([phrase]), max_new_tokens=int(rng.integers(2, 7)), do_sample=False,
                         eos_token_id=None, pad_token_id=0)
    continuation = [t for t in out[0, len(phrase):].tolist() if t != eos]
    filler = [int(t) for t in rng.integers(1, vocab, size=int(rng.integers(0, 3))) if t != eos]
    return phrase + continuation + filler + phrase[: int(rng.integers(1, len(phrase) + 1))]


PASSAGE = ("ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"
           "Arise, fair sun, and kill the envious moon.\n\nROMEO:\nBut soft, what light")


def draw_case(mode: str, model, rng: np.random.Generator, vocab: int, eos: int, second: int) -> tuple[dict, dict]:
    """(prompt spec, generate kwargs) for one case; mode is assisted_{greedy,sample} or lookup_{greedy,sample}."""
    if mode.startswith("lookup") and vocab > 128:  # the trained model on a copy-heavy text: the lookup pays off
        from transformers import PreTrainedTokenizerFast
        tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(ROOT / "models" / "tiny-shakespeare" / "tokenizer.json"))
        prompt = tokenizer(PASSAGE).input_ids
    elif mode.startswith("lookup") or rng.random() < 0.3:
        prompt = repeated_prompt(model, rng, vocab, eos)
    else:
        prompt = [int(t) for t in rng.integers(1, vocab, size=int(rng.integers(2, 8))) if t != eos] or [1]
    kw = common_kwargs(rng, eos, second, len(prompt))
    kw["return_dict_in_generate"] = True
    if rng.random() < 0.3 and vocab <= 128:  # raw logits of each round: (1, c + 1, V), kept small
        kw["output_logits"] = True
    if mode.startswith("lookup"):
        kw["prompt_lookup_num_tokens"] = int(rng.choice([1, 2, 4, 10]))
    if mode.startswith("lookup") and vocab > 128:  # let it copy: no penalties, long candidates
        kw = {k: v for k, v in kw.items() if k not in ("repetition_penalty", "no_repeat_ngram_size", "min_length")}
        kw["prompt_lookup_num_tokens"] = 10
    if mode.endswith("sample"):
        kw["do_sample"] = True
        kw["temperature"] = float(rng.choice([1.0, 0.7, 1.5]))
        kw["top_k"] = int(rng.choice([50, 0, 5, 12]))
        kw["top_p"] = float(rng.choice([1.0, 0.8, 0.95]))
        kw["output_scores"] = True
    spec = dict(prompt=prompt, n_pad=int(rng.choice([0, 0, 0, 1, 2])), attention_mask=bool(rng.random() < 0.7),
                num_assistant_tokens=int(rng.choice([1, 2, 3, 5, 8])),
                schedule=SCHEDULES[int(rng.integers(0, len(SCHEDULES)))],
                calls=int(rng.choice([1, 1, 1, 2])) if mode.startswith("assisted") else 1)
    if spec["n_pad"]:
        spec["attention_mask"] = True
    return spec, kw


def run_case(model, assistant, spec: dict, kw: dict, pad: int, torch_seed: int) -> tuple[dict, float]:
    ids = np.array([[pad] * spec["n_pad"] + spec["prompt"]], dtype=np.int64)
    mask = (ids != -1).astype(np.int64)
    mask[0, : spec["n_pad"]] = 0
    extra = {}
    if assistant is not None:
        assistant.generation_config.num_assistant_tokens = spec["num_assistant_tokens"]
        assistant.generation_config.num_assistant_tokens_schedule = spec["schedule"]
        extra["assistant_model"] = assistant
    rounds = []
    hook = model.register_forward_hook(lambda *args: rounds.append(1))  # one main-model call per round
    torch.manual_seed(torch_seed)
    with Recorder() as rec:
        for _ in range(spec["calls"]):
            out = model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)
                                 if spec["attention_mask"] else None, **kw, **extra)
    hook.remove()
    spec["rounds"] = len(rounds)
    arrays: dict = {"input_ids": ids.astype(np.int32), "sequences": out.sequences.numpy().astype(np.int32)}
    if spec["attention_mask"]:
        arrays["attention_mask"] = mask.astype(np.int8)
    if out.scores is not None:
        arrays["_scores"] = out.scores
    if out.logits is not None:
        for i, lg in enumerate(out.logits):
            arrays[f"logits{i:02d}"] = lg.numpy().astype(np.float32)
    for i, d in enumerate(rec.draws):
        arrays[f"draw{i:02d}"] = d
    for i, u in enumerate(rec.uniforms):
        arrays[f"uniform{i:02d}"] = u
    if assistant is not None:
        spec["num_assistant_tokens_after"] = int(assistant.generation_config.num_assistant_tokens)
    spec["n_draws"], spec["n_uniforms"] = len(rec.draws), len(rec.uniforms)
    spec["n_logits"] = 0 if out.logits is None else len(out.logits)
    return arrays, rec.min_gap


def build(path: Path, pairs: dict, plan: list[tuple[str, str, int]], seed: int) -> None:
    """plan: (mode, pair name, number of cases); pairs: name -> (main dir, assistant dir or None, main, assistant)."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    cases = []
    for mode, pair, count in plan:
        main_dir, assistant_dir, model, assistant = pairs[pair]
        eos = model.generation_config.eos_token_id
        second = (eos + 1) % model.config.vocab_size
        made = tries = 0
        while made < count:
            tries += 1
            spec, kw = draw_case(mode, model, rng, model.config.vocab_size, eos, second)
            torch_seed = int(rng.integers(0, 2**31))
            out, gap = run_case(model, assistant if mode.startswith("assisted") else None, spec, kw, eos, torch_seed)
            if mode.endswith("greedy") and gap < TIE_GAP:
                continue
            cid = f"c{len(cases):03d}"
            for key, value in out.items():
                if key == "_scores":
                    digest(value, f"{cid}/", arrays, full=model.config.vocab_size <= 128, int_dtype=np.int32)
                else:
                    arrays[f"{cid}/{key}"] = value
            n_new = out["sequences"].shape[1] - out["input_ids"].shape[1]
            cases.append(dict(id=cid, mode=mode, model=main_dir,
                              assistant=assistant_dir if mode.startswith("assisted") else None,
                              kwargs=kw, torch_seed=torch_seed, min_gap=gap, new_tokens=n_new,
                              **{k: v for k, v in spec.items() if k != "prompt"}))
            made += 1
        print(f"{mode} on {pair}: {made} cases ({tries - made} redrawn)")
    save_golden(path, arrays, FORMAT_VERSION, "tools/golden/make_assisted_golden.py", REGENERATE, cases=cases)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB), {len(cases)} cases")


def main() -> None:
    require_transformers("4.38.2")
    import transformers.utils.logging as hf_logging
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    models = {name: load(GOLDEN / "models" / name) for name in ("decode-a", "decode-b", "decode-c")}
    assistants = {
        "assist-a": noisy_copy(models["decode-a"], 0.05, 11, "assist-a"),
        "assist-b": noisy_copy(models["decode-b"], 0.15, 12, "assist-b"),
        "assist-c": unrelated(models["decode-c"].config.vocab_size, models["decode-c"].config.eos_token_id, 13,
                              "assist-c"),
    }
    shakespeare, gpt2_tiny = load(ROOT / "models" / "tiny-shakespeare"), load(ROOT / "models" / "gpt2-tiny")
    pairs = {
        "a": ("tests/golden/models/decode-a", "tests/golden/models/assist-a", models["decode-a"], assistants["assist-a"]),
        "b": ("tests/golden/models/decode-b", "tests/golden/models/assist-b", models["decode-b"], assistants["assist-b"]),
        "c": ("tests/golden/models/decode-c", "tests/golden/models/assist-c", models["decode-c"], assistants["assist-c"]),
        "shakespeare": ("models/tiny-shakespeare", "models/gpt2-tiny", shakespeare, gpt2_tiny),
    }
    plan = [("assisted_greedy", p, n) for p, n in (("a", 10), ("b", 10), ("c", 6), ("shakespeare", 2))]
    plan += [("lookup_greedy", p, n) for p, n in (("a", 9), ("b", 9), ("c", 8), ("shakespeare", 2))]
    plan += [("assisted_sample", p, n) for p, n in (("a", 6), ("b", 6), ("c", 3), ("shakespeare", 1))]
    plan += [("lookup_sample", p, n) for p, n in (("a", 4), ("b", 3), ("c", 3))]
    build(GOLDEN / "decode_assisted.npz", pairs, plan, seed=16)


if __name__ == "__main__":
    sys.exit(main())
