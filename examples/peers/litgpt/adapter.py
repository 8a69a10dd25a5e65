r"""litgpt 0.5.13 (Lightning AI) as a `refdecode conformance check` client (decodes on Hugging Face Llama folders).

On first use of a model folder the adapter writes it as a litgpt checkpoint (convert.py: litgpt's ``Config`` and
``copy_weights_hf_llama``, float32) into ``cache/<folder name>-<first 12 hex of sha256(model.safetensors)>/`` and
loads it as litgpt's ``litgpt/generate/base.py`` ``main`` does: ``GPT(Config.from_file(...))`` under
``fabric.init_module(empty_init=True)``, ``load_checkpoint(fabric, model, lit_model.pth)``, ``model.eval()``
(a CPU ``L.Fabric``, precision "32-true"). One loaded model per checkpoint for the whole run.

Each row is decoded by litgpt's own functions, as ``main`` calls them: ``model.max_seq_length = prompt + new``,
``model.set_kv_cache(batch_size=1)``, then

==========================  =================================================================================
transformers                litgpt 0.5.13
==========================  =================================================================================
the batch                   ``generate`` takes ONE prompt (a 1-D tensor, no attention mask): each row is
                            decoded alone, its left padding removed with ``attention_mask`` (a student's loop
                            over the batch). ``batched_generate_fn`` takes prompts of one length only (no
                            padding: base.py:105-113), so it cannot take a left-padded batch.
max_new_tokens              ``max_returned_tokens`` = len(prompt) + max_new_tokens
eos_token_id, one id        ``generate(..., eos_id=eos, include_prompt=True)``: stops on it, the eos kept
eos_token_id, two or more   ``generate`` has one ``eos_id``: the adapter calls what ``generate`` calls,
                            ``generate_fn(..., stop_tokens=([e1], [e2], ...), include_prompt=True,
                            include_eos=True)`` (base.py:412-424), one stop sequence per eos id
greedy (do_sample False)    ``temperature=0.0``: ``sample`` returns ``torch.argmax(logits)`` (base.py:66, :74)
do_sample                   ``temperature``, ``top_k``, ``top_p`` as the case gives them (4.38.2's defaults where
                            it gives none: 1.0, 50, 1.0); ``top_k=0`` (4.38.2: off) is sent as ``None`` (litgpt's
                            off: ``torch.topk(logits, 0)`` would leave no token). litgpt's ``sample`` runs whole
                            (top-k, temperature, ``sample_top_p``, softmax); only its draw,
                            ``multinomial_num_samples_1`` (``torch.multinomial``, base.py:31-36), is replaced:
                            the adapter draws from the ``probs`` litgpt hands it with the case's uniform
                            (vocabulary order, float64 cumulative sums, the first id whose sum exceeds u * total:
                            4.38.2's draw rule as the suite states it). Row r at its step t takes
                            ``uniforms[t * N + r]`` (N = B * num_return_sequences rows, prompt b's rows b*R ..).
num_return_sequences        sampling: each prompt decoded that many times, one after another
num_beams > 1               Unsupported (no beam search in litgpt's generate)
repetition_penalty != 1,    Unsupported (``sample`` has no processors: base.py:54-74)
no_repeat_ngram_size > 0,
min_new_tokens > 0,
min_length > prompt width
==========================  =================================================================================

Output: ``sequences``: each row as sent (its left padding included) + what litgpt returned after the prompt,
right-padded with pad_token_id (eos_token_id[0] when none) to the longest row.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
ENGINES = HERE.parent.parent / "engines"
sys.path.insert(0, str(ENGINES / "common"))
sys.path.insert(0, str(ENGINES / "onnx-export"))
from adapter_common import require_handled  # noqa: E402
from export import weights_key  # noqa: E402  (the cache's key: <name>-<sha256(model.safetensors)[:12]>)
from protocol import Unsupported, floats, serve  # noqa: E402

import lightning as L  # noqa: E402
import torch  # noqa: E402
from litgpt.config import Config  # noqa: E402
from litgpt.generate import base  # noqa: E402
from litgpt.model import GPT  # noqa: E402
from litgpt.utils import load_checkpoint  # noqa: E402

from convert import NotConvertible, convert  # noqa: E402

torch.set_num_threads(1)
CACHE = Path(os.environ.get("LITGPT_ADAPTER_CACHE", HERE / "cache"))
HANDLED = {"max_new_tokens", "max_length", "min_length", "min_new_tokens", "eos_token_id", "pad_token_id",
           "do_sample", "temperature", "top_k", "top_p", "num_return_sequences", "num_beams", "repetition_penalty",
           "no_repeat_ngram_size", "length_penalty", "early_stopping", "output_scores", "return_dict_in_generate"}
_MODELS: dict[str, GPT] = {}


def converted(src: Path) -> Path:
    """The cached litgpt checkpoint folder of a HF folder, written on first use (convert.py)."""
    out = CACHE / weights_key(src)
    if not (out / "lit_model.pth").exists():
        t0 = time.perf_counter()
        try:
            convert(src, out)
        except NotConvertible as err:
            raise Unsupported(f"{src.name}: {err}") from None
        print(f"litgpt: converted {src} -> {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def model_for(spec: dict) -> GPT:
    """litgpt's GPT for the request's checkpoint, loaded as ``generate/base.py`` ``main`` loads it."""
    if spec.get("kind") != "llama":
        raise Unsupported(f"model kind {spec.get('kind')!r}: the adapter converts Llama folders only")
    key = str(Path(spec["path"]).resolve())
    if key not in _MODELS:
        model_type = json.loads((Path(key) / "config.json").read_text()).get("model_type")
        if model_type != "llama":
            raise Unsupported(f"model_type {model_type!r}: litgpt's Llama conversion takes llama folders only")
        folder = converted(Path(key))
        fabric = L.Fabric(devices=1, accelerator="cpu", precision="32-true")
        with fabric.init_module(empty_init=True):
            model = GPT(Config.from_file(folder / "model_config.yaml"))
        load_checkpoint(fabric, model, folder / "lit_model.pth")
        _MODELS[key] = model.eval()
    return _MODELS[key]


class GivenDraw:
    """The replacement of litgpt's ``multinomial_num_samples_1``: the row's next uniform, 4.38.2's draw rule."""

    def __init__(self):
        self.uniforms: list[float] = []
        self.step = 0

    def start(self, uniforms: list[float]) -> None:
        self.uniforms, self.step = uniforms, 0

    def __call__(self, probs: torch.Tensor) -> torch.Tensor:
        """probs (V,) float32 from litgpt's ``sample`` -> the drawn id, shape (1,) int64 as torch.multinomial's."""
        if self.step >= len(self.uniforms):
            raise RuntimeError("litgpt asked for more draws than the case has uniforms")
        u, self.step = self.uniforms[self.step], self.step + 1
        p = probs.double()
        cdf = torch.cumsum(p, dim=-1)
        i = int(torch.count_nonzero(cdf <= u * cdf[-1]))
        return torch.tensor([min(i, int(torch.nonzero(p)[-1]))], dtype=torch.int64)


