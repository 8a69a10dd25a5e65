#!/usr/bin/env bash
# One command, idempotent, from anywhere: llms-from-scratch 1.0.19 (the package of Raschka's "Build a Large
# Language Model (From Scratch)") on torch 2.13.0 (CPU wheel) in ./env. The package is installed without its
# declared dependencies (tensorflow and jupyterlab only serve the book's notebooks and the OpenAI download in
# ch05); the modules the adapter imports need torch, tiktoken, numpy<2.1, matplotlib and tqdm, installed here.
# Checkpoints are converted by the adapter on first use (convert.py -> cache/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
torch=2.13.0
peer=1.0.19
start=$(date +%s)
if ! { [ -x "$here/env/bin/python" ] && "$here/env/bin/python" -c "
import sys, importlib.metadata as m
sys.exit(m.version('torch').split('+')[0] != '$torch' or m.version('llms-from-scratch') != '$peer')" 2>/dev/null; }; then
  python3 -m venv "$here/env"
  "$here/env/bin/pip" install -q "torch==$torch"
  "$here/env/bin/pip" install -q --no-deps "llms-from-scratch==$peer"
  "$here/env/bin/pip" install -q "numpy>=1.26,<2.1" "tiktoken>=0.5.1" "matplotlib>=3.7.1" "tqdm>=4.66.1" safetensors
fi
"$here/env/bin/python" -c "import importlib.metadata as m; print('torch', m.version('torch'), 'llms-from-scratch', m.version('llms-from-scratch'))"
echo "llms-from-scratch: setup took $(( $(date +%s) - start )) s"
