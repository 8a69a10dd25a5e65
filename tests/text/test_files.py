"""refdecode.text.files: regular files only, UTF-8, JSON, bounded; every failure names the file.

Each test names the bug it guards against (a FIFO blocked ``from_pretrained`` forever).
"""

from __future__ import annotations

import json
import os
import threading

import pytest

from refdecode.text.files import read_json_file


# ---- read_json_file


def test_json_file_errors_name_the_path(tmp_path):
    path = tmp_path / "generation_config.json"
    for content, match in [(b"{not json", "is not valid JSON: .* line 1 column 2"),
                           (b"\xff\xfe{}", "is not UTF-8 text"),
                           (b"[]", "must hold a JSON object, got a JSON array"),
                           (b"3", "must hold a JSON object, got a JSON number"),
                           (b"[" * 100_000 + b"]" * 100_000, "is not valid JSON: nested too deeply")]:
        path.write_bytes(content)
        with pytest.raises(ValueError, match="generation config .*generation_config.json " + match):
            read_json_file(path, "generation config")
    path.write_text(json.dumps({"a": 1}))
    assert read_json_file(path, "generation config") == {"a": 1}


def test_json_file_missing_dangling_symlink_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="config not found: .*nope.json"):
        read_json_file(tmp_path / "nope.json", "config")
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "gone.json")
    with pytest.raises(FileNotFoundError, match="symbolic link to .*gone.json.*does not exist"):
        read_json_file(link, "config")
    with pytest.raises(ValueError, match="is a directory"):
        read_json_file(tmp_path, "config")


def test_fifo_is_refused_without_blocking(tmp_path):
    """A FIFO with no writer blocks ``open()`` forever; the reader must refuse it at once."""
    fifo = tmp_path / "generation_config.json"
    os.mkfifo(fifo)
    result: list = []
    t = threading.Thread(target=lambda: result.append(pytest.raises(ValueError, read_json_file, fifo, "config")),
                         daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "read_json_file blocked on a FIFO"
    assert "is a FIFO" in str(result[0].value)


def test_json_file_size_cap(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"a": "x" * 100}))
    with pytest.raises(ValueError, match="more than the 50 B"):
        read_json_file(path, "config", max_bytes=50)
