#!/usr/bin/env bash
# keras-hub 0.32.0 (Keras 3 on the torch backend) in its own venv, examples/engines/keras-hub/env/.
# One command, idempotent, from anywhere. torch 2.13.0 (the CPU wheel) goes in FIRST, so that nothing
# keras-hub pulls can bring a CUDA torch. safetensors is pinned too: keras-hub's Hugging Face loader needs it
# and does not depend on it. Weights are converted on first use by the adapter (convert.py, in this venv: no
# transformers needed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
PY="${PYTHON:-python3}"
if [ ! -x env/bin/python ]; then
  "$PY" -m venv env
fi
stamp="env/.installed-keras-hub-0.32.0-st"
if [ ! -f "$stamp" ]; then
  env/bin/pip install -q --disable-pip-version-check torch==2.13.0
  env/bin/pip install -q --disable-pip-version-check keras-hub==0.32.0 keras==3.15.1 safetensors==0.8.0
  touch "$stamp"
fi
env/bin/python -c "import os; os.environ['KERAS_BACKEND']='torch'; import keras, keras_hub, torch; print('keras', keras.__version__, 'keras_hub', keras_hub.__version__, 'torch', torch.__version__, 'backend', keras.backend.backend())"
