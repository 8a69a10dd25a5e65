r"""Keep of recorded responses (``record_responses.py``) what refdecode's engine-profile tests need.

    .venv/bin/python examples/engines/common/slim_responses.py RECORDED.jsonl examples/engines/ENGINE/responses.jsonl

One JSON line per case: {"id", "type", "model" (the model folder's name: ``models/<name>`` or
``tests/golden/models/<name>`` of a refdecode checkout; a Llama folder's record adds "kind": "llama"),
"input_ids", "attention_mask", "config", "expected" (4.38.2's sequences), "response" (the engine's sequences and
sequences_scores, or its "unsupported" / "error")}, and for sampling cases their "uniforms" (the draws the profiles
replay).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def slim(record: dict) -> dict | None:
    inp = record["input"]
    kind = inp.get("model", {}).get("kind")
    if kind not in ("gpt2", "llama") or (inp["config"].get("do_sample") and "uniforms" not in inp):
        return None
    response = record["response"]
    if "output" in response:
        kept = {k: v for k, v in response["output"].items() if k in ("sequences", "sequences_scores")}
        response = {"output": kept}
    else:
        response = {k: v for k, v in response.items() if k in ("unsupported", "error")}
    kind = {"kind": "llama"} if inp["model"]["kind"] == "llama" else {}   # GPT-2 records: no "kind", as before
    return {"id": record["id"], "type": record["type"], "model": Path(inp["model"]["path"]).name, **kind,
            "input_ids": inp["input_ids"], "attention_mask": inp["attention_mask"], "config": inp["config"],
            **({"uniforms": inp["uniforms"]} if inp["config"].get("do_sample") else {}),
            "expected": {"sequences": record["expected"]["sequences"]}, "response": response}


def main(src: str, dst: str) -> None:
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            kept = slim(json.loads(line))
            if kept is not None:
                out.write(json.dumps(kept, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
