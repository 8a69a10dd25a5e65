#!/bin/sh
# The venv tools/golden/make_llama3_golden.py runs in: transformers 4.43.0 (the first release with the llama3
# rope type) on the same torch 2.13.0 CPU wheel as the 4.38.2 oracle. torch first, so pip does not pull a GPU build.
# Run from the repository root: sh tools/golden/make_venv_443.sh
set -e
python3 -m venv .venv-oracle-443
.venv-oracle-443/bin/pip install -q torch==2.13.0
.venv-oracle-443/bin/pip install -q transformers==4.43.0 safetensors numpy
.venv-oracle-443/bin/python -c "import transformers; assert transformers.__version__ == '4.43.0'"
