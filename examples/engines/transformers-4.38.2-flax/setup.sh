#!/usr/bin/env bash
# One command, idempotent, from anywhere: transformers 4.38.2's Flax generate (FlaxGPT2LMHeadModel) on
# jax/jaxlib 0.4.25 + flax 0.8.1 (CPU), in its own venv ./env. torch 2.13.0 (the CPU wheel) is there only for
# from_pretrained(folder, from_pt=True): the adapter reads the case's Hugging Face folder through convert.py's
# float32 copy (cache/), since the shipped weights are float16.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
env="$here/env"
if [ -x "$env/bin/python" ] && "$env/bin/python" - <<'PY' 2>/dev/null
import sys
import flax, jax, jaxlib, numpy, torch, transformers
sys.exit(0 if (jax.__version__, jaxlib.__version__, flax.__version__, transformers.__version__) ==
         ("0.4.25", "0.4.25", "0.8.1", "4.38.2") and torch.__version__.split("+")[0] == "2.13.0"
         and numpy.__version__ < "2" else 1)
PY
then
  echo "transformers-4.38.2-flax: env ready ($env)"
  exit 0
fi
start=$(date +%s)
python3 -m venv "$env"
# torch first, pinned (a CPU wheel; never plain `torch`), then the Flax stack and transformers, which keep it
"$env/bin/pip" install -q "torch==2.13.0"
"$env/bin/pip" install -q "jax==0.4.25" "jaxlib==0.4.25" "flax==0.8.1" "transformers==4.38.2" "numpy<2"
"$env/bin/python" -c "import jax, flax, torch, transformers; print('jax', jax.__version__, 'flax', flax.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)"
echo "transformers-4.38.2-flax: setup took $(( $(date +%s) - start )) s"
