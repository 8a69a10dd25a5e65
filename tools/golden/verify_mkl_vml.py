"""torch's elementwise float32 ``sqrt`` / ``exp`` / ``log`` (MKL's VML) against refdecode/numerics/mkl_vml.py.

Three commands, run from the repository root with torch (the oracle venv; refdecode from this checkout)::

    PYTHONPATH=. .venv-oracle/bin/python tools/golden/verify_mkl_vml.py kernels   # which MKL kernel torch calls (gdb)
    PYTHONPATH=. .venv-oracle/bin/python tools/golden/verify_mkl_vml.py table     # rsqrtps of this CPU, for mkl_vml
    PYTHONPATH=. .venv-oracle/bin/python tools/golden/verify_mkl_vml.py verify    # every float32, all three ops
    PYTHONPATH=. python tools/golden/verify_mkl_vml.py verify 16                   # every 16th chunk (another torch)
    PYTHONPATH=. .venv-oracle/bin/python tools/golden/verify_mkl_vml.py golden    # tests/golden/mkl_vml.npz

``kernels`` runs ``torch.sqrt`` / ``exp`` / ``log`` of a float32 tensor under gdb with a breakpoint on every
``mkl_vml_kernel_s{Sqrt,Exp,Ln}_*`` of ``libtorch_cpu.so`` and prints the ones hit (set ``MKL_ENABLE_INSTRUCTIONS``
to see another choice). ``table`` runs the CPU's ``rsqrtps`` (four machine-code instructions in an executable
page) on every positive normal float32, checks that it depends only on the exponent's parity and the top 12
mantissa bits, and prints the table in mkl_vml's encoding (and whether the module holds it). ``verify`` compares
``torch.sqrt`` / ``exp`` / ``log`` with ``torch_sqrt`` / ``torch_exp`` / ``torch_log`` bit for bit on all 2**32 float32
inputs (NaN against NaN by bits too), in chunks of 2**22 (about 25 minutes of one core), and ``vmsSqrt`` / ``vmsExp`` /
``vmsLn`` called through ctypes with torch's mode against ``torch.*`` on the first chunks. ``golden`` writes a few
thousand inputs (every one in its random sample that torch does not round correctly, and the special values)
with torch's results, for tests/numerics/test_mkl_vml.py.
"""

from __future__ import annotations

import ctypes
import mmap
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from refdecode.numerics import mkl_vml

FORMAT_VERSION = 1
LIB = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
#: torch's mode for VML (ATen cpu/vml.h): VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE
VML_MODE = 0x2 | 0x140000 | 0x100
OPS = {"sqrt": (torch.sqrt, mkl_vml.torch_sqrt, "vmsSqrt", np.sqrt),
       "exp": (torch.exp, mkl_vml.torch_exp, "vmsExp", np.exp),
       "log": (torch.log, mkl_vml.torch_log, "vmsLn", np.log)}
U32 = np.uint32


def vms(name: str, x: np.ndarray) -> np.ndarray:
    """MKL's ``vms<Op>(n, x, out, mode)`` through ctypes, with torch's mode."""
    lib = ctypes.CDLL(str(LIB))
    x = np.ascontiguousarray(x, np.float32)
    out = np.empty_like(x)
    getattr(lib, name)(ctypes.c_int(x.size), x.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p),
                       ctypes.c_longlong(VML_MODE))
    return out


def kernels() -> None:
    """Print the MKL kernels torch's sqrt / exp / log of a float32 tensor reach on this CPU."""
    names = [f"mkl_vml_kernel_s{op}_{cpu}{acc}" for op in ("Sqrt", "Exp", "Ln")
             for cpu in ("Z0", "L9", "H8", "E2", "EX") for acc in ("HAynn", "LAynn", "EPnnn")]
    probe = "import torch; x = torch.linspace(0.5, 4, 100); torch.sqrt(x); torch.exp(x); torch.log(x)"
    args = ["gdb", "-q", "-batch", "-ex", "set breakpoint pending on"]
    for name in names:
        args += ["-ex", f"break {name}"]
    args += ["-ex", "run"] + ["-ex", "continue"] * 3 + ["--args", sys.executable, "-c", probe]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    hit = sorted({line.split(" in ")[1].split(" ")[0] for line in out.splitlines()
                  if "hit Breakpoint" in line and " in " in line})
    print(f"torch {torch.__version__}, capability {torch.backends.cpu.get_cpu_capability()}: {', '.join(hit)}")


def rsqrtps_of(x: np.ndarray) -> np.ndarray:
    """The CPU's ``rsqrtps`` on float32 ``x`` (length a multiple of 4): a loop of movups / rsqrtps / movups."""
    code = bytes.fromhex("0f1007" "0f52c0" "0f1106" "4883c710" "4883c610" "4883ea04" "75e9" "c3")
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    loop = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long)(address)
    x = np.ascontiguousarray(x, np.float32)
    out = np.empty_like(x)
    loop(x.ctypes.data, out.ctypes.data, x.size)
    del loop
    return out