DRAW = GivenDraw()
base.multinomial_num_samples_1 = DRAW   # ``sample`` calls it by its module-level name (base.py:73)


def decode_row(model: GPT, prompt: list[int], new: int, eos: list[int], sampling: dict) -> list[int]:
    """litgpt's generate on one unpadded prompt: the tokens it returns after the prompt."""
    width = len(prompt) + new
    if width - 1 > model.config.block_size:
        raise Unsupported(f"prompt + max_new_tokens = {width}: litgpt's max_seq_length is at most block_size "
                          f"{model.config.block_size} (model.py GPT.max_seq_length)")
    model.max_seq_length = min(width, model.config.block_size)
    model.set_kv_cache(batch_size=1)
    x = torch.tensor(prompt, dtype=torch.int64)
    if len(eos) == 1:
        y = base.generate(model, x, width, eos_id=eos[0], include_prompt=True, **sampling)
    else:
        parts = list(base.generate_fn(model=model, prompt=x, max_returned_tokens=width,
                                      stop_tokens=tuple([e] for e in eos), include_prompt=True,
                                      include_eos=True, **sampling))
        y = torch.cat(parts)
    out = [int(t) for t in y.tolist()]
    if out[:len(prompt)] != prompt:
        raise RuntimeError("litgpt's output does not start with the prompt")
    return out[len(prompt):]


