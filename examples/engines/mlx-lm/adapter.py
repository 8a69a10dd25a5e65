r"""mlx-lm 0.32.2 (mlx[cpu] 0.32.4) as a `refdecode conformance check` client (decodes on Hugging Face GPT-2 and
Llama folders; a Llama folder is converted by mlx-lm's own ``mlx_lm.convert``, ``converted_llama``).

On first use of a model folder the adapter writes it as an mlx-lm folder (convert.py: the original GPT-2 weight
names, ``n_ctx``, float32) into ``cache/<folder name>-<first 12 hex of sha256(model.safetensors)>/`` and loads it
once with ``mlx_lm.utils.load_model`` (one loaded model per checkpoint for the whole run).

The request's prompts go to ONE ``mlx_lm.batch_generate`` call, as mlx-lm's users decode a batch: each prompt as
its real tokens (its left padding removed with ``attention_mask``; mlx-lm pads the batch itself, a
``BatchKVCache`` whose positions count from each prompt's first token), ``return_token_ids=True``, the options
below in the engine's own meaning. ``MLX_PER_PROMPT=1`` instead runs each prompt alone through ``generate_step``,
stopped as ``stream_generate`` stops it (refdecode's profile ``mlx-lm-per-prompt``).

==========================  =================================================================================
transformers                mlx-lm
==========================  =================================================================================
max_new_tokens              ``max_tokens``
eos_token_id (list)         the tokenizer's ``eos_token_ids`` (``batch_generate``: ``stop_tokens``): a
                            stand-in tokenizer that holds the case's ids (the suite's models have no
                            tokenizer; requests are token ids, nothing is decoded)
greedy                      ``sampler=make_sampler(temp=0.0)`` (``greedy_sampler``)
repetition_penalty          ``make_logits_processors(repetition_penalty=...)`` with its default
                            ``repetition_context_size=20`` (``MLX_RP_CONTEXT`` to change it)
do_sample: temperature,     ``make_sampler(temp, top_p, min_p, top_k=...)``; mlx draws with its own RNG
top_k, top_p, min_p         (``mx.random.categorical``), which cannot be given the case's uniforms: the
                            adapter keeps mlx-lm's whole sampler chain (its top-p, min-p and top-k filters
                            and ``logits * (1 / temp)``) and replaces only ``categorical_sampling``'s draw:
                            the float32 softmax of those logits (mlx samples them by Gumbel-max), drawn with
                            the case's uniform by the suite's rule (vocabulary order, float64 cumulative
                            sums, the first index whose sum exceeds u * total). Each row gets its own
                            sampler (``BatchGenerator.insert`` ``samplers=``, the loop of
                            ``batch_generate``), so row r at its step t takes ``uniforms[t * N + r]``.
num_return_sequences        sampling: each prompt sent that many times (rows b*R .. b*R+R-1)
num_beams > 1               Unsupported (mlx-lm has no beam search)
no_repeat_ngram_size        Unsupported (no such processor)
min_length > width,         Unsupported (no minimum length: mlx-lm stops on an eos at any step)
min_new_tokens > 0
typical_p, epsilon / eta    Unsupported (no such samplers)
==========================  =================================================================================

Output: ``sequences``: the prompt as sent (left padding included) + the token ids mlx-lm returns, right-padded
with pad_token_id. ``batch_generate`` returns a row that stopped on an eos WITHOUT that eos (generate.py
``batch_generate``: ``if r.finish_reason != "stop"``); ``stream_generate`` yields it as its last response.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
sys.path.insert(0, str(HERE.parent / "onnx-export"))
from export import weights_key  # noqa: E402  (the cache's key: <name>-<sha256(model.safetensors)[:12]>)
from protocol import Unsupported, serve  # noqa: E402

import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402
from mlx_lm import batch_generate  # noqa: E402
from mlx_lm import sample_utils  # noqa: E402
from mlx_lm.generate import BatchGenerator, generate_step  # noqa: E402
from mlx_lm.sample_utils import make_logits_processors, make_sampler  # noqa: E402
from mlx_lm.utils import load_model  # noqa: E402

from convert import convert  # noqa: E402

PER_PROMPT = os.environ.get("MLX_PER_PROMPT", "") == "1"
RP_CONTEXT = int(os.environ.get("MLX_RP_CONTEXT", "20"))    # make_logits_processors' default
CACHE = Path(os.environ.get("MLX_CACHE", HERE / "cache"))
_MODELS: dict[str, tuple] = {}


def converted(src: Path) -> Path:
    """The cached mlx-lm folder of a HF folder, written on first use."""
    out = CACHE / weights_key(src)
    if not (out / "model.safetensors").exists():
        t0 = time.perf_counter()
        convert(src, out)
        print(f"mlx-lm: converted {src} -> {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def tokenizer_config(src: Path, stage: Path) -> dict:
    """tokenizer_config.json for the staged folder: GPT-2's fast tokenizer for the folder's tokenizer.json; a
    folder without one (the suite's tiny Llamas, a random benchmark checkpoint) gets a stand-in written to the
    stage, a WordLevel vocabulary ``<0>`` .. ``<V-1>`` whose eos is the config's (requests are token ids)."""
    if (src / "tokenizer.json").is_file():
        return {"tokenizer_class": "GPT2TokenizerFast"}
    config = json.loads((src / "config.json").read_text())
    eos = f"<{int(config.get('eos_token_id', 0))}>"
    vocab = {f"<{i}>": i for i in range(int(config["vocab_size"]))}
    (stage / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": eos}}))
    return {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos, "bos_token": eos, "unk_token": eos}


def converted_llama(src: Path) -> Path:
    """The cached mlx-lm folder of a HF Llama folder, written on first use by mlx-lm's own converter
    (``mlx_lm.convert``, float32: the shipped weights are float16 and mlx-lm computes in the weights' dtype).
    mlx-lm's Llama (``mlx_lm/models/llama.py``) reads transformers' names as they are; the converter loads the
    folder's tokenizer, which is GPT-2's ``tokenizer.json`` with no tokenizer_config.json: the folder is staged
    with one naming ``GPT2TokenizerFast`` (``tokenizer_config``; token ids are all the adapter exchanges)."""
    import contextlib
    import shutil
    import tempfile

    from mlx_lm.convert import convert as mlx_convert

    out = CACHE / weights_key(src)
    if not (out / "config.json").exists():
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="refdecode-mlx-") as tmp:
            stage = Path(tmp) / "hf"
            stage.mkdir()
            for name in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json"):
                if (src / name).is_file():
                    (stage / name).symlink_to(src / name)
            (stage / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(src, stage)))
            shutil.rmtree(out.with_name(out.name + ".tmp"), ignore_errors=True)
            with contextlib.redirect_stdout(sys.stderr):   # its log lines are not the protocol's
                mlx_convert(str(stage), mlx_path=str(out.with_name(out.name + ".tmp")), dtype="float32")
        out.with_name(out.name + ".tmp").rename(out)
        print(f"mlx-lm: converted {src} -> {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def model_for(spec: dict):
    if spec.get("kind") not in ("gpt2", "llama"):
        raise Unsupported(f"model kind {spec.get('kind')!r}: mlx-lm runs GPT-2 and Llama folders only here")
    src = Path(spec["path"])
    if spec["kind"] == "llama" and str(src) not in _MODELS:
        _MODELS[str(src)] = load_model(converted_llama(src))[0]
    if str(src) not in _MODELS:
        config = json.loads((src / "config.json").read_text())
        # mlx-lm's GPT-2 has one MLP shape and one activation (models/gpt2.py MLP: 4 * n_embd, gelu_approx)
        if config.get("n_inner") not in (None, 4 * config["n_embd"]) or \
                config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
            raise Unsupported("mlx-lm's GPT-2 has no n_inner and only the tanh GELU (models/gpt2.py MLP)")
        model, _ = load_model(converted(src))
        _MODELS[str(src)] = model
    return _MODELS[str(src)]


class StandInTokenizer:
    """What ``batch_generate`` reads of a tokenizer: ``eos_token_ids`` (its stop tokens) and ``decode`` (for the
    texts, which the adapter does not read)."""

    def __init__(self, eos: list[int]):
        self.eos_token_ids = set(eos)

    def decode(self, ids, **kwargs) -> str:
        return ""


def uniform_draw(logits: mx.array, temp: float, u: float) -> mx.array:
    """``categorical_sampling``'s draw with a given uniform. The logits are mlx's own ``logits * (1 / temp)``, the
    array ``mx.random.categorical`` samples from; it samples by Gumbel-max (no softmax is computed), so its
    distribution is the exact softmax of those logits: taken here as the suite's float32 softmax (max subtracted),
    then the first index whose float64 cumulative sum exceeds u * total."""
    x = np.array(logits * (1.0 / temp), dtype=np.float32).reshape(-1)
    e = np.exp(x - x.max())
    p = (e / e.sum()).astype(np.float64)
    cdf = np.cumsum(p)
    j = int(np.count_nonzero(cdf <= u * cdf[-1]))
    return mx.array([min(j, int(np.flatnonzero(p)[-1]))], dtype=mx.uint32)


class RowSampler:
    """One row's sampler: mlx-lm's chain from ``make_sampler``, its draw taken with the row's uniforms."""

    current: "RowSampler | None" = None

    def __init__(self, chain, uniforms: np.ndarray, row: int, rows: int):
        self.chain, self.u, self.row, self.rows, self.step = chain, uniforms, row, rows, 0

    def __call__(self, logprobs: mx.array) -> mx.array:
        RowSampler.current = self
        try:
            return self.chain(logprobs)
        finally:
            RowSampler.current = None
            self.step += 1

    def draw(self, logits: mx.array, temp: float) -> mx.array:
        i = self.step * self.rows + self.row
        if i >= self.u.size:    # generate_step / GenerationBatch compute one step ahead: a token never returned
            return mx.array([0], dtype=mx.uint32)
        return uniform_draw(logits, temp, float(self.u[i]))


_categorical = sample_utils.categorical_sampling


def _given_categorical(logits: mx.array, temp: float) -> mx.array:
    if RowSampler.current is None:
        return _categorical(logits, temp)
    return RowSampler.current.draw(logits, temp)


sample_utils.categorical_sampling = _given_categorical    # make_sampler's chain calls it by its module name


def options(config: dict, width: int, vocab: int) -> tuple[dict, list]:
    """(make_sampler keywords, logits processors) for the case's config."""
    if int(config.get("num_beams", 1)) > 1:
        raise Unsupported("num_beams > 1: mlx-lm has no beam search")
    if int(config.get("no_repeat_ngram_size") or 0) > 0:
        raise Unsupported("no_repeat_ngram_size: mlx-lm has no such processor")
    if int(config.get("min_new_tokens") or 0) > 0 or int(config.get("min_length") or 0) > width:
        raise Unsupported("min_new_tokens / min_length beyond the prompt: mlx-lm has no minimum length")
    if config.get("max_new_tokens") is None:
        raise Unsupported("config without max_new_tokens")
    for key, off in (("typical_p", 1.0), ("epsilon_cutoff", 0.0), ("eta_cutoff", 0.0)):
        if config.get(key) not in (None, off):
            raise Unsupported(f"{key}: mlx-lm has no such sampler")
    penalty = float(config.get("repetition_penalty") or 1.0)
    processors = make_logits_processors(repetition_penalty=penalty if penalty != 1.0 else None,
                                        repetition_context_size=RP_CONTEXT)
    if not config.get("do_sample"):
        if int(config.get("num_return_sequences", 1)) > 1:
            raise Unsupported("num_return_sequences > 1 without sampling or beams")
        return {"temp": 0.0}, processors
    top_k = int(config.get("top_k") or 0)
    sampler = dict(temp=float(config.get("temperature", 1.0) if config.get("temperature") is not None else 1.0),
                   top_p=float(config.get("top_p") if config.get("top_p") is not None else 1.0),
                   min_p=float(config.get("min_p") or 0.0),
                   top_k=top_k if top_k < vocab else 0)      # apply_top_k refuses k >= vocab; no filter then
    return sampler, processors


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request")
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: no such decoding mode in mlx-lm")
    config = inp["config"]
    model = model_for(inp["model"])
    width = len(inp["input_ids"][0])
    sampler_kw, processors = options(config, width, int(model.args.vocab_size))
    eos = config.get("eos_token_id")
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    pad = config.get("pad_token_id")
    pad = eos[0] if pad is None else pad
    prompts = [[t for t, m in zip(ids, mask) if m] for ids, mask in zip(inp["input_ids"], inp["attention_mask"])]
    if not all(prompts):
        raise Unsupported("an empty prompt: mlx-lm needs at least one token")
    R = int(config.get("num_return_sequences", 1)) if config.get("do_sample") else 1
    padded = [row for row in inp["input_ids"] for _ in range(R)]
    rows = [p for p in prompts for _ in range(R)]
    new = int(config["max_new_tokens"])
    tokenizer = StandInTokenizer(eos)
    if config.get("do_sample"):
        u = np.asarray(inp["uniforms"], dtype=np.float64).ravel()
        samplers = [RowSampler(make_sampler(**sampler_kw), u, r, len(rows)) for r in range(len(rows))]
    else:
        samplers = [make_sampler(**sampler_kw)] * len(rows)
    if PER_PROMPT:
        generated = [per_prompt(model, tokenizer, p, new, s, processors) for p, s in zip(rows, samplers)]
    elif config.get("do_sample"):
        generated = batched(model, tokenizer, rows, new, samplers, processors)
    else:
        generated = batch_generate(model, tokenizer, rows, max_tokens=new, return_token_ids=True,
                                   sampler=samplers[0], logits_processors=processors).token_ids
    full = [list(ids) + [int(t) for t in g] for ids, g in zip(padded, generated)]
    longest = max(map(len, full))
    return {"sequences": [r + [pad] * (longest - len(r)) for r in full]}


def batched(model, tokenizer, prompts: list[list[int]], new: int, samplers: list, processors: list) -> list:
    """``batch_generate``'s loop (generate.py), with one sampler per row given to ``BatchGenerator.insert``."""
    gen = BatchGenerator(model, stop_tokens=[[t] for t in tokenizer.eos_token_ids], logits_processors=processors)
    uids = gen.insert(prompts, [new] * len(prompts), samplers=samplers)
    results: dict[int, list[int]] = {uid: [] for uid in uids}
    while responses := gen.next_generated():
        for r in responses:
            if r.finish_reason != "stop":
                results[r.uid].append(r.token)
    gen.close()
    return [results[uid] for uid in uids]


def per_prompt(model, tokenizer, prompt: list[int], new: int, sampler, processors: list) -> list[int]:
    """``generate_step`` on one prompt, stopped as ``stream_generate`` stops it (generate.py): its tokens up to and
    including the first in the tokenizer's ``eos_token_ids``, at most ``max_tokens``. (``stream_generate`` itself
    needs a real tokenizer for its detokenizer; the tokens it yields are these.)"""
    out = []
    for token, _ in generate_step(mx.array(prompt), model, max_tokens=new, sampler=sampler,
                                  logits_processors=processors):
        out.append(int(token))
        if token in tokenizer.eos_token_ids:
            break
    return out


if __name__ == "__main__":
    sys.exit(serve(answer))
