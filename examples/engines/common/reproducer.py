r"""Cut failing decode cases down to one prompt and print a minimal reproducer: both engines' outputs.

    .venv/bin/python examples/engines/common/reproducer.py RESPONSES.jsonl ID [ID ...] \
        --engine examples/engines/ENGINE/run [--control examples/engines/transformers-4.38.2/run]

For each case id (from the file record_responses.py wrote) the prompts of the case are sent one at a time (the row
as it is, left padding and mask included, same config) to the engine and to the control (transformers 4.38.2);
the first prompt on which they differ is printed as a Markdown block: prompt ids, mask, the settings that are not
transformers' defaults, and the generated ids (and sequences_scores) of each. Runs in refdecode's venv.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

DEFAULTS = {"do_sample": False, "num_beams": 1, "num_beam_groups": 1, "diversity_penalty": 0.0, "length_penalty": 1.0,
            "early_stopping": False, "num_return_sequences": 1, "repetition_penalty": 1.0, "no_repeat_ngram_size": 0,
            "min_length": 0, "min_new_tokens": None, "temperature": 1.0, "top_k": 50, "top_p": 1.0}


class Engine:
    def __init__(self, cmd: str):
        self.proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)

    def ask(self, request: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def generated(out: dict, width: int) -> list[list[int]]:
    """Each row after the prompt, as returned (right padding with pad_token_id included: pad may equal an eos)."""
    return [list(r[width:]) for r in out["sequences"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("responses", type=Path)
    ap.add_argument("ids", nargs="+")
    ap.add_argument("--engine", required=True)
    ap.add_argument("--control", default="examples/engines/transformers-4.38.2/run")
    ap.add_argument("--type", default="engines_beam_search", help="type sent for beam cases (no beam_indices)")
    args = ap.parse_args()
    cases = {}
    for line in args.responses.read_text().splitlines():
        rec = json.loads(line)
        cases[rec["id"]] = rec
    engine, control = Engine(args.engine), Engine(args.control)
    for cid in args.ids:
        rec = cases[cid]
        inp = rec["input"]
        cfg = inp["config"]
        kind = rec["type"] if cfg.get("num_beams", 1) == 1 else args.type
        for b, (row, mask) in enumerate(zip(inp["input_ids"], inp["attention_mask"])):
            sub = {**inp, "input_ids": [row], "attention_mask": [mask]}
            req = {"id": f"{cid}#row{b}", "type": kind, "input": sub}
            e, c = engine.ask(req).get("output"), control.ask(req).get("output")
            if e is None or c is None or e["sequences"] == c["sequences"]:
                continue
            pad = cfg["pad_token_id"]
            settings = {k: v for k, v in cfg.items() if k in DEFAULTS and v != DEFAULTS[k]}
            settings.update(max_new_tokens=cfg["max_new_tokens"], eos_token_id=cfg["eos_token_id"], pad_token_id=pad)
            print(f"**{cid}, prompt {b}** (model `{Path(inp['model']['path']).name}`)\n")
            print("```text")
            print(f"input_ids      {row}\nattention_mask {mask}\nsettings       {json.dumps(settings)}")
            print(f"engine  generated {generated(e, len(row))}"
                  + (f"  sequences_scores {[round(x, 4) for x in e['sequences_scores']]}" if "sequences_scores" in e else ""))
            print(f"4.38.2  generated {generated(c, len(row))}"
                  + (f"  sequences_scores {[round(x, 4) for x in c['sequences_scores']]}" if "sequences_scores" in c else ""))
            print("```\n")
            break
        else:
            print(f"**{cid}**: no single prompt of this case differs alone (the batch matters)\n")
    engine.close()
    control.close()


if __name__ == "__main__":
    main()
