r"""OpenVINO GenAI 2026.4.1.0 as a `refdecode conformance check` client (docs/conformance.md, "The protocol").

Started by ``examples/engines/openvino-genai/run`` inside ``env/`` (made by ``setup.sh``). On first use of a model
folder the adapter exports it (``convert.py``: a float32 Hugging Face folder, then ``optimum-cli export openvino
--task text-generation-with-past --weight-format fp32``, tokenizer included) into
``cache/<folder name>-<first 12 hex of sha256(model.safetensors)>/`` and keeps ONE ``openvino_genai.LLMPipeline``
per checkpoint alive across cases: ``LLMPipeline(folder, "CPU", KV_CACHE_PRECISION="f32",
INFERENCE_PRECISION_HINT="f32", INFERENCE_NUM_THREADS=1, NUM_STREAMS=1)`` (the CPU plugin's default KV cache is
8-bit, which moves logits by about 1e-2; the pipeline's default backend on x86 is continuous batching with paged
attention, GenAI's ``ContinuousBatchingAdapter``).

The request's prompts go to ONE ``generate`` call, as GenAI's users call it with token ids:
``pipe.generate(TokenizedInputs(input_ids, attention_mask), config)``. GenAI splits the batch into one request per
row, each row's tokens where the mask is 1 (llm/pipeline_continuous_batching_adapter.hpp ``generate(const
EncodedInputs&...)``), and runs them in one continuous batch; the answer is ``EncodedResults.tokens`` (the new
tokens, per prompt its rows best first) and ``scores``.

==========================  =================================================================================
transformers                openvino_genai.GenerationConfig
==========================  =================================================================================
max_new_tokens              ``max_new_tokens``
max_length (no max_new)     ``max_length`` (GenAI counts each prompt's own tokens, not the padded width)
eos_token_id (list)         ``eos_token_id`` = the first, ``stop_token_ids`` = all of them
num_beams                   ``num_beams``
num_beam_groups             ``num_beam_groups``, ``diversity_penalty``
length_penalty              ``length_penalty``
early_stopping              ``stop_criteria``: True EARLY, False HEURISTIC, "never" NEVER
num_return_sequences        ``num_return_sequences``
repetition_penalty          ``repetition_penalty`` (GenAI refuses it with beam search: the case is then
                            Unsupported, with GenAI's own message)
no_repeat_ngram_size        ``no_repeat_ngram_size`` (0: left at GenAI's default, off)
min_new_tokens              ``min_new_tokens``
min_length                  no option (GenAI has min_new_tokens only): Unsupported when it constrains anything
                            (min_length > the prompt width); a no-op value passes nothing
do_sample / uniforms        Unsupported (below)
==========================  =================================================================================

Output: ``sequences`` = the request's row (its left padding included) + the engine's tokens for it, right-padded
with pad_token_id to the longest; for beam search also ``sequences_scores`` = GenAI's scores (sum of log-probs /
generated length ** length_penalty, float32). Nothing is edited: a hypothesis ends with the eos it generated, and
GenAI's presence_penalty / frequency_penalty / ignore_eos (no transformers 4.38.2 counterpart) are left at
their defaults.

Unsupported: a case on which GenAI raises (its C++ ``Check`` fails; the reason names it: FINDINGS.md O7); the
pipeline is then made anew. Sampling: GenAI draws with its own ``std::mt19937`` (``rng_seed``), so the case's
uniforms cannot be given; and what it exposes of the distribution (``logprobs``) is the log-probability of the
drawn tokens under the RAW logits (sampling/logit_transformers.hpp ``FullVocabLogSumExpTransform``), not the
processed distribution, so the distribution cannot be checked either (FINDINGS.md O8). Also: any other non-default
field, output fields it does not return (``beam_indices``: required by the gpt2_beam_* types), non-GPT-2 models.
"""

from __future__ import annotations

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
import openvino as ov  # noqa: E402
import openvino_genai as og  # noqa: E402

ENGINE = "openvino-genai"
VERSION = og.__version__
PROPERTIES = {"KV_CACHE_PRECISION": "f32", "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1,
              "NUM_STREAMS": 1}
STOP_CRITERIA = {True: og.StopCriteria.EARLY, False: og.StopCriteria.HEURISTIC, "never": og.StopCriteria.NEVER}

HANDLED = {
    "max_length", "max_new_tokens", "min_length", "min_new_tokens", "early_stopping", "do_sample", "num_beams",
    "temperature", "top_k", "top_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "num_return_sequences", "pad_token_id", "eos_token_id", "num_beam_groups", "diversity_penalty",
}

def converted(model_dir: Path) -> Path:
    """The exported model folder for MODEL_DIR, exported on first use."""
    out = HERE / "cache" / weights_key(model_dir)
    if not (out / "openvino_model.xml").is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(HERE / "convert.py"), str(model_dir), str(out)], check=True,
                       stdout=sys.stderr)
    return out


