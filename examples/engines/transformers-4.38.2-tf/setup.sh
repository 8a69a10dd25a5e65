#!/usr/bin/env bash
# transformers 4.38.2's TensorFlow path (TFGPT2LMHeadModel.generate) in its own venv ./env.
# One command, idempotent, from anywhere. torch 2.13.0 (the CPU wheel) goes in first and stays: it is only there
# for `from_pretrained(folder, from_pt=True)`, which reads the PyTorch weights into the TF model. tensorflow-cpu
# 2.15.1 is the last TF whose Keras 2 transformers 4.38.2's TF models are written against; numpy<2 is what it
# was built for. The float32 checkpoint folder is made on first use by convert.py (shipped weights are float16).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
start=$(date +%s)
PY="${PYTHON:-python3}"
if [ ! -x env/bin/python ]; then
  "$PY" -m venv env
fi
stamp="env/.installed-tf-2.15.1-transformers-4.38.2"
if [ ! -f "$stamp" ]; then
  env/bin/pip install -q --disable-pip-version-check torch==2.13.0
  env/bin/pip install -q --disable-pip-version-check "numpy<2" tensorflow-cpu==2.15.1 transformers==4.38.2
  touch "$stamp"
fi
env/bin/python -c "import os; os.environ['TF_CPP_MIN_LOG_LEVEL']='3'; import tensorflow as tf, transformers, torch, numpy; print('tensorflow', tf.__version__, 'transformers', transformers.__version__, 'torch', torch.__version__, 'numpy', numpy.__version__)"
echo "transformers-4.38.2-tf: setup took $(( $(date +%s) - start )) s"
