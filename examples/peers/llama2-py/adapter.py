r"""llama2-py 0.0.6 (PyPI ``llama2-py``: llama2.c's ``run.c`` in one file of pure Python, ``llama2_py.py``) as a
`refdecode conformance check` client, on Llama checkpoints in Hugging Face's layout.

On first use of a folder the adapter writes the llama2.c legacy files llama2-py reads (convert.py: the project's
exporter with the key/value heads repeated, FINDINGS P1) into ``cache/<folder name>-<first 12 hex of
sha256(model.safetensors)>/`` and reads them with llama2-py's own readers, kept for later cases.

Each case is answered with llama2-py's own functions (imported, never copied): ``init_run_state``, then
``transformer(token, pos, ...)`` once per position (its forward pass, one token at a time, into ``state.logits``),
and per new token ``argmax(state.logits)`` (temperature 0, greedy) or, sampling, ``state.logits`` divided by the
temperature, ``softmax(...)`` and ``sample(...)`` -- the steps of its ``run()`` loop (llama2_py.py:434-466).
``run()`` itself is not callable here: it encodes a text prompt with ``bpe_encode``, reads ``tokenizer.bin`` from
the working directory, seeds ``random`` with the clock and prints; the adapter runs its loop on the case's ids.
Differences from ``run()``, each said in FINDINGS.md:

* the prompt is the case's ids from position 0: ``run()`` always feeds token 1 first (Llama 2's BOS, line 429);
* ``sample`` draws ``r = random.random()`` (Python's Mersenne Twister, line 339; not llama2.c's xorshift): the
  adapter hands it the case's uniform as that coin (``llama2_py.random`` replaced, for that one call, by an object
  whose ``random()`` returns the uniform), so its own CDF walk (lines 340-345) picks the token;
* no eos stop: ``run()`` runs ``steps`` positions whatever the tokens (line 434); the adapter runs max_new_tokens
  new tokens and stops on nothing (FINDINGS P3).

Unsupported (llama2-py has no such parameter): more than one row (batch > 1 or num_return_sequences > 1: one
prompt per run), beams, repetition_penalty, no_repeat_ngram_size, min_length / min_new_tokens, top_k (4.38.2's
default 50 included: a case must say top_k=0), top_p < 1, and a prompt + max_new_tokens longer than the
checkpoint's seq_len (``run()`` clamps ``steps`` to seq_len, line 406).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "engines" / "common"))
from adapter_common import require_handled  # noqa: E402
from protocol import Unsupported, floats, serve  # noqa: E402

import llama2_py as l2  # noqa: E402
from convert import load  # noqa: E402

CACHE = HERE / "cache"
_MODELS: dict[str, tuple] = {}
HANDLED = {"max_new_tokens", "max_length", "eos_token_id", "pad_token_id", "do_sample", "num_beams", "temperature",
           "top_k", "top_p", "repetition_penalty", "no_repeat_ngram_size", "min_length", "min_new_tokens",
           "num_return_sequences", "length_penalty", "early_stopping"}


def weights_key(folder: Path) -> str:
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    return f"{folder.name}-{digest[:12]}"


def model(spec: dict) -> tuple:
    """(Config, TransformerWeights) read by llama2-py from the converted files; one per checkpoint."""
    if spec.get("kind") != "llama":
        raise Unsupported(f"model kind {spec.get('kind')!r}: llama2-py runs Llama checkpoints only")
    folder = Path(spec["path"]).resolve()
    if str(folder) not in _MODELS:
        out = CACHE / weights_key(folder)
        if not (out / "tokenizer.bin").exists():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, str(HERE / "convert.py"), str(folder), str(out)], check=True,
                           stdout=sys.stderr)
            print(f"llama2-py: converted {folder} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        conf, weights, _ = load(out)
        _MODELS[str(folder)] = (conf, weights)
    return _MODELS[str(folder)]


class Coin:
    """Stands in for the ``random`` module inside ``llama2_py.sample``: ``random()`` is the case's uniform."""

    def __init__(self, u: float):
        self.u = u

    def random(self) -> float:
        return self.u


