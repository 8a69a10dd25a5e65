#!/usr/bin/env bash
# One command, idempotent, from anywhere: Meta's reference code, llama-models 0.3.0 (PyPI), in ./env, on torch
# 2.13.0's CPU wheel (installed FIRST so that llama-models' own torch requirement is already met and pip does not
# pull a CUDA build). fairscale (model parallel layers, model.py:14-21) and torchvision (imported by
# generation.py through multimodal/) are llama-models' extra "torch" requirements, pinned here. Checkpoints are written in Meta's layout by the adapter on first use (convert.py -> cache/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
torch=2.13.0
llama_models=0.3.0
fairscale=0.4.13
torchvision=0.28.0
start=$(date +%s)
if ! { [ -x "$here/env/bin/python" ] && "$here/env/bin/python" -c "
import sys, importlib.metadata as m
sys.exit(m.version('torch').split('+')[0] != '$torch' or m.version('llama-models') != '$llama_models' or m.version('fairscale') != '$fairscale'
         or m.version('torchvision').split('+')[0] != '$torchvision')" 2>/dev/null; }; then
  python3 -m venv "$here/env"
  "$here/env/bin/pip" install -q "torch==$torch"
  "$here/env/bin/pip" install -q "llama-models==$llama_models" "fairscale==$fairscale" "torchvision==$torchvision" "torch==$torch"
  "$here/env/bin/pip" install -q numpy safetensors tokenizers
fi
"$here/env/bin/python" -c "import importlib.metadata as m; print('torch', m.version('torch'), 'llama-models', m.version('llama-models'))"
echo "llama-models: setup took $(( $(date +%s) - start )) s"
