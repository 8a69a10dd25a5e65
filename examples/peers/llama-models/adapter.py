r"""Meta's reference code, llama-models 0.3.0 (``models/llama3``), as a `refdecode conformance check` client
(decodes on Hugging Face Llama folders).

On first use of a model folder the adapter writes it as a Meta checkpoint folder (convert.py: params.json +
consolidated.00.pth, q/k rows back to Meta's interleaved RoPE pairs, float32) into
``cache/<folder name>-<first 12 hex of sha256(model.safetensors)>/`` and builds ONE ``Llama3`` for it, kept for
every later case on that checkpoint.

Building: ``Llama3.build`` (generation.py:40-145) cannot be called as is here, for two reasons, so the adapter takes
its steps itself with Meta's own classes (no line of Meta's code is patched):

* its tokenizer is Llama 3's tiktoken vocabulary (``Tokenizer.get_instance()``, generation.py:96) and it asserts
  ``model_args.vocab_size == tokenizer.n_words`` (:103): the suite's Llama checkpoints use GPT-2's ids. The adapter
  feeds ids (``LLMInput(tokens=...)``, what ``completion`` makes of a text) and gives ``Llama3`` a stand-in tokenizer
  holding what ``generate`` reads of one: ``pad_id`` (Meta's own, 128004 ``<|finetune_right_pad_id|>``: never an
  id of these vocabularies), ``stop_tokens`` (the case's eos ids) and ``decode`` (the texts, not read);
* on the CPU it builds the model in bfloat16: ``maybe_reshard_state_dict`` sets
  ``torch.set_default_tensor_type(torch.BFloat16Tensor)`` (checkpoint.py:41-42) before ``build_model()``
  (generation.py:137); on CUDA ``build`` sets bfloat16 itself (:126-130). The adapter builds the same
  ``Transformer(ModelArgs(max_seq_len, max_batch_size, **params))`` in float32 (FINDINGS F1).
  ``LLAMA_MODELS_BUILD=1`` instead calls ``Llama3.build(..., world_size=1, device="cpu")`` as is (only
  ``Tokenizer.get_instance`` replaced by the stand-in): Meta's bfloat16 model.

Both ways: torch.distributed's gloo group of one process and fairscale's model parallel of size 1, as ``build``
initialises them (:59-70); ``max_seq_len`` = the folder's ``max_position_embeddings``, ``max_batch_size`` 32
(ModelArgs' default).

==========================  =================================================================================
transformers                llama-models (``Llama3.generate``, generation.py:153-300)
==========================  =================================================================================
the batch                   ONE ``generate`` call with every row (N = B * R): each prompt as its real tokens
                            (attention_mask zeros removed); Meta left-aligns them and decodes in lockstep
                            from the shortest prompt, the longer ones teacher-forced (:182-260, FINDINGS S1)
max_new_tokens              ``max_gen_len``; Unsupported where the longest prompt + max_new_tokens passes
                            max_seq_len (Meta crops the row there, :189)
eos_token_id (list)         the stand-in tokenizer's ``stop_tokens`` (:230, :282)
greedy                      ``temperature=0`` (:251-255: argmax of the last logits)
do_sample                   ``temperature`` > 0 and ``top_p`` (None: 1.0); Meta draws with
                            ``torch.multinomial`` in ``sample_top_p`` (:348-370): the adapter runs Meta's
                            ``sample_top_p`` with ``torch.multinomial`` captured, puts its renormalised
                            distribution back in vocabulary order (the same ``torch.sort`` permutation
                            it gathers with) and draws with the case's uniform, 4.38.2's rule (vocabulary
                            order, float64 cumulative sums, the first id whose sum exceeds u * total): row r
                            at its t-th generated token takes ``uniforms[t * N + r]``
top_k                       Unsupported unless 0 (or >= the vocabulary): Meta has no top-k (4.38.2's
                            GenerationConfig default is 50)
repetition_penalty,         Unsupported (no such option; ``generate``'s ``logits_processor`` hook is empty
no_repeat_ngram, min_*      in Meta's own callers)
num_beams > 1               Unsupported (no beam search in llama-models)
==========================  =================================================================================

Output: each row's tokens as Meta's own ``completion`` script reads them (scripts/completion.py:79-88): the
``GenerationResult`` of the row with ``ignore_token`` False (not a prompt position), up to the first with
``finished`` True, which is the stop token and is not taken (FINDINGS S3). ``sequences``: the prompt as sent
(left padding included) + those tokens, right-padded with pad_token_id.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENGINES = HERE.parent.parent / "engines"
sys.path.insert(0, str(ENGINES / "common"))
sys.path.insert(0, str(ENGINES / "onnx-export"))
from export import weights_key  # noqa: E402  (the cache's key: <name>-<sha256(model.safetensors)[:12]>)
from protocol import Unsupported, floats, serve  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402


def _stub_torchvision() -> None:
    """torchvision 0.28.0 from PyPI does not load its C ops on torch's CPU wheel (``operator torchvision::nms does
    not exist``); generation.py imports it only through multimodal/ (image inputs, never used here): an empty
    stand-in module in its place."""
    import types
    try:
        import torchvision  # noqa: F401
    except Exception:
        for name in ("torchvision", "torchvision.transforms", "torchvision.transforms.functional"):
            sys.modules[name] = types.ModuleType(name)
        sys.modules["torchvision"].transforms = sys.modules["torchvision.transforms"]
        sys.modules["torchvision.transforms"].functional = sys.modules["torchvision.transforms.functional"]


_stub_torchvision()
from fairscale.nn.model_parallel.initialize import initialize_model_parallel, model_parallel_is_initialized  # noqa: E402
from models.llama3 import generation  # noqa: E402
from models.llama3.args import ModelArgs  # noqa: E402
from models.llama3.chat_format import LLMInput  # noqa: E402
from models.llama3.generation import Llama3  # noqa: E402
from models.llama3.model import Transformer  # noqa: E402

from convert import convert  # noqa: E402

torch.set_num_threads(1)
BUILD = os.environ.get("LLAMA_MODELS_BUILD", "") == "1"
CACHE = Path(os.environ.get("LLAMA_MODELS_CACHE", HERE / "cache"))
MAX_BATCH = 32
META_PAD = 128004          # Llama 3's <|finetune_right_pad_id|>, models/llama3/tokenizer.py's pad_id
_MODELS: dict[str, Llama3] = {}


class StandInTokenizer:
    """What ``Llama3`` reads of a tokenizer: pad_id, stop_tokens, decode, n_words; special_tokens for ChatFormat."""

    def __init__(self, vocab: int):
        self.n_words, self.pad_id, self.stop_tokens = vocab, META_PAD, []
        self.special_tokens = {"<|image|>": META_PAD + 252}   # ChatFormat.__init__ reads it (chat_format.py:59)

    def decode(self, ids) -> str:
        return ""


def converted(src: Path) -> Path:
    out = CACHE / weights_key(src)
    if not (out / "params.json").exists():
        t0 = time.perf_counter()
        convert(src, out)
        print(f"llama-models: converted {src} -> {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def init_parallel() -> None:
    """generation.py:59-70 on one CPU process: a gloo group of one, model parallel of size 1."""
    if not torch.distributed.is_initialized():
        store = Path(tempfile.mkdtemp()) / "store"
        torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    if not model_parallel_is_initialized():
        initialize_model_parallel(1)


def build(ckpt: Path, max_seq_len: int, vocab: int) -> Llama3:
    init_parallel()
    tokenizer = StandInTokenizer(vocab)
    if BUILD:                             # Meta's build as is: bfloat16 (checkpoint.py:41-42)
        generation.Tokenizer.get_instance = staticmethod(lambda: tokenizer)
        return Llama3.build(str(ckpt), max_seq_len, MAX_BATCH, world_size=1, device="cpu")
    params = json.loads((ckpt / "params.json").read_text())
    args = ModelArgs(max_seq_len=max_seq_len, max_batch_size=MAX_BATCH, **params)    # generation.py:91-95
    model = Transformer(args)             # float32: torch's default dtype, left as is
    model.load_state_dict(torch.load(ckpt / "consolidated.00.pth", map_location="cpu"), strict=True)
    return Llama3(model, tokenizer, args)


def llama_for(spec: dict) -> Llama3:
    if spec.get("kind") != "llama":
        raise Unsupported(f"model kind {spec.get('kind')!r}: llama-models runs Llama checkpoints only")
    src = Path(spec["path"]).resolve()
    if str(src) not in _MODELS:
        config = json.loads((src / "config.json").read_text())
        if config.get("model_type") != "llama" or config.get("attention_bias") or config.get("rope_scaling"):
            raise Unsupported("not a plain Llama (biases, rope_scaling): Meta's llama3 Transformer has neither")
        t0 = time.perf_counter()
        _MODELS[str(src)] = build(converted(src), int(config["max_position_embeddings"]), int(config["vocab_size"]))
        print(f"llama-models: built {src} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return _MODELS[str(src)]


def check_config(kind: str, config: dict, vocab: int) -> None:
    if int(config.get("num_beams") or 1) > 1:
        raise Unsupported("num_beams > 1: llama-models has no beam search")
    if config.get("max_new_tokens") is None:
        raise Unsupported("config without max_new_tokens")
    if float(config.get("repetition_penalty") or 1.0) != 1.0:
        raise Unsupported("repetition_penalty: Llama3.generate has no such option")
    if int(config.get("no_repeat_ngram_size") or 0) > 0:
        raise Unsupported("no_repeat_ngram_size: Llama3.generate has no such option")
    if int(config.get("min_new_tokens") or 0) > 0 or int(config.get("min_length") or 0) > 0:
        raise Unsupported("min_new_tokens / min_length: Llama3.generate has no minimum length")
    if config.get("do_sample"):
        top_k = 50 if config.get("top_k") is None else int(config["top_k"])     # 4.38.2's default
        if 0 < top_k < vocab:
            raise Unsupported(f"top_k={top_k}: Llama3.generate has no top-k (sample_top_p only)")
        for key, off in (("typical_p", 1.0), ("epsilon_cutoff", 0.0), ("eta_cutoff", 0.0), ("min_p", None)):
            if config.get(key) not in (None, off):
                raise Unsupported(f"{key}: llama-models has no such sampler")
    elif int(config.get("num_return_sequences") or 1) > 1:
        raise Unsupported("num_return_sequences > 1 without sampling")
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: no such decoding mode in llama-models")


class GivenDraws:
    """``sample_top_p`` with its ``torch.multinomial`` draw taken from the case's uniforms (see the module doc)."""

    def __init__(self, lengths: list[int], uniforms: np.ndarray):
        self.lengths, self.u, self.step = lengths, uniforms, 0
        self.done = [False] * len(lengths)

    def __call__(self, probs: torch.Tensor, p: float) -> torch.Tensor:
        seen: dict[str, torch.Tensor] = {}

        def capture(input, num_samples, *args, **kwargs):
            seen["probs_sort"] = input.clone()
            return torch.zeros((input.shape[0], num_samples), dtype=torch.long)

        draw, torch.multinomial = torch.multinomial, capture
        try:
            _sample_top_p(probs, p)                      # Meta's code: sort, cumsum, mask, renormalise
        finally:
            torch.multinomial = draw
        _, order = torch.sort(probs, dim=-1, descending=True)          # the permutation Meta gathers with
        dist = torch.zeros_like(probs).scatter_(-1, order, seen["probs_sort"]).double().numpy()   # (N, V)
        N, cur = len(self.lengths), min(self.lengths) + self.step
        self.step += 1
        out = torch.zeros((N, 1), dtype=torch.long)
        for r, n in enumerate(self.lengths):
            t = cur - n                                  # this row's t-th new token (< 0: a prompt position)
            if t < 0 or self.done[r]:
                continue                                 # replaced by the prompt token / not read
            if t * N + r >= self.u.size:
                raise Unsupported(f"row {r} draws a token {t + 1} > max_new_tokens (Meta's lockstep gives a "
                                  "shorter prompt more steps, FINDINGS S1): the case holds no uniform for it")
            out[r, 0] = draw_with(dist[r], float(self.u[t * N + r]))
        return out


