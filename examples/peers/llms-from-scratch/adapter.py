r"""llms-from-scratch 1.0.19 (the package of Raschka's "Build a Large Language Model (From Scratch)") as a
`refdecode conformance check` client: its own models and its own decoding loops, on Hugging Face checkpoints.

Models (the package's classes, float32, dropout off by ``model.eval()``), weights put in by the package's own loaders
(convert.py writes what they read into ``cache/<folder>-<sha256[:12]>/`` on first use):

* GPT-2 folders: ``ch04.GPTModel`` (``qkv_bias=True``, as the book loads OpenAI's weights) +
  ``ch05.load_weights_into_gpt``;
* Llama folders: ``llama3.Llama3Model`` + ``llama3.load_weights_into_llama`` (``SCRATCH_LLAMA=qwen3``:
  ``qwen3.Qwen3Model`` with ``qk_norm=False`` + ``qwen3.load_weights_into_qwen``; a Llama checkpoint has no q/k
  norms). ``dtype`` float32, ``rope_base`` = rope_theta, ``rope_freq`` None (no rope_scaling).

Decoding (the mode; each mode is one profile of refdecode.reference.engines.rules):

* default (profile ``llms-from-scratch``, ``llms-from-scratch-qwen3``): ``ch05.generate(model, idx, max_new_tokens,
  context_size, temperature, top_k, eos_id)``, the book's loop. Greedy: temperature 0.0 (its argmax branch);
  sampling: the case's temperature and top_k. ``torch.multinomial`` cannot be given the case's uniforms, so the
  adapter replaces that one call while ``generate`` runs: it takes the peer's own ``probs`` (its
  ``torch.softmax`` of its own top-k-masked, tempered logits) and draws with the row's uniform by 4.38.2's rule
  (float64 cumulative sum, the first index whose sum exceeds u * total).
* ``SCRATCH_KV=1`` (profile ``llms-from-scratch-kv``): ``kv_cache.generate.generate_text_simple(model, idx,
  max_new_tokens, context_size, use_cache=True)`` on ``kv_cache.llama3.Llama3Model`` (greedy only, no eos id).

One prompt at a time, as a student's loop calls ``generate``: the row's real tokens (its left padding removed;
the peer has no attention mask) as a (1, n) tensor; ``ch05.generate`` with eos_id raises on a batch of more than
one row (``if idx_next == eos_id`` on a (B, 1) tensor, ch05.py:49). Sampling with num_return_sequences R: each
prompt R times, rows b*R .. b*R+R-1; row r at step t takes ``uniforms[t * N + r]`` (N rows), 4.38.2's order.

==========================  =================================================================================
transformers                llms-from-scratch
==========================  =================================================================================
max_new_tokens              ``max_new_tokens``; ``context_size`` = the config's context length (the book's)
eos_token_id                ``eos_id``: one id (several: Unsupported, ``idx_next == eos_id`` takes one)
do_sample, temperature      ``temperature`` (> 0 samples; greedy: 0.0)
top_k                       ``top_k`` (sampling only; 0: None; more than the vocabulary: Unsupported, topk raises)
top_p, repetition_penalty,  Unsupported (ch05 ``generate`` has no such parameter)
no_repeat_ngram_size,
min_length > width,
min_new_tokens > 0
num_beams > 1               Unsupported (no beam search)
==========================  =================================================================================

Output: ``sequences``: the padded prompt as sent + the tokens ``generate`` appended, right-padded with pad_token_id.
``generate`` breaks BEFORE appending an eos (ch05.py:49-53): a row that stopped on an eos is returned without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "engines" / "common"))
sys.path.insert(0, str(HERE.parents[1] / "engines" / "onnx-export"))
from export import weights_key  # noqa: E402  (the cache's key: <name>-<sha256(model.safetensors)[:12]>)
from protocol import Unsupported, serve  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from llms_from_scratch import ch04, ch05, llama3, qwen3  # noqa: E402
from llms_from_scratch.kv_cache import generate as kv_generate  # noqa: E402
from llms_from_scratch.kv_cache import llama3 as kv_llama3  # noqa: E402

from convert import convert  # noqa: E402

torch.set_num_threads(1)
KV = os.environ.get("SCRATCH_KV", "") == "1"
LLAMA = os.environ.get("SCRATCH_LLAMA", "llama3")
CACHE = Path(os.environ.get("SCRATCH_CACHE", HERE / "cache"))
_MODELS: dict[str, tuple] = {}
HANDLED = {"max_new_tokens", "eos_token_id", "pad_token_id", "do_sample", "temperature", "top_k", "top_p",
           "num_beams", "num_return_sequences", "repetition_penalty", "no_repeat_ngram_size", "min_length",
           "min_new_tokens", "length_penalty", "early_stopping", "num_beam_groups", "diversity_penalty", "max_length"}


def converted(src: Path) -> Path:
    """The cached params of a HF folder, written on first use."""
    out = CACHE / weights_key(src)
    if not (out / "params.pt").exists():
        t0 = time.perf_counter()
        convert(src, out)
        print(f"llms-from-scratch: converted {src} -> {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def gpt2_model(config: dict, params: dict | None) -> tuple[torch.nn.Module | None, int]:
    """ch04's GPTModel with ch05's loader; the book's config keys (ch04 GPT_CONFIG_124M). params None: only the
    checks (Unsupported for what the class cannot hold)."""
    if config.get("n_inner") not in (None, 4 * config["n_embd"]) or \
            config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        raise Unsupported("ch04's GPTModel has one MLP width (4 * emb_dim) and the tanh GELU only (ch04.py:25-46)")
    cfg = {"vocab_size": config["vocab_size"], "context_length": config["n_positions"], "emb_dim": config["n_embd"],
           "n_heads": config["n_head"], "n_layers": config["n_layer"], "drop_rate": 0.0, "qkv_bias": True}
    if params is None:
        return None, cfg["context_length"]
    model = ch04.GPTModel(cfg)
    ch05.load_weights_into_gpt(model, params)
    return model.eval(), cfg["context_length"]


def llama_model(config: dict, params: dict | None) -> tuple[torch.nn.Module | None, int]:
    """llama3's Llama3Model (kv_cache's under SCRATCH_KV) or qwen3's Qwen3Model (qk_norm off), their loaders;
    params None: only the checks."""
    if config.get("model_type") != "llama" or config.get("attention_bias") or config.get("mlp_bias"):
        raise Unsupported("the package's Llama 3 / Qwen3 have no biases and no sliding window")
    if config.get("rope_scaling") is not None:
        raise Unsupported("rope_scaling: the package's models take Llama 3's frequency scaling only (rope_freq)")
    heads, hidden = config["num_attention_heads"], config["hidden_size"]
    if config.get("head_dim") not in (None, hidden // heads):
        raise Unsupported("head_dim: Llama3Model takes emb_dim // n_heads (llama3.py:69)")
    cfg = {"vocab_size": config["vocab_size"], "context_length": config["max_position_embeddings"],
           "emb_dim": hidden, "n_heads": heads, "n_layers": config["num_hidden_layers"],
           "hidden_dim": config["intermediate_size"], "n_kv_groups": config.get("num_key_value_heads") or heads,
           "rope_base": float(config.get("rope_theta", 10000.0)), "dtype": torch.float32}
    if params is None:
        return None, cfg["context_length"]
    if LLAMA == "qwen3":
        model = qwen3.Qwen3Model({**cfg, "head_dim": hidden // heads, "qk_norm": False})
        qwen3.load_weights_into_qwen(model, cfg, params)
    else:
        model = (kv_llama3 if KV else llama3).Llama3Model({**cfg, "rope_freq": None})
        llama3.load_weights_into_llama(model, cfg, params)
    return model.eval(), cfg["context_length"]


def model_for(spec: dict) -> tuple[torch.nn.Module, int]:
    kind = spec.get("kind")
    if kind not in ("gpt2", "llama"):
        raise Unsupported(f"model kind {kind!r}: the package has GPT-2 and Llama-family models only")
    if kind == "gpt2" and KV:
        raise Unsupported("SCRATCH_KV with GPT-2: kv_cache/gpt2.py's GPTModel has no cfg / reset_kv_cache, which "
                          "kv_cache/generate.py's generate_text_simple reads (FINDINGS S6)")
    src = Path(spec["path"])
    if str(src) not in _MODELS:
        config = json.loads((src / "config.json").read_text())
        (gpt2_model if kind == "gpt2" else llama_model)(config, None)     # Unsupported before any conversion
        params = torch.load(converted(src) / "params.pt", weights_only=False)
        with contextlib.redirect_stdout(sys.stderr):   # load_weights_into_llama prints "Model uses weight tying."
            _MODELS[str(src)] = (gpt2_model if kind == "gpt2" else llama_model)(config, params)
    return _MODELS[str(src)]


def options(config: dict, width: int, vocab: int) -> dict:
    """ch05 ``generate``'s keywords for the case (temperature, top_k, eos_id); Unsupported for what it lacks."""
    unknown = set(config) - HANDLED
    if unknown:
        raise Unsupported(f"no option for {sorted(unknown)[0]}")
    if int(config.get("num_beams") or 1) > 1:
        raise Unsupported("num_beams > 1: the package has no beam search")
    if float(config.get("repetition_penalty") or 1.0) != 1.0:
        raise Unsupported("repetition_penalty: ch05 generate has no such parameter")
    if int(config.get("no_repeat_ngram_size") or 0) > 0:
        raise Unsupported("no_repeat_ngram_size: ch05 generate has no such parameter")
    if int(config.get("min_new_tokens") or 0) > 0 or int(config.get("min_length") or 0) > width:
        raise Unsupported("min_new_tokens / min_length beyond the prompt: ch05 generate has no minimum length")
    if config.get("max_new_tokens") is None:
        raise Unsupported("config without max_new_tokens")
    eos = config.get("eos_token_id")
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    if len(eos) > 1:
        raise Unsupported("several eos ids: ch05 generate takes one eos_id (ch05.py:49)")
    if not config.get("do_sample"):
        if int(config.get("num_return_sequences") or 1) > 1:
            raise Unsupported("num_return_sequences > 1 without sampling")
        return {"temperature": 0.0, "top_k": None, "eos_id": eos[0] if eos else None}
    if KV:
        raise Unsupported("sampling: kv_cache/generate.py's generate_text_simple is greedy only")
    if float(config.get("top_p") if config.get("top_p") is not None else 1.0) < 1.0:
        raise Unsupported("top_p: ch05 generate has no such parameter")
    top_k = int(config.get("top_k") or 0)
    if top_k > vocab:
        raise Unsupported(f"top_k {top_k} > vocabulary {vocab}: torch.topk raises (ch05.py:31)")
    temperature = float(config["temperature"]) if config.get("temperature") is not None else 1.0
    return {"temperature": temperature, "top_k": top_k or None, "eos_id": eos[0] if eos else None}