def sampling_of(config: dict) -> dict:
    """litgpt's ``sample`` keywords for the case (greedy: temperature 0)."""
    if not config.get("do_sample"):
        return {"temperature": 0.0, "top_k": None, "top_p": 1.0}
    top_k = 50 if config.get("top_k") is None else int(config["top_k"])    # 4.38.2's GenerationConfig default
    return {"temperature": 1.0 if config.get("temperature") is None else float(config["temperature"]),
            "top_k": top_k if top_k > 0 else None,
            "top_p": 1.0 if config.get("top_p") is None else float(config["top_p"])}


def check_config(kind: str, config: dict, width: int) -> None:
    require_handled(config, HANDLED)
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: no such decoding mode in litgpt")
    if int(config.get("num_beams") or 1) > 1:
        raise Unsupported("num_beams > 1: litgpt's generate has no beam search")
    if float(config.get("repetition_penalty") or 1.0) != 1.0:
        raise Unsupported("repetition_penalty: litgpt's sample has no such option")
    if int(config.get("no_repeat_ngram_size") or 0) > 0:
        raise Unsupported("no_repeat_ngram_size: litgpt's sample has no such option")
    if int(config.get("min_new_tokens") or 0) > 0 or int(config.get("min_length") or 0) > width:
        raise Unsupported("min_new_tokens / min_length beyond the prompt: litgpt has no minimum length")
    if config.get("max_new_tokens") is None:
        raise Unsupported("config without max_new_tokens")
    if not config.get("do_sample") and int(config.get("num_return_sequences") or 1) > 1:
        raise Unsupported("num_return_sequences > 1 without sampling")


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request")
    config = floats(inp["config"])
    width = len(inp["input_ids"][0])
    check_config(kind, config, width)
    eos = config.get("eos_token_id")
    eos = [] if eos is None else ([int(eos)] if isinstance(eos, int) else [int(e) for e in eos])
    if not eos:
        raise Unsupported("no eos_token_id: the adapter stops litgpt on eos ids")
    pad = eos[0] if config.get("pad_token_id") is None else int(config["pad_token_id"])
    prompts = [[t for t, m in zip(ids, mask) if m] for ids, mask in zip(inp["input_ids"], inp["attention_mask"])]
    if not all(prompts):
        raise Unsupported("an empty prompt: litgpt's generate needs at least one token")
    model = model_for(inp["model"])
    R = int(config.get("num_return_sequences") or 1) if config.get("do_sample") else 1
    rows, padded = [p for p in prompts for _ in range(R)], [r for r in inp["input_ids"] for _ in range(R)]
    u = [float(x) for x in inp.get("uniforms", [])]
    if config.get("do_sample") and not u:
        raise Unsupported("sampling without the case's uniforms")
    sampling, new, gens = sampling_of(config), int(config["max_new_tokens"]), []
    for r, prompt in enumerate(rows):
        DRAW.start(u[r::len(rows)])            # row r's uniforms: uniforms[t * N + r], t = 0, 1, ...
        gens.append(decode_row(model, prompt, new, eos, sampling))
    full = [list(h) + g for h, g in zip(padded, gens)]
    longest = max(map(len, full))
    return {"sequences": [row + [pad] * (longest - len(row)) for row in full]}


def protocol_stdout():
    """The protocol's own stdout; everything else written to fd 1 goes to stderr (litgpt prints a warning there
    when ``max_seq_length`` grows past the KV cache before ``set_kv_cache`` rebuilds it, model.py GPT.max_seq_length)."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


if __name__ == "__main__":
    sys.exit(serve(answer, stdout=protocol_stdout()))