def draw_with(p: np.ndarray, u: float) -> int:
    """4.38.2's draw: the first id whose float64 cumulative sum exceeds u * total (refdecode's multinomial)."""
    cdf = np.cumsum(p)
    j = int(np.count_nonzero(cdf <= u * cdf[-1]))
    return min(j, int(np.flatnonzero(p)[-1]))


_sample_top_p = generation.sample_top_p


def run(llama: Llama3, rows: list[list[int]], config: dict, eos: list[int], uniforms) -> list[list[int]]:
    """Meta's ``generate`` on the rows; each row's tokens as scripts/completion.py reads them."""
    llama.tokenizer.stop_tokens = list(eos)
    sampling = bool(config.get("do_sample"))
    temperature = float(config.get("temperature") or 1.0) if sampling else 0.0
    top_p = 1.0 if config.get("top_p") is None else float(config["top_p"])
    given = GivenDraws([len(r) for r in rows], np.asarray(uniforms, dtype=np.float64).ravel()) if sampling else None
    generation.sample_top_p = given or _sample_top_p
    gens: list[list[int]] = [[] for _ in rows]
    stopped = given.done if given else [False] * len(rows)
    try:
        for results in llama.generate([LLMInput(tokens=r) for r in rows], temperature=temperature, top_p=top_p,
                                      max_gen_len=int(config["max_new_tokens"])):
            for res in results:
                b = res.batch_idx
                if res.ignore_token or stopped[b]:
                    continue                     # a prompt position, or after the row's stop
                if res.finished:
                    stopped[b] = True            # the stop token: completion.py breaks before printing it
                else:
                    gens[b].append(res.token)
    finally:
        generation.sample_top_p = _sample_top_p
    return gens


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request")
    config = floats(inp["config"])
    llama = llama_for(inp["model"])
    check_config(kind, config, llama.args.vocab_size)
    eos = config.get("eos_token_id")
    eos = [] if eos is None else ([int(eos)] if isinstance(eos, int) else [int(e) for e in eos])
    pad = config.get("pad_token_id")
    if not eos:
        raise Unsupported("no eos_token_id: Meta's tokenizer always has stop tokens")
    pad = eos[0] if pad is None else int(pad)
    prompts = [[t for t, m in zip(ids, mask) if m] for ids, mask in zip(inp["input_ids"], inp["attention_mask"])]
    if not all(prompts):
        raise Unsupported("an empty prompt: Llama3.generate needs at least one token")
    R = int(config.get("num_return_sequences") or 1) if config.get("do_sample") else 1
    rows = [p for p in prompts for _ in range(R)]
    if len(rows) > MAX_BATCH:
        raise Unsupported(f"{len(rows)} rows: max_batch_size is {MAX_BATCH}")
    if max(map(len, rows)) + int(config["max_new_tokens"]) > llama.args.max_seq_len:
        raise Unsupported(f"prompt + max_new_tokens past max_seq_len {llama.args.max_seq_len}: Meta crops there")
    if config.get("do_sample") and "uniforms" not in inp:
        raise Unsupported("sampling without the case's uniforms")
    gens = run(llama, rows, config, eos, inp.get("uniforms"))
    heads = [ids for ids in inp["input_ids"] for _ in range(R)]
    full = [list(h) + g for h, g in zip(heads, gens)]
    longest = max(map(len, full))
    return {"sequences": [r + [pad] * (longest - len(r)) for r in full]}


def protocol_stdout():
    """The protocol's own stdout; everything else written to fd 1 (fairscale's and build's prints) goes to stderr."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


if __name__ == "__main__":
    sys.exit(serve(answer, stdout=protocol_stdout()))
