#!/usr/bin/env bash
# One command, idempotent, from anywhere: the environment that exports a GPT-2 checkpoint to ONNX with past key
# values (optimum 1.17.1, the last optimum that accepts transformers 4.38.2; torch's TorchScript exporter).
# Creates examples/engines/onnx-export/env/. When the project's oracle venv (torch 2.13.0 + transformers 4.38.2)
# exists, env/ reuses it read-only through a .pth file; on a fresh machine (or with REFDECODE_NO_ORACLE=1) it
# installs both itself (torch==2.13.0: the CPU wheel; never plain torch).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
env="$here/env"
py="${PYTHON:-python3}"
ok() { "$env/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as m
assert m.version("torch").startswith("2.13.0"), m.version("torch")
assert m.version("transformers") == "4.38.2"
assert m.version("optimum") == "1.17.1"
import onnx, optimum.exporters.onnx  # noqa: F401
PY
}
if [ -x "$env/bin/python" ] && ok; then echo "onnx-export: env ready ($env)"; exit 0; fi
[ -x "$env/bin/python" ] || "$py" -m venv "$env"
oracle="${REFDECODE_ORACLE_VENV:-}"
if [ "${REFDECODE_NO_ORACLE:-}" = 1 ]; then
  oracle=""   # a fresh machine's path, on purpose
elif [ -z "$oracle" ]; then
  for cand in "$here/../../../.venv-oracle"; do
    [ -x "$cand/bin/python" ] && { oracle="$(cd "$cand" && pwd)"; break; }
  done
fi
site="$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -f "$site/zz_oracle.pth"
if [ -n "$oracle" ] && "$oracle/bin/python" -c '
import importlib.metadata as m, sys
sys.exit(0 if m.version("torch").startswith("2.13.0") and m.version("transformers") == "4.38.2" else 1)' 2>/dev/null; then
  osite="$("$oracle/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$osite" > "$site/zz_oracle.pth"   # read-only reuse: torch + transformers 4.38.2 from the oracle venv
  echo "onnx-export: reusing torch/transformers from $oracle"
else
  "$env/bin/pip" install -q "torch==2.13.0" "transformers==4.38.2"
fi
# optimum 1.17.1 and the ONNX tools; torch/transformers are already satisfied (above), so nothing heavy comes.
"$env/bin/pip" install -q "optimum==1.17.1" "onnx==1.17.0" "onnxruntime==1.20.1"
ok || { echo "onnx-export: environment check failed" >&2; exit 1; }
echo "onnx-export: env ready ($env)"
