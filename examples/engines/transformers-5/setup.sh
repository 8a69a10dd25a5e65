#!/usr/bin/env bash
# One command, idempotent, from anywhere: transformers 5.24.0 (the newest 5.x on PyPI when this was written) on
# torch 2.13.0 (a CPU wheel, installed first so transformers keeps it) in ./env. Nothing to convert: the adapter
# loads the Hugging Face folder as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
env="$here/env"
want_torch=2.13.0
want_tf=5.24.0
if [ -x "$env/bin/python" ] && "$env/bin/python" - <<PY 2>/dev/null
import torch, transformers, sys
sys.exit(0 if torch.__version__.split("+")[0] == "$want_torch" and transformers.__version__ == "$want_tf" else 1)
PY
then
  echo "transformers-5: env ready ($env)"
  exit 0
fi
start=$(date +%s)
python3 -m venv "$env"
"$env/bin/pip" install -q "torch==$want_torch"
"$env/bin/pip" install -q "transformers==$want_tf"
"$env/bin/python" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
echo "transformers-5: setup took $(( $(date +%s) - start )) s"
