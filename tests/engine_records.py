"""Shared by the engine-profile tests: the engines' recorded answers (examples/engines/<engine>/responses.jsonl, and
responses-llama.jsonl for the engines_llama group on the shipped Llama, written by
examples/engines/common/record_responses.py + slim_responses.py from the real engines) and the models (GPT-2 or
Llama, as each folder's config.json says: ``refdecode.from_pretrained``)."""

from __future__ import annotations

import json

import numpy as np
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("transformers-4.38.2", "transformers-5", "ctranslate2", "onnxruntime-genai", "transformers-js",
           "llama-cpp", "keras-hub", "mlx-lm", "openvino-genai",
           "transformers-4.38.2-tf", "vllm",
           "transformers-4.38.2-flax")


def model_dir(name: str) -> Path:
    shipped = ROOT / "models" / name
    return shipped if shipped.exists() else ROOT / "tests" / "golden" / "models" / name


@lru_cache(maxsize=None)
def logits_of(name: str):
    from refdecode import from_pretrained
    from refdecode.reference.engines import NextTokenLogits

    return NextTokenLogits(from_pretrained(model_dir(name)))


def recorded(engine: str, llama: bool = False) -> list[dict]:
    """The engine's answered greedy / sampling / beam cases on the committed models (``llama``: its
    responses-llama.jsonl, the engines_llama group on models/tiny-shakespeare-llama). The engines_124m cases
    (models/gpt2-124m-shaped, 500 MB, not committed) are tests/reference/engines/test_widened_124m.py's."""
    name = "responses-llama.jsonl" if llama else "responses.jsonl"
    lines = (ROOT / "examples" / "engines" / engine / name).read_text().splitlines()
    return [r for r in map(json.loads, lines) if "output" in r["response"] and r["model"] != "gpt2-124m-shaped"]


def decode_case(profile, record: dict) -> dict:
    from refdecode.reference.engines import decode_as

    return decode_as(profile, logits_of(record["model"]), record["input_ids"], record["attention_mask"],
                     record["config"], record.get("uniforms"))


def differing(engine: str, limit: int | None = None) -> list[dict]:
    """The engine's answers that differ from transformers 4.38.2's (the cases a profile has to explain)."""
    out = [r for r in recorded(engine) if r["response"]["output"]["sequences"] != r["expected"]["sequences"]]
    return out[:limit] if limit else out


class Stub:
    """A model whose next-token logits are looked up by the whole prefix (a dict of prefix -> {token: logit}, the
    rest of the V = 6 entries -30), so a test sets each step's candidates by hand."""

    V, LOW = 6, -30.0

    def __init__(self, table: dict[tuple[int, ...], dict[int, float]], default: dict[int, float] | None = None):
        self.table, self.default = table, default or {4: 0.0}

    def __call__(self, ids: np.ndarray):
        row = np.full(self.V, self.LOW, dtype=np.float32)
        for tok, value in self.table.get(tuple(int(t) for t in ids[0]), self.default).items():
            row[tok] = value
        out = type("Out", (), {})()
        out.logits = row[None, None, :]
        return out
