#!/usr/bin/env bash
# One command, idempotent, from anywhere: mlx-lm 0.32.2 on mlx's CPU build for Linux (mlx[cpu] 0.32.4, PyPI
# wheels) in ./env. Checkpoints are written as mlx-lm folders by the adapter on first use (convert.py -> cache/;
# NumPy and safetensors, which mlx-lm brings).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mlx=0.32.4
mlx_lm=0.32.2
start=$(date +%s)
if ! { [ -x "$here/env/bin/python" ] && "$here/env/bin/python" -c "
import sys, importlib.metadata as m
sys.exit(m.version('mlx') != '$mlx' or m.version('mlx-lm') != '$mlx_lm')" 2>/dev/null; }; then
  python3 -m venv "$here/env"
  "$here/env/bin/pip" install -q "mlx[cpu]==$mlx" "mlx-lm==$mlx_lm"
fi
"$here/env/bin/python" -c "import importlib.metadata as m; print('mlx', m.version('mlx'), 'mlx-lm', m.version('mlx-lm'))"
echo "mlx-lm: setup took $(( $(date +%s) - start )) s"
