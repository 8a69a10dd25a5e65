r"""keras-hub 0.32 (Keras 3, torch backend): loading a Hugging Face GPT-2 folder as ``GPT2CausalLM`` and decoding
with keras-hub's own samplers. Shared by adapter.py (the conformance client) and bench.py.

Layout: keras-hub batches prompts RIGHT-padded (``token_ids`` + ``padding_mask``, the generation writes into the
masked-off positions; GPT2CausalLM.generate_step starts every row at the shortest prompt's length and keeps a
longer row's own prompt tokens where the mask is set). A batch of left-padded prompts is re-laid out that way, and
the outputs back into transformers' layout (the given left-padded prompt, then the new tokens, right-padded).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from keras import ops  # noqa: E402

from convert import convert  # noqa: E402

HERE = Path(__file__).resolve().parent
VERSION = keras_hub.__version__

torch.set_num_threads(int(os.environ.get("KERAS_HUB_THREADS", "1")))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def converted_dir(model_dir: str | Path) -> Path:
    """cache/<name>-<sha256[:12] of model.safetensors>/, converted on first use."""
    model_dir = Path(model_dir).resolve()
    out = HERE / "cache" / f"{model_dir.name}-{_sha256(model_dir / 'model.safetensors')[:12]}"
    if not (out / "model.safetensors").is_file():
        convert(model_dir, out)
    return out


_models: dict[str, keras_hub.models.GPT2CausalLM] = {}


def load(model_dir: str | Path) -> keras_hub.models.GPT2CausalLM:
    """GPT2CausalLM (float32, no preprocessor) from keras-hub's Hugging Face loader, loaded once per folder."""
    key = str(Path(model_dir).resolve())
    if key not in _models:
        backbone = keras_hub.models.GPT2Backbone.from_preset(str(converted_dir(model_dir)), dtype="float32")
        _models[key] = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    return _models[key]


def fill_value(eos_ids: list[int]) -> int:
    """What fills the positions still to generate: keras-hub's preprocessor pads with 0 (GPT2Tokenizer.pad_token_id);
    it must not be a stop token (the samplers' stop test looks at every position outside the prompt mask, so a
    stop id there ends the loop before it starts). 0, or the smallest id that is not an eos id."""
    value = 0
    while value in eos_ids:
        value += 1
    return value


def right_padded(input_ids: list[list[int]], attention_mask: list[list[int]], total: int, pad: int):
    """keras-hub's layout: each row's real tokens first, then ``pad`` up to ``total``; the mask marks the prompt."""
    rows = [[t for t, m in zip(r, mk) if m] for r, mk in zip(input_ids, attention_mask)]
    token_ids = np.full((len(rows), total), pad, dtype="int32")
    mask = np.zeros((len(rows), total), dtype=bool)
    for b, r in enumerate(rows):
        token_ids[b, : len(r)] = r
        mask[b, : len(r)] = True
    return rows, token_ids, mask


def _new_tokens(token_ids: np.ndarray, out_mask: np.ndarray, prompt_len: int) -> list[int]:
    """The generated tokens of one row: positions after its prompt that generate_step's output mask keeps
    (everything up to and including the first stop token)."""
    keep = out_mask[prompt_len:]
    return [int(t) for t, k in zip(token_ids[prompt_len:], keep) if k]


def greedy(lm, input_ids, attention_mask, max_new_tokens: int, eos_ids: list[int], pad: int) -> list[list[int]]:
    """``GPT2CausalLM.generate`` with ``GreedySampler``; max_length = padded prompt width + max_new_tokens."""
    total = len(input_ids[0]) + max_new_tokens
    rows, token_ids, mask = right_padded(input_ids, attention_mask, total, fill_value(eos_ids))
    lm.compile(sampler=keras_hub.samplers.GreedySampler())
    out = lm.generate({"token_ids": token_ids, "padding_mask": mask}, stop_token_ids=tuple(eos_ids) if eos_ids else None)
    ids, out_mask = np.asarray(out["token_ids"]), np.asarray(out["padding_mask"])
    return [_new_tokens(ids[b], out_mask[b], len(rows[b])) for b in range(len(rows))]


def beam(lm, input_ids, attention_mask, max_new_tokens: int, eos_ids: list[int], pad: int, num_beams: int):
    """``BeamSampler(num_beams, return_all_beams=True)`` driven exactly as ``GPT2CausalLM.generate_step`` drives a
    sampler (keras_hub/src/models/gpt2/gpt2_causal_lm.py, generate_step: _build_cache, start index = shortest
    prompt, ``next`` = call_with_cache on the previous token, then the output mask cut after the first new stop
    token), because ``generate()`` itself cannot take a sampler that returns all beams. Returns, per prompt, the
    ``num_beams`` beams best first as (new tokens, keras-hub's beam score = sum of the log-probabilities of every
    token the beam took, no length normalisation)."""
    total = len(input_ids[0]) + max_new_tokens
    rows, token_ids, mask = right_padded(input_ids, attention_mask, total, fill_value(eos_ids))
    sampler = keras_hub.samplers.BeamSampler(num_beams=num_beams, return_all_beams=True)
    stop = tuple(eos_ids) if eos_ids else None
    with torch.no_grad():
        token_ids_t = ops.convert_to_tensor(token_ids)
        mask_t = ops.convert_to_tensor(mask)
        hidden_states, cache = lm._build_cache(token_ids_t)
        index = ops.min(ops.sum(ops.cast(mask_t, "int32"), axis=-1))

        def next(prompt, cache, index):  # generate_step's `next`, verbatim
            cache_update_index = index - 1
            batch_size = ops.shape(prompt)[0]
            prompt = ops.slice(prompt, [0, cache_update_index], [batch_size, 1])
            logits, hidden_states, cache = lm.call_with_cache(prompt, cache, cache_update_index)
            return ops.squeeze(logits, axis=1), ops.squeeze(hidden_states, axis=1), cache

        prompts, log_probs = sampler(next=next, prompt=token_ids_t, cache=cache, index=index, mask=mask_t,
                                     stop_token_ids=stop, hidden_states=hidden_states, model=lm)
    prompts = ops.convert_to_numpy(prompts)  # (B, K, total), best first
    log_probs = ops.convert_to_numpy(log_probs)  # (B, K)
    result = []
    for b, r in enumerate(rows):
        beams = []
        for k in range(num_beams):
            seq = prompts[b, k]
            if stop is not None:  # generate_step's output mask: cut after the first stop token past the prompt
                new = seq[len(r):]
                hits = np.flatnonzero(np.isin(new, stop))
                new = new[: hits[0] + 1] if hits.size else new
            else:
                new = seq[len(r):]
            beams.append(([int(t) for t in new], float(log_probs[b, k])))
        result.append(beams)
    return result


__all__ = ["VERSION", "load", "greedy", "beam", "keras"]