_pipelines: dict[str, og.LLMPipeline] = {}


def pipeline_for(model_dir: Path) -> og.LLMPipeline:
    """One LLMPipeline per checkpoint, kept for the adapter's life."""
    key = str(model_dir)
    if key not in _pipelines:
        _pipelines[key] = og.LLMPipeline(str(converted(model_dir)), "CPU", **PROPERTIES)
    return _pipelines[key]


def generation_config(cfg: dict, width: int) -> og.GenerationConfig:
    """The case's settings as GenAI's GenerationConfig (the table in the module doc)."""
    require_handled(cfg, HANDLED)
    if cfg.get("do_sample"):
        raise Unsupported("sampling: GenAI draws with its own std::mt19937 (rng_seed) and exposes only the raw "
                          "log-probabilities of the drawn tokens, not the processed distribution")
    if int(cfg.get("min_length") or 0) > width:
        raise Unsupported(f"min_length={cfg['min_length']}: GenAI has min_new_tokens only (no total minimum)")
    eos = cfg.get("eos_token_id")
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    if not eos:
        raise Unsupported("no eos_token_id (the cases always name one)")
    gc = og.GenerationConfig()
    if cfg.get("max_new_tokens") is not None:
        gc.max_new_tokens = int(cfg["max_new_tokens"])
    else:
        gc.max_length = int(cfg.get("max_length") or 20)
    gc.eos_token_id = int(eos[0])
    gc.stop_token_ids = set(int(e) for e in eos)
    gc.num_beams = int(cfg.get("num_beams") or 1)
    gc.num_return_sequences = int(cfg.get("num_return_sequences") or 1)
    gc.repetition_penalty = float(cfg.get("repetition_penalty", 1.0))
    if int(cfg.get("no_repeat_ngram_size") or 0) > 0:
        gc.no_repeat_ngram_size = int(cfg["no_repeat_ngram_size"])
    if cfg.get("min_new_tokens"):
        gc.min_new_tokens = int(cfg["min_new_tokens"])
    if gc.num_beams > 1:
        gc.length_penalty = float(cfg.get("length_penalty", 1.0))
        gc.stop_criteria = STOP_CRITERIA[cfg.get("early_stopping", False)]
        gc.num_beam_groups = int(cfg.get("num_beam_groups") or 1)
        gc.diversity_penalty = float(cfg.get("diversity_penalty") or 0.0)
    try:
        gc.validate()
    except RuntimeError as err:   # GenAI's own refusal (e.g. repetition_penalty with beam search)
        raise Unsupported(f"GenAI refuses the settings: {_first_line(err)}") from None
    return gc


def _first_line(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines()
             if line.strip() and "Exception from" not in line and not line.startswith("Check '")]
    return lines[0] if lines else type(err).__name__


def generate(model_dir: Path, input_ids: list[list[int]], attention_mask: list[list[int]], cfg: dict) -> dict:
    width = len(input_ids[0])
    gc = generation_config(cfg, width)
    pad = cfg.get("pad_token_id")
    if pad is None:
        pad = gc.eos_token_id   # transformers 4.38.2's pad_token_id when None: eos_token_id[0]
    ids = ov.Tensor(np.asarray(input_ids, dtype=np.int64))
    mask = ov.Tensor(np.asarray(attention_mask, dtype=np.int64))
    try:
        result = pipeline_for(model_dir).generate(og.TokenizedInputs(ids, mask), gc)
    except RuntimeError as err:
        # GenAI raises where its own code fails (FINDINGS.md O7: K hypotheses finished at the first step with
        # stop_criteria EARLY); the pipeline's cache is left with leaked blocks, so it is built anew for the next
        # case, and this one has no answer the engine can give
        _pipelines.pop(str(model_dir), None)
        raise Unsupported(f"the engine fails on this case: {_first_line(err)}") from None
    rows_per_prompt = gc.num_return_sequences
    if len(result.tokens) != len(input_ids) * rows_per_prompt:
        raise RuntimeError(f"GenAI returned {len(result.tokens)} rows for {len(input_ids)} prompts x "
                           f"{rows_per_prompt}")
    rows = [list(input_ids[i // rows_per_prompt]) + [int(t) for t in toks] for i, toks in enumerate(result.tokens)]
    longest = max(len(r) for r in rows)
    out = {"sequences": [r + [int(pad)] * (longest - len(r)) for r in rows]}
    if gc.num_beams > 1:
        out["sequences_scores"] = [float(s) for s in result.scores]
    return out


def answer(request: dict) -> dict:
    return generate(*decode_request(request, kinds=("gpt2", "llama")))   # optimum-intel exports both


if __name__ == "__main__":
    sys.exit(serve(answer))
