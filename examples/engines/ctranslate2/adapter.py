r"""CTranslate2 4.8.5 as a `refdecode conformance check` client (decodes on Hugging Face GPT-2 and Llama folders).

On first use of a model folder the adapter converts it (convert.py, CTranslate2's own TransformersConverter,
its GPT2Loader or LlamaLoader as config.json's architecture says, float32) into
``cache/<folder name>-<first 12 hex of sha256(model.safetensors)>/`` and loads it with
``ctranslate2.Generator(path, device="cpu", compute_type="float32", inter_threads=1, intra_threads=1)``.

The request's prompts go to ONE ``generate_batch`` call, as CTranslate2's users call it: each prompt as its real
tokens (its left padding removed with ``attention_mask``; CTranslate2 pads the batch itself), the options below
once for the batch, in the engine's own meaning. ``CT2_PER_PROMPT=1`` instead calls it once per prompt with the
lengths stated per prompt (refdecode's profile ``ctranslate2-per-prompt``).

==========================  =================================================================================
transformers                CTranslate2
==========================  =================================================================================
max_new_tokens              ``max_length`` = T - 1 + max_new_tokens: decoding steps from the prompts' first
                            token (with include_prompt_in_result the prompt is a forced prefix decoded in the
                            loop), T the request's width, so the longest prompt gets max_new_tokens; a shorter
                            one gets its padding's worth more (profile switch ``lengths_from_unpadded``, C8)
eos_token_id (list)         ``end_token=[ids]``, ``return_end_token=True`` (the eos stays in the row, as in HF)
num_beams                   ``beam_size`` (``patience=1``, the default)
length_penalty              ``length_penalty``
early_stopping              no option: CTranslate2 has one finishing rule (passed nowhere, the case shows it)
num_return_sequences        ``num_hypotheses``
repetition_penalty          ``repetition_penalty``
no_repeat_ngram_size        ``no_repeat_ngram_size``
min_length, min_new_tokens  ``min_length`` = max(min_length, T + min_new_tokens) - 1: steps, counted as
                            max_length is, before an eos is allowed (transformers counts min_length over the
                            padded width and min_new_tokens from it; the same for the longest prompt, C8 for
                            the others)
num_beam_groups > 1         Unsupported (no group beam search)
do_sample / uniforms        Unsupported (``sampling_topk/topp/temperature`` exist, but draws come from
                            CTranslate2's own generator: the case's uniforms cannot be given)
==========================  =================================================================================

PROMPT MODE (``CT2_INCLUDE_PROMPT``, default ``1``, CTranslate2's default ``include_prompt_in_result=True``):
with 1 the prompt's first token is the start token and the rest is a forced prefix decoded in the loop, so
``max_length``/``min_length`` count the prompt minus one token and the processors see the prompt minus its
first token; with 0 (``include_prompt_in_result=False``) the prompt minus its last token is forwarded at once
and the processors see only generated tokens. FINDINGS.md has both.

Output: ``sequences`` (prompt as sent, left padding included, + generated ids, right-padded with pad_token_id),
and for beam requests ``sequences_scores`` from ``return_scores=True`` (CTranslate2's normalised score).
``beam_indices`` do not exist in CTranslate2: the ``gpt2_*`` beam types that require them are Unsupported.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
from protocol import Unsupported, serve  # noqa: E402

import ctranslate2  # noqa: E402

INCLUDE_PROMPT = os.environ.get("CT2_INCLUDE_PROMPT", "1") != "0"
PER_PROMPT = os.environ.get("CT2_PER_PROMPT", "") == "1"
CACHE = Path(os.environ.get("CT2_CACHE", HERE / "cache"))
_GENERATORS: dict[str, tuple[ctranslate2.Generator, dict]] = {}


def convert_python() -> str:
    """An interpreter with torch + transformers 4.38.2 for CTranslate2's converter."""
    oracle = Path(os.environ.get("REFDECODE_ORACLE_PYTHON", str(HERE.parents[2] / ".venv-oracle" / "bin" / "python")))
    for p in (oracle, HERE / "env-convert" / "bin" / "python"):
        if p.exists():
            return str(p)
    raise RuntimeError("no converter interpreter: run examples/engines/ctranslate2/setup.sh")


def site_packages() -> str:
    import ctranslate2 as ct

    return str(Path(ct.__file__).resolve().parent.parent)


