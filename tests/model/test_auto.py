"""from_pretrained: config.json's model_type picks the class; an unknown one is named with the supported ones."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import GOLDEN, MODELS

from refdecode import GPT2, Llama, from_pretrained


@pytest.mark.parametrize("path, cls", [(MODELS / "gpt2-tiny", GPT2), (MODELS / "llama-tiny", Llama),
                                       (GOLDEN / "models" / "mistral-window", Llama),
                                       (GOLDEN / "models" / "qwen2-bias", Llama)])
def test_model_type_picks_the_class(path, cls):
    assert type(from_pretrained(path)) is cls


def test_gpt2_keyword_arguments_pass_through():
    assert from_pretrained(MODELS / "gpt2-tiny", forward="fast").forward == "fast"


def test_unknown_model_type_names_the_supported_ones(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt_neox"}))
    with pytest.raises(ValueError, match=r"`model_type` must be one of \['gpt2', 'llama', 'mistral', 'qwen2'\].*"
                                         r"got 'gpt_neox'"):
        from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="model directory not found"):
        from_pretrained(tmp_path / "nowhere")
    shutil.rmtree(tmp_path)
