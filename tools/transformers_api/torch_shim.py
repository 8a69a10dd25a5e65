"""The real-torch twin of tests/transformers_api/shim.py, for run_against_4382.py (oracle venv only).

Same names: ``torch`` and ``nn`` are torch's own; ``ids_tensor`` / ``floats_tensor`` are transformers'
tests/test_modeling_common.py helpers (random ids in [0, vocab), uniform floats in [0, scale)); the Auto classes
are transformers 4.38.2's, with the hub ids the tests name resolved to the same shipped ``models/gpt2-tiny``
the NumPy shim uses (nothing is downloaded).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import torch
import transformers
from torch import nn
from transformers.testing_utils import CaptureStdout as _CaptureStdout

from transformers_api.params import expand

__all__ = ["torch", "nn", "slow", "ids_tensor", "floats_tensor", "torch_device", "expand",
           "AutoTokenizer", "AutoModelForCausalLM", "AutoConfig", "CaptureStdout", "MODELS", "LOCAL_MODEL"]

torch_device = "cpu"


def slow(cls: Any) -> Any:  # pytest's marker in the NumPy shim; unittest runs everything here
    return cls

MODELS = Path(__file__).resolve().parents[2] / "models"
LOCAL_MODEL = MODELS / "gpt2-tiny"
HUB_STAND_INS = {"hf-internal-testing/tiny-random-gpt2": LOCAL_MODEL, "distilgpt2": LOCAL_MODEL,
                 "distilbert/distilgpt2": LOCAL_MODEL, "gpt2": LOCAL_MODEL, "openai-community/gpt2": LOCAL_MODEL}
_rng = random.Random(0)


def ids_tensor(shape: Any, vocab_size: int, rng: Any = None, name: Any = None) -> torch.Tensor:
    rng = rng or _rng
    total = 1
    for dim in shape:
        total *= dim
    values = [rng.randint(0, vocab_size - 1) for _ in range(total)]
    return torch.tensor(data=values, dtype=torch.long, device=torch_device).view(shape).contiguous()


def floats_tensor(shape: Any, scale: float = 1.0, rng: Any = None, name: Any = None) -> torch.Tensor:
    rng = rng or _rng
    total = 1
    for dim in shape:
        total *= dim
    values = [rng.random() * scale for _ in range(total)]
    return torch.tensor(data=values, dtype=torch.float, device=torch_device).view(shape).contiguous()


def CaptureStdout() -> Any:
    """transformers.testing_utils.CaptureStdout, without printing the captured text again on exit."""
    return _CaptureStdout(replay=False)


def _local(name: Any) -> str:
    path = HUB_STAND_INS.get(str(name), Path(str(name)))
    if not Path(path).is_dir():
        raise OSError(f"{name!r} has no local stand-in (nothing is downloaded)")
    return str(path)


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(name: Any, **kwargs: Any) -> Any:
        return transformers.AutoModelForCausalLM.from_pretrained(_local(name), **kwargs)


class AutoTokenizer:
    @staticmethod
    def from_pretrained(name: Any, **kwargs: Any) -> Any:
        return transformers.AutoTokenizer.from_pretrained(_local(name), **kwargs)


class AutoConfig:
    @staticmethod
    def from_pretrained(name: Any, **kwargs: Any) -> Any:
        return transformers.AutoConfig.from_pretrained(_local(name), **kwargs)
