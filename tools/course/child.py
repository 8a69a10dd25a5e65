"""The program that runs one graded function inside the sandbox (started by sandbox.py, never by hand).

Contract: standard library and numpy only (nothing else exists in the sandbox). sandbox.py passes this file's
text with ``python -I -S -c``, so no file of the grader is in the sandbox. It reads one JSON line on stdin,
``{"module", "function", "models": [{"vocab_size", "n_positions", "eos_token_id"}, ...] | null, "nproc", "cases"}``
(one model per case for the decoding functions),
lowers its own process limit, imports ``/submission/MODULE.py`` and calls the function on each case, writing
one JSON line per case on the protocol pipe (the original stdout):

- ``{"case": i, "answer": ...}`` (arrays as ``{"array", "dtype"}``, as task.encode),
- ``{"case": i, "raised": TYPE_NAME}`` or ``{"case": i, "unencodable": true}``,
- ``{"refused": CODE, "kind": NAME}``: the module did not load (CODE "load", NAME the exception's type) or the
  attribute is not a plain function of the submission (CODE "not_a_function", NAME its type),
- ``{"logits": [[id, ...], ...], "model": k}``: a call of case k's model. The parent answers on stdin with
  ``{"shape": [N, V]}`` and N*V little-endian float32 bytes, or ``{"error": MESSAGE}``.

Everything here is the submission's to change: the parent trusts none of it (it bounds and checks every line,
and it shows the student type names only from its own list). The submission's prints go to stderr, discarded.
"""

import importlib.util
import json
import os
import resource
import sys
import types

import numpy as np

SUBMISSION = "/submission"


def encode(value):
    """numpy arrays and scalars, tuples and lists -> JSON-able values (task.encode)."""
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def decode(value):
    """encode's inverse (task.decode)."""
    if isinstance(value, dict) and set(value) == {"array", "dtype"}:
        return np.array(value["array"], dtype=np.dtype(str(value["dtype"])))
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    return value


class Channel:
    """The protocol pipe: JSON lines out, JSON lines and raw bytes in."""

    def __init__(self, out_fd: int, in_fd: int):
        self.out_fd, self.in_fd, self.pending = out_fd, in_fd, b""

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(self.out_fd, data):]

    def read_exactly(self, n: int) -> bytes:
        parts, size = [self.pending[:n]], min(n, len(self.pending))
        self.pending = self.pending[n:]
        while size < n:
            chunk = os.read(self.in_fd, min(1 << 20, n - size))
            if not chunk:
                raise EOFError("the grader closed the pipe")
            parts.append(chunk)
            size += len(chunk)
        return b"".join(parts)

    def read_line(self) -> bytes:
        while b"\n" not in self.pending:
            chunk = os.read(self.in_fd, 1 << 16)
            if not chunk:
                raise EOFError("the grader closed the pipe")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line


class Model:
    """``model(input_ids) -> logits``: int (N, T), no padding -> float32 (N, V), computed by the grader outside
    the sandbox (selfcheck.NextTokenModel there); ``vocab_size``, ``n_positions``, ``eos_token_id``."""

    def __init__(self, channel: Channel, index: int, vocab_size: int, n_positions: int, eos_token_id):
        self._channel, self._index = channel, index
        self.vocab_size, self.n_positions, self.eos_token_id = vocab_size, n_positions, eos_token_id

    def __call__(self, input_ids):
        ids = np.asarray(input_ids)
        if ids.ndim != 2 or ids.shape[0] < 1 or ids.shape[1] < 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"`input_ids` must be an integer array of shape (N, T), N, T >= 1, got {ids.dtype} "
                             f"{ids.shape}")
        self._channel.send({"logits": ids.tolist(), "model": self._index})
        head = json.loads(self._channel.read_line())
        if "error" in head:
            raise ValueError(str(head["error"]))
        rows, vocab = head["shape"]
        data = self._channel.read_exactly(rows * vocab * 4)
        return np.frombuffer(data, dtype="<f4").reshape(rows, vocab).astype(np.float32)   # (N, V)


def plain_function(fn):
    """None if ``fn`` is a plain function defined in the submission's file, else the refusal to send."""
    if not isinstance(fn, types.FunctionType):
        return {"refused": "not_a_function", "kind": type(fn).__name__}
    if not os.path.realpath(fn.__code__.co_filename).startswith(SUBMISSION + "/"):
        return {"refused": "outside", "kind": "function"}
    return None


def run(channel: Channel, header: dict) -> None:
    module_name, function_name = header["module"], header["function"]
    cases = decode(header["cases"])
    models = [Model(channel, i, **shown) for i, shown in enumerate(header["models"])] if header["models"] else None
    try:
        spec = importlib.util.spec_from_file_location(f"submission_{module_name}",
                                                      f"{SUBMISSION}/{module_name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        fn = getattr(module, function_name)
    except BaseException as err:  # noqa: BLE001 -- anything the submission does on import is its problem
        channel.send({"refused": "load", "kind": type(err).__name__})
        return
    refusal = plain_function(fn)
    if refusal:
        channel.send(refusal)
        return
    for i, args in enumerate(cases):
        args = [models[i], *args] if models is not None else args
        try:
            with np.errstate(all="ignore"):
                answer = fn(*args)
        except BaseException as err:  # noqa: BLE001 -- a student's bug is a failed case
            channel.send({"case": i, "raised": type(err).__name__})
            continue
        try:
            channel.send({"case": i, "answer": encode(answer)})
        except (TypeError, ValueError, RecursionError):
            channel.send({"case": i, "unencodable": True})


def main() -> None:
    channel = Channel(os.dup(1), 0)
    os.dup2(2, 1)                                           # the submission's prints go to stderr
    header = json.loads(channel.read_line())
    nproc = int(header["nproc"])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))   # counted in the sandbox's user namespace
    sys.path[:0] = [SUBMISSION]
    run(channel, header)


if __name__ == "__main__":
    main()
