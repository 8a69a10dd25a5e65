r"""Export a Hugging Face GPT-2 checkpoint to ONNX with past key values, for onnxruntime-genai and transformers.js.

    examples/engines/onnx-export/env/bin/python examples/engines/onnx-export/export.py MODEL_DIR OUT_DIR

MODEL_DIR is a GPT-2 folder in Hugging Face's layout (config.json, model.safetensors; tokenizer.json optional).
OUT_DIR receives ``config.json``, ``generation_config.json`` (when the export writes one), ``tokenizer.json`` (when
MODEL_DIR has one) and ``onnx/model.onnx``: ONE decoder graph in float32, opset 14, with inputs ``input_ids``,
``attention_mask``, ``position_ids`` and ``past_key_values.{i}.key/value`` (batch, heads, past, head_dim) and outputs
``logits`` and ``present.{i}.key/value`` (optimum 1.17.1's ``text-generation-with-past`` task, not legacy: the first
step feeds past tensors of length 0). Exported with torch's TorchScript exporter (``dynamo=False``; torch 2.13's
default is the dynamo exporter, which optimum 1.17.1 does not drive), weights loaded in float32 whatever
``torch_dtype`` config.json names (transformers 4.38.2's ``from_pretrained`` default).

Exports are cached in ``examples/engines/onnx-export/cache/<model-name>-<sha256(model.safetensors)[:12]>/``: a second
call for the same weights copies the cached files (hard links when possible). Prints one JSON line:
``{"out": OUT_DIR, "cached": bool, "seconds": float}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPSET = 14


def weights_key(model_dir: Path) -> str:
    """``<folder name>-<first 12 hex digits of sha256(model.safetensors)>``: the cache folder's name."""
    digest = hashlib.sha256()
    with open(model_dir / "model.safetensors", "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return f"{model_dir.name}-{digest.hexdigest()[:12]}"


def _export(model_dir: Path, out: Path) -> None:
    import torch
    import torch.onnx

    real_export = torch.onnx.export

    def torchscript_export(*args, **kwargs):  # optimum 1.17.1 calls torch.onnx.export without `dynamo`
        kwargs.setdefault("dynamo", False)
        return real_export(*args, **kwargs)

    torch.onnx.export = torchscript_export
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    from optimum.exporters.onnx import main_export

    main_export(
        str(model_dir),
        output=str(out),
        task="text-generation-with-past",
        opset=OPSET,
        device="cpu",
        library_name="transformers",
        legacy=False,
        no_post_process=True,
        do_validation=False,
        local_files_only=True,
    )


def _copy_tree(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for item in src.rglob("*"):
        target = dst / item.relative_to(src)
        if item.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.unlink()
        try:
            os.link(item, target)
        except OSError:
            shutil.copy2(item, target)


def export(model_dir: str | os.PathLike, out_dir: str | os.PathLike) -> dict:
    """Export (or copy from the shared cache) MODEL_DIR into OUT_DIR in the layout described above."""
    model_dir, out_dir = Path(model_dir).resolve(), Path(out_dir).resolve()
    if not (model_dir / "config.json").is_file() or not (model_dir / "model.safetensors").is_file():
        raise ValueError(f"model_dir must hold config.json and model.safetensors, got {model_dir}")
    start = time.perf_counter()
    cached = HERE / "cache" / weights_key(model_dir)
    hit = (cached / "onnx" / "model.onnx").is_file()
    if not hit:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".tmp-") as tmp:
            raw = Path(tmp) / "raw"
            _export(model_dir, raw)
            stage = Path(tmp) / "stage"
            (stage / "onnx").mkdir(parents=True)
            for name in os.listdir(raw):
                if name.endswith(".onnx") or name.endswith(".onnx_data") or name.endswith(".onnx.data"):
                    shutil.move(str(raw / name), stage / "onnx" / name)
            shutil.copy2(model_dir / "config.json", stage / "config.json")
            for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"):
                if (model_dir / name).is_file():
                    shutil.copy2(model_dir / name, stage / name)
            if not (stage / "onnx" / "model.onnx").is_file():
                raise RuntimeError(f"optimum wrote no model.onnx: {sorted(os.listdir(raw))}")
            if cached.exists():
                shutil.rmtree(cached)
            os.replace(stage, cached)
    _copy_tree(cached, out_dir)
    return {"out": str(out_dir), "cached": hit, "seconds": round(time.perf_counter() - start, 3)}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: export.py MODEL_DIR OUT_DIR", file=sys.stderr)
        return 2
    print(json.dumps(export(argv[0], argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
