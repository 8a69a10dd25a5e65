#!/usr/bin/env bash
# One command, idempotent, from anywhere: CTranslate2 4.8.5 (PyPI wheel) in ./env. Checkpoints are converted by
# the adapter on first use (convert.py -> cache/), with an interpreter that has torch + transformers 4.38.2:
# the checkout's .venv-oracle (or $REFDECODE_ORACLE_PYTHON) when it exists (read-only use), else ./env-convert, made here
# (torch==2.13.0, a CPU wheel, then transformers==4.38.2 and ctranslate2==4.8.5).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
want=4.8.5
start=$(date +%s)
if ! { [ -x "$here/env/bin/python" ] && "$here/env/bin/python" -c "import ctranslate2, sys; sys.exit(ctranslate2.__version__ != '$want')" 2>/dev/null; }; then
  python3 -m venv "$here/env"
  "$here/env/bin/pip" install -q "ctranslate2==$want"
fi
oracle="${REFDECODE_ORACLE_PYTHON:-$here/../../../.venv-oracle/bin/python}"
if [ -x "$oracle" ] && "$oracle" -c "import torch, transformers, sys; sys.exit(transformers.__version__ != '4.38.2')" 2>/dev/null; then
  echo "ctranslate2: conversions will use $oracle"
elif ! { [ -x "$here/env-convert/bin/python" ] && "$here/env-convert/bin/python" -c "import torch, transformers" 2>/dev/null; }; then
  python3 -m venv "$here/env-convert"
  "$here/env-convert/bin/pip" install -q "torch==2.13.0"
  "$here/env-convert/bin/pip" install -q "transformers==4.38.2" "ctranslate2==$want"
  echo "ctranslate2: conversions will use $here/env-convert/bin/python"
fi
"$here/env/bin/python" -c "import ctranslate2; print('ctranslate2', ctranslate2.__version__)"
echo "ctranslate2: setup took $(( $(date +%s) - start )) s"
