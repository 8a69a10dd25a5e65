#!/usr/bin/env bash
# One command, idempotent, from anywhere: llama2-py 0.0.6 (PyPI; one standard-library file, llama2_py.py) in ./env,
# with numpy and safetensors for convert.py (the project's llama2.c exporter, tools/llama2c/export.py). No torch:
# neither llama2-py nor the exporter uses it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want=0.0.6
start=$(date +%s)
check() {
  "$here/env/bin/python" - <<PY 2>/dev/null
import sys
from importlib.metadata import version
import llama2_py, numpy, safetensors
sys.exit(0 if version("llama2-py") == "$want" else 1)
PY
}
if [ -x "$here/env/bin/python" ] && check; then
  echo "llama2-py: env ready ($here/env)"
  exit 0
fi
python3 -m venv "$here/env"
"$here/env/bin/pip" install -q "llama2-py==$want" "numpy==2.4.6" "safetensors==0.8.0"
"$here/env/bin/python" -c "from importlib.metadata import version as v
print('llama2-py', v('llama2-py'), 'numpy', v('numpy'), 'safetensors', v('safetensors'))"
echo "llama2-py: setup took $(( $(date +%s) - start )) s"
