r"""The control engine: transformers 4.38.2 itself, answering `refdecode conformance check` decode requests.

The same file answers for transformers 5.x (examples/engines/transformers-5/run starts it in 5.x's env); the three
places 5.x differs are marked ``FIVE``: ``from_pretrained(dtype=)``, group beam search no longer in the library
(Unsupported), beam_indices as wide as the generated steps (padded with -1 to 4.38.2's width).

refdecode's expected values are transformers 4.38.2's, so this adapter must pass every case it can express: it
proves the protocol, the harness and the case export, before any foreign engine is blamed for a difference.

It loads the case's Hugging Face folder with ``GPT2LMHeadModel.from_pretrained`` (``{"kind": "gpt2"}``) or
``LlamaForCausalLM.from_pretrained`` (``{"kind": "llama"}``: the engines_llama cases) (float32, eval), builds a
``GenerationConfig`` from the request's ``config`` as it is (every field passed, none dropped) and calls
``model.generate(input_ids, attention_mask=..., generation_config=..., output_scores=True,
return_dict_in_generate=True)``. torch runs single-threaded.

What it answers:
  * ``gpt2_greedy``, ``gpt2_beam_search``, ``gpt2_group_beam_search`` and every ``engines_*`` decode that
    is not sampling: ``sequences``, ``scores`` (the per-step scores generate() records; left out for the
    ``engines_*`` types, which allow it, unless REFDECODE_ENGINE_SCORES=1, and above ``MAX_SCORE_VALUES``
    floats), and for beam modes
    ``sequences_scores`` and ``beam_indices``.
  * Sampling decodes (``do_sample``, a ``uniforms`` input) are ``Unsupported``: generate() draws with torch's
    own generator and has no way to take the case's uniforms.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "common"))
from protocol import Unsupported, decode_request, serve  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import GenerationConfig, GPT2LMHeadModel, LlamaForCausalLM, PreTrainedModel  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
transformers.logging.set_verbosity_error()

MAX_SCORE_VALUES = int(os.environ.get("REFDECODE_ENGINE_MAX_SCORES", 2_000_000))
#: transformers 5.x (examples/engines/transformers-5/run runs this file in its own env) renamed ``torch_dtype``
FIVE = int(transformers.__version__.split(".")[0]) >= 5
DTYPE = {"dtype" if FIVE else "torch_dtype": torch.float32}
#: the model class of each kind of case model (the conformance protocol's ``{"kind": ..., "path": ...}``)
CLASSES = {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM}
_MODELS: dict[str, PreTrainedModel] = {}


def _model(spec: dict) -> PreTrainedModel:
    if spec.get("kind") not in CLASSES:
        raise Unsupported(f"model kind {spec.get('kind')!r}: this adapter runs Hugging Face GPT-2 and Llama "
                          "folders only")
    path = str(spec["path"])
    if path not in _MODELS:
        model = CLASSES[spec["kind"]].from_pretrained(path, **DTYPE)
        model.eval()
        _MODELS[path] = model
    return _MODELS[path]


def answer(request: dict) -> dict:
    kind, inp, config = decode_request(request)
    if config.get("do_sample") or "uniforms" in inp:
        raise Unsupported("sampling: generate() draws with torch's generator; no option to take the case's uniforms")
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: not a plain decode (this adapter answers greedy and beam decodes)")
    if FIVE and int(config.get("num_beam_groups", 1)) > 1:
        raise Unsupported("num_beam_groups > 1: transformers 5.x moved group beam search to the Hub repository "
                          "transformers-community/group-beam-search (custom_generate + trust_remote_code; no network)")
    model = _model(inp["model"])
    ids = torch.tensor(inp["input_ids"], dtype=torch.long)
    mask = torch.tensor(inp["attention_mask"], dtype=torch.long)
    gen = GenerationConfig(**config)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, generation_config=gen, output_scores=True,
                             return_dict_in_generate=True)
    result: dict = {"sequences": out.sequences.tolist()}
    # `scores` are optional for the engines_* types (what engine APIs return): left out there unless
    # REFDECODE_ENGINE_SCORES=1 (on a 50257-token vocabulary they are tens of MB per case, and slow to check)
    want_scores = not kind.startswith("engines_") or os.environ.get("REFDECODE_ENGINE_SCORES") == "1"
    if want_scores and out.scores is not None and sum(s.numel() for s in out.scores) <= MAX_SCORE_VALUES:
        result["scores"] = [s.to(torch.float32).tolist() for s in out.scores]
    if gen.num_beams > 1:
        result["sequences_scores"] = out.sequences_scores.to(torch.float32).tolist()
        # 5.x returns beam_indices (N, generated steps), 4.38.2 (N, sequences width) with -1 after each row's
        # steps: pad to the suite's width with -1 (a format conversion, no value is made up; 4.38.2's: unchanged)
        width = out.sequences.shape[1]
        result["beam_indices"] = [row + [-1] * (width - len(row)) for row in out.beam_indices.tolist()]
    return result


if __name__ == "__main__":
    sys.exit(serve(answer))
