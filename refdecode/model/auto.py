"""``from_pretrained(path)``: a model directory -> the model class its ``config.json`` names (``model_type``).

Contract: reads only ``config.json``'s ``model_type`` to choose the class, then leaves everything to that class's
own ``from_pretrained``: ``gpt2`` -> :class:`~refdecode.model.modeling.GPT2`; ``llama``, ``mistral``, ``qwen2`` ->
:class:`~refdecode.model.llama_modeling.Llama`. Both answer the same interface, so nothing after loading (the
decode loops, the CLI) asks which one it has.

>>> from_pretrained("models/llama-tiny").config.model_type
'llama'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .llama_modeling import Llama
from .modeling import GPT2
from ..text.files import read_json_file

__all__ = ["from_pretrained", "MODEL_CLASSES"]

#: config.json's ``model_type`` -> the class that loads it.
MODEL_CLASSES: dict[str, Any] = {"gpt2": GPT2, "llama": Llama, "mistral": Llama, "qwen2": Llama}


def from_pretrained(path: str | Path, **kwargs: Any) -> GPT2 | Llama:
    """Load the model in ``path`` with the class its ``config.json``'s ``model_type`` names.

    ``kwargs`` go to that class's ``from_pretrained`` (``mmap``; GPT-2 also ``forward``).

    Raises:
        FileNotFoundError: no such directory, or no config.json in it.
        ValueError: a ``model_type`` refdecode does not implement (naming the supported ones).
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"model directory not found: {path}")
    config = read_json_file(path / "config.json", "config file")
    model_type = config.get("model_type")
    if model_type not in MODEL_CLASSES:
        raise ValueError(f"{path / 'config.json'}: `model_type` must be one of {sorted(MODEL_CLASSES)} (the model "
                         f"types refdecode implements), got {model_type!r}")
    return MODEL_CLASSES[model_type].from_pretrained(path, **kwargs)
