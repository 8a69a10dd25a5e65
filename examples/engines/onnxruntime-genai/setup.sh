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
# the Llama converter (onnxruntime-genai's model builder, convert.py) runs in ../transformers-5/env (torch 2.13.0 +
# transformers 5.24.0: the builder imports 5.x's model classes) with onnx-ir and onnx from env-builder/
if ! [ -d "$here/env-builder/onnx_ir" ]; then
  "$here/env/bin/pip" install -q --target "$here/env-builder" "onnx-ir==1.1.0" "onnx==1.17.0" "onnxscript==0.7.2"
fi
bash "$here/../transformers-5/setup.sh"
echo "onnxruntime-genai: ready ($("$here/env/bin/python" -c 'import onnxruntime_genai as og; print(og.__version__)'))"
