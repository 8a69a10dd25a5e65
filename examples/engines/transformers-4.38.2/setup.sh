#!/usr/bin/env bash
# One command, idempotent, from anywhere: the control engine, transformers 4.38.2 on torch 2.13.0 (CPU wheel),
# in its own venv ./env. Nothing to convert: the adapter loads the Hugging Face folder as it is.
#   setup.sh [TRANSFORMERS_VERSION FOLDER]   (transformers-5/setup.sh runs this with 5.24.0 and its own folder)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want_tf=${1:-4.38.2}
dir=${2:-$here}
name=$(basename "$dir")
env="$dir/env"
want_torch=2.13.0
if [ -x "$env/bin/python" ] && "$env/bin/python" - <<PY 2>/dev/null
import torch, transformers, safetensors, sys
sys.exit(0 if torch.__version__.split("+")[0] == "$want_torch" and transformers.__version__ == "$want_tf" else 1)
PY
then
  echo "$name: env ready ($env)"
  exit 0
fi
start=$(date +%s)
python3 -m venv "$env"
# torch first, pinned (a CPU wheel; never plain `torch`), then transformers, which then keeps that torch.
"$env/bin/pip" install -q "torch==$want_torch"
"$env/bin/pip" install -q "transformers==$want_tf"
"$env/bin/python" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
echo "$name: setup took $(( $(date +%s) - start )) s"
