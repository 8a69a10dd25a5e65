#!/usr/bin/env bash
# One command, idempotent, from anywhere: litgpt 0.5.13 (PyPI) in ./env, on torch 2.13.0's CPU wheel installed
# FIRST (so litgpt's `torch>=2.7` is met by it and pip pulls no other torch). litgpt's own pins come with it:
# lightning>=2.6.1 (litgpt/utils.py and generate/base.py import lightning.fabric and lightning.pytorch),
# jsonargparse[signatures]<=4.41, huggingface-hub<1.4, psutil==7.2.2, safetensors, tokenizers, tqdm; about 1 GB.
# The litgpt checkpoints the adapter reads are written on first use (convert.py -> cache/) with this env.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want=0.5.13
start=$(date +%s)
check() {
  "$here/env/bin/python" - <<PY 2>/dev/null
import sys
from importlib.metadata import version
import torch
import litgpt.generate.base, litgpt.scripts.convert_hf_checkpoint
sys.exit(0 if version("litgpt") == "$want" and torch.__version__.startswith("2.13.0") else 1)
PY
}
if [ -x "$here/env/bin/python" ] && check; then
  echo "litgpt: env ready ($here/env)"
  exit 0
fi
python3 -m venv "$here/env"
"$here/env/bin/pip" install -q torch==2.13.0
"$here/env/bin/pip" install -q "litgpt==$want"
"$here/env/bin/python" -c "import torch, lightning; from importlib.metadata import version as v
print('litgpt', v('litgpt'), 'torch', torch.__version__, 'lightning', lightning.__version__)"
echo "litgpt: setup took $(( $(date +%s) - start )) s"
