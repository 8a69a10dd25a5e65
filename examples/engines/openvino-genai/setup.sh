#!/usr/bin/env bash
# One command, idempotent, from anywhere: OpenVINO GenAI 2026.4.1.0 (+ openvino-tokenizers) in ./env, with
# optimum-intel 2.2.0 for the export (`optimum-cli export openvino`, run by convert.py on first use) on
# torch 2.13.0 (a CPU wheel, installed first and held by a constraints file so optimum-intel keeps it and brings
# no GPU libraries). optimum-intel also pulls torchvision 0.28.0, which fails to load against the CPU torch
# ("operator torchvision::nms does not exist", and transformers' modeling_utils with it): it is uninstalled (a text
# model's export never uses it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
env="$here/env"
want_genai=2026.4.1.0
want_optimum=2.2.0
want_torch=2.13.0
start=$(date +%s)
check() {
  "$env/bin/python" - <<PY 2>/dev/null
import sys, importlib.metadata as md
import openvino_genai, openvino_tokenizers, torch, optimum.intel, transformers.modeling_utils
ok = (md.version("openvino-genai") == "$want_genai" and md.version("optimum-intel") == "$want_optimum"
      and torch.__version__.split("+")[0] == "$want_torch")
sys.exit(0 if ok else 1)
PY
}
if [ -x "$env/bin/python" ] && check; then
  echo "openvino-genai: env ready ($env)"
  exit 0
fi
[ -x "$env/bin/python" ] || python3 -m venv "$env"
pins="$(mktemp)"
trap 'rm -f "$pins"' EXIT
# what this resolved to when written: held, so a later release of any of them cannot change the engine
printf 'torch==%s\nopenvino-genai==%s\nopenvino-tokenizers==%s\nopenvino==2026.4.1\ntransformers==5.5.4\noptimum==2.3.0\n' \
  "$want_torch" "$want_genai" "$want_genai" >"$pins"
"$env/bin/pip" install -q "torch==$want_torch"
"$env/bin/pip" install -q -c "$pins" "openvino-genai==$want_genai" openvino-tokenizers \
  "optimum-intel[openvino]==$want_optimum"
"$env/bin/pip" uninstall -y -q torchvision 2>/dev/null || true
check || { echo "openvino-genai: versions do not match the pins" >&2; exit 1; }
"$env/bin/python" -c "import importlib.metadata as md; print(*(f'{p} {md.version(p)}' for p in ('openvino', 'openvino-genai', 'openvino-tokenizers', 'optimum-intel', 'torch', 'transformers')))"
echo "openvino-genai: setup took $(( $(date +%s) - start )) s"
