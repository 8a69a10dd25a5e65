#!/usr/bin/env bash
# One command, idempotent, from anywhere: @huggingface/transformers 4.3.1 (exact pin, package-lock.json) into
# node_modules/, and the shared ONNX export environment (../onnx-export/setup.sh) the adapter uses on first use.
# --ignore-scripts: onnxruntime-node's install script downloads from a host outside the package registry; the
# linux-x64 binary it needs ships inside the npm package (node_modules/onnxruntime-node/bin/napi-v*/linux/x64).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
want="4.3.1"
have="$(node -p 'require("./node_modules/@huggingface/transformers/package.json").version' 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
  if [ -f package-lock.json ]; then
    npm ci --ignore-scripts --no-audit --no-fund
  else
    npm install -E --ignore-scripts --no-audit --no-fund "@huggingface/transformers@$want"
  fi
fi
bash "$here/../onnx-export/setup.sh"
echo "transformers-js: ready ($(node -p 'require("./node_modules/@huggingface/transformers/package.json").version'))"
