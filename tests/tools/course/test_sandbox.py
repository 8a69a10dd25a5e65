"""tools/course/sandbox.py without starting a sandbox: the protocol's bounds (size, depth, form), the model's
replies, and what of a submission is copied in. (The sandboxes themselves: test_grade.py and test_probes.py.)"""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest
from conftest import ROOT

COURSE = ROOT / "tools" / "course"
sys.path.insert(0, str(COURSE))
import sandbox  # noqa: E402
import task  # noqa: E402
from sandbox import Malformed, parse_message  # noqa: E402


@pytest.mark.parametrize("line", [
    b"[" * 17 + b"]" * 17,                                  # deeper than MAX_DEPTH
    b'{"case": 0, "answer": ' + b"[" * 10**5 + b"]" * 10**5 + b"}",
    b'"' + b"1" * (sandbox.MAX_LINE + 1) + b'"',          # longer than MAX_LINE
    b"not json", b"\xff\xfe", b"[1, 2]", b'{"case": 0}', b'{"case": 0, "answer": 1, "score": 5}',
    b'{"case": 7, "answer": 1}', b'{"case": true, "answer": 1}', b'{"case": -1, "raised": "E"}',
    b'{"refused": "anything the submission likes", "kind": "x"}', b'{"refused": "load", "kind": 3}',
    b'{"logits": [[1]], "model": 9}',
])
def test_a_line_that_breaks_the_protocol_is_malformed(line):
    with pytest.raises(Malformed):
        parse_message(line, n_cases=3)


def test_well_formed_lines_pass_and_brackets_in_strings_do_not_count():
    assert parse_message(b'{"case": 2, "answer": {"array": [[1.5]], "dtype": "float32"}}', 3)["case"] == 2
    assert parse_message(json.dumps({"case": 0, "raised": "[" * 100}).encode(), 3)["raised"] == "[" * 100
    assert parse_message(b'{"logits": [[1, 2]], "model": 0}', 3) == {"logits": [[1, 2]], "model": 0}
    assert parse_message(b'{"refused": "load", "kind": "SyntaxError"}', 3)["kind"] == "SyntaxError"
    deep = b"[" * (sandbox.MAX_DEPTH - 1) + b"]" * (sandbox.MAX_DEPTH - 1)        # with the outer {: 16
    assert parse_message(b'{"case": 0, "answer": ' + deep + b"}", 3)["case"] == 0


def test_logits_replies_are_the_models_bytes_or_an_error():
    model = task.ScriptedModel(np.arange(2 * 4 * 4, dtype=np.float32).reshape(2, 4, 4) / 3)
    reply = sandbox.logits_reply(model, [[0, 1], [2, 3]])
    head, _, data = reply.partition(b"\n")
    assert json.loads(head) == {"shape": [2, 4]}
    assert np.frombuffer(data, "<f4").reshape(2, 4).tobytes() == model(np.array([[0, 1], [2, 3]])).tobytes()
    for rows in ([], [[0], [1, 2]], [[4]], [[-1]], [[True]], [[0.5]], "x", [[0]] * (sandbox.MAX_ROWS + 1)):
        assert "error" in json.loads(sandbox.logits_reply(model, rows))


def test_only_py_files_are_copied_never_links_bytecode_or_pth(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "pkg" / "__pycache__").mkdir(parents=True)
    (src / ".hidden").mkdir()
    dst.mkdir()
    (src / "decoding.py").write_text("x = 1\n")
    (src / "pkg" / "helper.py").write_text("y = 2\n")
    (src / "pkg" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"\x00")
    (src / "evil.pth").write_text("import os\n")
    (src / ".hidden" / "secret.py").write_text("z = 3\n")
    (src / "link.py").symlink_to(COURSE / "hidden" / "cases.json")
    assert sandbox.copy_submission(src, dst) == 2
    assert sorted(p.relative_to(dst).as_posix() for p in dst.rglob("*") if p.is_file()) == [
        "decoding.py", "pkg/helper.py"]
    (src / "big.py").write_bytes(b"#" * (sandbox.MAX_FILE_BYTES + 1))
    with pytest.raises(ValueError, match="over"):
        sandbox.copy_submission(src, tmp_path / "again")


def test_the_childs_encode_and_decode_are_tasks():
    """child.py carries its own copy (task.py never enters the sandbox): the same JSON both ways."""
    spec = importlib.util.spec_from_file_location("course_child", COURSE / "child.py")
    child = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(child)
    value = [np.arange(6, dtype=np.int64).reshape(2, 3), np.float32(1.5), (np.array([0.25], np.float32), 3)]
    assert json.dumps(child.encode(value)) == json.dumps(task.encode(value))
    back = child.decode(task.encode(value))
    assert back[0].dtype == np.int64 and back[2][0].dtype == np.float32 and back[1] == 1.5
