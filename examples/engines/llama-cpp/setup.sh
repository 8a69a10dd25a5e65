#!/usr/bin/env bash
# llama.cpp through node-llama-cpp 3.21.1 (its prebuilt linux-x64 binary, no compilation), plus the GGUF
# converter (convert_hf_to_gguf.py + conversion/ + gguf-py/) taken from the llama-cpp-python 0.3.36 source
# distribution, and a Python for the converter (torch 2.13.0 + transformers 4.38.2): the shared oracle venv when
# it exists, else env-convert/ here. One command, idempotent, from anywhere. Checkpoints are converted on first
# use by the adapter (convert.py; cached in cache/<model>-<sha256[:12] of model.safetensors>/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# 1. the engine: npm -E pins the exact version; --ignore-scripts skips the postinstall that would try to
#    download or build a binary (the prebuilt one ships in @node-llama-cpp/linux-x64).
if [ "$(node -p 'try{require("./node_modules/node-llama-cpp/package.json").version}catch(e){""}')" != "3.21.1" ]; then
  npm i -E --ignore-scripts --no-audit --no-fund node-llama-cpp@3.21.1
fi

# 2. the converter, from the llama-cpp-python 0.3.36 sdist (only the three pieces it needs are kept).
if [ ! -f tools/llama.cpp/convert_hf_to_gguf.py ]; then
  rm -rf tools/sdist && mkdir -p tools/sdist
  python3 -m pip download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d tools/sdist
  tar -xzf tools/sdist/llama_cpp_python-0.3.36.tar.gz -C tools/sdist \
    llama_cpp_python-0.3.36/vendor/llama.cpp/convert_hf_to_gguf.py \
    llama_cpp_python-0.3.36/vendor/llama.cpp/conversion \
    llama_cpp_python-0.3.36/vendor/llama.cpp/gguf-py
  rm -rf tools/llama.cpp
  mv tools/sdist/llama_cpp_python-0.3.36/vendor/llama.cpp tools/llama.cpp
  rm -rf tools/sdist
fi

# 3. a Python with torch 2.13.0 (CPU wheel) + transformers 4.38.2 for the converter.
convert_py=""
shared=("$here/../../../.venv-oracle/bin/python")
[ "${REFDECODE_NO_SHARED_VENV:-}" = 1 ] && shared=()   # to try the fresh-machine path here
for candidate in "${REFDECODE_ORACLE_PYTHON:-}" "${shared[@]}"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c "import torch, transformers, yaml, tqdm, numpy" 2>/dev/null; then
    convert_py="$candidate"; break
  fi
done
if [ -z "$convert_py" ]; then
  if [ ! -x env-convert/bin/python ] || ! env-convert/bin/python -c "import torch, transformers, yaml, tqdm" 2>/dev/null; then
    python3 -m venv env-convert
    env-convert/bin/pip install -q --disable-pip-version-check torch==2.13.0
    env-convert/bin/pip install -q --disable-pip-version-check transformers==4.38.2 pyyaml tqdm requests
  fi
  convert_py="$here/env-convert/bin/python"
fi
echo "$convert_py" > tools/convert-python
node -e 'import("node-llama-cpp").then(m => console.log("node-llama-cpp", require("./node_modules/node-llama-cpp/package.json").version, "ok"))'
echo "converter python: $convert_py"
