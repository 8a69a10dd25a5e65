r"""onnxruntime-genai 0.18.0 as a `refdecode conformance check` client (docs/conformance.md, "The protocol").

Started by ``examples/engines/onnxruntime-genai/run`` inside ``env/`` (made by ``setup.sh``). For each decode request:

* the checkpoint is converted once (``convert.py``: a GPT-2 folder by the shared optimum ONNX export + a
  hand-written ``genai_config.json`` of type "llama"; a Llama folder by onnxruntime-genai's model builder) into
  ``cache/<model-name>-<sha256(model.safetensors)[:12]>/``;
* the case's ``eos_token_id`` (a list) and ``pad_token_id`` are overlaid on the config (``og.Config.overlay``), so
  the engine stops on exactly those ids (models are kept per (folder, eos, pad));
* the prompts go in as onnxruntime-genai's own batch convention: RIGHT-padded with ``pad_token_id`` (its
  ``PadInputs``, src/models/model.cpp; the attention mask and position ids are derived from trailing pad tokens,
  src/models/position_inputs.cpp). The request's attention mask says which tokens are real; they are moved to the
  left of the row. The answer is what ``get_sequence()`` returns, each row's right-padded prompt replaced by the
  request's own (left-padded) prompt row, rows right-padded with ``pad_token_id`` to the longest: nothing else is
  edited. So a beam hypothesis that ended on an eos comes without it (the engine stores the sequence before the eos),
  and greedy rows lack the step on which the last row took its eos (the engine stops without appending it);
  refdecode's profile has both as switches (``eos_out="none"``, ``drop_last_step``; FINDINGS.md G9, G10);
* options go to ``GeneratorParams.set_search_options``: max_length = prompt width + max_new_tokens; min_length =
  max(min_length, prompt width + min_new_tokens) (transformers 4.38.2's MinNewTokensLengthLogitsProcessor counts
  from the padded prompt width, so this is the same constraint, stated in the engine's only length option);
  repetition_penalty, no_repeat_ngram_size, num_beams, length_penalty, early_stopping (True/False),
  num_return_sequences.

Unsupported (the engine has no way to take it): sampling (no way to give the engine the case's uniforms),
early_stopping="never", group beam search / diversity_penalty, any other non-default generation option
(bad_words_ids, forced ids, suppress_tokens, ...), and output fields the engine does not return (``beam_indices``:
required by the gpt2_beam_* types). ``scores`` and ``sequences_scores`` are left out (the Python API returns
neither).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))

from adapter_common import decode_request, require_handled  # noqa: E402
from protocol import Unsupported, serve  # noqa: E402

sys.path.insert(0, str(HERE.parent / "onnx-export"))
from export import weights_key  # noqa: E402  (the export cache's key: <name>-<sha256(model.safetensors)[:12]>)

import numpy as np  # noqa: E402
import onnxruntime_genai as og  # noqa: E402

ENGINE = "onnxruntime-genai"
VERSION = og.__version__

HANDLED = {
    "max_length", "max_new_tokens", "min_length", "min_new_tokens", "early_stopping", "do_sample", "num_beams",
    "temperature", "top_k", "top_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "num_return_sequences", "pad_token_id", "eos_token_id",
}


def converted(model_dir: Path) -> Path:
    """The genai model folder for MODEL_DIR, converted on first use."""
    out = HERE / "cache" / weights_key(model_dir)
    if not (out / "genai_config.json").is_file():
        subprocess.run([sys.executable, str(HERE / "convert.py"), str(model_dir), str(out)], check=True,
                       stdout=sys.stderr)
    return out


_models: dict[tuple, og.Model] = {}


def model_for(model_dir: Path, eos: list[int], pad: int) -> og.Model:
    key = (str(model_dir), tuple(eos), pad)
    if key not in _models:
        folder = converted(model_dir)
        config = og.Config(str(folder))
        config.clear_providers()  # CPU
        # A number replaces the config's eos list, a list is appended to it (config.cpp: Model_Element
        # ``eos_token_id.assign(1, ...)``, Int_Array_Element ``emplace_back``): the first id as a number, the rest
        # as a list, so the engine stops on exactly the request's ids and not also on the folder's own eos.
        config.overlay(json.dumps({"model": {"eos_token_id": eos[0], "pad_token_id": pad}}))
        if len(eos) > 1:
            config.overlay(json.dumps({"model": {"eos_token_id": eos[1:]}}))
        if len(_models) > 8:
            _models.clear()
        _models[key] = og.Model(config)
    return _models[key]


def check_options(cfg: dict) -> None:
    require_handled(cfg, HANDLED)
    if cfg.get("do_sample"):
        raise Unsupported("sampling: the engine draws from its own generator (random_seed); it cannot be given "
                          "the case's uniforms")
    if cfg.get("early_stopping") not in (True, False, None):
        raise Unsupported(f"no option for early_stopping={cfg['early_stopping']!r} (a bool only)")


def generate(model_dir: Path, input_ids: list[list[int]], attention_mask: list[list[int]], cfg: dict) -> dict:
    eos = cfg.get("eos_token_id")
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    if not eos:
        raise Unsupported("no eos_token_id: the engine always stops on its config's eos")
    pad = cfg.get("pad_token_id")
    if pad is None:
        pad = eos[0]  # transformers 4.38.2 sets pad_token_id = eos_token_id[0] when it is None
    batch, width = len(input_ids), len(input_ids[0])
    num_beams = int(cfg.get("num_beams") or 1)
    nrs = int(cfg.get("num_return_sequences") or 1)
    if cfg.get("max_new_tokens") is not None:
        max_length = width + int(cfg["max_new_tokens"])
    else:
        max_length = int(cfg.get("max_length") or 20)
    min_length = int(cfg.get("min_length") or 0)
    if cfg.get("min_new_tokens"):
        min_length = max(min_length, width + int(cfg["min_new_tokens"]))

    # The engine's batch layout: each prompt's real tokens first, then pad_token_id (model.cpp PadInputs).
    real = [[t for t, m in zip(row, mask) if m] for row, mask in zip(input_ids, attention_mask)]
    right = np.full((batch, width), pad, dtype=np.int32)
    for b, toks in enumerate(real):
        right[b, : len(toks)] = toks

    model = model_for(model_dir, eos, pad)
    params = og.GeneratorParams(model)
    options = dict(max_length=max_length, min_length=min_length, batch_size=batch, num_beams=num_beams,
                   num_return_sequences=nrs, do_sample=False,
                   repetition_penalty=float(cfg.get("repetition_penalty", 1.0)),
                   no_repeat_ngram_size=int(cfg.get("no_repeat_ngram_size") or 0))
    if num_beams > 1:
        options["length_penalty"] = float(cfg.get("length_penalty", 1.0))
        options["early_stopping"] = bool(cfg.get("early_stopping", False))
    params.set_search_options(**options)
    generator = og.Generator(model, params)
    generator.append_tokens(right)
    while not generator.is_done():
        generator.generate_next_token()
    rows = []
    for b in range(batch):
        for r in range(nrs):
            seq = [int(t) for t in generator.get_sequence(b * nrs + r)]
            rows.append(list(input_ids[b]) + seq[width:])
    longest = max(len(r) for r in rows)
    return {"sequences": [r + [pad] * (longest - len(r)) for r in rows]}


def answer(request: dict) -> dict:
    model_dir, input_ids, mask, cfg = decode_request(request, kinds=("gpt2", "llama"))
    check_options(cfg)
    return generate(model_dir, input_ids, mask, cfg)


if __name__ == "__main__":
    sys.exit(serve(answer))
