#!/usr/bin/env bash
# One command, idempotent, from anywhere: onnxruntime-genai 0.18.0 (+ its onnxruntime 1.32.0) in env/, and the
# shared ONNX export environment (../onnx-export/setup.sh) the adapter's converter uses on first use.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
[ -x "$here/env/bin/python" ] || "$py" -m venv "$here/env"
if ! "$here/env/bin/python" -c 'import onnxruntime_genai as og, sys; sys.exit(og.__version__ != "0.18.0")' 2>/dev/null; then
  "$here/env/bin/pip" install -q "onnxruntime-genai==0.18.0" "onnxruntime==1.32.0" "numpy==2.4.6"
fi
bash "$here/../onnx-export/setup.sh"
echo "onnxruntime-genai: ready ($("$here/env/bin/python" -c 'import onnxruntime_genai as og; print(og.__version__)'))"