def check(config: dict, rows: int) -> None:
    require_handled(config, HANDLED)
    if rows != 1:
        raise Unsupported(f"{rows} rows: llama2-py runs one prompt (no batch, no num_return_sequences)")
    if int(config.get("num_beams") or 1) > 1:
        raise Unsupported("num_beams > 1: llama2-py has no beam search")
    if float(config.get("repetition_penalty") or 1.0) != 1.0:
        raise Unsupported("repetition_penalty: llama2-py has no such parameter")
    if int(config.get("no_repeat_ngram_size") or 0) > 0:
        raise Unsupported("no_repeat_ngram_size: llama2-py has no such parameter")
    if int(config.get("min_length") or 0) > 0 or int(config.get("min_new_tokens") or 0) > 0:
        raise Unsupported("min_length / min_new_tokens: llama2-py has no such parameter (and no eos stop)")
    if config.get("do_sample"):
        if config.get("top_k") is None or int(config["top_k"]) != 0:
            raise Unsupported(f"top_k={config.get('top_k')!r} (4.38.2's default 50 when unset): llama2-py "
                              "samples from the whole vocabulary")
        if float(config.get("top_p") or 1.0) < 1.0:
            raise Unsupported("top_p < 1: llama2-py 0.0.6 has no top-p (llama2.c's sample_topp came later)")
    if config.get("max_new_tokens") is None:
        raise Unsupported("config without max_new_tokens")


def generate(conf, weights, prompt: list[int], new: int, config: dict, uniforms: list[float]) -> list[int]:
    """run()'s loop (llama2_py.py:434-466) on the case's ids: force the prompt, then pick ``new`` tokens."""
    state = l2.RunState()
    l2.init_run_state(state, conf)
    tokens, temperature = list(prompt), float(config.get("temperature") or 1.0)
    for pos in range(len(prompt) + new - 1):
        l2.transformer(tokens[pos], pos, conf, state, weights)
        if pos + 1 < len(prompt):
            continue                                             # still forcing the prompt (line 438-440)
        if not config.get("do_sample"):
            tokens.append(l2.argmax(state.logits))               # line 445
            continue
        state.logits = [i / temperature for i in state.logits]   # line 448
        l2.softmax(state.logits, conf.vocab_size)                # line 450
        module, l2.random = l2.random, Coin(float(uniforms[len(tokens) - len(prompt)]))
        try:
            tokens.append(l2.sample(state.logits))               # line 452, the case's uniform as its coin
        finally:
            l2.random = module
    return tokens


def answer(request: dict) -> dict:
    kind, inp = request.get("type", ""), request["input"]
    if not {"model", "input_ids", "config"} <= set(inp):
        raise Unsupported(f"{kind}: not a decode request")
    config = floats(inp["config"])
    R = int(config.get("num_return_sequences") or 1)
    check(config, len(inp["input_ids"]) * R)
    if config.get("do_sample") and "uniforms" not in inp:
        raise Unsupported("sampling without the case's uniforms")
    mask = inp.get("attention_mask") or [[1] * len(inp["input_ids"][0])]
    prompt = [int(t) for t, m in zip(inp["input_ids"][0], mask[0]) if m]
    if len(prompt) != len(inp["input_ids"][0]):
        raise Unsupported("a padded row: llama2-py has no attention mask")
    conf, weights = model(inp["model"])
    new = int(config["max_new_tokens"])
    if len(prompt) + new > conf.seq_len:
        raise Unsupported(f"prompt + max_new_tokens = {len(prompt) + new} > seq_len {conf.seq_len}")
    return {"sequences": [generate(conf, weights, prompt, new, config, floats(inp.get("uniforms") or []))]}


if __name__ == "__main__":
    sys.exit(serve(answer))