def table() -> None:
    """Measure ``rsqrtps`` on every positive normal float32; print the table in mkl_vml's encoding."""
    import base64
    import textwrap
    import zlib
    bits = np.arange(1 << 24, dtype=U32) + U32(126 << 23)  # [0.5, 2)
    base = rsqrtps_of(bits.view(np.float32)).view(U32)
    rows = base.reshape(2, 4096, 2048)
    assert (rows == rows[:, :, :1]).all(), "rsqrtps reads more than the top 12 mantissa bits"
    assert not (base & U32(0x7FF)).any(), "rsqrtps has more than 12 significant bits"
    for exponent in range(1, 255):  # x * 4 -> result / 2 exactly: the table of [0.5, 2) is all of it
        x = (np.arange(1 << 23, dtype=U32) | U32(exponent << 23)).view(np.float32)
        assert (rsqrtps_of(x) == mkl_vml.rsqrtps(x)).all(), exponent
    codes = (rows[:, :, 0] >> U32(11)).astype(np.int64)
    steps = (codes[:, :-1] - codes[:, 1:]).astype(np.uint8)
    text = base64.b64encode(zlib.compress(steps.tobytes(), 9)).decode()
    print(f"_RSQRTPS_FIRST = (0x{codes[0, 0]:X}, 0x{codes[1, 0]:X})")
    print("\n".join(textwrap.wrap(text, 100)))
    print("mkl_vml holds this table:", bool((mkl_vml._RSQRTPS == rows[:, :, 0]).all()))


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.view(U32) == b.view(U32)


def verify(every: int = 1, chunk_log2: int = 22) -> None:
    """Every float32 input (or every ``every``-th chunk of 2**22), bit for bit: torch against mkl_vml, and torch
    against MKL called directly."""
    torch.set_num_threads(1)
    chunk = 1 << chunk_log2
    counts = {op: [0, 0] for op in OPS}  # differing inputs, inputs torch does not round correctly
    start, done = time.time(), 0
    for c in range(0, 1 << (32 - chunk_log2), every):
        done += chunk
        x = (np.arange(chunk, dtype=np.uint64) + np.uint64(c * chunk)).astype(U32).view(np.float32)
        for op, (torch_op, ours, vml_name, exact) in OPS.items():
            want = torch_op(torch.from_numpy(x)).numpy()
            with np.errstate(all="ignore"):
                got = ours(x)
                rounded = exact(x.astype(np.float64)).astype(np.float32)
            bad = ~same_bits(got, want)
            counts[op][0] += int(bad.sum())
            counts[op][1] += int((~same_bits(rounded, want) & ~np.isnan(want)).sum())
            if bad.any():
                i = np.flatnonzero(bad)[:3]
                print(f"{op}: x={x.view(U32)[i]} torch={want.view(U32)[i]} mkl_vml={got.view(U32)[i]}", flush=True)
            if c < 4:  # torch calls vms<Op> (a check of the dispatch, not of the emulation)
                assert same_bits(vms(vml_name, x), want).all(), (op, c)
        if c % 64 == 64 - every:
            print(f"{done:,} inputs, {time.time() - start:.0f} s: {counts}", flush=True)
    for op, (bad, not_rounded) in counts.items():
        print(f"torch {torch.__version__}, {op}: {bad} of {done:,} inputs differ from torch; torch is not correctly "
              f"rounded on {not_rounded:,}")


def golden() -> None:
    """tests/golden/mkl_vml.npz: for each op, inputs (random, every one not correctly rounded among them, and the
    special values) and torch's results."""
    from _oracle import GOLDEN, save_golden  # transformers' venv; the other commands need torch only
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, 1.0, 4.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, 1e-40, 1.17549435e-38,
                        3.4028235e38, 3.40282e38, 87.3, 87.4, 88.7, 88.8, -87.4, -100.0, -103.9, -104.0, 1e-9,
                        -1e-9, 0.3, 0.1, 0.5, 2.0], np.float32)
    ranges = {"sqrt": (np.float32(1e-6), np.float32(1.0)), "exp": (np.float32(-110.0), np.float32(90.0)),
              "log": (np.float32(1e-6), np.float32(4.0))}
    arrays = {}
    for op, (torch_op, _, _, exact) in OPS.items():
        low, high = ranges[op]
        uniform = rng.uniform(low, high, 200_000).astype(np.float32)  # where eta's and the entropy's arguments lie
        bits = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(U32).view(np.float32)  # any float32
        x = np.concatenate([uniform, bits])
        want = torch_op(torch.from_numpy(x)).numpy()
        with np.errstate(all="ignore"):
            off = ~same_bits(exact(x.astype(np.float64)).astype(np.float32), want) & ~np.isnan(want)
        keep = np.flatnonzero(off)
        keep = np.concatenate([rng.choice(keep, min(len(keep), 1500), replace=False),
                               rng.choice(np.flatnonzero(~off), 1500, replace=False)])
        x = np.concatenate([x[np.sort(keep)], special])
        arrays[f"{op}/x"] = x
        arrays[f"{op}/torch"] = torch_op(torch.from_numpy(x)).numpy()
        print(f"{op}: {len(x)} inputs, {off.sum():,} of {off.size:,} sampled not correctly rounded")
    save_golden(GOLDEN / "mkl_vml.npz", arrays, FORMAT_VERSION, "tools/golden/verify_mkl_vml.py",
                "PYTHONPATH=. .venv-oracle/bin/python tools/golden/verify_mkl_vml.py golden",
                cpu="AMD EPYC (MKL's EX kernels)")


if __name__ == "__main__":
    {"kernels": kernels, "table": table, "verify": verify, "golden": golden}[sys.argv[1]](*map(int, sys.argv[2:]))