class GivenDraw:
    """``torch.multinomial(probs, num_samples=1)`` inside ch05 ``generate``, drawn with given uniforms: the peer's
    own float32 ``probs`` (1, V), the first index whose float64 cumulative sum exceeds u * total."""

    def __init__(self, uniforms: list[float]):
        self.uniforms, self.step = uniforms, 0

    def __call__(self, probs: torch.Tensor, num_samples: int = 1, **kwargs) -> torch.Tensor:
        p = probs.detach().to(torch.float64).numpy().reshape(-1)
        cdf = np.cumsum(p)
        j = min(int(np.count_nonzero(cdf <= self.uniforms[self.step] * cdf[-1])), int(np.flatnonzero(p)[-1]))
        self.step += 1
        return torch.tensor([[j]], dtype=torch.long)


def one_row(model: torch.nn.Module, context: int, prompt: list[int], new: int, opts: dict,
            uniforms: list[float] | None) -> list[int]:
    """The peer's loop on one prompt: the tokens it appended."""
    idx = torch.tensor([prompt], dtype=torch.long)
    if KV:
        out = kv_generate.generate_text_simple(model, idx, max_new_tokens=new, context_size=context, use_cache=True)
    elif uniforms is None:
        out = ch05.generate(model, idx, max_new_tokens=new, context_size=context, **opts)
    else:
        real = torch.multinomial
        torch.multinomial = GivenDraw(uniforms)       # ch05 calls torch.multinomial by its module name
        try:
            out = ch05.generate(model, idx, max_new_tokens=new, context_size=context, **opts)
        finally:
            torch.multinomial = real
    return [int(t) for t in out[0, len(prompt):]]


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request")
    if not kind.endswith(("_greedy", "_sample")) or kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy")):
        raise Unsupported(f"{kind}: no such decoding mode in the package (greedy and sampling only)")
    config = inp["config"]
    model, context = model_for(inp["model"])
    width = len(inp["input_ids"][0])
    opts = options(config, width, int(model.out_head.weight.shape[0]))
    eos = config.get("eos_token_id")
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    pad = config.get("pad_token_id")
    pad = eos[0] if pad is None else pad
    prompts = [[t for t, m in zip(ids, mask) if m] for ids, mask in zip(inp["input_ids"], inp["attention_mask"])]
    if not all(prompts):
        raise Unsupported("an empty prompt: the peer's models need at least one token")
    R = int(config.get("num_return_sequences") or 1) if config.get("do_sample") else 1
    padded = [row for row in inp["input_ids"] for _ in range(R)]
    rows = [p for p in prompts for _ in range(R)]
    new, N = int(config["max_new_tokens"]), len(rows)
    u = [float(x) for x in np.asarray(inp["uniforms"], dtype=np.float64).ravel()] if config.get("do_sample") else None
    generated = [one_row(model, context, p, new, opts, None if u is None else u[r::N]) for r, p in enumerate(rows)]
    full = [list(ids) + g for ids, g in zip(padded, generated)]
    longest = max(map(len, full))
    return {"sequences": [r + [pad] * (longest - len(r)) for r in full]}


if __name__ == "__main__":
    sys.exit(serve(answer))