def converted(src: Path) -> Path:
    """The cached CTranslate2 directory for a HF folder, converting on first use."""
    h = hashlib.sha256()
    with open(src / "model.safetensors", "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    out = CACHE / f"{src.name}-{h.hexdigest()[:12]}"
    if not (out / "model.bin").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        subprocess.run([convert_python(), str(HERE / "convert.py"), str(src), str(out), site_packages()],
                       check=True, stdout=sys.stderr)
        print(f"ctranslate2: converted {src} -> {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def generator(spec: dict) -> tuple[ctranslate2.Generator, dict]:
    if spec.get("kind") not in ("gpt2", "llama"):
        raise Unsupported(f"model kind {spec.get('kind')!r}: this adapter converts GPT-2 and Llama folders only")
    src = Path(spec["path"])
    key = str(src)
    if key not in _GENERATORS:
        path = converted(src)
        gen = ctranslate2.Generator(str(path), device="cpu", compute_type="float32", inter_threads=1,
                                    intra_threads=1)
        _GENERATORS[key] = (gen, json.loads((src / "config.json").read_text()))
    return _GENERATORS[key]


def tok(i: int) -> str:
    return f"<{i}>"


def options(config: dict, width: int, prompt_len: int | None = None) -> dict:
    """generate_batch keywords for the batch (``prompt_len`` None) or, per prompt, for one prompt of unpadded
    length ``prompt_len`` (request width ``width``)."""
    if config.get("do_sample"):
        raise Unsupported("sampling: CTranslate2 draws with its own generator; no option to take the uniforms")
    if int(config.get("num_beam_groups", 1)) > 1:
        raise Unsupported("no option for num_beam_groups (no group beam search / diversity_penalty)")
    if config.get("max_new_tokens") is None:
        raise Unsupported("config without max_new_tokens")
    eos = config.get("eos_token_id")
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    if not eos:
        raise Unsupported("no eos_token_id: CTranslate2 always stops on an end token (its model eos by default)")
    new = int(config["max_new_tokens"])
    min_length, min_new_tokens = int(config.get("min_length") or 0), int(config.get("min_new_tokens") or 0)
    if prompt_len is None:   # the batch: steps from the prompts' first token, the longest prompt as the user sees it
        offset = width - 1 if INCLUDE_PROMPT else 0
        max_length = offset + new
        min_steps = max(min_length, width + min_new_tokens) - 1 if INCLUDE_PROMPT else \
            max(min_new_tokens, min_length - width, 0)
    else:                    # per prompt: 4.38.2's constraint, stated for this prompt
        offset = prompt_len - 1 if INCLUDE_PROMPT else 0
        max_length = offset + new
        min_steps = offset + min(max(min_new_tokens, min_length - width, 0), new)
    # the engine refuses min_length > max_length ("The minimum decoding length is greater than the maximum decoding
    # length"); min_length = max_length is the same constraint: no eos within the budget
    min_steps = min(min_steps, max_length)
    beams = int(config.get("num_beams", 1))
    return dict(
        beam_size=beams,
        patience=1.0,
        num_hypotheses=int(config.get("num_return_sequences", 1)),
        length_penalty=float(config.get("length_penalty", 1.0)),
        repetition_penalty=float(config.get("repetition_penalty", 1.0)),
        no_repeat_ngram_size=int(config.get("no_repeat_ngram_size", 0)),
        end_token=eos,
        return_end_token=True,
        max_length=max_length,
        min_length=min_steps,
        include_prompt_in_result=INCLUDE_PROMPT,
        return_scores=beams > 1,
        sampling_topk=1,
    )


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request")
    if "uniforms" in inp:
        raise Unsupported("sampling: CTranslate2 draws with its own generator; no option to take the uniforms")
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: no such decoding mode in CTranslate2")
    config = inp["config"]
    beams = int(config.get("num_beams", 1))
    if beams > 1 and kind.startswith("gpt2_"):
        raise Unsupported(f"{kind} requires beam_indices: CTranslate2 does not return them")
    gen, model_config = generator(inp["model"])
    width = len(inp["input_ids"][0])
    pad = config.get("pad_token_id")
    prompts = [[t for t, m in zip(ids, mask) if m] for ids, mask in zip(inp["input_ids"], inp["attention_mask"])]
    if not all(prompts):
        raise Unsupported("an empty prompt: CTranslate2 needs at least one start token")
    if PER_PROMPT:
        results = [gen.generate_batch([[tok(t) for t in p]], **options(config, width, len(p)))[0] for p in prompts]
    else:
        results = gen.generate_batch([[tok(t) for t in p] for p in prompts], **options(config, width))
    rows, scores = [], []
    for ids, prompt, result in zip(inp["input_ids"], prompts, results):
        for k, seq in enumerate(result.sequences_ids):
            if INCLUDE_PROMPT:
                # the start token is dropped from the result when it is the model's bos (language_model.cc)
                skip = len(prompt) - (1 if prompt[0] == model_config.get("bos_token_id") else 0)
                generated = list(seq[skip:])
            else:
                generated = list(seq)
            rows.append(list(ids) + generated)
            if beams > 1:
                scores.append(float(result.scores[k]))
    longest = max(len(r) for r in rows)
    if any(len(r) < longest for r in rows) and pad is None:
        raise Unsupported("rows of different lengths and no pad_token_id")
    out: dict = {"sequences": [r + [pad] * (longest - len(r)) for r in rows]}
    if beams > 1:
        out["sequences_scores"] = scores
    return out


if __name__ == "__main__":
    sys.exit(serve(answer))
